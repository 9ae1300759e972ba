// SPDX-License-Identifier: GPL-2.0

//! The state machine of a probe hit, written once for every arch.
//!
//! Upstream copies it into each arch's `kprobes.c` (`kprobe_handler()`/`kprobe_int3_handler()`,
//! `reenter_kprobe()`, `setup_singlestep()`, `kprobe_post_process()`/`post_kprobe_handler()`,
//! the fault handler and the ftrace handler), with the same `kcb->kprobe_status` transitions:
//!
//! ```text
//!   (none) --hit--> HIT_ACTIVE --pre_handler 0--> HIT_SS --step done--> HIT_SSDONE -> (none)
//!   hit while a probe runs: nmissed++, REENTER (previous probe saved) --step done--> restored
//! ```
//!
//! An arch implements [`HitArch`] (per-CPU state, handler calls, and how it steps or emulates one
//! instruction) and calls the functions below from its trap, fault and ftrace entry points.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate. Everything here runs
//! in the probe-hit path with interrupts off on one CPU: every function is `#[inline(always)]`,
//! so it compiles into the arch's unprobeable entry points, and has no panic path (the one BUG,
//! a hit while re-entering, is the arch's [`HitArch::unrecoverable`]).

/// `KPROBE_HIT_ACTIVE`: the pre-handlers are running.
pub const KPROBE_HIT_ACTIVE: u32 = 0x0000_0001;
/// `KPROBE_HIT_SS`: the probed instruction is being single-stepped out of line.
pub const KPROBE_HIT_SS: u32 = 0x0000_0002;
/// `KPROBE_REENTER`: a probe was hit while another was being handled.
pub const KPROBE_REENTER: u32 = 0x0000_0004;
/// `KPROBE_HIT_SSDONE`: the step is done, the post-handlers are running.
pub const KPROBE_HIT_SSDONE: u32 = 0x0000_0008;

/// What an arch did instead of stepping the instruction out of line (`setup_singlestep()`'s
/// early returns). Either way no step follows: the probe stops being current, unless this is
/// a re-entry (the interrupted probe stays current).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Skip {
    /// Nothing: the instruction is emulated or stepped.
    No,
    /// The probe is optimized and the arch sent the CPU through its detour
    /// (`setup_detour_execution()`).
    Detour,
    /// The copied instruction is run directly from its slot, which jumps back by itself
    /// (x86's boosting).
    Boost,
}

/// What the state machine needs from an arch, for one CPU's probe state (`kprobe_ctlblk` and
/// `current_kprobe`) and one trap frame.
///
/// Every method runs in the probe-hit path: it must be unprobeable, must not allocate or sleep,
/// and must not panic.
pub trait HitArch {
    /// Handle to a probe.
    type Probe: Copy;
    /// Handle to the trapped registers (`struct pt_regs *`).
    type Regs: Copy;

    /// Whether a probe hit during the single step of another (`KPROBE_HIT_SS`) is handled as a
    /// re-entry (x86, which steps with breakpoints) or is unrecoverable (arm64, riscv,
    /// loongarch, which step with a hardware or breakpoint trap that cannot nest).
    const REENTER_WHILE_STEPPING: bool;

    /// `kprobe_running()`.
    fn current(&self) -> Option<Self::Probe>;
    /// `__this_cpu_write(current_kprobe, p)`; `None` is `reset_current_kprobe()`.
    fn set_current(&self, p: Option<Self::Probe>);
    /// `set_current_kprobe(p, regs, kcb)`: makes `p` current and saves what the arch restores
    /// after the step (x86: the interrupt flag).
    fn set_current_kprobe(&self, p: Self::Probe, regs: Self::Regs);
    /// `kcb->kprobe_status`.
    fn status(&self) -> u32;
    /// `kcb->kprobe_status = status`.
    fn set_status(&self, status: u32);
    /// `save_previous_kprobe(kcb)`.
    fn save_previous(&self);
    /// `restore_previous_kprobe(kcb)`: the saved probe becomes current again, with its status.
    fn restore_previous(&self);

    /// `kprobes_inc_nmissed_count(p)`.
    fn inc_nmissed(&self, p: Self::Probe);
    /// `kprobe_disabled(p)`.
    fn disabled(&self, p: Self::Probe) -> bool;
    /// `p->pre_handler && p->pre_handler(p, regs)`: whether a pre-handler took over (changed
    /// the flow; the instruction is then not stepped).
    fn call_pre_handler(&self, p: Self::Probe, regs: Self::Regs) -> bool;
    /// `if (p->post_handler) p->post_handler(p, regs, 0)`.
    fn call_post_handler(&self, p: Self::Probe, regs: Self::Regs);

