// SPDX-License-Identifier: GPL-2.0

//! The s390 kprobes arch layer in Rust (`CONFIG_KPROBES_RUST_ARCH`): what upstream's
//! `arch/s390/kernel/kprobes.c` provides and the kprobes-on-ftrace handler of
//! `arch/s390/kernel/ftrace.c`, on the pure decisions of [`crate::s390`] and the core's generic
//! hit-path state machine ([`crate::hit`]).
//!
//! Constraints: mounted in the kprobes crate after [`crate::glue`], whose probe handles and
//! kernel services it uses. The hooks of [`S390`] run under the locks [`ArchHooks`] documents;
//! arming and disarming write one halfword, under `stop_machine()` unless the machine has the
//! sequential-instruction-fetching facility (then with `text_poke_sync()`), as upstream. The
//! C-linkage entry points (`kprobe_exceptions_notify`, the die notifier the core registers,
//! which `illegal_op()` calls for the breakpoint with `DIE_BPT`, `do_per_trap()` for the end of
//! a step with `DIE_SSTEP` and program checks with `DIE_TRAP`; `kprobe_fault_handler`, called
//! by `kprobe_page_fault()`; `kprobe_ftrace_handler`, the `ftrace_ops` callback) run in trap or
//! ftrace context: they and everything they reach are in `.kprobes.text` (`nokprobe!`) or
//! inlined into it, never allocate, never sleep and contain no panic path. A probe hit keeps
//! preemption disabled from its breakpoint to the end of its step, as upstream. What must be C
//! is in `rust_glue.c`: the per-CPU state, the slot page (`alloc_insn_page()`), the preemption
//! count, the interrupt mask and the PER control registers (inline assembly), upstream's
//! messages and wrappers of macros and linker symbols. `arch/s390/lib/probes.c` stays built
//! (uprobes uses it); kprobes no longer call its decisions.
//!
//! Design: [`Cpu`] is this CPU's `kprobe_ctlblk` and `current_kprobe`, and implements
//! [`HitArch`] with s390's stepping: every accepted instruction is copied into a slot (a
//! relative-long one re-aimed at its target) and stepped there with PER instruction-fetch
//! events on for exactly the slot's address, I/O and external interrupts off; the PER event
//! after it ends the step, and [`dec::resume_execution`] moves the PSW (and a return register)
//! back from the slot to the probe. s390 emulates no instruction. The state machine is
//! upstream's: a hit during another probe's step, or while re-entering, is a BUG, and a program
//! check while stepping abandons the step and leaves the fault to the kernel as if the probed
//! instruction had raised it. One divergence: a hit in a status the state machine never sets
//! WARNs and is not taken (upstream BUGs); such a status cannot arise.

use core::ffi::{c_int, c_void};
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
use crate::s390::{self as dec, KernelText as _, MAX_INSN_SIZE};
use crate::store::ProbeStore;
use crate::table;
use crate::text::KernelText as _;

/// `PER_EVENT_IFETCH`: the PER instruction-fetch event, the single step (checked against C in
/// `rust_glue.c`, as are the PSW bits of [`dec`]).
const PER_EVENT_IFETCH: c_ulong = 0x4000_0000;

/// `NOTIFY_DONE`: the notifier did not handle the event.
const NOTIFY_DONE: c_int = 0;
/// `NOTIFY_STOP`: the notifier handled the event; the chain stops.
const NOTIFY_STOP: c_int = 0x8001;

/// The number of general registers in `struct pt_regs` (`NUM_GPRS`).
const NUM_GPRS: usize = 16;

/// `p->ainsn.insn`: the slot, NULL for a probe on an ftrace site.
#[inline(always)]
fn slot(p: Kp) -> *mut u16 {
    // SAFETY: `p` is live; a raw place read of a field only registration and removal write.
    unsafe { (*p.as_ptr()).ainsn.insn }
}

/// What the decisions read from the running kernel, for probes being prepared under
/// `kprobe_mutex`.
struct Text;

