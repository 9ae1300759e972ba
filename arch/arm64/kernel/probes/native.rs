// SPDX-License-Identifier: GPL-2.0

//! The arm64 kprobes arch layer in Rust (`CONFIG_KPROBES_RUST_ARCH`): what upstream's
//! `arch/arm64/kernel/probes/kprobes.c` provides, and the kprobes side of `decode-insn.c` and
//! `simulate-insn.c`, on the pure decisions and simulators of [`crate::arm64`] and the core's
//! generic hit-path state machine ([`crate::hit`]).
//!
//! Constraints: mounted in the kprobes crate after [`crate::glue`], whose probe handles and
//! kernel services it uses. The hooks of [`Arm64`] run under the locks [`ArchHooks`] documents.
//! The C-linkage entry points (`kprobe_brk_handler`, `kprobe_ss_brk_handler`,
//! `kretprobe_brk_handler`, called by `call_el1_break_hook()` for the BRK immediates of kprobes;
//! `kprobe_fault_handler`, called by `kprobe_page_fault()`; `arch_prepare_kretprobe`, called by
//! the core's kretprobe pre-handler; the `rkp_arm64_simulate_*` simulators) run in exception
//! context with interrupts masked: they and everything they reach are in `.kprobes.text`
//! (`nokprobe!`) or inlined into it, never allocate, never sleep and contain no panic path.
//! What must be C is in `rust_glue.c`: the per-CPU state and wrappers of macros and linker
//! symbols. `kprobes_trampoline.S` (the kretprobe trampoline, one BRK) stays assembly; upstream's
//! `decode-insn.c` and `simulate-insn.c` are still built for uprobes where `CONFIG_UPROBES` is
//! set (their decisions are shared with it), and kprobes no longer call them.
//!
//! Design: [`Cpu`] is this CPU's `kprobe_ctlblk` and `current_kprobe`, and implements
//! [`HitArch`] with arm64's stepping: the probed instruction runs from a two-word slot followed
//! by a BRK with the single-step immediate, with every DAIF exception masked (no nesting), or is
//! simulated when it reads the PC. Upstream's state machine is followed, with the two later
//! fixes the Debian 6.12 tree carries (a probe hit while another steps is a recoverable
//! re-entry; a re-entry saves the outer probe's DAIF flags) and one more: a fault is handled as
//! the probed instruction's only when it was raised by the slot (upstream 6.12 handles any
//! fault while a probe steps; with every exception masked only the slot can raise one).

use core::ffi::{c_int, c_uint, c_void};
use core::ptr::{self, addr_of_mut};

use kernel::bindings;
use kernel::ffi::{c_long, c_ulong};

use crate::arch::ArchHooks;
use crate::arm64::{self as dec, Prepared, Simulator};
use crate::errno::{Errno, Result};
use crate::glue::blacklist::{c_in_kretprobe_blacklist, c_init_kretprobe_blacklist};
use crate::glue::handle::{Kernel, Kp, KERNEL};
use crate::glue::hitcpu::{CpuState, TrapRegs};
use crate::glue::insn_slot::c_init_optinsn_slots;
use crate::glue::insn_slot::slots;
use crate::hit::{self, HitArch, Skip};
use crate::store::ProbeStore;
use crate::table;
use crate::text::KernelText as _;

/// `DAIF_MASK`: every exception mask bit of PSTATE.
const DAIF_MASK: u64 =
    (bindings::PSR_D_BIT | bindings::PSR_A_BIT | bindings::PSR_I_BIT | bindings::PSR_F_BIT) as u64;
/// What a BRK hook returns when it handled the exception (`DBG_HOOK_HANDLED`).
const HANDLED: c_int = bindings::DBG_HOOK_HANDLED as c_int;
/// What a BRK hook returns when the exception is not its own (`DBG_HOOK_ERROR`).
const NOT_OURS: c_int = bindings::DBG_HOOK_ERROR as c_int;
/// The most areas `arch_populate_kprobe_blacklist()` adds.
const TEXT_AREAS: usize = 4;
/// The most breakpoints `disarm_kprobes` restores in one `stop_machine()`.
const DISARM_BATCH: usize = 64;

