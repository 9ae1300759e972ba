// SPDX-License-Identifier: GPL-2.0

//! The ppc64 kprobes arch layer in Rust (`CONFIG_KPROBES_RUST_ARCH`): what upstream's
//! `arch/powerpc/kernel/kprobes.c`, `optprobes.c` and `kprobes-ftrace.c` provide, on the pure
//! decisions of [`crate::powerpc`] and the core's generic hit-path state machine
//! ([`crate::hit`]).
//!
//! Constraints: mounted in the kprobes crate after [`crate::glue`], whose probe handles and
//! kernel services it uses. The hooks of [`Ppc64`] run under the locks [`ArchHooks`]
//! documents; text is written with `patch_instruction()`. The C-linkage entry points
//! (`kprobe_handler`, called by the program check for a trap in the kernel;
//! `kprobe_post_handler`, called by the single-step interrupt; `kprobe_fault_handler`, called
//! by `kprobe_page_fault()`; `optimized_callback`, called by a detour; `kprobe_ftrace_handler`,
//! the `ftrace_ops` callback) run in interrupt, detour or ftrace context: they and everything
//! they reach are in `.kprobes.text` (`nokprobe!`) or inlined into it, never allocate, never
//! sleep and contain no panic path. A probe hit keeps preemption disabled from its trap to the
//! end of its step, as upstream. What must be C is in `rust_glue.c`: the per-CPU state, the
//! preemption count, the optinsn page (`optinsn_slot` of `optprobes_head.S`, whose detour
//! template stays assembly), upstream's messages, and wrappers of static inlines: the
//! interrupt's return registers, `patch_instruction()` of a `ppc_inst_t`, and
//! `emulate_step()`/`analyse_instr()` of `lib/sstep.c`, which stay C (xmon, uprobes and hardware
//! breakpoints share them) and are called as a service: which instructions kprobes emulate
//! rather than step is decided here ([`dec::try_to_emulate`]).
//!
//! Design: [`Cpu`] is this CPU's `kprobe_ctlblk` and `current_kprobe`, and implements
//! [`HitArch`] with powerpc's stepping: a hit first tries `emulate_step()` (unless it failed
//! before on a probe that never emulated), and otherwise steps the copy in the probe's slot
//! with `MSR_SE`; the single-step interrupt after it ends the step. The state machine is the
//! core's, with these differences from upstream, which copies it: a hit while a probe is being
//! re-entered is a BUG (upstream overwrites the saved probe); the post-handlers see `nip` past
//! the probed instruction (upstream: past its copy in the slot); a fault is the step's only
//! when the slot raised it, and any other fault while a probe runs (in a handler, or in
//! `emulate_step()`) is fixed up from the exception table where it can be.

use core::ffi::{c_int, c_void};
use core::mem::size_of;
use core::ptr::{self, NonNull};

use kernel::bindings;
use kernel::ffi::c_ulong;

use crate::arch::ArchHooks;
use crate::errno::{Errno, Result};
use crate::glue::blacklist::{c_in_kretprobe_blacklist, c_init_kretprobe_blacklist};
use crate::glue::handle::{Kernel, Kp, KERNEL};
use crate::glue::hitcpu::{CpuState, TrapRegs};
use crate::glue::insn_slot::c_init_optinsn_slots;
use crate::glue::insn_slot::slots;
use crate::hit::{self, HitArch, Skip};
use crate::powerpc::{self as dec, insn, Emulation, PpcInst, Refusal};
#[cfg(CONFIG_OPTPROBES)]
use crate::store::Aggr;
use crate::store::{flags_disabled, ProbeStore, KPROBE_FLAG_FTRACE};
use crate::table;
use crate::text::KernelText as _;

#[cfg(CONFIG_OPTPROBES)]
use crate::store::OptQueue;

/// `p->ainsn`.
#[inline(always)]
fn ainsn(p: Kp) -> *mut bindings::arch_specific_insn {
    // SAFETY: `p` is live; only the field's address is formed.
    unsafe { ptr::addr_of_mut!((*p.as_ptr()).ainsn) }
}

/// The slot of `p` (`p->ainsn.insn`), NULL for a probe on an ftrace site.
#[inline(always)]
fn slot(p: Kp) -> *mut u32 {
    // SAFETY: `p` is live; a raw place read of a field only registration and removal write.
    unsafe { (*ainsn(p)).insn }
}

