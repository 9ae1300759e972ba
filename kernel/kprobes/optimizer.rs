// SPDX-License-Identifier: GPL-2.0

//! The jump-optimization state machine (`CONFIG_OPTPROBES` part of `kernel/kprobes.c`).
//!
//! Constraints: process context only; every function except [`kprobe_disarmed`] and
//! [`wait_for_kprobe_optimizer`] is called with `kprobe_mutex` held (it takes the
//! [`KprobeState`] by `&mut`, which only the guard hands out). `no_std`, no allocation, does not
//! name the `kernel` crate. With `Arch::OPTPROBES == false` every entry point reduces to what C's
//! `#else` macros do, so call sites stay unconditional.
//!
//! States of an aggregate `op` (contract 3.7): `op->list` empty and not OPTIMIZED: plain
//! breakpoint; on [`OptQueue::Optimizing`] with OPTIMIZED: waiting for the jump; `op->list`
//! empty with OPTIMIZED: jump installed; on [`OptQueue::Unoptimizing`] with OPTIMIZED: waiting
//! for the jump to go; on [`OptQueue::Freeing`]: jump removed, waiting to be disarmed and freed.

use super::arch::{Arch, ArchHooks};
use super::report::{Message, WarnSite};
use super::store::{
    flags_disabled, flags_ftrace, flags_gone, flags_optimized, Aggr, KprobeState, OptQueue,
    KPROBE_FLAG_DISABLED, KPROBE_FLAG_OPTIMIZED,
};
use super::table::{for_each_kprobe, get_kprobe, kprobe_unused};

fn clear_flag<A: Arch>(a: &A, p: A::Probe, flag: u32) {
    a.set_flags(p, a.flags(p) & !flag);
}

fn set_flag<A: Arch>(a: &A, p: A::Probe, flag: u32) {
    a.set_flags(p, a.flags(p) | flag);
}

/// `free_aggr_kprobe()`: release the detour, the slot, and the aggregate's memory.
pub fn free_aggr_kprobe<A: Arch>(a: &A, ap: Aggr<A::Probe>) {
    if A::OPTPROBES {
        A::Hooks::remove_optimized_kprobe(a, ap);
    }
    A::Hooks::remove_kprobe(a, ap.kp());
    a.kfree_aggr_kprobe(ap);
}

/// `p` as an aggregate, if it is one and the optimizer exists (C's `#ifdef CONFIG_OPTPROBES`
/// around every `container_of(p, struct optimized_kprobe, kp)`).
fn opt_aggr<A: Arch>(a: &A, p: A::Probe) -> Option<Aggr<A::Probe>> {
    if A::OPTPROBES {
        Aggr::of(a, p)
    } else {
        None
    }
}

/// `kprobe_optready()`: `p` is an aggregate with a prepared detour; that aggregate.
pub fn kprobe_optready<A: Arch>(a: &A, p: A::Probe) -> Option<Aggr<A::Probe>> {
    opt_aggr(a, p).filter(|&ap| A::Hooks::prepared_optinsn(a, ap))
}

/// `kprobe_disarmed()`: disabled, and (for an aggregate) not queued. `p` is on the hash.
pub fn kprobe_disarmed<A: Arch>(a: &A, p: A::Probe) -> bool {
    match opt_aggr(a, p) {
        None => flags_disabled(a.flags(p)),
        Some(ap) => flags_disabled(a.flags(p)) && a.op_list_empty(ap),
    }
}

/// `kprobe_queued()`: an aggregate on one of the optimizer queues.
pub fn kprobe_queued<A: Arch>(a: &A, p: A::Probe) -> bool {
    opt_aggr(a, p).is_some_and(|ap| !a.op_list_empty(ap))
}

/// `get_optimized_kprobe()`: an optimized probe whose jump covers `addr` (not at `addr`).
pub fn get_optimized_kprobe<A: Arch>(a: &A, addr: usize) -> Option<Aggr<A::Probe>> {
    if !A::OPTPROBES || A::OPCODE_SIZE == 0 {
        return None;
    }
    for i in 1..A::MAX_OPTIMIZED_LENGTH / A::OPCODE_SIZE {
        let Some(p) = get_kprobe(a, addr.wrapping_sub(i * A::OPCODE_SIZE)) else {
            continue;
        };
        let Some(ap) = kprobe_optready(a, p) else {
            continue;
        };
        if kprobe_disarmed(a, p) {
            continue;
        }
        if A::Hooks::within_optimized_kprobe(a, ap, addr) {
            return Some(ap);
        }
    }
    None
}

