// SPDX-License-Identifier: GPL-2.0

//! Kprobes on ftrace: arming and disarming a probe at an ftrace site through one of the two
//! kprobes `ftrace_ops` (`arm_kprobe_ftrace()`, `disarm_kprobe_ftrace()` of `kernel/kprobes.c`),
//! and the filter updates a [`Batch`] records and applies together (Rust only).
//!
//! Constraints: process context, `kprobe_mutex` held (the `&mut KprobeState`), the text locks
//! not held (ftrace takes `text_mutex` itself); `no_std`, no allocation, does not name the
//! `kernel` crate. The errors and WARNs are C's.

use super::arch::Arch;
use super::batch::Batch;
use super::errno::{Errno, Result};
use super::report::WarnSite;
use super::store::KprobeState;
use super::text::FtraceOps;

/// The count of users of `ops`: `kprobe_ftrace_enabled` or `kprobe_ipmodify_enabled`.
fn ftrace_count(st: &mut KprobeState, ops: FtraceOps) -> &mut i32 {
    match ops {
        FtraceOps::Plain => &mut st.ftrace_enabled,
        FtraceOps::Ipmodify => &mut st.ipmodify_enabled,
    }
}

/// The ops a probe is armed or disarmed through: `kprobe_ipmodify_ops` with a post handler.
fn ftrace_ops_of<A: Arch>(a: &A, p: A::Probe) -> FtraceOps {
    if a.has_post_handler(p) {
        FtraceOps::Ipmodify
    } else {
        FtraceOps::Plain
    }
}

/// The ops an armed ftrace probe is disarmed through: the one whose filter holds its address.
///
/// `add_new_kprobe()` gives an aggregate armed on `kprobe_ftrace_ops` a post_handler without
/// moving it, so "has a post_handler now" is not where it is armed: upstream 6.12 disarms it
/// through `kprobe_ipmodify_ops` (-ENOENT, `kprobes/enabled` fails, each count off by one, and
/// the plain ops stays registered until its filter is empty, tracing every function; see
/// docs/findings/ftrace-aggregate-disarm.md). Where neither filter holds the address (an
/// addition a registration batch only recorded) or the platform cannot tell, the ops it was
/// armed through by the rule of [`ftrace_ops_of`].
fn armed_ftrace_ops<A: Arch>(a: &A, p: A::Probe) -> FtraceOps {
    let (ops, other) = match ftrace_ops_of(a, p) {
        FtraceOps::Plain => (FtraceOps::Plain, FtraceOps::Ipmodify),
        FtraceOps::Ipmodify => (FtraceOps::Ipmodify, FtraceOps::Plain),
    };
    let addr = a.addr(p);
    if !a.ftrace_filter_has(ops, addr) && a.ftrace_filter_has(other, addr) {
        other
    } else {
        ops
    }
}

/// `arm_kprobe_ftrace()`: add the filter, register the ops for their first user; in a
/// registration `batch`, recorded for its end.
pub(crate) fn arm_kprobe_ftrace<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
) -> Result {
    if !A::KPROBES_ON_FTRACE {
        return Err(Errno::ENODEV);
    }
    a.assert_kprobe_mutex_held();
    let addr = a.addr(p);
    let ops = ftrace_ops_of(a, p);
    let first_user = *ftrace_count(st, ops) == 0;
    if batch.record_arming(ops, addr, first_user) {
        // Added to the filter, and the ops registered, at the end of the batch.
        let cnt = ftrace_count(st, ops);
        *cnt = cnt.wrapping_add(1);
        return Ok(());
    }
    let cnt = ftrace_count(st, ops);
    a.ftrace_set_filter_ip(ops, addr, false)?;
    if *cnt == 0 {
        if let Err(e) = a.register_ftrace_function(ops) {
            let _ = a.ftrace_set_filter_ip(ops, addr, true);
            return Err(e);
        }
    }
    *cnt = cnt.wrapping_add(1);
    Ok(())
}

/// `disarm_kprobe_ftrace()`: the reverse; a no-op once ftrace is dead. A registration `batch`
/// rolling back forgets what it only recorded; an unregistration `batch` records the removal
/// from the filter for its end.
pub(crate) fn disarm_kprobe_ftrace<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
) -> Result {
    if !A::KPROBES_ON_FTRACE {
        return Err(Errno::ENODEV);
    }
    a.assert_kprobe_mutex_held();
    if a.kprobe_ftrace_disabled() {
        return Ok(());
    }
    let addr = a.addr(p);
    let ops = armed_ftrace_ops(a, p);
    let last_user = *ftrace_count(st, ops) == 1;
    if batch.cancel_arming(ops, addr, last_user) {
        // Rolling a registration batch back: this addition was only recorded.
        let cnt = ftrace_count(st, ops);
        *cnt = cnt.wrapping_sub(1);
        return Ok(());
    }
    if last_user {
        if batch.register_deferred(ops) {
            // The ops' registration was recorded with the batch but its filter applied: only
            // the filter goes.
            batch.clear_register_deferred(ops);
        } else if let Err(e) = a.unregister_ftrace_function(ops) {
            a.warn(WarnSite::DisarmKprobeFtraceUnregister { err: e.to_neg() });
            return Err(e);
        }
    }
    let cnt = ftrace_count(st, ops);
    *cnt = cnt.wrapping_sub(1);
    if a.ftrace_filter_has(ops, addr) && batch.record_ftrace_removal(ops, addr) {
        // An unregistration batch: removed with the others at the end of its top halves.
        return Ok(());
    }
    let ret = a.ftrace_set_filter_ip(ops, addr, true);
    if let Err(e) = ret {
        a.warn(WarnSite::DisarmKprobeFtraceFilter {
            addr,
            err: e.to_neg(),
        });
    }
    ret
}