/// `p->ainsn.api`.
#[inline(always)]
fn api(p: Kp) -> *mut bindings::arch_probe_insn {
    // SAFETY: `p` is live; only the field's address is formed.
    unsafe { addr_of_mut!((*p.as_ptr()).ainsn.api) }
}

/// The slot of `p` (`p->ainsn.api.insn`), NULL for a simulated instruction.
#[inline(always)]
fn slot(p: Kp) -> *mut u32 {
    // SAFETY: `p` is live; a raw place read of a field only the registration writes.
    unsafe { (*api(p)).insn }
}

/// Reads the instruction word at `addr` (`le32_to_cpu(*addr)`), `None` if it cannot be read.
fn read_insn(addr: usize) -> Option<u32> {
    let mut word = [0u8; 4];
    // SAFETY: `word` is valid for 4 bytes of writes; the source is checked by the nofault copy.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(word.as_mut_ptr().cast(), addr as *const c_void, 4)
    };
    (ret == 0).then(|| u32::from_le_bytes(word))
}

/// What the decisions read from the running kernel, for probes being prepared under
/// `kprobe_mutex`.
struct Text<'k>(&'k Kernel);

impl dec::KernelText for Text<'_> {
    fn read_insn(&self, addr: u64) -> Option<u32> {
        read_insn(addr as usize)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<dec::SymbolSpan> {
        self.0
            .kallsyms_lookup_size_offset(addr as usize)
            .map(|(size, offset)| dec::SymbolSpan {
                size: size as u64,
                offset: offset as u64,
            })
    }
    fn search_exception_tables(&self, addr: u64) -> bool {
        // SAFETY: a read-only lookup in the exception tables; any address may be asked.
        unsafe { !bindings::search_exception_tables(addr as c_ulong).is_null() }
    }
}

/// `aarch64_insn_patch_text(&addr, &insn, 1)`: writes one instruction of live text, with every
/// other CPU stopped (`stop_machine()`), and makes every CPU see it.
///
/// # Safety
///
/// `addr` is a 4-byte aligned instruction of kernel text that no one else writes;
/// `text_mutex` and `cpus_read_lock()` are held.
unsafe fn patch_text(addr: usize, insn: u32) {
    let mut addrs = [addr as *mut c_void];
    let mut insns = [insn];
    // SAFETY: by the function's contract; the arrays hold one entry each, as `cnt` says.
    unsafe { bindings::aarch64_insn_patch_text(addrs.as_mut_ptr(), insns.as_mut_ptr(), 1) };
}

/// `aarch64_insn_patch_text(addrs, insns, cnt)`: writes `insns[i]` at `addrs[i]` for each `i`,
/// with every other CPU stopped once for all of them.
///
/// # Safety
///
/// As for [`patch_text`], for every address of `addrs`.
unsafe fn patch_texts(addrs: &mut [*mut c_void], insns: &mut [u32]) {
    let cnt = addrs.len().min(insns.len());
    if cnt == 0 {
        return;
    }
    // SAFETY: by the function's contract; both arrays hold at least `cnt` entries.
    unsafe {
        bindings::aarch64_insn_patch_text(addrs.as_mut_ptr(), insns.as_mut_ptr(), cnt as c_int)
    };
}

/// `aarch64_insn_patch_text_nosync(addr, insn)`: writes one instruction and cleans it to the
/// point of unification, without synchronising other CPUs.
///
/// # Safety
///
/// `addr` is a 4-byte aligned word of an instruction slot of ours that no CPU can execute yet.
unsafe fn patch_slot(addr: *mut u32, insn: u32) {
    // SAFETY: by the function's contract.
    unsafe { bindings::aarch64_insn_patch_text_nosync(addr.cast(), insn) };
}