/// `ppc_inst_read(p->ainsn.insn)`: the instruction in the slot of `p`, which is not NULL.
#[inline(always)]
fn slot_inst(p: Kp) -> PpcInst {
    let s = slot(p);
    // SAFETY: the slot holds `MAX_INSN_SIZE` words written by `prepare_kprobe`, live while
    // `p` is; the second word is read only after a prefix.
    unsafe {
        let val = ptr::read_volatile(s);
        if insn::get_op(val) == insn::OP_PREFIX {
            PpcInst::prefix(val, ptr::read_volatile(s.add(1)))
        } else {
            PpcInst::word(val)
        }
    }
}

/// Reads the word at `addr` (`get_kernel_nofault()`), `None` if it cannot be read.
#[inline(always)]
fn read_word(addr: usize) -> Option<u32> {
    let mut word = [0u8; 4];
    // SAFETY: `word` is valid for 4 bytes of writes; the nofault copy checks the source.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(word.as_mut_ptr().cast(), addr as *const c_void, 4)
    };
    (ret == 0).then(|| u32::from_ne_bytes(word))
}

/// What the decisions read from the running kernel.
struct Text;

impl dec::KernelText for Text {
    fn read_word(&self, addr: u64) -> Option<u32> {
        read_word(addr as usize)
    }
}

/// `patch_instruction(addr, insn)`: writes one instruction (one or two words) of text.
///
/// # Safety
///
/// `addr` is an instruction of kernel text or of a slot that only this writer changes.
unsafe fn patch_insn(addr: *mut u32, i: PpcInst) -> c_int {
    // SAFETY: by the function's contract.
    unsafe { bindings::rkp_ppc_patch_insn(addr, i.val, i.suffix) }
}

/// This arch's fields of the trap frame.
impl TrapRegs {
    /// `regs->nip`.
    #[inline(always)]
    fn nip(self) -> usize {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.as_ptr()).__bindgen_anon_1.__bindgen_anon_1.nip as usize }
    }
    /// `regs_set_return_ip(regs, ip)`.
    #[inline(always)]
    fn set_nip(self, ip: usize) {
        // SAFETY: the live frame of this handler (invariant); a NOKPROBE C wrapper.
        unsafe { bindings::rkp_ppc_set_return_ip(self.as_ptr(), ip as c_ulong) };
    }
    /// `regs->msr`.
    #[inline(always)]
    fn msr(self) -> u64 {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.as_ptr()).__bindgen_anon_1.__bindgen_anon_1.msr as u64 }
    }
    /// `regs_set_return_msr(regs, msr)`.
    #[inline(always)]
    fn set_msr(self, msr: u64) {
        // SAFETY: as for `set_nip`.
        unsafe { bindings::rkp_ppc_set_return_msr(self.as_ptr(), msr as c_ulong) };
    }
}

/// The preemption count a handler holds while it runs (`preempt_disable()`; dropping it is
/// `preempt_enable()`, as upstream's handlers end).
///
/// # Invariants
///
/// This context incremented the preemption count for the value and has not decremented it.
struct PreemptOff(());

impl PreemptOff {
    #[inline(always)]
    fn disable() -> Self {
        // SAFETY: balanced by the drop.
        unsafe { bindings::rkp_ppc_preempt_disable() };
        // INVARIANT: just incremented.
        PreemptOff(())
    }
}

impl Drop for PreemptOff {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: this context took the count (invariant).
        unsafe { bindings::rkp_ppc_preempt_enable() };
    }
}

/// The index `rkp_ppc_refused()` prints a refusal by.
fn refusal_index(r: Refusal) -> Option<u32> {
    match r {
        Refusal::Unaligned => Some(0),
        Refusal::CannotSingleStep => Some(1),
        Refusal::SecondWordOfPrefixed => Some(2),
        Refusal::Unreadable => None,
    }
}

/// The ppc64 arch.
pub struct Ppc64;

