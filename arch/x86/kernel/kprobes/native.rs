// SPDX-License-Identifier: GPL-2.0

//! The x86_64 kprobes arch layer in Rust (`CONFIG_KPROBES_RUST_ARCH`): what upstream's
//! `arch/x86/kernel/kprobes/{core,opt,ftrace}.c` provide, on the pure decisions of
//! [`crate::x86`] and the core's generic hit-path state machine ([`crate::hit`]).
//!
//! Constraints: mounted in the kprobes crate after [`crate::glue`], whose probe handles and
//! kernel services it uses. The hooks of [`X86`] run under the locks [`ArchHooks`] documents.
//! The C-linkage entry points (`kprobe_int3_handler`, `kprobe_fault_handler`,
//! `optimized_callback`, `kprobe_ftrace_handler`, the `kprobe_emulate_*` functions) run in trap
//! or ftrace context with preemption off: they and everything they reach are in `.kprobes.text`
//! (`nokprobe!`) or inlined into it, never allocate, never sleep and contain no panic path
//! (`hitpath-check.py` proves it on the object). What must be C or assembly is in
//! `rust_glue.c`: the per-CPU state, the kretprobe blacklist, the detour template and wrappers
//! of static inlines.
//!
//! Design: [`Cpu`] is this CPU's `kprobe_ctlblk` and `current_kprobe`, and implements
//! [`HitArch`] with x86's stepping (a copy of the instruction in a slot, followed by an `int3`
//! or, boosted, by a jump back), its emulators and its detours; the trap handlers only find the
//! probe and call the state machine.

use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::bindings;
use kernel::percpu::this_cpu_ptr;

use crate::arch::ArchHooks;
use crate::errno::{Errno, Result};
use crate::glue::blacklist::{c_in_kretprobe_blacklist, c_init_kretprobe_blacklist};
use crate::glue::handle::{Kernel, Kp, KERNEL};
use crate::glue::hitcpu::CpuState;
use crate::glue::insn_slot::c_init_optinsn_slots;
use crate::hit::{self, HitArch, Skip};
#[cfg(CONFIG_OPTPROBES)]
use crate::store::Aggr;
use crate::store::{flags_disabled, OptQueue, ProbeStore, KPROBE_FLAG_OPTIMIZED};
use crate::table;
use crate::text::KernelText as _;
use crate::x86::{self as dec, Emulation, MAX_INSN_SIZE};

#[cfg(CONFIG_OPTPROBES)]
use kernel::bindings::{
    optprobe_template_call, optprobe_template_clac, optprobe_template_end, optprobe_template_entry,
    optprobe_template_val,
};

/// What this layer needs from the kernel, as small abstractions over its C.
#[path = "services.rs"]
mod services;
use services::{perf_text_poke, read_kernel, slots, tables};
use services::{text_poke, text_poke_bytes, text_poke_sync, TrapRegs};

/// `X86_EFLAGS_IF`.
const IF: usize = dec::X86_EFLAGS_IF as usize;
/// The most breakpoints `disarm_kprobes` writes back in one session of the poking mm (with
/// interrupts disabled throughout).
const DISARM_CHUNK: usize = 64;
/// `MCOUNT_INSN_SIZE`: the size of an ftrace site.
const MCOUNT_INSN_SIZE: usize = 5;

/// The Kconfig switches and CPU features the decisions depend on.
fn config() -> dec::Config {
    dec::Config {
        preemption: cfg!(CONFIG_PREEMPTION),
        cfi_clang: cfg!(CONFIG_CFI_CLANG),
        kgdb: cfg!(CONFIG_KGDB),
        no_jump_tables: cfg!(CONFIG_MITIGATION_RETPOLINE) || cfg!(CONFIG_X86_KERNEL_IBT),
        ibt: cfg!(CONFIG_X86_KERNEL_IBT),
        smap: services::smap(),
    }
}

/// The `struct optimized_kprobe` around aggregate `ap` (`kp` is its first member).
#[cfg(CONFIG_OPTPROBES)]
#[inline(always)]
fn op_of(ap: Kp) -> *mut bindings::optimized_kprobe {
    ap.as_ptr().cast()
}

/// `p->ainsn`.
#[inline(always)]
fn ainsn(p: Kp) -> *mut bindings::arch_specific_insn {
    // SAFETY: `p` is live; only the field's address is formed.
    unsafe { addr_of_mut!((*p.as_ptr()).ainsn) }
}

/// What the decisions read from the running kernel (`crate::x86::KernelText`), for probes
/// being prepared under `kprobe_mutex`: one for each decision (`Text::new(s)`).
///
/// The decisions read the text an instruction at a time, as C's decoder does straight from
/// the text; here each read is a `copy_from_kernel_nofault()`, so the bytes are copied a
/// window of [`TEXT_WINDOW`] at a time and instructions are served from it. The window lives
/// as long as one decision: the length of an instruction never changes under it (text
/// patching replaces an instruction with one of the same length, or with int3 that `recover`
/// undoes from the probe table, which the decision reads per address).
struct Text<'k> {
    /// The platform of the call: a registration batch's has its symbol answers.
    k: &'k Kernel,
    /// The address of the window's first byte (0: empty).
    base: Cell<usize>,
    /// The text at `base`.
    window: Cell<[u8; TEXT_WINDOW]>,
}

/// Bytes of text copied at once by [`Text`].
const TEXT_WINDOW: usize = 64;

impl<'k> Text<'k> {
    fn new(k: &'k Kernel) -> Self {
        Self {
            k,
            base: Cell::new(0),
            window: Cell::new([0; TEXT_WINDOW]),
        }
    }