/// This arch's fields of the trap frame.
impl TrapRegs {
    /// The general registers, sp, pc and pstate (`struct user_pt_regs`).
    #[inline(always)]
    fn user(self) -> *mut bindings::user_pt_regs {
        // SAFETY: a live frame (invariant); only the union member's address is formed.
        unsafe { addr_of_mut!((*self.as_ptr()).__bindgen_anon_1.user_regs) }
    }
    /// `regs->regs[n]`, `n` in 0..=30 (any other `n` reads 0).
    #[inline(always)]
    fn x(self, n: u32) -> u64 {
        if n > 30 {
            return 0;
        }
        // SAFETY: a live frame (invariant), `n` in bounds.
        unsafe { (*self.user()).regs[n as usize] }
    }
    /// `regs->regs[n] = v`, `n` in 0..=30 (any other `n` is ignored).
    #[inline(always)]
    fn set_x(self, n: u32, v: u64) {
        if n > 30 {
            return;
        }
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.user()).regs[n as usize] = v }
    }
    /// `regs->sp`.
    #[inline(always)]
    fn sp(self) -> u64 {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.user()).sp }
    }
    /// `instruction_pointer(regs)`.
    #[inline(always)]
    fn pc(self) -> usize {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.user()).pc as usize }
    }
    /// `instruction_pointer_set(regs, pc)`.
    #[inline(always)]
    fn set_pc(self, pc: usize) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.user()).pc = pc as u64 }
    }
    /// `regs->pstate`.
    #[inline(always)]
    fn pstate(self) -> u64 {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.user()).pstate }
    }
    /// `regs->pstate = v`.
    #[inline(always)]
    fn set_pstate(self, v: u64) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.user()).pstate = v }
    }
}

/// The frame as the simulators see it.
struct SimFrame(TrapRegs);

impl dec::Regs for SimFrame {
    #[inline(always)]
    fn x(&self, n: u32) -> u64 {
        self.0.x(n)
    }
    #[inline(always)]
    fn set_x(&mut self, n: u32, val: u64) {
        self.0.set_x(n, val);
    }
    #[inline(always)]
    fn sp(&self) -> u64 {
        self.0.sp()
    }
    #[inline(always)]
    fn pc(&self) -> u64 {
        self.0.pc() as u64
    }
    #[inline(always)]
    fn set_pc(&mut self, val: u64) {
        self.0.set_pc(val as usize);
    }
    #[inline(always)]
    fn pstate(&self) -> u64 {
        self.0.pstate()
    }
}

/// The literal pool as the literal loads read it: kernel memory, read without faulting.
struct Literals;

impl Literals {
    #[inline(always)]
    fn read(addr: u64, wide: bool) -> core::result::Result<u64, dec::Fault> {
        let mut val = 0;
        // SAFETY: `val` is a valid out-pointer; the NOKPROBE C function reads `addr` with
        // get_kernel_nofault().
        if unsafe { bindings::rkp_arm64_read_literal(addr as c_ulong, wide, &mut val) } {
            Ok(val)
        } else {
            Err(dec::Fault { addr })
        }
    }
}

impl dec::Memory for Literals {
    #[inline(always)]
    fn read_u32(&self, addr: u64) -> core::result::Result<u32, dec::Fault> {
        Self::read(addr, false).map(|v| v as u32)
    }
    #[inline(always)]
    fn read_u64(&self, addr: u64) -> core::result::Result<u64, dec::Fault> {
        Self::read(addr, true)
    }
}

/// Runs `simulator` for `opcode` probed at `addr` on `regs` (`p->ainsn.api.handler`), inlined
/// into each `rkp_arm64_simulate_*` so that each is specialised to its instruction class.
///
/// # Safety
///
/// `regs` is the BRK's frame, owned by this exception.
#[inline(always)]
unsafe fn run_simulator(
    simulator: Simulator,
    opcode: u32,
    addr: c_long,
    regs: *mut bindings::pt_regs,
) {
    // SAFETY: the BRK's frame, ours until the handler returns (`# Safety`).
    let mut frame = SimFrame(unsafe { TrapRegs::new(regs) });
    if let Err(fault) = dec::simulate(simulator, opcode, addr as u64, &mut frame, &Literals) {
        // C's READ_ONCE() of the literal would have oopsed here: say so and BUG().
        // SAFETY: logs two addresses and does not return.
        unsafe { bindings::rkp_arm64_literal_fault(addr as c_ulong, fault.addr as c_ulong) };
    }
}