impl dec::KernelText for Text {
    fn read_halfword(&self, addr: u64) -> Option<u16> {
        let mut halfword = [0u8; 2];
        // SAFETY: `halfword` is valid for 2 bytes of writes; the nofault copy checks the
        // source.
        let ret = unsafe {
            bindings::copy_from_kernel_nofault(
                halfword.as_mut_ptr().cast(),
                addr as usize as *const c_void,
                2,
            )
        };
        (ret == 0).then(|| u16::from_be_bytes(halfword))
    }
}

/// This arch's fields of the trap frame.
impl TrapRegs {
    /// `&regs->psw`.
    #[inline(always)]
    fn psw(self) -> *mut bindings::psw_t {
        // SAFETY: a live frame (invariant); only the field's address is formed.
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).__bindgen_anon_1.__bindgen_anon_1.psw) }
    }
    /// `regs->psw.mask`.
    #[inline(always)]
    fn mask(self) -> u64 {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.psw()).mask as u64 }
    }
    /// `regs->psw.mask = mask`.
    #[inline(always)]
    fn set_mask(self, mask: u64) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.psw()).mask = mask as c_ulong }
    }
    /// `regs->psw.addr`.
    #[inline(always)]
    fn pc(self) -> usize {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.psw()).addr as usize }
    }
    /// `regs->psw.addr = addr`.
    #[inline(always)]
    fn set_pc(self, addr: usize) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.psw()).addr = addr as c_ulong }
    }
    /// `regs->gprs[n] += delta`, `n` in 0..16 (any other `n` is ignored).
    #[inline(always)]
    fn add_gpr(self, n: usize, delta: u64) {
        if n >= NUM_GPRS {
            return;
        }
        // SAFETY: `gprs` has `NUM_GPRS` registers in the live frame (invariant), `n` is below
        // it; this handler owns the frame.
        unsafe {
            let gprs = ptr::addr_of_mut!((*self.as_ptr()).__bindgen_anon_1.__bindgen_anon_1.gprs);
            let r = gprs.cast::<c_ulong>().add(n);
            *r = (*r).wrapping_add(delta as c_ulong);
        }
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
        unsafe { bindings::rkp_s390_preempt_disable() };
        // INVARIANT: just incremented.
        PreemptOff(())
    }
}

impl Drop for PreemptOff {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: this context took the count (invariant); no reschedule in a trap handler.
        unsafe { bindings::rkp_s390_preempt_enable_no_resched() };
    }
}

/// The halfword written by [`swap_instruction`] at an address.
#[repr(C)]
struct Swap {
    addr: usize,
    insn: u16,
}

nokprobe! {
    /// `swap_instruction()`: writes the halfword of `data`, a [`Swap`], at its address; run by
    /// `stop_machine()` on one CPU while the others spin with interrupts off, or directly.
    ///
    /// # Safety
    ///
    /// `data` points to a live [`Swap`] whose address is the first halfword of an instruction
    /// of kernel text that only this writer changes.
    unsafe extern "C" fn swap_instruction(data: *mut c_void) -> c_int {
        // SAFETY: a live `Swap` (`# Safety`).
        let swap = unsafe { &*data.cast::<Swap>() };
        // SAFETY: two bytes at an instruction of kernel text (`# Safety`); s390_kernel_write()
        // writes read-only text.
        unsafe {
            bindings::__s390_kernel_write(
                swap.addr as *mut c_void,
                ptr::addr_of!(swap.insn).cast(),
                size_of::<u16>(),
            )
        };
        0
    }
}