/// Applies the batch's records one by one in entry order, as C arms: the first entry whose
/// arming fails, and C's error (its record kept for the rollback to forget), or `None` when
/// every one was applied.
pub(crate) fn apply_ftrace_batch_one_by_one<A: Arch>(
    a: &A,
    batch: &mut Batch<A>,
) -> Option<(usize, Errno)> {
    while let Some((ops, addr, entry)) = batch.take_first_arming() {
        let ret = a.ftrace_set_filter_ip(ops, addr, false).and_then(|()| {
            if !batch.register_deferred(ops) {
                return Ok(());
            }
            if let Err(e) = a.register_ftrace_function(ops) {
                let _ = a.ftrace_set_filter_ip(ops, addr, true);
                return Err(e);
            }
            batch.clear_register_deferred(ops);
            Ok(())
        });
        if let Err(e) = ret {
            batch.put_back_arming(ops, addr, entry);
            return Some((entry, e));
        }
    }
    None
}

/// In a registration batch, before a step C's caller could see (a probe changed that the
/// batch may not own, a WARN): applies the records, so that the step happens only once every
/// arming before it is known to succeed, as in C, where a failure ends the batch before it.
/// On failure the batch redoes the records one by one ([`Batch::take_failed`]).
pub(crate) fn settle_ftrace_batch<A: Arch>(a: &A, batch: &mut Batch<A>) -> Result {
    if !batch.defers_arming() {
        return Ok(());
    }
    flush_ftrace_batch(a, batch).inspect_err(|_| batch.set_failed())
}

/// Applies the ftrace additions a registration batch recorded: per ops, one filter update,
/// then the ops registered if its first user is in the batch. A failure leaves the records of
/// that ops (and of the ops after it), and the filter without them, for the caller to apply
/// one by one or the rollback to forget.
pub(crate) fn flush_ftrace_batch<A: Arch>(a: &A, batch: &mut Batch<A>) -> Result {
    for ops in [FtraceOps::Plain, FtraceOps::Ipmodify] {
        if !batch.register_deferred(ops) {
            batch.apply_armings(a, ops, false)?;
            batch.forget_armings(ops);
            continue;
        }
        // The ops' first users are in the batch. 6.12's ftrace takes any address into the
        // filter of an unregistered ops and checks the other IPMODIFY users (a livepatch)
        // when the ops is registered: a refusal there is an arming C fails, so the filter
        // gives the addresses back and the records stay, for the caller to find the entry C
        // fails at (`apply_ftrace_batch_one_by_one`).
        batch.apply_armings(a, ops, false)?;
        if let Err(e) = a.register_ftrace_function(ops) {
            if let Err(undo) = batch.apply_armings(a, ops, true) {
                // Only memory fails a removal of what the filter holds: the addresses stay
                // in the filter of the unregistered ops, which traces nothing, as after C's
                // failed removal.
                a.warn(WarnSite::FtraceBatchLeftover { err: undo.to_neg() });
            }
            return Err(e);
        }
        batch.forget_armings(ops);
        batch.clear_register_deferred(ops);
    }
    Ok(())
}

/// Applies the removals an unregistration batch recorded, one filter update per ops. Each
/// was in its filter, so only memory can fail it: then they are removed one by one, with C's
/// WARN for each that fails (C would also have kept that probe registered, with `addr` NULL;
/// its handler is gone here, the filter entry stays, as after C's failed removal).
pub(crate) fn flush_ftrace_removals<A: Arch>(a: &A, batch: &mut Batch<A>) {
    for ops in [FtraceOps::Plain, FtraceOps::Ipmodify] {
        if batch.apply_ftrace_removals(a, ops).is_ok() {
            continue;
        }
        while let Some((o, addr)) = batch.take_ftrace_removal() {
            if let Err(e) = a.ftrace_set_filter_ip(o, addr, true) {
                a.warn(WarnSite::DisarmKprobeFtraceFilter {
                    addr,
                    err: e.to_neg(),
                });
            }
        }
    }
}