/// `optimize_kprobe(get_optimized_kprobe(addr))`, as C retries the probe whose jump covers
/// `addr` after the probe at `addr` went away. Without looking for it when `optimize_kprobe()`
/// would return at once (optimization switched off, or kprobes disarmed): the search is a hash
/// lookup for each byte before `addr` that a jump can cover, the longest part of unregistering
/// a large batch of breakpoint probes (Rust only; the result is C's).
pub fn reoptimize_around<A: Arch>(a: &A, st: &KprobeState, addr: usize) {
    if !st.allow_optimization || st.all_disarmed {
        return;
    }
    if let Some(op) = get_optimized_kprobe(a, addr) {
        optimize_kprobe(a, st, op.kp());
    }
}

/// `optprobe_queued_unopt()`: `ap` is on the unoptimizing queue.
pub fn optprobe_queued_unopt<A: Arch>(a: &A, ap: Aggr<A::Probe>) -> bool {
    A::OPTPROBES && a.queue_contains(OptQueue::Unoptimizing, ap)
}

fn do_optimize_kprobes<A: Arch>(a: &A, st: &KprobeState) {
    // The arch's stop_machine() needs the CPU set fixed outside text_mutex (C's comment).
    a.assert_text_mutex_held();
    a.assert_cpus_held();
    if st.all_disarmed || !st.allow_optimization || a.queue_empty(OptQueue::Optimizing) {
        return;
    }
    A::Hooks::optimize_kprobes(a);
}

fn do_unoptimize_kprobes<A: Arch>(a: &A) {
    a.assert_text_mutex_held();
    a.assert_cpus_held();
    if !a.queue_empty(OptQueue::Unoptimizing) {
        A::Hooks::unoptimize_kprobes(a);
    }
    a.queue_for_each_safe(OptQueue::Freeing, |op| {
        let kp = op.kp();
        clear_flag(a, kp, KPROBE_FLAG_OPTIMIZED);
        let f = a.flags(kp);
        if flags_disabled(f) && !flags_gone(f) {
            A::Hooks::disarm_kprobe(a, kp);
        }
        if kprobe_unused(a, kp) {
            a.hlist_del_rcu(kp);
        } else {
            a.queue_del_init(op);
        }
    });
}

/// `do_free_cleaned_kprobes()`, with upstream's fix f76d1c41b609 ("kprobes: Fix to retry
/// blocked optprobe in do_free_cleaned_kprobes()").
///
/// An aggregate under the jump of an optimized probe blocks that probe's optimization (the arch
/// check refuses a jump over another probe). When such an aggregate is unregistered while it is
/// itself optimized, `__disarm_kprobe()` finds it queued for unoptimizing and so does not
/// re-optimize the probe it blocked; it ends here, freed, and without the fix the blocked probe
/// stays a breakpoint for good. Now that the aggregate is off the hash and unoptimized, the probe
/// whose jump covers its address is retried.
fn do_free_cleaned_kprobes<A: Arch>(a: &A, st: &KprobeState) {
    a.queue_for_each_safe(OptQueue::Freeing, |op| {
        a.queue_del_init(op);
        if !kprobe_unused(a, op.kp()) {
            // Must not happen; a probe still in use stays on the hash.
            a.warn(WarnSite::DoFreeCleanedKprobes);
            return;
        }
        reoptimize_around(a, st, a.addr(op.kp()));
        free_aggr_kprobe(a, op);
    });
}

/// `kprobe_optimizer()`: the delayed work; takes `kprobe_mutex` itself.
pub fn kprobe_optimizer<A: Arch>(a: &A) {
    let st = a.kprobe_mutex();
    a.text_locked(false, || {
        do_unoptimize_kprobes(a);
        a.synchronize_rcu_tasks();
        do_optimize_kprobes(a, &st);
        do_free_cleaned_kprobes(a, &st);
    });
    if !a.queue_empty(OptQueue::Optimizing) || !a.queue_empty(OptQueue::Unoptimizing) {
        a.kick_kprobe_optimizer();
    }
    drop(st);
}