/// `arch_arm_kprobe()`/`arch_disarm_kprobe()`: writes `insn` over the first halfword at `addr`.
///
/// # Safety
///
/// `addr` is the start of a prepared probe's instruction in kernel text; `text_mutex` and
/// `cpus_read_lock()` are held.
unsafe fn write_halfword(addr: usize, insn: u16) {
    let mut swap = Swap { addr, insn };
    let data = ptr::addr_of_mut!(swap).cast::<c_void>();
    // SAFETY: a C flag read.
    if unsafe { bindings::rkp_s390_machine_has_seq_insn() } {
        // SAFETY: `data` is a live `Swap` at a probe's instruction (`# Safety`); the other CPUs
        // fetch the halfword whole and text_poke_sync() makes them refetch it.
        unsafe {
            swap_instruction(data);
            bindings::text_poke_sync();
        }
    } else {
        // SAFETY: as above; `stop_machine_cpuslocked()` runs the function while every other
        // CPU spins, with cpus_read_lock held (`# Safety`), and returns once it has run.
        unsafe { bindings::stop_machine_cpuslocked(Some(swap_instruction), data, ptr::null()) };
    }
}

/// The s390 arch.
pub struct S390;

impl ArchHooks<Kernel> for S390 {
    const OPTPROBES: bool = false;
    const KPROBES_ON_FTRACE: bool = cfg!(CONFIG_KPROBES_ON_FTRACE);
    const OPCODE_SIZE: usize = size_of::<bindings::kprobe_opcode_t>();
    const MAX_OPTIMIZED_LENGTH: usize = 0;

    fn prepare_kprobe(s: &Kernel, p: Kp) -> Result {
        let addr = s.addr(p);
        let offset = s
            .kallsyms_lookup_size_offset(addr)
            .map(|(_, offset)| offset as u64);
        // A breakpoint before `addr` is walked over as the instruction it replaced; probes are
        // looked up under kprobe_mutex, which the registration holds.
        let probe_opcode = |a: u64| {
            table::get_kprobe(s, a as usize).map(|kp| {
                // SAFETY: a registered probe; `opcode` is only written by its registration.
                unsafe { (*kp.as_ptr()).opcode }
            })
        };
        if !dec::can_probe(&Text, addr as u64, offset, probe_opcode) {
            return Err(Errno::EINVAL);
        }
        let (insn, len) = Text.read_insn(addr as u64).ok_or(Errno::EINVAL)?;
        if dec::probe_is_prohibited_opcode(&insn) {
            return Err(Errno::EINVAL);
        }
        let insn_slot = slots::get().cast::<u16>();
        if insn_slot.is_null() {
            return Err(Errno::ENOMEM);
        }
        // copy_instruction(): a relative-long instruction re-aimed from the slot, which is
        // within 2 GiB of the kernel image (`alloc_insn_page()`), so the displacement fits.
        let copy = dec::copy_instruction(insn, addr as u64, insn_slot as u64);
        // SAFETY: `p` is being registered under kprobe_mutex; nobody else uses it.
        unsafe {
            (*p.as_ptr()).opcode = insn[0];
            (*p.as_ptr()).ainsn.insn = insn_slot;
        }
        let len = (len as usize).min(MAX_INSN_SIZE * size_of::<u16>());
        // SAFETY: the slot was just taken, holds `MAX_INSN_SIZE` halfwords and is not reachable
        // yet; `copy` holds `len` bytes in the CPU's (big-endian) order.
        unsafe {
            bindings::__s390_kernel_write(insn_slot.cast(), copy.as_ptr().cast(), len);
        }
        Ok(())
    }