    /// The [`MAX_INSN_SIZE`] bytes of text at `addr`, from the window, which is refilled at
    /// `addr` when it does not hold them; `None` if they cannot be read. Where a window does
    /// not fit (the end of mapped text), only the instruction's bytes are read, as before.
    fn read(&self, addr: usize) -> Option<[u8; MAX_INSN_SIZE]> {
        let base = self.base.get();
        let off = addr.wrapping_sub(base);
        if base == 0 || off > TEXT_WINDOW - MAX_INSN_SIZE {
            let Some(window) = read_kernel::<TEXT_WINDOW>(addr) else {
                return read_kernel::<MAX_INSN_SIZE>(addr);
            };
            self.window.set(window);
            self.base.set(addr);
            return window.first_chunk::<MAX_INSN_SIZE>().copied();
        }
        let cells: &Cell<[u8]> = &self.window;
        let mut buf = [0u8; MAX_INSN_SIZE];
        for (b, c) in buf.iter_mut().zip(cells.as_slice_of_cells().get(off..)?) {
            *b = c.get();
        }
        Some(buf)
    }

    /// `__recover_optprobed_insn()`: the bytes at `addr` if the jump of an optimized (or
    /// unoptimizing) probe covers them.
    #[cfg(CONFIG_OPTPROBES)]
    fn recover_optprobed(&self, addr: usize) -> Option<Option<[u8; MAX_INSN_SIZE]>> {
        for i in 0..dec::JMP32_INSN_SIZE {
            let Some(kp) = table::get_kprobe(&KERNEL, addr.wrapping_sub(i)) else {
                continue;
            };
            if KERNEL.flags(kp) & KPROBE_FLAG_OPTIMIZED == 0 {
                continue;
            }
            let Some(ap) = Aggr::of(&KERNEL, kp) else {
                continue;
            };
            if !(KERNEL.op_list_empty(ap) || crate::optimizer::optprobe_queued_unopt(&KERNEL, ap)) {
                continue;
            }
            let Some(mut buf) = self.read(addr) else {
                return Some(None);
            };
            let op = op_of(kp);
            // SAFETY: `kp` is a hashed aggregate, so an optimized_kprobe; kprobe_mutex held.
            let (opcode, copied) = unsafe { ((*kp.as_ptr()).opcode, (*op).optinsn.copied_insn) };
            dec::recover_optprobed_insn(
                &mut buf,
                addr as u64,
                KERNEL.addr(kp) as u64,
                opcode,
                &copied,
            );
            return Some(Some(buf));
        }
        None
    }
}

impl dec::KernelText for Text<'_> {
    fn displacement_does_not_fit(&self, newdisp: i64) {
        services::pr_displacement_does_not_fit(newdisp);
    }
    fn recover(&self, addr: u64) -> Option<[u8; MAX_INSN_SIZE]> {
        let addr = addr as usize;
        #[cfg(CONFIG_OPTPROBES)]
        if let Some(found) = self.recover_optprobed(addr) {
            return found;
        }
        let kp = table::get_kprobe(&KERNEL, addr);
        let ftrace = self.k.ftrace_location(addr) == addr;
        let mut buf = self.read(addr)?;
        // SAFETY: a hashed probe is live under kprobe_mutex.
        let opcode = kp.map(|kp| unsafe { (*kp.as_ptr()).opcode });
        dec::recover_probed_insn(&mut buf, ftrace, opcode);
        Some(buf)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<dec::SymbolSpan> {
        self.k
            .kallsyms_lookup_size_offset(addr as usize)
            .map(|(size, offset)| dec::SymbolSpan {
                size: size as u64,
                offset: offset as u64,
            })
    }
    fn search_exception_tables(&self, addr: u64) -> bool {
        tables::exception_at(addr as usize)
    }
    fn is_cfi_trap(&self, addr: u64) -> bool {
        tables::cfi_trap_at(addr as usize)
    }
    fn kgdb_has_hit_break(&self, addr: u64) -> bool {
        tables::kgdb_break_at(addr as usize)
    }
    fn alternatives_text_reserved(&self, start: u64, end: u64) -> bool {
        tables::alternatives_reserved(start as usize, end as usize)
    }
    fn text_reserved(&self, start: u64, end: u64) -> bool {
        tables::text_reserved(start as usize, end as usize)
    }
    fn in_entry_text(&self, addr: u64) -> bool {
        tables::in_entry_text(addr as usize)
    }
    fn armed_kprobe_at(&self, addr: u64) -> bool {
        table::get_kprobe(&KERNEL, addr as usize)
            .is_some_and(|p| !crate::optimizer::kprobe_disarmed(&KERNEL, p))
    }
}

/// The emulation stored in `p->ainsn` by [`store_emulation`].
#[inline(always)]
fn load_emulation(a: &bindings::arch_specific_insn, kind: EmulateKind) -> Emulation {
    // SAFETY: each union read: every member is plain bytes, and `store_emulation` wrote the
    // member this kind reads.
    unsafe {
        match kind {
            EmulateKind::IfModifiers => Emulation::IfModifier(a.__bindgen_anon_1.opcode),
            EmulateKind::Ret => Emulation::Ret,
            EmulateKind::Call => Emulation::Call { rel: a.rel32 },
            EmulateKind::Jmp => Emulation::Jmp { rel: a.rel32 },
            EmulateKind::Jcc => Emulation::Jcc {
                cond: a.__bindgen_anon_1.jcc.type_,
                rel: a.rel32,
            },
            EmulateKind::Loop => Emulation::Loop {
                kind: a.__bindgen_anon_1.loop_.type_,
                address_bits: a.__bindgen_anon_1.loop_.asize,
                rel: a.rel32,
            },
            EmulateKind::CallIndirect => Emulation::CallIndirect {
                reg: a.__bindgen_anon_1.indirect.reg,
            },
            EmulateKind::JmpIndirect => Emulation::JmpIndirect {
                reg: a.__bindgen_anon_1.indirect.reg,
            },
        }
    }
}

/// Which `kprobe_emulate_*` function runs a probe's instruction.
#[derive(Clone, Copy)]
enum EmulateKind {
    IfModifiers,
    Ret,
    Call,
    Jmp,
    Jcc,
    Loop,
    CallIndirect,
    JmpIndirect,
}