impl ArchHooks<Kernel> for Ppc64 {
    const OPTPROBES: bool = cfg!(CONFIG_OPTPROBES);
    const KPROBES_ON_FTRACE: bool = cfg!(CONFIG_KPROBES_ON_FTRACE);
    const OPCODE_SIZE: usize = size_of::<bindings::kprobe_opcode_t>();
    const MAX_OPTIMIZED_LENGTH: usize = if cfg!(CONFIG_OPTPROBES) {
        dec::RELATIVEJUMP_SIZE as usize
    } else {
        0
    };

    fn prepare_kprobe(s: &Kernel, p: Kp) -> Result {
        let addr = s.addr(p);
        // The probe at the previous word, unless on ftrace (no slot): a prefixed instruction
        // in its slot means `addr` is its suffix. Looked up under kprobe_mutex, held.
        let prev_slot = table::get_kprobe(s, addr.wrapping_sub(dec::PPC_INSN_SIZE as usize))
            .filter(|&prev| s.flags(prev) & KPROBE_FLAG_FTRACE == 0 && !slot(prev).is_null())
            // SAFETY: a registered probe's slot, written at its registration.
            .map(|prev| unsafe { ptr::read_volatile(slot(prev)) });
        // SAFETY: `p` is being registered under kprobe_mutex; nobody else uses it.
        let a = unsafe { &mut *ainsn(p) };
        a.boostable = 0;
        let prep = match dec::prepare_kprobe(
            &Text,
            addr as u64,
            kernel::page::PAGE_SIZE as u64,
            prev_slot,
        ) {
            Ok(prep) => prep,
            Err(refused) => {
                for why in [
                    refused.first.and_then(refusal_index),
                    refused.prev_probe_prefixed.then_some(2),
                ]
                .into_iter()
                .flatten()
                {
                    // SAFETY: prints one of upstream's messages; any index is checked in C.
                    unsafe { bindings::rkp_ppc_refused(why) };
                }
                return Err(Errno::EINVAL);
            }
        };
        let insn_slot = slots::get().cast::<u32>();
        if insn_slot.is_null() {
            return Err(Errno::ENOMEM);
        }
        a.insn = insn_slot;
        // SAFETY: the slot was just taken, holds `MAX_INSN_SIZE` words and is not reachable
        // yet.
        unsafe { patch_insn(insn_slot, prep.insn) };
        // SAFETY: as above.
        unsafe { (*p.as_ptr()).opcode = prep.opcode() };
        Ok(())
    }