    fn arm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p`'s address is a prepared instruction; text_mutex and cpus_read_lock held
        // by the core.
        unsafe { write_halfword(s.addr(p), dec::BREAKPOINT_INSTRUCTION) };
    }

    fn disarm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: as for `arm_kprobe`; `opcode` is the halfword the breakpoint replaced.
        unsafe { write_halfword(s.addr(p), (*p.as_ptr()).opcode) };
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
            (*p.as_ptr()).ainsn.insn = ptr::null_mut();
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
        unsafe { (*p.as_ptr()).ainsn.insn = ptr::null_mut() };
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

    /// `disable_singlestep()`: the PER control registers and the interrupt bits the step
    /// changed come back, PER goes off, and the PSW resumes at `ip`. Then the step's hold on
    /// preemption, taken by [`HitArch::start_step`], ends; the handler that ends the step keeps
    /// its own count until it returns.
    #[inline(always)]
    fn disable_singlestep(&self, regs: TrapRegs, ip: usize) {
        // SAFETY: this CPU's control block, whose `kprobe_saved_ctl` the step's start saved.
        unsafe { bindings::rkp_s390_per_restore(self.state.kcb()) };
        let saved_imask = kcb!(self.kprobe_saved_imask) as u64;
        regs.set_mask(dec::disable_singlestep_mask(regs.mask(), saved_imask));
        regs.set_pc(ip);
        // SAFETY: the count `start_step` took for the step that is ending.
        unsafe { bindings::rkp_s390_preempt_enable_no_resched() };
    }
}

impl HitArch for Cpu {
    type Probe = Kp;
    type Regs = TrapRegs;
    const REENTER_WHILE_STEPPING: bool = false;

    hit_arch_common!();

    #[inline(always)]
    fn set_current_kprobe(&self, p: Kp, _regs: TrapRegs) {
        self.set_current(Some(p));
    }
    #[inline(always)]
    fn status(&self) -> u32 {
        // The status is an `unsigned long` on s390; only `KPROBE_*` values are stored.
        kcb!(self.kprobe_status) as u32
    }
    #[inline(always)]
    fn set_status(&self, status: u32) {
        kcb!(self.kprobe_status = status as c_ulong);
    }
    #[inline(always)]
    fn save_previous(&self) {
        // push_kprobe()'s save.
        let cur = self.current().map_or(ptr::null_mut(), Kp::as_ptr);
        kcb!(self.prev_kprobe.kp = cur);
        kcb!(self.prev_kprobe.status = kcb!(self.kprobe_status));
    }
    #[inline(always)]
    fn restore_previous(&self) {
        // pop_kprobe().
        let prev = kcb!(self.prev_kprobe.kp);
        self.state.set_current_raw(prev);
        kcb!(self.kprobe_status = kcb!(self.prev_kprobe.status));
        kcb!(self.prev_kprobe.kp = ptr::null_mut());
    }
    #[inline(always)]
    fn skip_step(&self, _p: Kp, _regs: TrapRegs, _reenter: bool) -> Skip {
        Skip::No
    }
    #[inline(always)]
    fn emulates(&self, _p: Kp) -> bool {
        // Every accepted instruction is stepped in its slot.
        false
    }
    #[inline(always)]
    fn emulate(&self, _p: Kp, _regs: TrapRegs) {
        // Never called: `emulates` is false for every probe.
    }
    #[inline(always)]
    fn start_step(&self, p: Kp, regs: TrapRegs) {
        // The step keeps preemption off until its PER event or its fault (upstream's
        // kprobe_handler() returns with the count it took).
        // SAFETY: balanced by `disable_singlestep()` in `finish_step` or `unwind_fault`.
        unsafe { bindings::rkp_s390_preempt_disable() };
        // enable_singlestep(): PER instruction-fetch events for the slot's address only, I/O
        // and external interrupts off, the PSW at the slot.
        let ip = slot(p) as c_ulong;
        // SAFETY: this CPU's control block; the C stores %cr9-%cr11 into `kprobe_saved_ctl`.
        unsafe { bindings::rkp_s390_per_save(self.state.kcb()) };
        let (mask, saved_imask) = dec::enable_singlestep_mask(regs.mask());
        kcb!(self.kprobe_saved_imask = saved_imask as c_ulong);
        // SAFETY: loads %cr9-%cr11 with the step's PER event and range, restored by
        // `disable_singlestep()`.
        unsafe { bindings::rkp_s390_per_load(PER_EVENT_IFETCH, ip, ip) };
        regs.set_mask(mask);
        regs.set_pc(ip as usize);
    }
    #[inline(always)]
    fn in_step(&self, _p: Kp, _regs: TrapRegs) -> bool {
        // PER events in the kernel are only kprobes' (`do_per_trap()`): while a probe steps,
        // the event is its step's end, as upstream's post_kprobe_handler() takes it.
        true
    }
    #[inline(always)]
    fn finish_step(&self, p: Kp, regs: TrapRegs) {
        // resume_execution(): the PSW, and a return register the instruction set, move from
        // the slot back to the probe.
        let insn_slot = slot(p);
        let mut slot_insn = [0u16; MAX_INSN_SIZE];
        // SAFETY: the slot holds `MAX_INSN_SIZE` halfwords written by `prepare_kprobe`, live
        // while `p` hits.
        unsafe { ptr::copy_nonoverlapping(insn_slot, slot_insn.as_mut_ptr(), MAX_INSN_SIZE) };
        let resumed = dec::resume_execution(
            &slot_insn,
            KERNEL.addr(p) as u64,
            insn_slot as u64,
            regs.pc() as u64,
        );
        if let Some((reg, delta)) = resumed.gpr_fix {
            regs.add_gpr(reg, delta);
        }
        self.disable_singlestep(regs, resumed.ip as usize);
    }
    #[inline(always)]
    fn faulted_in_step(&self, _p: Kp, _regs: TrapRegs) -> bool {
        // A program check while a probe steps is the stepped instruction's (interrupts are off
        // and the handlers are done): upstream's kprobe_trap_handler() decides by the status.
        hit::stepping(self)
    }
    #[inline(always)]
    fn unwind_fault(&self, p: Kp, regs: TrapRegs) {
        self.disable_singlestep(regs, KERNEL.addr(p));
    }
    #[inline(always)]
    fn unrecoverable(&self, p: Kp) -> ! {
        // SAFETY: `p` is the live probe being hit; the NOKPROBE C function logs it and BUG()s.
        unsafe { bindings::rkp_s390_unrecoverable(p.as_ptr()) }
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
        regs.pc()
    }
    #[inline(always)]
    fn set_ip(&self, regs: TrapRegs, ip: usize) {
        regs.set_pc(ip);
    }
}

nokprobe! {
    /// `kprobe_handler()`: a breakpoint (`DIE_BPT`); the PSW is past its halfword. Returns
    /// whether it was a probe's.
    ///
    /// Out of line under upstream's name, as upstream's static function is a symbol: a probe
    /// on `kprobe_handler` is then refused with -EINVAL (it is in `.kprobes.text`), as on C,
    /// rather than with -ENOENT (conformance, `rkc_kprobe_errnos`).
    #[no_mangle]
    #[inline(never)]
    fn kprobe_handler(regs: TrapRegs) -> bool {
        let _off = PreemptOff::disable();
        // SAFETY: preemption is off until `_off` drops, after `cpu`.
        let cpu = unsafe { Cpu::this() };
        // Arming and disarming stop every CPU (or the write is atomic), so a breakpoint that
        // is no probe's is not kprobes': the program check goes on as an illegal operation.
        let addr = regs.pc().wrapping_sub(size_of::<u16>());
        match table::get_kprobe(&KERNEL, addr) {
            Some(p) => hit::handle_hit(&cpu, p, regs),
            None => false,
        }
    }
}

/// `post_kprobe_handler()`: a PER event (`DIE_SSTEP`). Returns whether it ended a probe's step
/// and nobody else steps: when the PSW still has PER on after the step (a debugger's single
/// step across the probe), the event goes on to `do_per_trap()`'s other users.
#[inline(always)]
fn post_kprobe_handler(regs: TrapRegs) -> bool {
    let _off = PreemptOff::disable();
    // SAFETY: preemption is off until `_off` drops, after `cpu`.
    let cpu = unsafe { Cpu::this() };
    hit::step_done(&cpu, regs) && regs.mask() & dec::PSW_MASK_PER == 0
}

/// `kprobe_trap_handler()`: a program check while `cpu` has a current probe. One raised by the
/// step is left to the kernel as the probed instruction's (false); one in a handler is fixed up
/// from the exception table where it can be (true).
#[inline(always)]
fn kprobe_trap_handler(cpu: &Cpu, regs: TrapRegs) -> bool {
    if matches!(
        cpu.status(),
        hit::KPROBE_HIT_ACTIVE | hit::KPROBE_HIT_SSDONE
    ) {
        // SAFETY: the fault's frame; fixup_exception() moves it to a fixup if one exists.
        return unsafe { bindings::fixup_exception(regs.as_ptr()) };
    }
    hit::step_faulted(cpu, regs)
}

/// `PSW_MASK_IO | PSW_MASK_EXT`: the interrupts a PSW enables.
const PSW_MASK_IRQS: u64 = dec::PSW_MASK_IO | dec::PSW_MASK_EXT;

/// The start of upstream's notifier and fault handler: interrupts off when the interrupted PSW
/// had them on.
#[inline(always)]
fn irqs_off(regs: TrapRegs) {
    if regs.mask() & PSW_MASK_IRQS != 0 {
        // SAFETY: a NOKPROBE C wrapper of local_irq_disable().
        unsafe { bindings::rkp_s390_local_irq_disable() };
    }
}

/// The end of upstream's notifier and fault handler: interrupts back on if the PSW the trap
/// returns to has them (a step just started keeps them off until its end).
#[inline(always)]
fn irqs_restore(regs: TrapRegs) {
    let mask = regs.mask();
    if mask & PSW_MASK_IRQS != 0 {
        // SAFETY: restores the interrupt state of the PSW the trap returns to.
        unsafe { bindings::rkp_s390_local_irq_restore((mask & !dec::PSW_MASK_PER) as c_ulong) };
    }
}

/// A program check (`DIE_TRAP`): kprobes' only while preemption is disabled and a probe is
/// current on this CPU.
#[inline(always)]
fn trap(regs: TrapRegs) -> bool {
    // SAFETY: a C flag read.
    if unsafe { bindings::rkp_s390_preemptible() } {
        return false;
    }
    // SAFETY: preemption is disabled, as just checked, until this handler returns.
    let cpu = unsafe { Cpu::this() };
    cpu.current().is_some() && kprobe_trap_handler(&cpu, regs)
}

nokprobe! {
    /// `kprobe_exceptions_notify()`: the die notifier of kprobes, for a breakpoint
    /// (`DIE_BPT`), a PER event (`DIE_SSTEP`) or a program check (`DIE_TRAP`) in the kernel.
    ///
    /// # Safety
    ///
    /// Called by `notify_die()` with `data` a live `struct die_args` whose `regs` is the frame
    /// of the trap being handled on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_exceptions_notify(
        _nb: *mut bindings::notifier_block,
        val: c_ulong,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: a live `die_args` (`# Safety`).
        let raw = unsafe { (*data.cast::<bindings::die_args>()).regs };
        if raw.is_null() {
            return NOTIFY_DONE;
        }
        // SAFETY: non-NULL, the frame of this trap, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(raw) };
        irqs_off(regs);
        let stop = match val as u32 {
            bindings::die_val_DIE_BPT => kprobe_handler(regs),
            bindings::die_val_DIE_SSTEP => post_kprobe_handler(regs),
            bindings::die_val_DIE_TRAP => trap(regs),
            _ => false,
        };
        irqs_restore(regs);
        if stop {
            NOTIFY_STOP
        } else {
            NOTIFY_DONE
        }
    }
}

nokprobe! {
    /// `kprobe_fault_handler()`: a fault in the kernel while a probe is current on this CPU
    /// (`kprobe_page_fault()`), as [`kprobe_trap_handler`]: 1 when a handler's fault was fixed
    /// up, else 0.
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
        irqs_off(regs);
        let fixed = kprobe_trap_handler(&cpu, regs);
        irqs_restore(regs);
        c_int::from(fixed)
    }
}

nokprobe! {
    /// `kprobe_ftrace_handler()`: the `ftrace_ops` callback of probes on ftrace sites. The
    /// pre-handlers see the PSW address at the site's `brasl`, the post-handlers past it, as if
    /// it had been stepped, as upstream's.
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
            hit::ftrace_hit(&cpu, p, regs, ip, 0, dec::MCOUNT_INSN_SIZE as usize);
        }
    }
}