/// The simulator handler of class `s`, as `p->ainsn.api.handler` holds it.
type Handler = unsafe extern "C" fn(u32, c_long, *mut bindings::pt_regs);

macro_rules! simulators {
    ($($(#[$m:meta])* $name:ident => $class:ident;)*) => {
        $(
            nokprobe! {
                $(#[$m])*
                ///
                /// # Safety
                ///
                /// `addr` is the probe's address, `opcode` its instruction and `regs` the frame
                /// of the BRK that hit it.
                unsafe extern "C" fn $name(opcode: u32, addr: c_long, regs: *mut bindings::pt_regs) {
                    // SAFETY: as said.
                    unsafe { run_simulator(Simulator::$class, opcode, addr, regs) };
                }
            }
        )*

        /// The handler of `simulator` (what `arm_probe_decode_insn()` stores).
        fn handler(simulator: Simulator) -> Handler {
            match simulator {
                $(Simulator::$class => $name,)*
            }
        }
    };
}

simulators! {
    /// `simulate_adr_adrp()`.
    rkp_arm64_simulate_adr_adrp => AdrAdrp;
    /// `simulate_b_bl()`.
    rkp_arm64_simulate_b_bl => BBl;
    /// `simulate_b_cond()`.
    rkp_arm64_simulate_b_cond => BCond;
    /// `simulate_br_blr_ret()`.
    rkp_arm64_simulate_br_blr_ret => BrBlrRet;
    /// `simulate_cbz_cbnz()`.
    rkp_arm64_simulate_cbz_cbnz => CbzCbnz;
    /// `simulate_tbz_tbnz()`.
    rkp_arm64_simulate_tbz_tbnz => TbzTbnz;
    /// `simulate_ldr_literal()`.
    rkp_arm64_simulate_ldr_literal => LdrLiteral;
    /// `simulate_ldrsw_literal()`.
    rkp_arm64_simulate_ldrsw_literal => LdrswLiteral;
}

/// The arm64 arch.
pub struct Arm64;

impl ArchHooks<Kernel> for Arm64 {
    const OPTPROBES: bool = false;
    const KPROBES_ON_FTRACE: bool = false;
    const OPCODE_SIZE: usize = dec::AARCH64_INSN_SIZE as usize;
    const MAX_OPTIMIZED_LENGTH: usize = 0;

    fn prepare_kprobe(s: &Kernel, p: Kp) -> Result {
        let addr = s.addr(p);
        if addr & 0x3 == 0 {
            if let Some(opcode) = read_insn(addr) {
                // C copies the instruction before its other checks.
                // SAFETY: `p` is being registered under kprobe_mutex; nobody else uses it.
                unsafe { (*p.as_ptr()).opcode = opcode };
            }
        }
        let prep = dec::prepare_kprobe(&Text(s), addr as u64)
            .map_err(|e| Errno::from_neg(e).unwrap_or(Errno::EINVAL))?;
        // SAFETY: as above.
        let api = unsafe { &mut *api(p) };
        match prep {
            Prepared::Simulate { opcode, simulator } => {
                // arch_prepare_simulate(): no slot, nothing to restore after the hit.
                api.insn = ptr::null_mut();
                api.handler = Some(handler(simulator));
                api.restore = 0;
                // SAFETY: as above.
                unsafe { (*p.as_ptr()).opcode = opcode };
            }
            Prepared::Step {
                opcode,
                slot,
                restore,
            } => {
                let insn = slots::get().cast::<u32>();
                if insn.is_null() {
                    return Err(Errno::ENOMEM);
                }
                // SAFETY: as above.
                unsafe { (*p.as_ptr()).opcode = opcode };
                api.insn = insn;
                // arch_prepare_ss_slot(): the slot's cache maintenance is complete before the
                // probe's BRK is written; the BRK exception synchronises the context.
                for (i, word) in slot.into_iter().enumerate() {
                    // SAFETY: the slot was just taken, holds two words and is not reachable yet.
                    unsafe { patch_slot(insn.wrapping_add(i), word) };
                }
                api.restore = restore as c_ulong;
            }
        }
        Ok(())
    }

    fn arm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p`'s address is a prepared, aligned instruction; text_mutex and
        // cpus_read_lock held by the core.
        unsafe { patch_text(s.addr(p), dec::BRK64_OPCODE_KPROBES) };
    }

    fn disarm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p` is live; as for `arm_kprobe`.
        unsafe { patch_text(s.addr(p), (*p.as_ptr()).opcode) };
    }

    const BATCHES_DISARM: bool = true;

    /// One `stop_machine()` per [`DISARM_BATCH`] probes (C: one per probe): the batch's
    /// original instructions are written by one CPU while the others wait, each in one store,
    /// as `disarm_kprobe` writes one. A CPU that still takes a probe's BRK before its
    /// instruction is back finds the probe, still in the hash.
    fn disarm_kprobes(s: &Kernel, probes: impl Iterator<Item = Kp>) {
        let mut addrs = [ptr::null_mut::<c_void>(); DISARM_BATCH];
        let mut insns = [0u32; DISARM_BATCH];
        let mut n = 0;
        for p in probes {
            if n == DISARM_BATCH {
                // SAFETY: each entry is an armed probe's aligned instruction, restored to the
                // instruction it had; text_mutex and cpus_read_lock held by the core.
                unsafe { patch_texts(&mut addrs, &mut insns) };
                n = 0;
            }
            if let (Some(a), Some(i)) = (addrs.get_mut(n), insns.get_mut(n)) {
                *a = s.addr(p) as *mut c_void;
                // SAFETY: `p` is live.
                *i = unsafe { (*p.as_ptr()).opcode };
                n += 1;
            }
        }
        let (addrs, insns) = (addrs.get_mut(..n), insns.get_mut(..n));
        if let (Some(addrs), Some(insns)) = (addrs, insns) {
            // SAFETY: as above.
            unsafe { patch_texts(addrs, insns) };
        }
    }

    fn remove_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` is no longer reachable by new hits; nobody else uses `ainsn`.
        let api = unsafe { &mut *api(p) };
        if !api.insn.is_null() {
            // SAFETY: the slot came from the kprobe instruction cache and the probe is gone.
            unsafe { slots::free(api.insn.cast(), false) };
            api.insn = ptr::null_mut();
        }
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
        let mut areas = [0 as c_ulong; 2 * TEXT_AREAS];
        // SAFETY: `areas` has room for `TEXT_AREAS` pairs.
        let n = unsafe { bindings::rkp_arm64_text_areas(areas.as_mut_ptr(), TEXT_AREAS as c_int) };
        let n = usize::try_from(n).unwrap_or(0);
        for pair in areas.chunks_exact(2).take(n) {
            if let [start, end] = *pair {
                add_area(start as usize, end as usize)?;
            }
        }
        Ok(())
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
        Cpu {
            // SAFETY: the caller keeps preemption off (`# Safety`).
            state: unsafe { CpuState::this_cpu() },
        }
    }

    /// `kprobes_restore_local_irqflag()`: the DAIF flags the step masked come back.
    #[inline(always)]
    fn restore_local_irqflag(&self, regs: TrapRegs) {
        let saved = kcb!(self.saved_irqflag) as u64;
        regs.set_pstate((regs.pstate() & !DAIF_MASK) | saved);
    }
}