/// `p->ainsn.emulate_op` and its operands for `e`, as `prepare_emulation()` sets them.
fn store_emulation(a: &mut bindings::arch_specific_insn, e: Emulation) {
    type Op = unsafe extern "C" fn(*mut bindings::kprobe, *mut bindings::pt_regs);
    let op: Option<Op> = match e {
        Emulation::None => None,
        Emulation::IfModifier(opcode) => {
            a.__bindgen_anon_1.opcode = opcode;
            Some(kprobe_emulate_ifmodifiers)
        }
        Emulation::Ret => Some(kprobe_emulate_ret),
        Emulation::Call { rel } => {
            a.rel32 = rel;
            Some(kprobe_emulate_call)
        }
        Emulation::Jmp { rel } => {
            a.rel32 = rel;
            Some(kprobe_emulate_jmp)
        }
        Emulation::Jcc { cond, rel } => {
            a.__bindgen_anon_1.jcc.type_ = cond;
            a.rel32 = rel;
            Some(kprobe_emulate_jcc)
        }
        Emulation::Loop {
            kind,
            address_bits,
            rel,
        } => {
            a.__bindgen_anon_1.loop_.type_ = kind;
            a.__bindgen_anon_1.loop_.asize = address_bits;
            a.rel32 = rel;
            Some(kprobe_emulate_loop)
        }
        Emulation::CallIndirect { reg } => {
            a.__bindgen_anon_1.indirect.reg = reg;
            Some(kprobe_emulate_call_indirect)
        }
        Emulation::JmpIndirect { reg } => {
            a.__bindgen_anon_1.indirect.reg = reg;
            Some(kprobe_emulate_jmp_indirect)
        }
    };
    a.emulate_op = op;
}

/// The two stack slots an emulation may touch: the one below the trapped context's stack
/// pointer (`int3_emulate_push()`, a call) and the one at it (`int3_emulate_pop()`, a ret).
///
/// # Invariants
///
/// `sp` is the stack pointer of the int3 frame this value was made for, and that trap is being
/// handled while the value lives: the int3 entry leaves the slot below `sp` writable for the
/// emulated push, and the slot at `sp` is the interrupted context's top of stack. Other
/// addresses are never dereferenced.
struct KernelStack {
    sp: u64,
}

impl KernelStack {
    /// The stack of the int3 frame whose stack pointer is `sp`.
    ///
    /// # Safety
    ///
    /// `sp` is the stack pointer of the int3 frame being handled, and the value is dropped
    /// before that handler returns.
    #[inline(always)]
    unsafe fn new(sp: u64) -> Self {
        // INVARIANT: as the caller promises.
        KernelStack { sp }
    }
}

impl dec::Stack for KernelStack {
    #[inline(always)]
    fn write(&mut self, addr: u64, val: u64) {
        // The emulators push once, below the stack pointer; nothing else is written.
        if addr != self.sp.wrapping_sub(8) {
            return;
        }
        // SAFETY: the slot below the trapped stack pointer, which the int3 entry leaves free
        // for exactly this push (type invariant).
        unsafe { ptr::write(addr as *mut u64, val) };
    }
    #[inline(always)]
    fn read(&mut self, addr: u64) -> u64 {
        // The emulators pop once, at the stack pointer; nothing else is read.
        if addr != self.sp {
            return 0;
        }
        // SAFETY: the interrupted context's top of stack (type invariant).
        unsafe { ptr::read(addr as *const u64) }
    }
}

/// The trap frame as the emulators see it: each reads and writes only the fields it uses.
struct EmuFrame(TrapRegs);

macro_rules! gpr_fields {
    ($($n:literal => $f:ident),* $(,)?) => {
        impl dec::RegsAccess for EmuFrame {
            #[inline(always)]
            fn ip(&self) -> u64 {
                self.0.ip() as u64
            }
            #[inline(always)]
            fn set_ip(&mut self, ip: u64) {
                self.0.set_ip(ip as usize);
            }
            #[inline(always)]
            fn flags(&self) -> u64 {
                self.0.flags() as u64
            }
            #[inline(always)]
            fn set_flags(&mut self, flags: u64) {
                self.0.set_flags(flags as usize);
            }
            #[inline(always)]
            fn gpr(&self, n: u8) -> u64 {
                let p = self.0.as_ptr();
                // SAFETY: a live trap frame (`TrapRegs` invariant); raw place reads.
                unsafe {
                    match n {
                        $($n => (*p).$f as u64,)*
                        _ => 0,
                    }
                }
            }
            #[inline(always)]
            fn set_gpr(&mut self, n: u8, val: u64) {
                let p = self.0.as_ptr();
                // SAFETY: as above; this trap's handler owns the frame.
                unsafe {
                    match n {
                        $($n => (*p).$f = val as usize,)*
                        _ => {}
                    }
                }
            }
        }
    };
}

// `addrmode_regoffs[]`: the ModRM/REX register numbers.
gpr_fields! {
    0 => ax, 1 => cx, 2 => dx, 3 => bx, 4 => sp, 5 => bp, 6 => si, 7 => di,
    8 => r8, 9 => r9, 10 => r10, 11 => r11, 12 => r12, 13 => r13, 14 => r14, 15 => r15,
}

/// Runs emulation `e` of a `size`-byte instruction on `regs` (`p->ainsn.emulate_op`), inlined
/// into each `kprobe_emulate_*` so that each is specialised to its instruction class.
///
/// # Safety
///
/// `regs` is the trap frame of the int3 that hit the probe, owned by this trap.
#[inline(always)]
unsafe fn run_emulation(e: Emulation, size: u8, regs: *mut bindings::pt_regs) {
    // SAFETY: the int3's frame, ours until the handler returns (`# Safety`).
    let mut frame = EmuFrame(unsafe { TrapRegs::new(regs) });
    let sp = dec::RegsAccess::gpr(&frame, 4);
    // SAFETY: `sp` is the stack pointer of the int3 frame this handler runs for (`# Safety`);
    // the value is dropped before it returns.
    let mut stack = unsafe { KernelStack::new(sp) };
    dec::emulate(e, size, &mut frame, &mut stack);
}

