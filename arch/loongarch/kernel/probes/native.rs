// SPDX-License-Identifier: GPL-2.0

//! The loongarch kprobes arch layer in Rust (`CONFIG_KPROBES_RUST_ARCH`): what upstream's
//! `arch/loongarch/kernel/kprobes.c` provides, the kprobes side of `inst.c` (the decisions and
//! the simulators) and the kprobes-on-ftrace handler of `ftrace_dyn.c`, on the pure decisions
//! and simulators of [`crate::loongarch`] and the core's generic hit-path state machine
//! ([`crate::hit`]).
//!
//! Constraints: mounted in the kprobes crate after [`crate::glue`], whose probe handles and
//! kernel services it uses. The hooks of [`Loongarch`] run under the locks [`ArchHooks`]
//! documents. The C-linkage entry points (`kprobe_breakpoint_handler` and
//! `kprobe_singlestep_handler`, called by `do_bp()` for a `break` in the kernel;
//! `kprobe_fault_handler`, called by `kprobe_page_fault()`; `kprobe_ftrace_handler`, the
//! `ftrace_ops` callback) run in trap or ftrace context: they and everything they reach are in
//! `.kprobes.text` (`nokprobe!`) or inlined into it, never allocate, never sleep and contain no
//! panic path. Unlike other arches' trap code, `do_bp()` runs the handlers with interrupts on
//! when the break came from code that had them on: the handlers disable preemption themselves,
//! and a probe hit keeps it disabled from its break to the end of its out-of-line step, as
//! upstream does. What must be C is in `rust_glue.c`: the per-CPU state, the preemption count,
//! upstream's messages and wrappers of macros and linker symbols. `inst.c` stays built (the
//! rest of the kernel uses it); kprobes no longer call its decisions and simulators.
//!
//! Design: [`Cpu`] is this CPU's `kprobe_ctlblk` and `current_kprobe`, and implements
//! [`HitArch`] with loongarch's stepping: the probed instruction runs from a slot followed by
//! `break BRK_KPROBE_SSTEPBP`, with `CSR_PRMD_PIE` cleared so that no interrupt comes in
//! between, or is simulated when it reads or changes the PC (`pcaddi` and the other PC-relative
//! computations, the branches). The state machine is upstream's (a hit during another probe's
//! step cannot nest: BUG), with two fixes: a fault is the probed instruction's only when the
//! slot raised it, and the single-step handler does not drop a preemption count it did not take
//! (upstream's does when the break is not its probe's).

use core::ffi::{c_int, c_uint};
use core::mem::size_of;
use core::ptr;

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
use crate::loongarch::{self as dec, Prepared, SimuError, Unsupported};
use crate::store::ProbeStore;
use crate::table;

/// `CSR_PRMD_PIE`: the interrupt enable the exception return restores (checked against C in
/// `rust_glue.c`).
const CSR_PRMD_PIE: c_ulong = 0x4;

/// `MCOUNT_INSN_SIZE`: the size of an ftrace site.
#[cfg(CONFIG_KPROBES_ON_FTRACE)]
const MCOUNT_INSN_SIZE: usize = 4;

/// `p->ainsn`.
#[inline(always)]
fn ainsn(p: Kp) -> *mut bindings::arch_specific_insn {
    // SAFETY: `p` is live; only the field's address is formed.
    unsafe { ptr::addr_of_mut!((*p.as_ptr()).ainsn) }
}

/// The slot of `p` (`p->ainsn.insn`), NULL for a simulated instruction.
#[inline(always)]
fn slot(p: Kp) -> *mut u32 {
    // SAFETY: `p` is live; a raw place read of a field only the registration writes.
    unsafe { (*ainsn(p)).insn }
}

/// `flush_icache_range()` over the `MAX_INSN_SIZE` words at `addr` (`flush_insn_slot()`).
fn flush_insn(addr: usize) {
    let len = dec::MAX_INSN_SIZE * size_of::<u32>();
    // SAFETY: an instruction-cache barrier over a range of kernel text; no memory is accessed.
    unsafe { bindings::local_flush_icache_range(addr as c_ulong, (addr + len) as c_ulong) };
}

/// Writes `insn` over the instruction at `addr` and makes it visible to instruction fetch, as
/// upstream's `*p->addr = insn; flush_insn_slot(p)`: loongarch kernel and module text is
/// writable through the mapping it runs from, and an aligned word store is atomic.
///
/// # Safety
///
/// `addr` is a 4-byte aligned instruction of kernel text that no one else writes (the core
/// holds `text_mutex` and `kprobe_mutex`).
unsafe fn write_insn(addr: usize, insn: u32) {
    // SAFETY: by the function's contract.
    unsafe { ptr::write_volatile(addr as *mut u32, insn) };
    flush_insn(addr);
}