impl HitArch for Cpu {
    type Probe = Kp;
    type Regs = TrapRegs;
    // The Debian 6.12 tree's reenter_kprobe() treats a hit during another probe's step as a
    // one-level re-entry.
    const REENTER_WHILE_STEPPING: bool = true;

    hit_arch_common!();

    hit_arch_kcb!(saved_irqflag);

    #[inline(always)]
    fn skip_step(&self, _p: Kp, _regs: TrapRegs, _reenter: bool) -> Skip {
        Skip::No
    }
    #[inline(always)]
    fn emulates(&self, p: Kp) -> bool {
        slot(p).is_null()
    }
    #[inline(always)]
    fn emulate(&self, p: Kp, regs: TrapRegs) {
        // arch_simulate_insn(): the simulator `prepare_kprobe` chose, on the probed instruction.
        // SAFETY: `p` is live while it hits; the handler is one of ours, and gets the probe's
        // instruction and address and the frame of this BRK.
        unsafe {
            if let Some(f) = (*api(p)).handler {
                f(
                    (*p.as_ptr()).opcode,
                    KERNEL.addr(p) as c_long,
                    regs.as_ptr(),
                );
            }
        }
    }
    #[inline(always)]
    fn start_step(&self, p: Kp, regs: TrapRegs) {
        // kprobes_save_local_irqflag(): step with every exception masked.
        let pstate = regs.pstate();
        kcb!(self.saved_irqflag = (pstate & DAIF_MASK) as c_ulong);
        regs.set_pstate(pstate | DAIF_MASK);
        regs.set_pc(slot(p) as usize);
    }
    #[inline(always)]
    fn in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        // The BRK after the copy, `&cur->ainsn.api.insn[1]`.
        regs.pc() == slot(p).wrapping_add(1) as usize
    }
    #[inline(always)]
    fn finish_step(&self, p: Kp, regs: TrapRegs) {
        self.restore_local_irqflag(regs);
        // post_kprobe_handler(): a stepped instruction that did not branch resumes after the
        // probe.
        // SAFETY: `p` is live while it hits.
        let restore = unsafe { (*api(p)).restore } as usize;
        if restore != 0 {
            regs.set_pc(restore);
        }
    }
    #[inline(always)]
    fn faulted_in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        let slot = slot(p);
        !slot.is_null() && regs.pc() == slot as usize
    }
    #[inline(always)]
    fn unwind_fault(&self, p: Kp, regs: TrapRegs) {
        regs.set_pc(KERNEL.addr(p));
        // As upstream, a re-entered probe's flags stay masked: the outer probe's step goes on.
        if self.status() != hit::KPROBE_REENTER {
            self.restore_local_irqflag(regs);
        }
    }
    #[inline(always)]
    fn unrecoverable(&self, p: Kp) -> ! {
        // SAFETY: `p` is the live probe being hit; the NOKPROBE C function logs it and BUG()s.
        unsafe { bindings::rkp_arm64_unrecoverable(p.as_ptr()) }
    }
    #[inline(always)]
    fn warn_bad_status(&self) {
        // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
        unsafe { bindings::rkp_arch_warn_bad_status() };
    }
    #[inline(always)]
    fn warn_fault_status(&self) {
        // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
        unsafe { bindings::rkp_arch_warn_fault_status() };
    }
    #[inline(always)]
    fn ip(&self, regs: TrapRegs) -> usize {
        regs.pc()
    }
    #[inline(always)]
    fn set_ip(&self, regs: TrapRegs, ip: usize) {
        regs.set_pc(ip);
    }
}

