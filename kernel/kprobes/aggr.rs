// SPDX-License-Identifier: GPL-2.0

//! Aggregate probes: the `struct kprobe` that stands in the hash for several probes at one
//! address (`init_aggr_kprobe()` of `kernel/kprobes.c`).
//!
//! Constraints: `no_std`; does not name the `kernel` crate; called with `kprobe_mutex` and the
//! text locks held, as C calls it. It uses the probe storage only, so the registration and the
//! optimizer both build on it without importing each other.

use super::arch::{Arch, ArchHooks};
use super::store::{flags_gone, Aggr, KPROBE_FLAG_OPTIMIZED};

/// `init_aggr_kprobe()`: make `ap` the aggregate of `p` and put it in `p`'s place in the hash.
pub fn init_aggr_kprobe<A: Arch>(a: &A, ap: Aggr<A::Probe>, p: A::Probe) {
    let kp = ap.kp();
    a.copy_kprobe(p, kp);
    A::Hooks::flush_insn_slot(a, kp);
    a.set_addr(kp, a.addr(p));
    a.set_flags(kp, a.flags(p) & !KPROBE_FLAG_OPTIMIZED);
    a.set_aggr_pre_handler(ap);
    if a.has_post_handler(p) && !flags_gone(a.flags(p)) {
        a.set_aggr_post_handler(ap, true);
    }
    a.init_list_head(kp);
    a.init_hlist_node(kp);
    a.list_add_rcu(p, ap);
    a.hlist_replace_rcu(p, kp);
}