/// `wait_for_kprobe_optimizer()`: flush until both queues are empty; called without the mutex.
pub fn wait_for_kprobe_optimizer<A: Arch>(a: &A) {
    if !A::OPTPROBES {
        return;
    }
    loop {
        let st = a.kprobe_mutex();
        let busy = !a.queue_empty(OptQueue::Optimizing) || !a.queue_empty(OptQueue::Unoptimizing);
        drop(st);
        if !busy {
            return;
        }
        a.flush_kprobe_optimizer();
    }
}

/// `optimize_kprobe()`: queue `p` for optimization if it qualifies.
pub fn optimize_kprobe<A: Arch>(a: &A, st: &KprobeState, p: A::Probe) {
    let Some(ap) = kprobe_optready(a, p) else {
        return;
    };
    if !st.allow_optimization || flags_disabled(a.flags(p)) || st.all_disarmed {
        return;
    }
    if a.has_post_handler(p) {
        return;
    }
    if A::Hooks::check_optimized_kprobe(a, ap).is_err() {
        return;
    }
    if flags_optimized(a.flags(p)) {
        if optprobe_queued_unopt(a, ap) {
            a.queue_del_init(ap);
        }
        return;
    }
    set_flag(a, p, KPROBE_FLAG_OPTIMIZED);
    if a.queue_contains(OptQueue::Freeing, ap) {
        // Divergence from upstream 6.12, which WARNs here and leaves the probe a breakpoint for
        // good: a used aggregate forced off the unoptimizing queue (a post_handler joined it, a
        // probe was armed under its jump, or a global disarm) waits on the freeing list for the
        // optimizer to take it off. Its jump is gone and its breakpoint armed, exactly what the
        // optimizing queue expects.
        a.queue_move(ap, OptQueue::Optimizing);
        a.kick_kprobe_optimizer();
        return;
    }
    // On the optimizing and unoptimizing queues an aggregate must have OPTIMIZED.
    if !a.op_list_empty(ap) {
        a.warn(WarnSite::OptimizeKprobe);
        return;
    }
    a.queue_add(ap, OptQueue::Optimizing);
    a.kick_kprobe_optimizer();
}

fn force_unoptimize_kprobe<A: Arch>(a: &A, op: Aggr<A::Probe>) {
    a.assert_cpus_held();
    A::Hooks::unoptimize_kprobe(a, op);
    clear_flag(a, op.kp(), KPROBE_FLAG_OPTIMIZED);
}

/// `unoptimize_kprobe()`: dequeue, queue for unoptimizing, or (with `force`) unoptimize now.
pub fn unoptimize_kprobe<A: Arch>(a: &A, p: A::Probe, force: bool) {
    let Some(ap) = opt_aggr(a, p) else {
        return;
    };
    // One read of the flags for kprobe_disarmed() (of an aggregate) and the OPTIMIZED test.
    let f = a.flags(p);
    if (flags_disabled(f) && a.op_list_empty(ap)) || !flags_optimized(f) {
        return;
    }
    if !a.op_list_empty(ap) {
        if optprobe_queued_unopt(a, ap) {
            if force {
                force_unoptimize_kprobe(a, ap);
                a.queue_move(ap, OptQueue::Freeing);
            }
        } else {
            a.queue_del_init(ap);
            clear_flag(a, p, KPROBE_FLAG_OPTIMIZED);
        }
        return;
    }
    if force {
        force_unoptimize_kprobe(a, ap);
    } else {
        a.queue_add(ap, OptQueue::Unoptimizing);
        a.kick_kprobe_optimizer();
    }
}

/// `reuse_unused_kprobe()`: revive an unused aggregate that waits to be unoptimized.
pub fn reuse_unused_kprobe<A: Arch>(
    a: &A,
    st: &KprobeState,
    ap: Aggr<A::Probe>,
) -> super::errno::Result {
    if !A::OPTPROBES {
        // Without OPTPROBES an unused aggregate is freed with its last child: never reached.
        a.warn(WarnSite::ReuseUnusedKprobe);
        return Err(super::errno::Errno::EINVAL);
    }
    // An unused aggregate must be on its way to be unoptimized (its jump still in place).
    if a.op_list_empty(ap) {
        a.warn(WarnSite::ReuseUnusedKprobe);
    }
    clear_flag(a, ap.kp(), KPROBE_FLAG_DISABLED);
    if kprobe_optready(a, ap.kp()).is_none() {
        return Err(super::errno::Errno::EINVAL);
    }
    optimize_kprobe(a, st, ap.kp());
    Ok(())
}