nokprobe! {
    /// `kprobe_brk_handler()`: a BRK with the kprobes immediate, from EL1
    /// (`call_el1_break_hook()`), with every DAIF exception masked.
    ///
    /// # Safety
    ///
    /// `regs` is the frame of a BRK taken at EL1 on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_brk_handler(regs: *mut bindings::pt_regs, _esr: c_ulong) -> c_int {
        // SAFETY: the BRK's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        let Some(p) = table::get_kprobe(&KERNEL, regs.pc()) else {
            // This BRK used the immediate reserved for kprobes, but no probe is there.
            // SAFETY: a WARN_ON_ONCE(1) in a NOKPROBE C function.
            unsafe { bindings::rkp_arm64_warn_no_probe() };
            return NOT_OURS;
        };
        // SAFETY: exceptions are masked, so is preemption.
        let cpu = unsafe { Cpu::this() };
        if hit::handle_hit(&cpu, p, regs) {
            HANDLED
        } else {
            NOT_OURS
        }
    }
}

nokprobe! {
    /// `kprobe_ss_brk_handler()`: a BRK with the single-step immediate, which ends the
    /// out-of-line step of the current probe if it is that probe's slot's.
    ///
    /// # Safety
    ///
    /// As for [`kprobe_brk_handler`].
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_ss_brk_handler(
        regs: *mut bindings::pt_regs,
        _esr: c_ulong,
    ) -> c_int {
        // SAFETY: the BRK's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: exceptions are masked, so is preemption.
        let cpu = unsafe { Cpu::this() };
        if hit::step_done(&cpu, regs) {
            HANDLED
        } else {
            NOT_OURS
        }
    }
}

