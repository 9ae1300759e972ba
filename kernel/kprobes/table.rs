// SPDX-License-Identifier: GPL-2.0

//! The probe hash table and the probe-hit fan-out: `get_kprobe`, the aggregate handlers,
//! `kprobes_inc_nmissed_count` (the top of `kernel/kprobes.c`).
//!
//! Constraints: everything here runs on the probe-hit path (int3/brk handlers, ftrace and
//! optimized callbacks) with preemption disabled: no allocation, no lock, no sleeping; reads go
//! through the store's RCU iterators only. In the kernel each of these functions must be
//! unprobeable (`NOKPROBE_SYMBOL` in C). `no_std`; does not name the `kernel` crate.
//!
//! C's per-CPU `kprobe_instance` is written and never read (contract 7.5), so it is not kept.
//!
//! Unprobeability: these functions are generic and `#[inline(always)]`, and so are the store's
//! RCU iterators in the kernel implementation, so each is compiled into the `extern "C"` shim that
//! calls it (`get_kprobe`, `aggr_pre_handler`, ...); the glue marks those shims unprobeable in one
//! place (section `.kprobes.text`), which covers the code inlined into them.

use core::ops::ControlFlow;

use super::store::{flags_disabled, hash_ptr, Aggr, ProbeStore};

/// `get_kprobe(addr)`: the hash entry at `addr` (possibly an aggregate).
///
/// Caller holds `kprobe_mutex` or runs with preemption disabled.
#[inline(always)]
pub fn get_kprobe<S: ProbeStore>(s: &S, addr: usize) -> Option<S::Probe> {
    let mut found = None;
    let _ = s.for_each_in_bucket(hash_ptr(addr), |p| {
        if s.addr(p) == addr {
            found = Some(p);
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found
}

/// `aggr_pre_handler()`: runs enabled children's pre_handlers, newest first.
///
/// Returns 1 as soon as one child returns non-zero (later children are skipped, and the arch
/// then skips the single-step), 0 otherwise.
#[inline(always)]
pub fn aggr_pre_handler<S: ProbeStore>(s: &S, ap: Aggr<S::Probe>, regs: S::Regs) -> i32 {
    let r = s.for_each_child(ap, |kp| {
        // C's `kp->pre_handler && !kprobe_disabled(kp)`: the NULL test is in the call.
        if !flags_disabled(s.flags(kp)) && s.call_pre_handler(kp, regs) != 0 {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    i32::from(r.is_break())
}

/// `aggr_post_handler()`: runs every enabled child's post_handler.
#[inline(always)]
pub fn aggr_post_handler<S: ProbeStore>(s: &S, ap: Aggr<S::Probe>, regs: S::Regs, flags: usize) {
    let _ = s.for_each_child(ap, |kp| {
        if !flags_disabled(s.flags(kp)) {
            s.call_post_handler(kp, regs, flags);
        }
        ControlFlow::Continue(())
    });
}

/// `opt_pre_handler()`: runs every enabled child's pre_handler, ignoring return values.
#[inline(always)]
pub fn opt_pre_handler<S: ProbeStore>(s: &S, ap: Aggr<S::Probe>, regs: S::Regs) {
    let _ = s.for_each_child(ap, |kp| {
        if !flags_disabled(s.flags(kp)) {
            s.call_pre_handler(kp, regs);
        }
        ControlFlow::Continue(())
    });
}

/// `kprobes_inc_nmissed_count()`: on an aggregate, every child's `nmissed` is incremented.
#[inline(always)]
pub fn kprobes_inc_nmissed_count<S: ProbeStore>(s: &S, p: S::Probe) {
    match Aggr::of(s, p) {
        None => s.inc_nmissed(p),
        Some(ap) => {
            let _ = s.for_each_child(ap, |kp| {
                s.inc_nmissed(kp);
                ControlFlow::Continue(())
            });
        }
    }
}

/// `kprobe_unused()`: an aggregate that is disabled and has no children left.
pub fn kprobe_unused<S: ProbeStore>(s: &S, p: S::Probe) -> bool {
    s.is_aggr(p) && flags_disabled(s.flags(p)) && s.list_empty(p)
}

/// `__get_valid_kprobe()`: the hash entry owning `p` (itself or its aggregate), if registered.
///
/// Caller holds `kprobe_mutex`.
pub fn get_valid_kprobe<S: ProbeStore>(s: &S, p: S::Probe) -> Option<S::Probe> {
    s.assert_kprobe_mutex_held();
    owner_among(s, p, get_kprobe(s, s.addr(p)))
}

/// The rest of [`get_valid_kprobe`], `entry` being the hash entry at `p`'s address.
pub fn owner_among<S: ProbeStore>(s: &S, p: S::Probe, entry: Option<S::Probe>) -> Option<S::Probe> {
    let ap = entry?;
    if ap == p {
        return Some(ap);
    }
    let found = Aggr::of(s, ap).is_some_and(|agg| {
        s.for_each_child(agg, |kp| {
            if kp == p {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .is_break()
    });
    if found {
        return Some(ap);
    }
    None
}

/// `aggr_kprobe_disabled()`: every child of `ap` is disabled. Caller holds `kprobe_mutex`.
pub fn aggr_kprobe_disabled<S: ProbeStore>(s: &S, ap: Aggr<S::Probe>) -> bool {
    s.assert_kprobe_mutex_held();
    s.for_each_child(ap, |kp| {
        if flags_disabled(s.flags(kp)) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    })
    .is_continue()
}

/// Walks every hash entry, bucket by bucket, in `kprobe_table` order.
pub fn for_each_kprobe<S: ProbeStore>(s: &S, mut f: impl FnMut(S::Probe)) {
    for bucket in 0..super::store::KPROBE_TABLE_SIZE {
        let _ = s.for_each_in_bucket(bucket, |p| {
            f(p);
            ControlFlow::Continue(())
        });
    }
}