macro_rules! emulators {
    ($($(#[$m:meta])* $name:ident => $kind:ident;)*) => {
        $(
            nokprobe! {
                $(#[$m])*
                ///
                /// # Safety
                ///
                /// `p` is the probe that hit and `regs` the int3 trap frame.
                unsafe extern "C" fn $name(p: *mut bindings::kprobe, regs: *mut bindings::pt_regs) {
                    // SAFETY: `p` is live while it is the current probe (`# Safety`).
                    let a = unsafe { &(*p).ainsn };
                    let e = load_emulation(a, EmulateKind::$kind);
                    // SAFETY: as said.
                    unsafe { run_emulation(e, a.size, regs) };
                }
            }
        )*
    };
}

emulators! {
    /// `kprobe_emulate_ifmodifiers()`: cli, sti, pushf, popf.
    kprobe_emulate_ifmodifiers => IfModifiers;
    /// `kprobe_emulate_ret()`.
    kprobe_emulate_ret => Ret;
    /// `kprobe_emulate_call()`.
    kprobe_emulate_call => Call;
    /// `kprobe_emulate_jmp()`.
    kprobe_emulate_jmp => Jmp;
    /// `kprobe_emulate_jcc()`.
    kprobe_emulate_jcc => Jcc;
    /// `kprobe_emulate_loop()`: loop, loope, loopne, jrcxz.
    kprobe_emulate_loop => Loop;
    /// `kprobe_emulate_call_indirect()`.
    kprobe_emulate_call_indirect => CallIndirect;
    /// `kprobe_emulate_jmp_indirect()`.
    kprobe_emulate_jmp_indirect => JmpIndirect;
}

/// The x86_64 arch.
pub struct X86;

impl ArchHooks<Kernel> for X86 {
    const OPTPROBES: bool = cfg!(CONFIG_OPTPROBES);
    const KPROBES_ON_FTRACE: bool = cfg!(CONFIG_KPROBES_ON_FTRACE);
    const OPCODE_SIZE: usize = 1;
    const MAX_OPTIMIZED_LENGTH: usize = if cfg!(CONFIG_OPTPROBES) {
        dec::MAX_OPTIMIZED_LENGTH
    } else {
        0
    };

    fn prepare_kprobe(s: &Kernel, p: Kp) -> Result {
        let addr = s.addr(p);
        let cfg = config();
        // Upstream's order of refusals: alternatives, can_probe, then the slot.
        dec::check_kprobe(&Text::new(s), &cfg, addr as u64)
            .map_err(|e| Errno::from_neg(e).unwrap_or(Errno::EINVAL))?;
        let a = ainsn(p);
        // SAFETY: `p` is being registered under kprobe_mutex: nobody else uses `ainsn`; all
        // zero is a valid `arch_specific_insn` (memset in C).
        unsafe { ptr::write_bytes(a, 0, 1) };
        let slot = slots::get();
        if slot.is_null() {
            return Err(Errno::ENOMEM);
        }
        let prep = match dec::copy_kprobe(
            &Text::new(s),
            &cfg,
            addr as u64,
            slot as u64,
            s.has_post_handler(p),
        ) {
            Ok(prep) => prep,
            Err(e) => {
                // SAFETY: the slot was just taken and never used.
                unsafe { slots::free(slot, false) };
                return Err(Errno::from_neg(e).unwrap_or(Errno::EINVAL));
            }
        };
        // SAFETY: as for the memset; `a` is valid and not otherwise referenced.
        let a = unsafe { &mut *a };
        a.insn = slot;
        a.size = prep.size;
        a.set_boostable(prep.boostable.into());
        store_emulation(a, prep.emulation);
        a.tp_len = prep.len as c_int;
        // SAFETY: `p` is live and not yet armed.
        unsafe { (*p.as_ptr()).opcode = prep.opcode };
        let bytes = prep.slot.get(..prep.len).unwrap_or(&[]);
        perf_text_poke(slot as usize, &[], bytes);
        // SAFETY: the slot is ours and not yet reachable; text_mutex held by the core.
        unsafe { text_poke(slot as usize, bytes) };
        Ok(())
    }

    fn arm_kprobe(s: &Kernel, p: Kp) {
        let addr = s.addr(p);
        let int3 = [dec::INT3_INSN_OPCODE];
        // SAFETY: `addr` is the prepared probe's instruction; text_mutex held.
        unsafe { text_poke(addr, &int3) };
        text_poke_sync();
        // SAFETY: `p` is live.
        let opcode = unsafe { (*p.as_ptr()).opcode };
        perf_text_poke(addr, &[opcode], &int3);
    }

    fn disarm_kprobe(s: &Kernel, p: Kp) {
        let addr = s.addr(p);
        // SAFETY: `p` is live.
        let opcode = [unsafe { (*p.as_ptr()).opcode }];
        perf_text_poke(addr, &[dec::INT3_INSN_OPCODE], &opcode);
        // SAFETY: restores the byte the breakpoint replaced; text_mutex held.
        unsafe { text_poke(addr, &opcode) };
        text_poke_sync();
    }

    const BATCHES_DISARM: bool = true;

    /// The breakpoints' original bytes written back [`DISARM_CHUNK`] at a time, each chunk in one
    /// session of the poking mm (`text_poke_bytes()`; C: one `text_poke()` per probe, each
    /// loading the poking mm, mapping its page and flushing), and one `text_poke_sync()` for all
    /// (C: one per probe). Each breakpoint becomes its original byte in one store, as with
    /// `disarm_kprobe`; a CPU that still traps on it before the synchronisation finds its probe,
    /// still in the hash.
    fn disarm_kprobes(s: &Kernel, probes: impl Iterator<Item = Kp>) {
        let mut addrs = [0usize; DISARM_CHUNK];
        let mut bytes = [0u8; DISARM_CHUNK];
        let mut n = 0;
        let write = |addrs: &[usize], bytes: &[u8]| {
            // SAFETY: each address is the breakpoint of a probe being disarmed, and its byte
            // the one that breakpoint replaced; text_mutex held; synchronised below.
            unsafe { text_poke_bytes(addrs, bytes) };
        };
        for p in probes {
            let addr = s.addr(p);
            // SAFETY: `p` is live.
            let opcode = unsafe { (*p.as_ptr()).opcode };
            perf_text_poke(addr, &[dec::INT3_INSN_OPCODE], &[opcode]);
            if n == DISARM_CHUNK {
                write(&addrs, &bytes);
                n = 0;
            }
            addrs[n] = addr;
            bytes[n] = opcode;
            n += 1;
        }
        write(&addrs[..n], &bytes[..n]);
        text_poke_sync();
    }

    fn remove_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` is no longer reachable by new hits; nobody else uses `ainsn`.
        let a = unsafe { &mut *ainsn(p) };
        if a.insn.is_null() {
            return;
        }
        let len = usize::try_from(a.tp_len).unwrap_or(0);
        // SAFETY: the slot holds `tp_len` bytes we poked.
        let old = unsafe { core::slice::from_raw_parts(a.insn, len) };
        perf_text_poke(a.insn as usize, old, &[]);
        // SAFETY: the slot came from the kprobe instruction cache and the probe is gone.
        unsafe { slots::free(a.insn, a.boostable() != 0) };
        a.insn = ptr::null_mut();
    }

    fn trampoline_kprobe(_s: &Kernel, _p: Kp) -> bool {
        false
    }

    fn init_kprobes(_s: &Kernel) -> Result {
        Ok(())
    }

    fn populate_kprobe_blacklist(
        _s: &Kernel,
        mut add_area: impl FnMut(usize, usize) -> Result,
    ) -> Result {
        let (start, end) = tables::entry_text();
        add_area(start, end)
    }

    fn adjust_kprobe_addr(_s: &Kernel, addr: usize, offset: usize) -> Option<(usize, bool)> {
        let first = read_kernel::<4>(addr).map(u32::from_le_bytes);
        dec::adjust_kprobe_addr(&config(), addr as u64, offset as u64, first)
            .map(|(a, entry)| (a as usize, entry))
    }

    fn init_kretprobe_blacklist(_s: &Kernel) {
        c_init_kretprobe_blacklist();
    }

    fn init_optinsn_slots(_s: &Kernel) {
        c_init_optinsn_slots();
    }

    fn in_kretprobe_blacklist(_s: &Kernel, addr: usize) -> bool {
        c_in_kretprobe_blacklist(addr)
    }

    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn prepare_kprobe_ftrace(_s: &Kernel, p: Kp) -> Result {
        // SAFETY: `p` is being registered under kprobe_mutex.
        let a = unsafe { &mut *ainsn(p) };
        a.insn = ptr::null_mut();
        a.set_boostable(0);
        Ok(())
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn prepared_optinsn(_s: &Kernel, ap: Aggr<Kp>) -> bool {
        // SAFETY: `ap` is an optimized_kprobe; `size` is written under kprobe_mutex, held.
        unsafe { (*op_of(ap.kp())).optinsn.size != 0 }
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn check_optimized_kprobe(s: &Kernel, ap: Aggr<Kp>) -> Result {
        let ap = ap.kp();
        // SAFETY: as above.
        let size = unsafe { (*op_of(ap)).optinsn.size };
        dec::check_optimized_kprobe(&Text::new(s), s.addr(ap) as u64, size)
            .map_err(|e| Errno::from_neg(e).unwrap_or(Errno::EINVAL))
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn prepare_optimized_kprobe(s: &Kernel, ap: Aggr<Kp>, _orig: Kp) {
        opt::prepare(s, ap.kp());
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn remove_optimized_kprobe(_s: &Kernel, ap: Aggr<Kp>) {
        opt::remove(ap.kp(), true);
    }

    fn optimize_kprobes(s: &Kernel) {
        #[cfg(CONFIG_OPTPROBES)]
        s.queue_for_each_safe(OptQueue::Optimizing, |ap| {
            opt::install_jump(s, ap.kp());
            s.queue_del_init(ap);
        });
        #[cfg(not(CONFIG_OPTPROBES))]
        let _ = s;
    }

    fn unoptimize_kprobes(s: &Kernel) {
        #[cfg(CONFIG_OPTPROBES)]
        s.queue_for_each_safe(OptQueue::Unoptimizing, |ap| {
            Self::unoptimize_kprobe(s, ap);
            s.queue_move(ap, OptQueue::Freeing);
        });
        #[cfg(not(CONFIG_OPTPROBES))]
        let _ = s;
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn unoptimize_kprobe(s: &Kernel, ap: Aggr<Kp>) {
        opt::remove_jump(s, ap.kp());
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn within_optimized_kprobe(s: &Kernel, ap: Aggr<Kp>, addr: usize) -> bool {
        let ap = ap.kp();
        // SAFETY: as above.
        let size = unsafe { (*op_of(ap)).optinsn.size };
        let start = s.addr(ap);
        start <= addr && addr < start.wrapping_add(size)
    }
}

/// Jump optimization: detours and the jumps into them.
#[cfg(CONFIG_OPTPROBES)]
mod opt {
    use super::*;

    /// The largest detour: `MAX_OPTINSN_SIZE` stays well below it (about 120 bytes).
    const DETOUR_BUF: usize = 256;

    /// The length of the detour template (`TMPL_END_IDX`): where a detour's copied
    /// instructions start. Two symbol addresses, no slice built, for the probe-hit path.
    #[inline(always)]
    pub(super) fn template_len() -> usize {
        (addr_of!(optprobe_template_end) as usize)
            .wrapping_sub(addr_of!(optprobe_template_entry) as usize)
    }

    /// The detour template of `rust_glue.c` and the offsets of its holes.
    pub(super) fn template() -> dec::Template<'static> {
        // Only the addresses of the assembler labels are taken.
        let (entry, clac, val, call, end) = (
            addr_of!(optprobe_template_entry) as usize,
            addr_of!(optprobe_template_clac) as usize,
            addr_of!(optprobe_template_val) as usize,
            addr_of!(optprobe_template_call) as usize,
            addr_of!(optprobe_template_end) as usize,
        );
        let len = end.saturating_sub(entry);
        // SAFETY: `entry..entry + len` is the template's code in .rodata, immutable and static.
        let code = unsafe { core::slice::from_raw_parts(entry as *const u8, len) };
        dec::Template {
            code,
            clac: clac.wrapping_sub(entry),
            val: val.wrapping_sub(entry),
            call: call.wrapping_sub(entry),
            callback: optimized_callback as *const () as usize as u64,
        }
    }

    /// `arch_prepare_optimized_kprobe()`: builds the detour of `ap`; on failure `ap` keeps no
    /// detour and stays unoptimizable.
    pub(super) fn prepare(s: &Kernel, ap: Kp) {
        let addr = s.addr(ap) as u64;
        let cfg = config();
        if !dec::can_optimize(&Text::new(s), &cfg, addr) {
            return;
        }
        let tmpl = template();
        let mut buf = [0u8; DETOUR_BUF];
        let Some(buf) = buf.get_mut(..tmpl.max_optinsn_size()) else {
            return;
        };
        let slot = slots::get_opt();
        if slot.is_null() {
            return;
        }
        let op = op_of(ap);
        // SAFETY: `op` is live; kprobe_mutex held.
        unsafe { (*op).optinsn.insn = slot };
        match dec::build_detour(
            &Text::new(s),
            &cfg,
            addr,
            slot as u64,
            op as u64,
            &tmpl,
            buf,
        ) {
            Ok(o) => {
                // SAFETY: as above.
                unsafe { (*op).optinsn.size = o.size };
                let bytes = buf.get(..o.len).unwrap_or(&[]);
                perf_text_poke(slot as usize, &[], bytes);
                // SAFETY: the slot is ours and not reachable until the jump is installed.
                unsafe { text_poke(slot as usize, bytes) };
            }
            Err(_) => remove(ap, false),
        }
    }

    /// `__arch_remove_optimized_kprobe(op, dirty)`.
    pub(super) fn remove(ap: Kp, dirty: bool) {
        let op = op_of(ap);
        // SAFETY: `op` is live; kprobe_mutex held.
        let (slot, size) = unsafe { ((*op).optinsn.insn, (*op).optinsn.size) };
        if slot.is_null() {
            return;
        }
        if dirty {
            let len = template_len()
                .wrapping_add(size)
                .wrapping_add(dec::JMP32_INSN_SIZE);
            // SAFETY: the slot holds the `len` bytes of the detour.
            let old = unsafe { core::slice::from_raw_parts(slot, len) };
            perf_text_poke(slot as usize, old, &[]);
        }
        // SAFETY: the slot came from the optprobe cache and the detour no longer runs.
        unsafe { slots::free_opt(slot, dirty) };
        // SAFETY: as above.
        unsafe {
            (*op).optinsn.insn = ptr::null_mut();
            (*op).optinsn.size = 0;
        }
    }

    /// `arch_optimize_kprobes()` for one probe: its int3 becomes a jump into the detour.
    pub(super) fn install_jump(s: &Kernel, ap: Kp) {
        let addr = s.addr(ap);
        let op = op_of(ap);
        // SAFETY: as above.
        let slot = unsafe { (*op).optinsn.insn } as usize;
        let rel = slot.wrapping_sub(addr.wrapping_add(dec::JMP32_INSN_SIZE)) as u32;
        services::warn_optimize_disabled(flags_disabled(s.flags(ap)));
        // The four bytes after the int3 that the jump overwrites.
        let after = read_kernel::<{ dec::DISP32_SIZE }>(addr.wrapping_add(1)).unwrap_or_default();
        // SAFETY: as above.
        unsafe { (*op).optinsn.copied_insn = after };
        let r = rel.to_le_bytes();
        let jmp = [dec::JMP32_INSN_OPCODE, r[0], r[1], r[2], r[3]];
        // SAFETY: the probe is armed (int3 in place) and the core waited for a task-RCU grace
        // period, so nothing runs the four bytes after it; text_mutex held.
        unsafe { services::text_poke_bp(addr, &jmp) };
    }

    /// `arch_unoptimize_kprobe()`: the jump goes back to an int3 and the original bytes.
    pub(super) fn remove_jump(s: &Kernel, ap: Kp) {
        let addr = s.addr(ap);
        let op = op_of(ap);
        // SAFETY: as above.
        let copied = unsafe { (*op).optinsn.copied_insn };
        let new = [
            dec::INT3_INSN_OPCODE,
            copied[0],
            copied[1],
            copied[2],
            copied[3],
        ];
        let old = read_kernel::<{ dec::JMP32_INSN_SIZE }>(addr).unwrap_or_default();
        // SAFETY: first the int3, synchronized, then the bytes behind it, which no CPU runs
        // once the int3 is seen everywhere; text_mutex held.
        unsafe { text_poke(addr, &new[..1]) };
        text_poke_sync();
        // SAFETY: as said.
        unsafe { text_poke(addr.wrapping_add(1), &new[1..]) };
        text_poke_sync();
        perf_text_poke(addr, &old, &new);
    }
}

/// This CPU's kprobe state (`kprobe_ctlblk` and `current_kprobe`), for the state machine.
struct Cpu {
    state: CpuState<bindings::kprobe_ctlblk>,
}

impl Cpu {
    /// This CPU's state.
    ///
    /// # Safety
    ///
    /// Preemption is disabled until the value is dropped.
    #[inline(always)]
    unsafe fn this() -> Self {
        // SAFETY: both are DEFINE_PER_CPU variables, this CPU's instances while the caller
        // keeps preemption off (`# Safety`).
        unsafe {
            Cpu {
                state: CpuState::new(
                    this_cpu_ptr(addr_of_mut!(bindings::kprobe_ctlblk)),
                    this_cpu_ptr(addr_of_mut!(bindings::current_kprobe)),
                ),
            }
        }
    }
}

impl HitArch for Cpu {
    type Probe = Kp;
    type Regs = TrapRegs;
    const REENTER_WHILE_STEPPING: bool = true;

    hit_arch_common!();

    #[inline(always)]
    fn set_current_kprobe(&self, p: Kp, regs: TrapRegs) {
        self.set_current(Some(p));
        let flags = regs.flags() & IF;
        kcb!(self.kprobe_old_flags = flags);
        kcb!(self.kprobe_saved_flags = flags);
    }
    #[inline(always)]
    fn status(&self) -> u32 {
        kcb!(self.kprobe_status) as u32
    }
    #[inline(always)]
    fn set_status(&self, status: u32) {
        kcb!(self.kprobe_status = status as usize);
    }
    #[inline(always)]
    fn save_previous(&self) {
        let cur = self.current().map_or(ptr::null_mut(), Kp::as_ptr);
        kcb!(self.prev_kprobe.kp = cur);
        kcb!(self.prev_kprobe.status = kcb!(self.kprobe_status));
        kcb!(self.prev_kprobe.old_flags = kcb!(self.kprobe_old_flags));
        kcb!(self.prev_kprobe.saved_flags = kcb!(self.kprobe_saved_flags));
    }
    #[inline(always)]
    fn restore_previous(&self) {
        let prev = kcb!(self.prev_kprobe.kp);
        kcb!(self.kprobe_status = kcb!(self.prev_kprobe.status));
        kcb!(self.kprobe_old_flags = kcb!(self.prev_kprobe.old_flags));
        kcb!(self.kprobe_saved_flags = kcb!(self.prev_kprobe.saved_flags));
        self.state.set_current_raw(prev);
    }
    #[inline(always)]
    fn skip_step(&self, p: Kp, regs: TrapRegs, _reenter: bool) -> Skip {
        #[cfg(CONFIG_OPTPROBES)]
        if KERNEL.flags(p) & KPROBE_FLAG_OPTIMIZED != 0 {
            // setup_detour_execution(): run the copied instructions of the detour.
            // SAFETY: an optimized probe is an optimized_kprobe with a prepared detour.
            let slot = unsafe { (*op_of(p)).optinsn.insn } as usize;
            regs.set_ip(slot.wrapping_add(opt::template_len()));
            return Skip::Detour;
        }
        // SAFETY: `p` is live while it hits; a raw place read of a bitfield unit.
        let boostable = unsafe { bindings::arch_specific_insn::boostable_raw(ainsn(p)) } != 0;
        if !cfg!(CONFIG_PREEMPTION) && boostable {
            // SAFETY: as above.
            regs.set_ip(unsafe { (*ainsn(p)).insn } as usize);
            return Skip::Boost;
        }
        Skip::No
    }
    #[inline(always)]
    fn emulates(&self, p: Kp) -> bool {
        // SAFETY: as above.
        unsafe { (*ainsn(p)).emulate_op.is_some() }
    }
    #[inline(always)]
    fn emulate(&self, p: Kp, regs: TrapRegs) {
        // SAFETY: as above; the emulator is one of ours, set by `prepare_kprobe`, and gets the
        // probe and the frame of this trap.
        unsafe {
            if let Some(f) = (*ainsn(p)).emulate_op {
                f(p.as_ptr(), regs.as_ptr());
            }
        }
    }
    #[inline(always)]
    fn start_step(&self, p: Kp, regs: TrapRegs) {
        regs.set_flags(regs.flags() & !IF);
        // SAFETY: as above.
        regs.set_ip(unsafe { (*ainsn(p)).insn } as usize);
    }
    #[inline(always)]
    fn in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        // SAFETY: as above.
        let slot = unsafe { (*ainsn(p)).insn } as usize;
        let ip = regs.ip();
        slot < ip && ip < slot.wrapping_add(MAX_INSN_SIZE)
    }
    #[inline(always)]
    fn finish_step(&self, p: Kp, regs: TrapRegs) {
        // resume_singlestep(): the int3 after the copy trapped; go on after the original.
        // SAFETY: as above.
        let slot = unsafe { (*ainsn(p)).insn } as usize;
        let orig = KERNEL.addr(p);
        regs.set_flags(regs.flags() | kcb!(self.kprobe_saved_flags));
        regs.set_ip(
            regs.ip()
                .wrapping_add(orig.wrapping_sub(slot))
                .wrapping_sub(dec::INT3_INSN_SIZE),
        );
    }
    #[inline(always)]
    fn faulted_in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        // SAFETY: as above.
        regs.ip() == unsafe { (*ainsn(p)).insn } as usize
    }
    #[inline(always)]
    fn unwind_fault(&self, p: Kp, regs: TrapRegs) {
        regs.set_ip(KERNEL.addr(p));
        regs.set_flags(regs.flags() | kcb!(self.kprobe_old_flags));
    }
    #[inline(always)]
    fn unrecoverable(&self, p: Kp) -> ! {
        // SAFETY: `p` is the live probe being stepped.
        unsafe { services::unrecoverable(p.as_ptr()) }
    }
    #[inline(always)]
    fn warn_bad_status(&self) {
        services::warn_bad_status();
    }
    #[inline(always)]
    fn warn_fault_status(&self) {
        services::warn_fault_status();
    }
    #[inline(always)]
    fn ip(&self, regs: TrapRegs) -> usize {
        regs.ip()
    }
    #[inline(always)]
    fn set_ip(&self, regs: TrapRegs, ip: usize) {
        regs.set_ip(ip);
    }
}