nokprobe! {
    /// `kretprobe_brk_handler()`: the BRK of `__kretprobe_trampoline`, where a function with
    /// a kretprobe returns; it resumes at the real return address.
    ///
    /// # Safety
    ///
    /// As for [`kprobe_brk_handler`].
    #[cfg(CONFIG_KRETPROBES)]
    #[no_mangle]
    pub unsafe extern "C" fn kretprobe_brk_handler(
        regs: *mut bindings::pt_regs,
        _esr: c_ulong,
    ) -> c_int {
        // SAFETY: the BRK's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        if regs.pc() != bindings::__kretprobe_trampoline as *const () as usize {
            return NOT_OURS;
        }
        // kretprobe_trampoline_handler(): a busy dummy probe keeps kprobes from recursing.
        // SAFETY: the returning function's frame and frame pointer (x29), on `current`.
        let ret = unsafe {
            bindings::kprobe_busy_begin();
            let ret = crate::glue::objpool::__kretprobe_trampoline_handler(
                regs.as_ptr(),
                regs.x(29) as *mut c_void,
            );
            bindings::kprobe_busy_end();
            ret
        };
        regs.set_pc(ret as usize);
        HANDLED
    }
}

nokprobe! {
    /// `kprobe_fault_handler()`: a fault at EL1 while a probe is current on this CPU
    /// (`kprobe_page_fault()`). Always 0: the fault is handled as usual, as if the probed
    /// instruction had raised it when its out-of-line copy did.
    ///
    /// # Safety
    ///
    /// `regs` is the fault's frame; preemption is disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_fault_handler(regs: *mut bindings::pt_regs, _fsr: c_uint) -> c_int {
        // SAFETY: the fault's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is disabled (`# Safety`).
        let cpu = unsafe { Cpu::this() };
        c_int::from(hit::step_faulted(&cpu, regs))
    }
}

nokprobe! {
    /// `arch_prepare_kretprobe()`: at the entry of a function with a kretprobe, records its
    /// return address (x30) and frame (x29) in `ri` and makes it return to the trampoline.
    ///
    /// # Safety
    ///
    /// `ri` is the instance being set up and `regs` the frame of the entry probe's hit.
    #[cfg(CONFIG_KRETPROBES)]
    #[no_mangle]
    pub unsafe extern "C" fn arch_prepare_kretprobe(
        ri: *mut bindings::kretprobe_instance,
        regs: *mut bindings::pt_regs,
    ) {
        // SAFETY: the hit's frame, ours until the hit's handlers return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: `ri` is ours until it is queued (`# Safety`).
        unsafe {
            (*ri).ret_addr = regs.x(30) as *mut bindings::kprobe_opcode_t;
            (*ri).fp = regs.x(29) as *mut c_void;
        }
        regs.set_x(30, bindings::__kretprobe_trampoline as *const () as usize as u64);
    }
}

/// `alloc_insn_page()`: a page for instruction slots, read-only and executable.
///
/// # Safety
///
/// Called by the instruction-slot cache in process context.
#[no_mangle]
pub unsafe extern "C" fn alloc_insn_page() -> *mut c_void {
    // SAFETY: allocates an execmem page and makes it ROX, in process context (`# Safety`).
    unsafe { bindings::rkp_arm64_alloc_insn_page() }
}