    /// The early exits of `setup_singlestep()`: a detour or a boost.
    fn skip_step(&self, p: Self::Probe, regs: Self::Regs, reenter: bool) -> Skip;
    /// Whether the arch emulates (simulates) the instruction of `p` instead of stepping it.
    fn emulates(&self, p: Self::Probe) -> bool;
    /// Emulates the instruction of `p` on `regs`.
    fn emulate(&self, p: Self::Probe, regs: Self::Regs);
    /// Emulates the instruction of `p` on `regs` if the arch does, returning whether it did;
    /// when not, the instruction is stepped out of line. By default [`Self::emulates`] decides
    /// beforehand; an arch whose emulation can decline at the hit (powerpc's `emulate_step()`)
    /// overrides it.
    #[inline(always)]
    fn try_emulate(&self, p: Self::Probe, regs: Self::Regs) -> bool {
        if self.emulates(p) {
            self.emulate(p, regs);
            true
        } else {
            false
        }
    }
    /// Sends the CPU to step the copied instruction out of line (interrupts off).
    fn start_step(&self, p: Self::Probe, regs: Self::Regs);
    /// Whether `regs` is the trap that ends the out-of-line step of `p`.
    fn in_step(&self, p: Self::Probe, regs: Self::Regs) -> bool;
    /// Undoes what [`Self::start_step`] changed and moves `regs` past the probed instruction.
    fn finish_step(&self, p: Self::Probe, regs: Self::Regs);
    /// Whether `regs` is a fault raised by the out-of-line copy of `p`.
    fn faulted_in_step(&self, p: Self::Probe, regs: Self::Regs) -> bool;
    /// Points `regs` back at the probed address, with the saved flags, so that the fault is
    /// handled as if the original instruction raised it.
    fn unwind_fault(&self, p: Self::Probe, regs: Self::Regs);

    /// A re-entry while re-entering: `pr_err("Unrecoverable kprobe detected.")`,
    /// `dump_kprobe(p)`, `BUG()`.
    fn unrecoverable(&self, p: Self::Probe) -> !;
    /// `WARN_ON(1)`: a probe hit in a status the state machine never sets.
    fn warn_bad_status(&self);
    /// `WARN_ON(status != SS && status != REENTER)`, a fault in the step slot outside a step.
    fn warn_fault_status(&self);

    /// `instruction_pointer(regs)`.
    fn ip(&self, regs: Self::Regs) -> usize;
    /// `instruction_pointer_set(regs, ip)`.
    fn set_ip(&self, regs: Self::Regs, ip: usize);
}

/// A breakpoint trap found probe `p` at its address: runs the pre-handlers and sets up the
/// step (`kprobe_int3_handler()`'s `if (p)` branch). Returns whether the trap was handled.
#[inline(always)]
pub fn handle_hit<A: HitArch>(a: &A, p: A::Probe, regs: A::Regs) -> bool {
    if a.current().is_some() {
        return reenter(a, p, regs);
    }
    a.set_current_kprobe(p, regs);
    a.set_status(KPROBE_HIT_ACTIVE);
    if a.call_pre_handler(p, regs) {
        // The handler changed the flow: nothing to step.
        a.set_current(None);
    } else {
        setup_singlestep(a, p, regs, false);
    }
    true
}

/// `reenter_kprobe()`: probe `p` was hit while another is current on this CPU.
#[inline(always)]
fn reenter<A: HitArch>(a: &A, p: A::Probe, regs: A::Regs) -> bool {
    match a.status() {
        KPROBE_HIT_SS if !A::REENTER_WHILE_STEPPING => a.unrecoverable(p),
        KPROBE_HIT_SSDONE | KPROBE_HIT_ACTIVE | KPROBE_HIT_SS => {
            a.inc_nmissed(p);
            setup_singlestep(a, p, regs, true);
            true
        }
        KPROBE_REENTER => a.unrecoverable(p),
        _ => {
            a.warn_bad_status();
            false
        }
    }
}

/// `setup_singlestep()`: leaves through a detour or a boost, or emulates the instruction, or
/// starts its out-of-line step.
#[inline(always)]
fn setup_singlestep<A: HitArch>(a: &A, p: A::Probe, regs: A::Regs, reenter: bool) {
    if a.skip_step(p, regs, reenter) != Skip::No {
        if !reenter {
            a.set_current(None);
        }
        return;
    }
    if reenter {
        a.save_previous();
        a.set_current_kprobe(p, regs);
        a.set_status(KPROBE_REENTER);
    } else {
        a.set_status(KPROBE_HIT_SS);
    }
    if a.try_emulate(p, regs) {
        post_process(a, p, regs);
    } else {
        a.start_step(p, regs);
    }
}