nokprobe! {
    /// `kprobe_int3_handler()`: called by the int3 trap (`do_int3()`) with interrupts off.
    /// Returns 1 if the trap was a kprobe's.
    ///
    /// # Safety
    ///
    /// `regs` is the trap frame of an int3 taken on this CPU, interrupts disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_int3_handler(regs: *mut bindings::pt_regs) -> c_int {
        // SAFETY: the int3's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        if regs.user_mode() {
            return 0;
        }
        let addr = regs.ip().wrapping_sub(dec::INT3_INSN_SIZE);
        // SAFETY: interrupts are off, so is preemption.
        let cpu = unsafe { Cpu::this() };
        if let Some(p) = table::get_kprobe(&KERNEL, addr) {
            c_int::from(hit::handle_hit(&cpu, p, regs))
        } else {
            // Otherwise not a kprobe's int3, unless it ends a step. As upstream 6.12 x86 (and
            // unlike older kernels and other arches), an int3 whose byte is gone is not retried
            // here: a probe's int3 is only removed while the probe is hashed, and the
            // text_poke_sync() after the removal waits for every CPU still in this handler.
            c_int::from(hit::step_done(&cpu, regs))
        }
    }
}

nokprobe! {
    /// `kprobe_fault_handler()`: a fault (or trap `trapnr`) while a probe is running on this
    /// CPU (`kprobe_page_fault()`, the trap handlers). Always 0: the fault is handled as usual.
    ///
    /// # Safety
    ///
    /// `regs` is the fault's trap frame; preemption is disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_fault_handler(
        regs: *mut bindings::pt_regs,
        _trapnr: c_int,
    ) -> c_int {
        // SAFETY: the fault's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is disabled (`# Safety`).
        let cpu = unsafe { Cpu::this() };
        c_int::from(hit::step_faulted(&cpu, regs))
    }
}