/// `kill_optimized_kprobe()`: dequeue and drop the detour without touching the (freed) text.
pub fn kill_optimized_kprobe<A: Arch>(a: &A, ap: Aggr<A::Probe>) {
    if !A::OPTPROBES {
        return;
    }
    if !a.op_list_empty(ap) {
        a.queue_del_init(ap);
    }
    clear_flag(a, ap.kp(), KPROBE_FLAG_OPTIMIZED);
    if kprobe_unused(a, ap.kp()) && optprobe_queued_unopt(a, ap) {
        a.queue_move(ap, OptQueue::Freeing);
    }
    A::Hooks::remove_optimized_kprobe(a, ap);
}

/// `prepare_optimized_kprobe()`: try to build the detour of `ap` (not for ftrace probes).
pub fn prepare_optimized_kprobe<A: Arch>(a: &A, ap: Aggr<A::Probe>) {
    if A::OPTPROBES && !flags_ftrace(a.flags(ap.kp())) {
        A::Hooks::prepare_optimized_kprobe(a, ap, ap.kp());
    }
}

/// `alloc_aggr_kprobe()`: a new aggregate for the address of `p`, detour attempted.
pub fn alloc_aggr_kprobe<A: Arch>(a: &A, p: A::Probe) -> Option<Aggr<A::Probe>> {
    let ap = a.alloc_aggr_kprobe(a.addr(p))?;
    if A::OPTPROBES && !flags_ftrace(a.flags(p)) {
        A::Hooks::prepare_optimized_kprobe(a, ap, p);
    }
    Some(ap)
}

/// `try_to_optimize_kprobe()`: wrap a lone probe in an aggregate if a detour can be prepared.
pub fn try_to_optimize_kprobe<A: Arch>(a: &A, st: &KprobeState, p: A::Probe) {
    if !A::OPTPROBES || flags_ftrace(a.flags(p)) {
        return;
    }
    a.text_locked(true, || {
        let Some(ap) = alloc_aggr_kprobe(a, p) else {
            return;
        };
        if !A::Hooks::prepared_optinsn(a, ap) {
            A::Hooks::remove_optimized_kprobe(a, ap);
            a.kfree_aggr_kprobe(ap);
            return;
        }
        super::aggr::init_aggr_kprobe(a, ap, p);
        optimize_kprobe(a, st, ap.kp());
    });
}

/// `optimize_all_kprobes()`: allow optimization and queue every enabled probe.
pub fn optimize_all_kprobes<A: Arch>(a: &A) -> bool {
    if !A::OPTPROBES {
        return false;
    }
    let mut st = a.kprobe_mutex();
    if st.allow_optimization {
        return false;
    }
    a.cpus_read_locked(|| {
        st.allow_optimization = true;
        for_each_kprobe(a, |p| {
            if !flags_disabled(a.flags(p)) {
                optimize_kprobe(a, &st, p);
            }
        });
    });
    a.message(Message::OptimizationEnabled);
    drop(st);
    true
}

/// `unoptimize_all_kprobes()`: forbid optimization, unoptimize everything, wait for it.
pub fn unoptimize_all_kprobes<A: Arch>(a: &A) -> bool {
    if !A::OPTPROBES {
        return false;
    }
    {
        let mut st = a.kprobe_mutex();
        if !st.allow_optimization {
            return false;
        }
        a.cpus_read_locked(|| {
            st.allow_optimization = false;
            for_each_kprobe(a, |p| {
                if !flags_disabled(a.flags(p)) {
                    unoptimize_kprobe(a, p, false);
                }
            });
        });
    }
    wait_for_kprobe_optimizer(a);
    a.message(Message::OptimizationDisabled);
    true
}

/// `proc_kprobes_optimization_handler()` after `proc_dointvec_minmax()`: every access, reads
/// included, re-applies the current value (idempotent, as in C).
///
/// The glue holds `kprobe_sysctl_mutex` around the whole handler; returns whether the setting
/// changed (and [`optimize_all_kprobes`] / [`unoptimize_all_kprobes`] reported their message).
pub fn kprobes_optimization_sysctl<A: Arch>(a: &A, value: bool) -> bool {
    if value {
        optimize_all_kprobes(a)
    } else {
        unoptimize_all_kprobes(a)
    }
}