    fn arm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p`'s address is a prepared instruction of kernel text; text_mutex held.
        unsafe {
            bindings::rkp_ppc_patch_word_warn(s.addr(p) as *mut u32, dec::BREAKPOINT_INSTRUCTION)
        };
    }

    fn disarm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: as for `arm_kprobe`; `opcode` is the word the breakpoint replaced.
        unsafe { bindings::rkp_ppc_patch_word_warn(s.addr(p) as *mut u32, (*p.as_ptr()).opcode) };
    }

    fn remove_kprobe(_s: &Kernel, p: Kp) {
        let insn_slot = slot(p);
        if insn_slot.is_null() {
            return;
        }
        // SAFETY: the slot came from the kprobe instruction cache and the probe is no longer
        // reachable by new hits; nobody else uses `ainsn`.
        unsafe {
            slots::free(insn_slot.cast(), false);
            (*ainsn(p)).insn = ptr::null_mut();
        }
    }

    fn trampoline_kprobe(s: &Kernel, p: Kp) -> bool {
        // SAFETY: the address of a function.
        s.addr(p) == unsafe { bindings::rkp_ppc_rethook_trampoline() } as usize
    }

    // `__ref`, as the core's: runs only at init and calls an `__init` function, which modpost
    // accepts from this section.
    #[inline(never)]
    #[link_section = ".ref.text"]
    fn init_kprobes(_s: &Kernel) -> Result {
        // rethook.c's arch_init_kprobes(), which stays C, registers the probe on the rethook
        // trampoline that kretprobes return through.
        // SAFETY: called once by the core's init_kprobes(), without kprobe_mutex (it registers).
        let ret = unsafe { bindings::arch_init_kprobes() };
        if ret == 0 {
            Ok(())
        } else {
            Err(Errno::from_neg(ret).unwrap_or(Errno::EINVAL))
        }
    }

    fn lookup_name(s: &Kernel, name: &[u8], offset: usize) -> usize {
        // ELFv2: a probe at a function's symbol goes to its local entry, or to the ftrace
        // call within its first 16 bytes, where kprobes use ftrace.
        let addr = s.kallsyms_lookup_name(name);
        if addr == 0 || offset != 0 {
            return addr;
        }
        if cfg!(CONFIG_KPROBES_ON_FTRACE) {
            // SAFETY: a query of ftrace's records.
            let faddr = unsafe {
                bindings::ftrace_location_range(addr as c_ulong, addr.wrapping_add(16) as c_ulong)
            };
            if faddr != 0 {
                return faddr as usize;
            }
        }
        let (Some(first), Some(second)) = (read_word(addr), read_word(addr.wrapping_add(4))) else {
            return addr;
        };
        insn::ppc_function_entry(addr as u64, first, second) as usize
    }

    fn adjust_kprobe_addr(_s: &Kernel, addr: usize, offset: usize) -> Option<(usize, bool)> {
        let entry = dec::arch_kprobe_on_func_entry(offset as u64, cfg!(CONFIG_KPROBES_ON_FTRACE));
        Some((addr.wrapping_add(offset), entry))
    }

    fn within_kprobe_blacklist(s: &Kernel, addr: usize) -> bool {
        let (start, end) = s.kprobes_text();
        let (mut head, mut head_end) = (0, 0);
        // SAFETY: out-pointers to locals.
        unsafe { bindings::rkp_ppc_head_text(&mut head, &mut head_end) };
        (addr >= start && addr < end) || (addr >= head as usize && addr < head_end as usize)
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
        a.boostable = dec::FTRACE_BOOSTABLE;
        Ok(())
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn prepared_optinsn(_s: &Kernel, ap: Aggr<Kp>) -> bool {
        // SAFETY: `ap` is an optimized_kprobe; `insn` is written under kprobe_mutex, held.
        unsafe { !(*opt::op_of(ap.kp())).optinsn.insn.is_null() }
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn check_optimized_kprobe(_s: &Kernel, _ap: Aggr<Kp>) -> Result {
        // The jump replaces one word: no other probe can be under it.
        Ok(())
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn prepare_optimized_kprobe(s: &Kernel, ap: Aggr<Kp>, orig: Kp) {
        opt::prepare(s, ap.kp(), orig);
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn remove_optimized_kprobe(_s: &Kernel, ap: Aggr<Kp>) {
        let op = opt::op_of(ap.kp());
        // SAFETY: `op` is live; kprobe_mutex held.
        unsafe {
            let detour = (*op).optinsn.insn;
            if !detour.is_null() {
                slots::free_opt(detour.cast(), true);
                (*op).optinsn.insn = ptr::null_mut();
            }
        }
    }

    fn optimize_kprobes(s: &Kernel) {
        #[cfg(CONFIG_OPTPROBES)]
        s.queue_for_each_safe(OptQueue::Optimizing, |ap| {
            opt::install_branch(s, ap.kp());
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
        // The branch to the detour goes back to the breakpoint.
        Self::arm_kprobe(s, ap.kp());
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn within_optimized_kprobe(s: &Kernel, ap: Aggr<Kp>, addr: usize) -> bool {
        dec::within_optimized_kprobe(s.addr(ap.kp()) as u64, addr as u64)
    }
}

/// Jump optimization: detours built from `optprobes_head.S`'s template and the branches into
/// them.
#[cfg(CONFIG_OPTPROBES)]
mod opt {
    use super::*;

    /// The most words of a detour this layer builds; upstream's template is about 70.
    const DETOUR_WORDS: usize = 128;

    /// `container_of(ap, struct optimized_kprobe, kp)`: `kp` is its first member.
    #[inline(always)]
    pub(super) fn op_of(ap: Kp) -> *mut bindings::optimized_kprobe {
        ap.as_ptr().cast()
    }

    /// `analyse_instr()` with `emulate_update_regs()`, a C service.
    struct Analyse;

    impl dec::AnalyseInstr for Analyse {
        fn emulated_nip(&self, i: PpcInst, nip: u64) -> Option<u64> {
            let mut out = 0;
            // SAFETY: the C analyses on a frame of its own; `out` is a local.
            unsafe { bindings::rkp_ppc_emulated_nip(i.val, i.suffix, nip as c_ulong, &mut out) }
                .then_some(out as u64)
        }
    }

    /// `ppc_kallsyms_lookup_name(name)`: a function's local entry, `None` if unknown.
    fn lookup(name: &core::ffi::CStr) -> Option<u64> {
        // SAFETY: a NUL-terminated name.
        let addr = unsafe { bindings::rkp_ppc_kallsyms_lookup_name(name.as_ptr()) };
        (addr != 0).then_some(addr as u64)
    }

    /// `arch_prepare_optimized_kprobe(op, orig)`: builds the detour of `ap` from the template,
    /// for the instruction in the slot of `orig`; on failure `ap` keeps no detour and stays
    /// unoptimized.
    pub(super) fn prepare(s: &Kernel, ap: Kp, orig: Kp) {
        if slot(orig).is_null() {
            return;
        }
        let mut entry: *const u32 = ptr::null();
        let mut idx: [c_ulong; 6] = [0; 6];
        // SAFETY: out-pointers to locals; the C stores the template's address and labels.
        unsafe { bindings::rkp_ppc_opt_template(&mut entry, idx.as_mut_ptr()) };
        let [op_address, call_handler, insn_at, call_emulate, ret, end] = idx.map(|i| i as usize);
        let Some(tmpl) =
            dec::Template::new(op_address, call_handler, insn_at, call_emulate, ret, end)
        else {
            return;
        };
        let mut buf = [0u32; DETOUR_WORDS];
        let Some(buf) = buf.get_mut(..tmpl.words()) else {
            return;
        };
        // SAFETY: the template is `tmpl.words()` words of text from `entry`, immutable.
        unsafe { ptr::copy_nonoverlapping(entry, buf.as_mut_ptr(), buf.len()) };
        let op = op_of(ap);
        let p = dec::OptProbe {
            addr: s.addr(ap) as u64,
            insn: slot_inst(orig),
            op: op as u64,
        };
        // SAFETY: the address of a function.
        let rethook = unsafe { bindings::rkp_ppc_rethook_trampoline() } as u64;
        let detour = dec::prepare_optimized_kprobe(
            &p,
            &tmpl,
            rethook,
            &Analyse,
            lookup(c"optimized_callback"),
            lookup(c"emulate_step"),
            || {
                let b = slots::get_opt();
                (!b.is_null()).then_some(b as u64)
            },
        );
        let detour = match detour {
            Ok(detour) => detour,
            Err(refusal) => {
                if matches!(refusal, dec::OptRefusal::NoSymbol { .. }) {
                    // SAFETY: a WARN in C.
                    unsafe { bindings::rkp_ppc_warn_opt_lookup() };
                }
                if let Some(b) = refusal.freed_slot() {
                    // SAFETY: the slot was taken by `prepare_optimized_kprobe` and is unused.
                    unsafe { slots::free_opt(b as usize as *mut u8, false) };
                }
                return;
            }
        };
        detour.apply(&tmpl, buf);
        let b = detour.slot as usize as *mut u32;
        for (i, &w) in buf.iter().enumerate() {
            // SAFETY: word `i` of the optinsn slot just taken, which holds `tmpl.words()`
            // words (`MAX_OPTINSN_SIZE`) and is not reachable until the branch is installed.
            if unsafe { patch_insn(b.add(i), PpcInst::word(w)) } < 0 {
                // SAFETY: as above; the slot is unused.
                unsafe { slots::free_opt(b.cast(), false) };
                return;
            }
        }
        let end = (b as usize).wrapping_add(buf.len() * size_of::<u32>());
        // SAFETY: makes the written detour visible to instruction fetch.
        unsafe { bindings::flush_icache_range(b as c_ulong, end as c_ulong) };
        // SAFETY: `op` is live; kprobe_mutex held.
        unsafe { (*op).optinsn.insn = b };
    }

    /// `arch_optimize_kprobes()` for one probe: keeps the word it replaces and writes the
    /// branch to its detour.
    pub(super) fn install_branch(s: &Kernel, ap: Kp) {
        let op = op_of(ap);
        let addr = s.addr(ap);
        // SAFETY: `op` is live with a detour (prepared); kprobe_mutex and text_mutex held; the
        // probe's word is mapped text.
        unsafe {
            (*op).optinsn.copied_insn[0] = ptr::read_volatile(addr as *const u32);
            let detour = (*op).optinsn.insn as u64;
            let branch = dec::optimize_branch(addr as u64, detour).unwrap_or(0);
            patch_insn(addr as *mut u32, PpcInst::word(branch));
        }
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

    /// Ends the step's hold on preemption, taken by [`HitArch::start_step`]; the handler that
    /// ends the step keeps its own count until it returns.
    #[inline(always)]
    fn release_step(&self) {
        // SAFETY: the count `start_step` took for the step that is ending.
        unsafe { bindings::rkp_ppc_preempt_enable() };
    }

    /// `try_to_emulate()`: `emulate_step()` on the slot's instruction, which also moves `nip`
    /// when it emulates; records in `p->ainsn.boostable` whether to try again.
    #[inline(always)]
    fn emulate_step(&self, p: Kp, regs: TrapRegs) -> bool {
        let i = slot_inst(p);
        // SAFETY: the trap's frame and the probe's instruction; emulate_step() is C's service.
        let ret = unsafe { bindings::rkp_ppc_emulate_step(regs.as_ptr(), i.val, i.suffix) };
        // SAFETY: `p` is live while it hits; its hits update `boostable` without a lock, as
        // upstream's do (a racing hit on another CPU can only repeat the same update).
        let boostable = unsafe { ptr::addr_of_mut!((*ainsn(p)).boostable) };
        // SAFETY: as above; raw place accesses, no reference is formed.
        let (what, next) = dec::try_to_emulate(unsafe { ptr::read_volatile(boostable) }, ret);
        // SAFETY: as above.
        unsafe { ptr::write_volatile(boostable, next) };
        match what {
            Emulation::Emulated => true,
            Emulation::Stepped => false,
            // SAFETY: prints and BUG()s in a NOKPROBE C function.
            Emulation::Bug => unsafe { bindings::rkp_ppc_cant_step(i.val, i.suffix) },
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
        kcb!(self.kprobe_saved_msr = regs.msr() as c_ulong);
    }
    #[inline(always)]
    fn status(&self) -> u32 {
        // The status is an `unsigned long` on powerpc; only `KPROBE_*` values are stored.
        kcb!(self.kprobe_status) as u32
    }
    #[inline(always)]
    fn set_status(&self, status: u32) {
        kcb!(self.kprobe_status = status as c_ulong);
    }
    #[inline(always)]
    fn save_previous(&self) {
        let cur = self.current().map_or(ptr::null_mut(), Kp::as_ptr);
        kcb!(self.prev_kprobe.kp = cur);
        kcb!(self.prev_kprobe.status = kcb!(self.kprobe_status));
        kcb!(self.prev_kprobe.saved_msr = kcb!(self.kprobe_saved_msr));
    }
    #[inline(always)]
    fn restore_previous(&self) {
        let prev = kcb!(self.prev_kprobe.kp);
        self.state.set_current_raw(prev);
        kcb!(self.kprobe_status = kcb!(self.prev_kprobe.status));
        kcb!(self.kprobe_saved_msr = kcb!(self.prev_kprobe.saved_msr));
    }
    #[inline(always)]
    fn skip_step(&self, _p: Kp, _regs: TrapRegs, _reenter: bool) -> Skip {
        Skip::No
    }
    #[inline(always)]
    fn emulates(&self, p: Kp) -> bool {
        // SAFETY: `p` is live while it hits; a raw place read.
        dec::tries_emulation(unsafe { ptr::read_volatile(ptr::addr_of!((*ainsn(p)).boostable)) })
    }
    #[inline(always)]
    fn emulate(&self, p: Kp, regs: TrapRegs) {
        // Only through `try_emulate`, which knows whether emulate_step() declined.
        let _ = self.try_emulate(p, regs);
    }
    #[inline(always)]
    fn try_emulate(&self, p: Kp, regs: TrapRegs) -> bool {
        self.emulates(p) && self.emulate_step(p, regs)
    }
    #[inline(always)]
    fn start_step(&self, p: Kp, regs: TrapRegs) {
        // The step keeps preemption off until its interrupt or its fault (upstream's
        // kprobe_handler() returns with the count it took).
        // SAFETY: balanced by `release_step()` in `finish_step` or `unwind_fault`.
        unsafe { bindings::rkp_ppc_preempt_disable() };
        // prepare_singlestep(): MSR_SE, and the slot (even for a trap: the registers decide
        // whether it traps).
        regs.set_msr(regs.msr() | dec::MSR_SINGLESTEP);
        regs.set_nip(slot(p) as usize);
    }
    #[inline(always)]
    fn in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        !slot(p).is_null()
            && dec::post_step_resume(
                slot_inst(p),
                slot(p) as u64,
                regs.nip() as u64,
                KERNEL.addr(p) as u64,
            )
            .is_some()
    }
    #[inline(always)]
    fn finish_step(&self, p: Kp, regs: TrapRegs) {
        // kprobe_post_handler(): after the probed instruction, with the MSR bits the hit saw.
        let len = slot_inst(p).inst_len() as usize;
        regs.set_nip(KERNEL.addr(p).wrapping_add(len));
        regs.set_msr(regs.msr() | kcb!(self.kprobe_saved_msr) as u64);
        self.release_step();
    }
    #[inline(always)]
    fn faulted_in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        let s = slot(p);
        hit::stepping(self) && !s.is_null() && regs.nip() == s as usize
    }
    #[inline(always)]
    fn unwind_fault(&self, p: Kp, regs: TrapRegs) {
        let saved = kcb!(self.kprobe_saved_msr) as u64;
        let (nip, msr) = dec::fault_resume(KERNEL.addr(p) as u64, regs.msr(), saved);
        regs.set_nip(nip as usize);
        regs.set_msr(msr);
        self.release_step();
    }
    #[inline(always)]
    fn unrecoverable(&self, p: Kp) -> ! {
        // SAFETY: `p` is the live probe being hit; the NOKPROBE C function logs it and BUG()s.
        unsafe { bindings::rkp_ppc_unrecoverable(p.as_ptr()) }
    }
    #[inline(always)]
    fn warn_bad_status(&self) {
        // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
        unsafe { bindings::rkp_arch_warn_bad_status() };
    }
    #[inline(always)]
    fn warn_fault_status(&self) {
        // SAFETY: as above.
        unsafe { bindings::rkp_arch_warn_bad_status() };
    }
    #[inline(always)]
    fn ip(&self, regs: TrapRegs) -> usize {
        regs.nip()
    }
    #[inline(always)]
    fn set_ip(&self, regs: TrapRegs, ip: usize) {
        regs.set_nip(ip);
    }
}

nokprobe! {
    /// `kprobe_handler()`: a trap in the kernel (program check). Returns 1 when it was a
    /// probe's, or a breakpoint removed after this CPU hit it (execution resumes at the word,
    /// as it now is); 0 for someone else's trap.
    ///
    /// # Safety
    ///
    /// `regs` is the frame of a program check taken on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_handler(regs: *mut bindings::pt_regs) -> c_int {
        // SAFETY: the trap's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        if !dec::trap_may_be_kprobe(regs.msr()) {
            return 0;
        }
        let _off = PreemptOff::disable();
        // SAFETY: preemption is off until `_off` drops, after `cpu`.
        let cpu = unsafe { Cpu::this() };
        let nip = regs.nip();
        let Some(p) = table::get_kprobe(&KERNEL, nip) else {
            return match dec::stray_trap(read_word(nip)) {
                dec::StrayTrap::Removed => 1,
                dec::StrayTrap::NotOurs => 0,
            };
        };
        // A trap variant stepped in a slot trapped on a probe: not the probe's hit; the step's
        // trace bits go and the trap is the kernel's.
        if cpu.current().is_some()
            && cpu.status() == hit::KPROBE_HIT_SS
            && !slot(p).is_null()
            // SAFETY: a live probe's slot.
            && insn::is_trap(unsafe { ptr::read_volatile(slot(p)) })
        {
            let saved = kcb!(cpu.kprobe_saved_msr) as u64;
            regs.set_msr(dec::msr_without_singlestep(regs.msr(), saved));
            return 0;
        }
        c_int::from(hit::handle_hit(&cpu, p, regs))
    }
}

nokprobe! {
    /// `kprobe_post_handler()`: a single-step interrupt in the kernel. Returns 1 when it ended
    /// the step of the current probe and nobody else single-steps: with `MSR_SE` still set
    /// after the step (a debugger stepping across the probe), 0, so the interrupt goes on.
    ///
    /// # Safety
    ///
    /// `regs` is the frame of a single-step interrupt taken on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_post_handler(regs: *mut bindings::pt_regs) -> c_int {
        // SAFETY: the interrupt's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        if regs.msr() & dec::MSR_PR != 0 {
            return 0;
        }
        let _off = PreemptOff::disable();
        // SAFETY: preemption is off until `_off` drops, after `cpu`.
        let cpu = unsafe { Cpu::this() };
        c_int::from(hit::step_done(&cpu, regs) && regs.msr() & dec::MSR_SINGLESTEP == 0)
    }
}

nokprobe! {
    /// `kprobe_fault_handler()`: a fault in the kernel while a probe is current on this CPU
    /// (`kprobe_page_fault()`). A fault the slot raised is handled as usual, as if the probed
    /// instruction had raised it (0); any other is fixed up from the exception table where it
    /// can be (1).
    ///
    /// # Safety
    ///
    /// `regs` is the fault's frame; preemption is disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_fault_handler(
        regs: *mut bindings::pt_regs,
        _trapnr: c_int,
    ) -> c_int {
        // SAFETY: the fault's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is disabled (`# Safety`).
        let cpu = unsafe { Cpu::this() };
        let Some(cur) = cpu.current() else {
            return 0;
        };
        if cpu.faulted_in_step(cur, regs) {
            return c_int::from(hit::step_faulted(&cpu, regs));
        }
        // SAFETY: the fault's frame; the C moves it to a fixup if one exists.
        c_int::from(unsafe { bindings::rkp_ppc_fixup_exception(regs.as_ptr()) })
    }
}