/// What the decisions read from the running kernel, for probes being prepared under
/// `kprobe_mutex`.
struct Text;

impl dec::KernelText for Text {
    fn read_insn(&self, addr: u64) -> Option<u32> {
        let mut word = [0u8; 4];
        // SAFETY: `word` is valid for 4 bytes of writes; the nofault copy checks the source.
        let ret = unsafe {
            bindings::copy_from_kernel_nofault(word.as_mut_ptr().cast(), addr as *const _, 4)
        };
        (ret == 0).then(|| u32::from_le_bytes(word))
    }
}

/// The index `rkp_loongarch_not_supported()` prints the notice of.
fn unsupported_index(why: Unsupported) -> c_uint {
    match why {
        Unsupported::AtomicMemoryAccess => 0,
        Unsupported::ScQ => 1,
        Unsupported::LlSc => 2,
        Unsupported::LlacqScrel => 3,
        Unsupported::BceqzBcnez => 4,
    }
}

/// This arch's fields of the trap frame.
impl TrapRegs {
    /// `regs->regs[n]`, `n` in 0..32 (any other `n` is None).
    #[inline(always)]
    fn gpr(self, n: u32) -> Option<*mut c_ulong> {
        if n >= 32 {
            return None;
        }
        // SAFETY: `regs` has 32 elements; a place inside the live frame (invariant), only its
        // address is formed.
        Some(unsafe { ptr::addr_of_mut!((*self.as_ptr()).regs[n as usize]) })
    }
    /// `regs->csr_era`.
    #[inline(always)]
    fn pc(self) -> usize {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.as_ptr()).csr_era }
    }
    /// `regs->csr_era = pc`.
    #[inline(always)]
    fn set_pc(self, pc: usize) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.as_ptr()).csr_era = pc }
    }
    /// `regs->csr_prmd`.
    #[inline(always)]
    fn prmd(self) -> c_ulong {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.as_ptr()).csr_prmd }
    }
    /// `regs->csr_prmd = v`.
    #[inline(always)]
    fn set_prmd(self, v: c_ulong) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.as_ptr()).csr_prmd = v }
    }
}

/// The frame as the simulators see it.
struct SimFrame(TrapRegs);

impl dec::Regs for SimFrame {
    #[inline(always)]
    fn reg(&self, n: u32) -> u64 {
        // SAFETY: a register of the live frame (`TrapRegs::gpr`).
        self.0.gpr(n).map_or(0, |r| unsafe { *r } as u64)
    }
    #[inline(always)]
    fn set_reg(&mut self, n: u32, val: u64) {
        if let Some(r) = self.0.gpr(n) {
            // SAFETY: as above; this handler owns the frame.
            unsafe { *r = val as c_ulong };
        }
    }
    #[inline(always)]
    fn era(&self) -> u64 {
        self.0.pc() as u64
    }
    #[inline(always)]
    fn set_era(&mut self, val: u64) {
        self.0.set_pc(val as usize);
    }
}

/// The preemption count a handler holds while it runs (`preempt_disable()`; dropping it is
/// `preempt_enable_no_resched()`, as upstream's handlers end).
///
/// # Invariants
///
/// This context incremented the preemption count for the value and has not decremented it.
struct PreemptOff(());

impl PreemptOff {
    #[inline(always)]
    fn disable() -> Self {
        // SAFETY: balanced by the drop.
        unsafe { bindings::rkp_loongarch_preempt_disable() };
        // INVARIANT: just incremented.
        PreemptOff(())
    }
}

impl Drop for PreemptOff {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: this context took the count (invariant); no reschedule in a trap handler.
        unsafe { bindings::rkp_loongarch_preempt_enable_no_resched() };
    }
}

/// The loongarch arch.
pub struct Loongarch;

impl ArchHooks<Kernel> for Loongarch {
    const OPTPROBES: bool = false;
    const KPROBES_ON_FTRACE: bool = cfg!(CONFIG_KPROBES_ON_FTRACE);
    const OPCODE_SIZE: usize = size_of::<bindings::kprobe_opcode_t>();
    const MAX_OPTIMIZED_LENGTH: usize = 0;

