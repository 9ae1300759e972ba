// SPDX-License-Identifier: GPL-2.0

//! Return probes (`CONFIG_KRETPROBES`): registration checks, the instance-pool rules on the
//! probe-hit path, and unregistration ordering.
//!
//! Constraints: [`pre_handler_kretprobe`] runs on the probe-hit path (no allocation, no lock, no
//! sleep; unprobeable in the kernel). The instance pool itself is the kernel's: a `rethook`
//! (`KRETPROBE_ON_RETHOOK`) or an `objpool` behind a `kretprobe_holder`, because the arch return
//! trampolines and `task_struct` own those nodes; the core sizes it up front at registration and
//! only applies C's rules through [`KretprobeStore`]. `no_std`; does not name the `kernel` crate.
//!
//! One deliberate difference: C dereferences a NULL pool when a never-registered kretprobe is
//! unregistered (contract 7.5); [`KretprobeStore::detach_instance_pool`] must tolerate that.

use super::errno::{Errno, Result};
use super::register::{
    kprobe_addr, register_kprobe, unregister_kprobe_bottom, unregister_kprobe_top,
    warn_kprobe_rereg, Platform,
};

/// `KRETPROBE_MAX_DATA_SIZE`.
pub const KRETPROBE_MAX_DATA_SIZE: usize = 4096;

/// `struct kretprobe` fields, its instance pool, and the return-hook primitives.
pub trait KretprobeStore: Platform {
    /// Handle to a `struct kretprobe`.
    type Kretprobe: Copy + Eq + core::fmt::Debug;
    /// Handle to a `struct kretprobe_instance`.
    type Instance: Copy;
    /// `CONFIG_KRETPROBES`: without it the API returns -EOPNOTSUPP or does nothing.
    const KRETPROBES: bool;

    /// `&rp->kp`.
    fn kretprobe_kp(&self, rp: Self::Kretprobe) -> Self::Probe;
    /// `rp->data_size`.
    fn data_size(&self, rp: Self::Kretprobe) -> usize;
    /// `rp->maxactive`.
    fn maxactive(&self, rp: Self::Kretprobe) -> i32;
    /// `rp->maxactive = n`.
    fn set_maxactive(&self, rp: Self::Kretprobe, n: i32);
    /// `rp->nmissed = 0`.
    fn reset_kretprobe_nmissed(&self, rp: Self::Kretprobe);
    /// `rp->nmissed++` (plain increment, hit path).
    fn inc_kretprobe_nmissed(&self, rp: Self::Kretprobe);
    /// `rp->kp.pre_handler = pre_handler_kretprobe; rp->kp.post_handler = NULL`.
    fn set_kretprobe_handlers(&self, rp: Self::Kretprobe);
    /// `num_possible_cpus()`.
    fn num_possible_cpus(&self) -> u32;

    /// Allocate `maxactive` instances of `sizeof(kretprobe_instance) + data_size` bytes.
    fn alloc_instance_pool(&self, rp: Self::Kretprobe) -> Result;
    /// Free the pool after a failed registration (`rethook_free` + NULL, or `free_rp_inst`).
    fn free_instance_pool(&self, rp: Self::Kretprobe);
    /// Under `kprobe_mutex`: detach in-flight instances (`rethook_free`, or `rph->rp = NULL`).
    fn detach_instance_pool(&self, rp: Self::Kretprobe);
    /// After the grace period: release the pool (`free_rp_inst` on the objpool path).
    fn release_instance_pool(&self, rp: Self::Kretprobe);

    /// `rethook_try_get()` / `objpool_pop()`: `None` when the pool is empty.
    fn instance_try_get(&self, rp: Self::Kretprobe) -> Option<Self::Instance>;
    /// `rp->entry_handler != NULL`.
    fn has_entry_handler(&self, rp: Self::Kretprobe) -> bool;
    /// `rp->entry_handler(ri, regs)`.
    fn call_entry_handler(&self, rp: Self::Kretprobe, ri: Self::Instance, regs: Self::Regs) -> i32;
    /// `rethook_recycle()` / `objpool_push()`: give an unused instance back.
    fn instance_recycle(&self, rp: Self::Kretprobe, ri: Self::Instance);
    /// `rethook_hook(rhn, regs, mcount)` / `arch_prepare_kretprobe()` + `__llist_add()`.
    fn instance_hook(
        &self,
        rp: Self::Kretprobe,
        ri: Self::Instance,
        regs: Self::Regs,
        mcount: bool,
    );
}