/// `kprobe_post_process()`: after the step, restores a re-entered probe or runs the
/// post-handler and clears the current probe.
#[inline(always)]
pub fn post_process<A: HitArch>(a: &A, cur: A::Probe, regs: A::Regs) {
    if a.status() == KPROBE_REENTER {
        a.restore_previous();
    } else {
        a.set_status(KPROBE_HIT_SSDONE);
        a.call_post_handler(cur, regs);
        a.set_current(None);
    }
}

/// Whether this CPU is single-stepping a probe (`kprobe_is_ss()`).
#[inline(always)]
pub fn stepping<A: HitArch>(a: &A) -> bool {
    matches!(a.status(), KPROBE_HIT_SS | KPROBE_REENTER)
}

/// A trap with no probe at its address: if it ends the out-of-line step of the current probe
/// (`resume_singlestep()` then `kprobe_post_process()`), finishes that step. Returns whether
/// the trap was handled.
#[inline(always)]
pub fn step_done<A: HitArch>(a: &A, regs: A::Regs) -> bool {
    if !stepping(a) {
        return false;
    }
    let Some(cur) = a.current() else {
        return false;
    };
    if !a.in_step(cur, regs) {
        return false;
    }
    a.finish_step(cur, regs);
    post_process(a, cur, regs);
    true
}

/// `kprobe_fault_handler()`: a fault while a probe is current. If the out-of-line copy raised
/// it, the probe is abandoned and the fault handled as if the original instruction raised it.
/// Returns whether the fault was consumed (never, as on x86: the normal fault handling goes on).
#[inline(always)]
pub fn step_faulted<A: HitArch>(a: &A, regs: A::Regs) -> bool {
    let Some(cur) = a.current() else {
        return false;
    };
    if a.faulted_in_step(cur, regs) {
        if !stepping(a) {
            a.warn_fault_status();
        }
        a.unwind_fault(cur, regs);
        if a.status() == KPROBE_REENTER {
            a.restore_previous();
        } else {
            a.set_current(None);
        }
    }
    false
}

/// `kprobe_ftrace_handler()` for probe `p` on the ftrace site at `ip` (the caller checked
/// `kprobe_ftrace_disabled`, took the recursion lock and found `p`): runs the handlers as if a
/// breakpoint at `ip` had hit and the `insn_size`-byte site had been stepped.
#[inline(always)]
pub fn ftrace_hit<A: HitArch>(
    a: &A,
    p: A::Probe,
    regs: A::Regs,
    ip: usize,
    break_size: usize,
    insn_size: usize,
) {
    if a.disabled(p) {
        return;
    }
    if a.current().is_some() {
        a.inc_nmissed(p);
        return;
    }
    let orig_ip = a.ip(regs);
    // The handlers expect the ip a breakpoint would leave.
    a.set_ip(regs, ip.wrapping_add(break_size));
    a.set_current(Some(p));
    a.set_status(KPROBE_HIT_ACTIVE);
    if !a.call_pre_handler(p, regs) {
        // Emulates the step of the site (a NOP) and restores the ip; a pre-handler that
        // returned non-zero changed the ip itself and gets no post-handler.
        a.set_ip(regs, ip.wrapping_add(insn_size));
        a.set_status(KPROBE_HIT_SSDONE);
        a.call_post_handler(p, regs);
        a.set_ip(regs, orig_ip);
    }
    a.set_current(None);
}

/// `optimized_callback()` after its disabled check, with preemption disabled: the detour of
/// optimized probe `p` was entered. `fixup` makes `regs` look like a breakpoint hit;
/// `handlers` runs the pre-handlers (`opt_pre_handler()`).
#[inline(always)]
pub fn optimized_hit<A: HitArch>(
    a: &A,
    p: A::Probe,
    regs: A::Regs,
    fixup: impl FnOnce(A::Regs),
    handlers: impl FnOnce(A::Probe, A::Regs),
) {
    if a.current().is_some() {
        a.inc_nmissed(p);
        return;
    }
    fixup(regs);
    a.set_current(Some(p));
    a.set_status(KPROBE_HIT_ACTIVE);
    handlers(p, regs);
    a.set_current(None);
}