    fn prepare_kprobe(s: &Kernel, p: Kp) -> Result {
        let addr = s.addr(p) as u64;
        let prep = match dec::prepare_kprobe(&Text, addr) {
            Ok(prep) => prep,
            Err(e) => {
                if e == dec::errno::EINVAL {
                    // C copies the instruction before it decodes it, and tells why it refuses.
                    let opcode = dec::KernelText::read_insn(&Text, addr).unwrap_or(0);
                    // SAFETY: `p` is being registered under kprobe_mutex; nobody else uses it.
                    unsafe { (*p.as_ptr()).opcode = opcode };
                    if let Some(why) = dec::insns_not_supported(opcode) {
                        // SAFETY: prints one of the notices; any index is checked in C.
                        unsafe { bindings::rkp_loongarch_not_supported(unsupported_index(why)) };
                    }
                }
                return Err(Errno::from_neg(e).unwrap_or(Errno::EINVAL));
            }
        };
        // SAFETY: as above.
        let ainsn = unsafe { &mut *ainsn(p) };
        match prep {
            Prepared::Simulate { opcode, .. } => {
                // arch_prepare_simulate(): no slot, nothing to restore after the hit.
                // SAFETY: as above.
                unsafe { (*p.as_ptr()).opcode = opcode };
                ainsn.insn = ptr::null_mut();
                ainsn.restore = 0;
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
                // arch_prepare_ss_slot(): the instruction, then the single-step break.
                for (i, word) in slot.iter().enumerate() {
                    // SAFETY: the slot was just taken, holds `MAX_INSN_SIZE` words, is writable
                    // (`alloc_insn_page()` memory, as upstream writes it) and not reachable yet.
                    unsafe { ptr::write_volatile(insn.add(i), *word) };
                }
                flush_insn(insn as usize);
                ainsn.insn = insn;
                ainsn.restore = restore as c_ulong;
            }
        }
        Ok(())
    }