nokprobe! {
    /// `optimized_callback()`: called by a detour with the `pt_regs` it built.
    ///
    /// # Safety
    ///
    /// `op` is the optimized probe whose detour runs; `regs` the frame the detour built.
    #[cfg(CONFIG_OPTPROBES)]
    #[no_mangle]
    pub unsafe extern "C" fn optimized_callback(
        op: *mut bindings::optimized_kprobe,
        regs: *mut bindings::pt_regs,
    ) {
        // SAFETY: `op` is live while its detour can run (`# Safety`).
        let p = unsafe { Kp::from_raw(NonNull::new_unchecked(addr_of_mut!((*op).kp))) };
        // Possible while the probe waits to be unoptimized (`kprobe_disabled()`: DISABLED
        // or GONE).
        if flags_disabled(KERNEL.flags(p)) {
            return;
        }
        // The detour runs with preemption enabled (it does not cli).
        let _preempt = kernel::preempt::disable();
        // SAFETY: the frame the detour built, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is disabled until the end of the block.
        let cpu = unsafe { Cpu::this() };
        hit::optimized_hit(
            &cpu,
            p,
            regs,
            |regs| {
                // The detour pushed %rsp after one more word, and skipped cs and orig_ax.
                regs.set_sp(regs.sp().wrapping_add(core::mem::size_of::<usize>()));
                regs.set_cs(bindings::__KERNEL_CS as u16);
                regs.set_ip(KERNEL.addr(p).wrapping_add(dec::INT3_INSN_SIZE));
                regs.set_orig_ax(!0);
            },
            // SAFETY: `p` is the live aggregate whose detour runs.
            |p, regs| unsafe { crate::glue::exports::opt_pre_handler(p.as_ptr(), regs.as_ptr()) },
        );
    }
}