nokprobe! {
    /// `optimized_callback()`: called by a detour with the `optimized_kprobe` its template
    /// loaded and the `pt_regs` it built.
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
        let p = unsafe { Kp::from_raw(NonNull::new_unchecked(ptr::addr_of_mut!((*op).kp))) };
        // Possible while the probe waits to be unoptimized.
        if flags_disabled(KERNEL.flags(p)) {
            return;
        }
        let _off = PreemptOff::disable();
        // SAFETY: the frame the detour built, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is off until `_off` drops, after `cpu`.
        let cpu = unsafe { Cpu::this() };
        hit::optimized_hit(
            &cpu,
            p,
            regs,
            |regs| regs.set_nip(KERNEL.addr(p)),
            // SAFETY: `p` is the live aggregate whose detour runs.
            |p, regs| unsafe { crate::glue::exports::opt_pre_handler(p.as_ptr(), regs.as_ptr()) },
        );
    }
}

nokprobe! {
    /// `kprobe_ftrace_handler()`: the `ftrace_ops` callback of probes on ftrace sites. The
    /// pre-handlers see `nip` at the ftrace call, the post-handlers past it, as upstream's.
    ///
    /// # Safety
    ///
    /// Called by ftrace for the site at `nip`, called from `parent_nip`, with `fregs` the saved
    /// registers (`FTRACE_OPS_FL_SAVE_REGS`).
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_ftrace_handler(
        nip: usize,
        parent_nip: usize,
        _ops: *mut bindings::ftrace_ops,
        fregs: *mut bindings::ftrace_regs,
    ) {
        // SAFETY: READ_ONCE of a flag ftrace sets when it dies.
        if unsafe { ptr::read_volatile(ptr::addr_of!(bindings::kprobe_ftrace_disabled)) } {
            return;
        }
        let Some(_recursion) = kernel::ftrace::RecursionGuard::try_lock(nip, parent_nip) else {
            return;
        };
        // SAFETY: the `ftrace_regs` of this call (`# Safety`).
        let raw = unsafe { kernel::ftrace::regs(fregs) };
        // NULL only without SAVE_REGS, which kprobes' ftrace_ops always ask for.
        let p = if raw.is_null() { None } else { table::get_kprobe(&KERNEL, nip) };
        if let Some(p) = p {
            // SAFETY: non-NULL, the registers of this call, ours until we return.
            let regs = unsafe { TrapRegs::new(raw) };
            // SAFETY: preemption is disabled while `_recursion` is held.
            let cpu = unsafe { Cpu::this() };
            hit::ftrace_hit(&cpu, p, regs, nip, 0, dec::MCOUNT_INSN_SIZE as usize);
        }
    }
}