    fn arm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p`'s address is a prepared, aligned instruction; text_mutex held by the core.
        unsafe { write_insn(s.addr(p), dec::KPROBE_BP_INSN) };
    }

    fn disarm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p` is live; as for `arm_kprobe`.
        unsafe { write_insn(s.addr(p), (*p.as_ptr()).opcode) };
    }

    fn remove_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` is no longer reachable by new hits; nobody else uses `ainsn`.
        let ainsn = unsafe { &mut *ainsn(p) };
        if !ainsn.insn.is_null() {
            // SAFETY: the slot came from the kprobe instruction cache and the probe is gone.
            unsafe { slots::free(ainsn.insn.cast(), false) };
            ainsn.insn = ptr::null_mut();
        }
    }

    fn flush_insn_slot(s: &Kernel, p: Kp) {
        // flush_insn_slot(): of the probed text, where the probe has an address.
        let addr = s.addr(p);
        if addr != 0 {
            flush_insn(addr);
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
        let (mut start, mut end) = (0, 0);
        // SAFETY: out-pointers to locals.
        unsafe { bindings::rkp_irqentry_text(&mut start, &mut end) };
        add_area(start, end)
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
        unsafe { (*ainsn(p)).insn = ptr::null_mut() };
        Ok(())
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

    /// `restore_local_irqflag()`: the `csr_prmd` the step changed comes back.
    #[inline(always)]
    fn restore_local_irqflag(&self, regs: TrapRegs) {
        regs.set_prmd(kcb!(self.saved_status));
    }

    /// Ends the step's hold on preemption, taken by [`HitArch::start_step`]; the handler that
    /// ends the step keeps its own count until it returns.
    #[inline(always)]
    fn release_step(&self) {
        // SAFETY: the count `start_step` took for the step that is ending.
        unsafe { bindings::rkp_loongarch_preempt_enable_no_resched() };
    }
}

impl HitArch for Cpu {
    type Probe = Kp;
    type Regs = TrapRegs;
    const REENTER_WHILE_STEPPING: bool = false;

    hit_arch_common!();

    hit_arch_kcb!();

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
        // SAFETY: `p` is live while it hits; `opcode` is only written by the registration.
        let opcode = unsafe { (*p.as_ptr()).opcode };
        if let Err(e) = dec::simulate_insn(opcode, &mut SimFrame(regs)) {
            let (invalid, pc) = match e {
                SimuError::InvalidPc(pc) => (true, pc),
                SimuError::UnknownOpcode => (false, 0),
            };
            let pc_ins = dec::insn::is_pc_ins(opcode);
            // SAFETY: prints what upstream's simulator prints; a NOKPROBE C function.
            unsafe { bindings::rkp_loongarch_simu_error(pc_ins, invalid, pc as c_ulong) };
        }
    }
    #[inline(always)]
    fn start_step(&self, p: Kp, regs: TrapRegs) {
        // The step keeps preemption off until its break or its fault (upstream's breakpoint
        // handler returns with the count it took).
        // SAFETY: balanced by `release_step()` in `finish_step` or `unwind_fault`.
        unsafe { bindings::rkp_loongarch_preempt_disable() };
        // save_local_irqflag(): no interrupt between the trap's return and the step.
        let prmd = regs.prmd();
        kcb!(self.saved_status = prmd);
        regs.set_prmd(prmd & !CSR_PRMD_PIE);
        regs.set_pc(slot(p) as usize);
    }
    #[inline(always)]
    fn in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        // `&cur->ainsn.insn[1]`: the break after the copy.
        regs.pc() == (slot(p) as usize).wrapping_add(size_of::<u32>())
    }
    #[inline(always)]
    fn finish_step(&self, p: Kp, regs: TrapRegs) {
        self.restore_local_irqflag(regs);
        self.release_step();
        // post_kprobe_handler(): a stepped instruction resumes after the probe.
        // SAFETY: `p` is live while it hits.
        let restore = unsafe { (*ainsn(p)).restore };
        if restore != 0 {
            regs.set_pc(restore as usize);
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
        // As upstream, a re-entered probe's flags stay: the outer probe's step goes on.
        if self.status() != hit::KPROBE_REENTER {
            self.restore_local_irqflag(regs);
        }
        if hit::stepping(self) {
            self.release_step();
        }
    }
    #[inline(always)]
    fn unrecoverable(&self, p: Kp) -> ! {
        // SAFETY: `p` is the live probe being hit; the NOKPROBE C function logs it and BUG()s.
        unsafe { bindings::rkp_loongarch_unrecoverable(p.as_ptr()) }
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
    /// `kprobe_breakpoint_handler()`: a `break BRK_KPROBE_BP` in the kernel (`do_bp()`), with
    /// interrupts as the broken code had them. Returns whether it was handled: a probe's hit,
    /// or a breakpoint removed after this CPU hit it (the trap returns to the instruction,
    /// which runs as it now is).
    ///
    /// # Safety
    ///
    /// `regs` is the frame of a `break` taken in the kernel on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_breakpoint_handler(regs: *mut bindings::pt_regs) -> bool {
        // SAFETY: the break's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        let addr = regs.pc();
        let _off = PreemptOff::disable();
        // SAFETY: preemption is off until `_off` drops, after `cpu`.
        let cpu = unsafe { Cpu::this() };
        if let Some(p) = table::get_kprobe(&KERNEL, addr) {
            if hit::handle_hit(&cpu, p, regs) {
                return true;
            }
        }
        // SAFETY: this CPU just fetched the break from `addr`, mapped kernel text.
        unsafe { ptr::read_volatile(addr as *const u32) != dec::KPROBE_BP_INSN }
    }
}

nokprobe! {
    /// `kprobe_singlestep_handler()`: a `break BRK_KPROBE_SSTEPBP` in the kernel, which ends the
    /// out-of-line step of the current probe if it is the break of its slot.
    ///
    /// # Safety
    ///
    /// As for [`kprobe_breakpoint_handler`].
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_singlestep_handler(regs: *mut bindings::pt_regs) -> bool {
        // SAFETY: the break's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        let _off = PreemptOff::disable();
        // SAFETY: preemption is off until `_off` drops, after `cpu`.
        let cpu = unsafe { Cpu::this() };
        hit::step_done(&cpu, regs)
    }
}

nokprobe! {
    /// `kprobe_fault_handler()`: a fault in the kernel while a probe is current on this CPU
    /// (`kprobe_page_fault()`). A fault the slot raised is handled as usual, as if the probed
    /// instruction had raised it; any other is left to the fault handling. Never consumes the
    /// fault (false), as upstream.
    ///
    /// # Safety
    ///
    /// `regs` is the fault's frame; preemption is disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_fault_handler(
        regs: *mut bindings::pt_regs,
        _trapnr: c_int,
    ) -> bool {
        // SAFETY: the fault's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is disabled (`# Safety`).
        let cpu = unsafe { Cpu::this() };
        hit::step_faulted(&cpu, regs)
    }
}

nokprobe! {
    /// `kprobe_ftrace_handler()`: the `ftrace_ops` callback of probes on ftrace sites. The
    /// handlers see `csr_era` at the site, and the post-handlers past it, as upstream's.
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
        if unsafe { ptr::read_volatile(ptr::addr_of!(bindings::kprobe_ftrace_disabled)) } {
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
            hit::ftrace_hit(&cpu, p, regs, ip, 0, MCOUNT_INSN_SIZE);
        }
    }
}