nokprobe! {
    /// `kprobe_ftrace_handler()`: the `ftrace_ops` callback of probes on ftrace sites.
    ///
    /// # Safety
    ///
    /// Called by ftrace for the site at `ip`, called from `parent_ip`, with `fregs` the saved
    /// registers (`FTRACE_OPS_FL_SAVE_REGS`).
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_ftrace_handler(
        ip: usize,
        parent_ip: usize,
        _ops: *mut bindings::ftrace_ops,
        fregs: *mut bindings::ftrace_regs,
    ) {
        // SAFETY: READ_ONCE of a flag ftrace sets when it dies.
        if unsafe { ptr::read_volatile(addr_of!(bindings::kprobe_ftrace_disabled)) } {
            return;
        }
        let Some(_recursion) = kernel::ftrace::RecursionGuard::try_lock(ip, parent_ip) else {
            return;
        };
        // SAFETY: the `ftrace_regs` of this call (`# Safety`).
        let raw = unsafe { kernel::ftrace::regs(fregs) };
        // NULL only without SAVE_REGS, which kprobes' ftrace_ops always ask for.
        let p = if raw.is_null() { None } else { table::get_kprobe(&KERNEL, ip) };
        if let Some(p) = p {
            // SAFETY: non-NULL, the registers of this call, ours until we return.
            let regs = unsafe { TrapRegs::new(raw) };
            // SAFETY: preemption is disabled while `_recursion` is held.
            let cpu = unsafe { Cpu::this() };
            hit::ftrace_hit(&cpu, p, regs, ip, dec::INT3_INSN_SIZE, MCOUNT_INSN_SIZE);
        }
    }
}

/// `alloc_insn_page()`: a page for instruction slots, read-only and executable.
///
/// # Safety
///
/// Called by the instruction-slot cache in process context.
#[no_mangle]
pub unsafe extern "C" fn alloc_insn_page() -> *mut c_void {
    services::alloc_rox_page()
}