/// The `maxactive` default: `max(10, 2 * num_possible_cpus())`.
pub fn default_maxactive(num_possible_cpus: u32) -> i32 {
    let n = num_possible_cpus.saturating_mul(2).max(10);
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `register_kretprobe()`.
pub fn register_kretprobe<A: KretprobeStore>(a: &A, rp: A::Kretprobe) -> Result {
    if !A::KRETPROBES {
        return Err(Errno::EOPNOTSUPP);
    }
    let kp = a.kretprobe_kp(rp);
    let addr = a.addr(kp);
    // kprobe_on_func_entry(), keeping the resolved address for the blacklist check (C resolves
    // the same inputs twice, with the same result).
    let (resolved, on_func_entry) = kprobe_addr(a, addr, a.symbol_name(kp), a.offset(kp) as usize)?;
    if !on_func_entry {
        return Err(Errno::EINVAL);
    }
    // Only when `kp.addr` was given can a re-registration be recognised this early.
    if addr != 0 {
        warn_kprobe_rereg(a, kp)?;
    }
    if a.in_kretprobe_blacklist(resolved) {
        return Err(Errno::EINVAL);
    }
    if a.data_size(rp) > KRETPROBE_MAX_DATA_SIZE {
        return Err(Errno::E2BIG);
    }
    a.set_kretprobe_handlers(rp);
    if a.maxactive(rp) <= 0 {
        a.set_maxactive(rp, default_maxactive(a.num_possible_cpus()));
    }
    a.alloc_instance_pool(rp)?;
    a.reset_kretprobe_nmissed(rp);
    let ret = register_kprobe(a, kp);
    if ret.is_err() {
        a.free_instance_pool(rp);
    }
    ret
}

/// `register_kretprobes()`: all or nothing.
pub fn register_kretprobes<A: KretprobeStore>(a: &A, rps: &[A::Kretprobe]) -> Result {
    if !A::KRETPROBES {
        return Err(Errno::EOPNOTSUPP);
    }
    if rps.is_empty() {
        return Err(Errno::EINVAL);
    }
    for (i, &rp) in rps.iter().enumerate() {
        if let Err(e) = register_kretprobe(a, rp) {
            if i > 0 {
                unregister_kretprobes(a, &rps[..i]);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// `unregister_kretprobes()`: tops and pool detach under the mutex, one grace period, bottoms.
pub fn unregister_kretprobes<A: KretprobeStore>(a: &A, rps: &[A::Kretprobe]) {
    if !A::KRETPROBES || rps.is_empty() {
        return;
    }
    {
        let mut st = a.kprobe_mutex();
        for &rp in rps {
            let kp = a.kretprobe_kp(rp);
            if unregister_kprobe_top(a, &mut st, kp).is_err() {
                a.set_addr(kp, 0);
            }
            a.detach_instance_pool(rp);
        }
    }
    a.synchronize_rcu();
    for &rp in rps {
        let kp = a.kretprobe_kp(rp);
        if a.addr(kp) != 0 {
            unregister_kprobe_bottom(a, kp);
            a.release_instance_pool(rp);
        }
    }
}

/// `unregister_kretprobe()`.
pub fn unregister_kretprobe<A: KretprobeStore>(a: &A, rp: A::Kretprobe) {
    unregister_kretprobes(a, &[rp]);
}

/// `pre_handler_kretprobe()`: take an instance, run the entry handler, hook the return.
///
/// Always returns 0 (the single-step is never skipped). An empty pool counts in `rp->nmissed`;
/// a non-zero entry handler gives the instance back and installs no return hook.
#[inline(always)]
pub fn pre_handler_kretprobe<A: KretprobeStore>(a: &A, rp: A::Kretprobe, regs: A::Regs) -> i32 {
    let Some(ri) = a.instance_try_get(rp) else {
        a.inc_kretprobe_nmissed(rp);
        return 0;
    };
    if a.has_entry_handler(rp) && a.call_entry_handler(rp, ri, regs) != 0 {
        a.instance_recycle(rp, ri);
    } else {
        let mcount = super::store::flags_ftrace(a.flags(a.kretprobe_kp(rp)));
        a.instance_hook(rp, ri, regs, mcount);
    }
    0
}
