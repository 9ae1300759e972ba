// SPDX-License-Identifier: GPL-2.0

//! Kernel implementation of [`KretprobeStore`], and the `pre_handler` the core installs on every
//! kretprobe.
//!
//! Constraints: [`pre_handler_kretprobe`] runs on the probe-hit path (preemption disabled, no
//! allocation, no lock) and sits in `.kprobes.text`. The instance pool is allocated at
//! registration and is either a rethook's objpool (`KRETPROBE_ON_RETHOOK`: x86, riscv,
//! loongarch; [`super::rethook`]) or a `kretprobe_holder`'s objpool with per-task instance lists
//! (arm64; [`super::objpool`]). The fields common to both are read here. Growing pools
//! (`rp->grow_max`, issue 40) are wired on both paths ([`super::grow`]): extra rethooks, or
//! extra holders with their own objpools.

use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::bindings;

use super::grow;
use super::handle::{Kernel, Kp, Krp, KERNEL};
#[cfg(not(CONFIG_KRETPROBE_ON_RETHOOK))]
use super::objpool as pool;
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
use super::rethook as pool;
use crate::errno::Result;
use crate::kretprobe::KretprobeStore;
use crate::kretprobe_grow::GrowCounts;

impl KretprobeStore for Kernel {
    type Kretprobe = Krp;
    type Instance = pool::Instance;
    const KRETPROBES: bool = true;

    #[inline(always)]
    fn kretprobe_kp(&self, rp: Krp) -> Kp {
        // SAFETY: `kp` is the first member of a live `struct kretprobe`, so non-NULL and live.
        unsafe { Kp::from_raw(NonNull::new_unchecked(addr_of_mut!((*rp.as_ptr()).kp))) }
    }
    fn data_size(&self, rp: Krp) -> usize {
        // SAFETY: `rp` live.
        unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).data_size)) }
    }
    fn maxactive(&self, rp: Krp) -> i32 {
        // SAFETY: `rp` live.
        unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).maxactive)) }
    }
    fn set_maxactive(&self, rp: Krp, n: i32) {
        // SAFETY: `rp` live; registration owns it.
        unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).maxactive), n) };
    }
    fn reset_kretprobe_nmissed(&self, rp: Krp) {
        // SAFETY: `rp` live.
        unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).nmissed), 0) };
    }
    #[inline(always)]
    fn inc_kretprobe_nmissed(&self, rp: Krp) {
        // SAFETY: `rp` is live, so its `nmissed` is valid and aligned for the call; every other
        // access that can race with it is this atomic add or a READ_ONCE read (`inc_nmissed`'s
        // `# Safety`: the core resets it only while the probe is not armed).
        unsafe { super::nmissed::inc_kretprobe_nmissed(addr_of_mut!((*rp.as_ptr()).nmissed)) };
    }
    fn set_kretprobe_handlers(&self, rp: Krp, grows: bool) {
        let pre: PreHandler = if grows {
            pre_handler_kretprobe_grow
        } else {
            pre_handler_kretprobe
        };
        // SAFETY: `rp` live and not yet registered.
        unsafe {
            ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).kp.pre_handler), Some(pre));
            ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).kp.post_handler), None);
        }
    }
    fn num_possible_cpus(&self) -> u32 {
        // SAFETY: reads the possible-CPU mask.
        unsafe { super::helpers::rkp_num_possible_cpus() }
    }
    fn alloc_instance_pool(&self, rp: Krp, grows: bool) -> Result {
        pool::alloc_instance_pool(rp, self.maxactive(rp), self.data_size(rp), grows)
    }
    fn free_instance_pool(&self, rp: Krp) {
        pool::free_instance_pool(rp);
    }
    fn detach_instance_pool(&self, rp: Krp) {
        pool::detach_instance_pool(rp);
    }
    fn release_instance_pool(&self, rp: Krp) {
        pool::release_instance_pool(rp);
    }

    #[inline(always)]
    fn instance_try_get(&self, rp: Krp) -> Option<Self::Instance> {
        pool::instance_try_get(rp)
    }
    #[inline(always)]
    fn call_entry_handler(&self, rp: Krp, ri: Self::Instance, regs: *mut bindings::pt_regs) -> i32 {
        // SAFETY: `rp` live; the handler is the owner's, called as C calls it, with the
        // `struct kretprobe_instance` that `ri` is.
        unsafe {
            match ptr::read_volatile(addr_of!((*rp.as_ptr()).entry_handler)) {
                Some(f) => f(pool::instance_ptr(ri), regs),
                None => 0,
            }
        }
    }
    #[inline(always)]
    fn instance_recycle(&self, rp: Krp, ri: Self::Instance) {
        pool::instance_recycle(rp, ri);
    }
    #[inline(always)]
    fn instance_hook(
        &self,
        _rp: Krp,
        ri: Self::Instance,
        regs: *mut bindings::pt_regs,
        mcount: bool,
    ) {
        pool::instance_hook(ri, regs, mcount);
    }

    fn grow_max(&self, rp: Krp) -> i32 {
        // SAFETY: `rp` live; READ_ONCE of a field its owner sets before registering.
        unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).grow_max)) }
    }
    fn grow_alloc(&self, rp: Krp, cap: u32) -> Result {
        grow::grow_alloc(rp, cap, u32::try_from(self.maxactive(rp)).unwrap_or(0))
    }
    #[inline(always)]
    fn grow_try_get(&self, rp: Krp) -> Option<Self::Instance> {
        pool::grow_try_get(rp)
    }
    #[inline(always)]
    fn grow_note_take(&self, rp: Krp, taken: bool) -> bool {
        grow::grow_note_take(rp, taken)
    }
    #[inline(always)]
    fn grow_note_put(&self, rp: Krp) {
        grow::grow_note_put(rp);
    }
    #[inline(always)]
    fn grow_kick(&self, rp: Krp) {
        grow::grow_kick(rp);
    }
    fn grow_counts(&self, rp: Krp) -> Option<GrowCounts> {
        grow::grow_counts(rp)
    }
    fn grow_forget_wanted(&self, rp: Krp, n: u32) {
        grow::grow_forget_wanted(rp, n);
    }
    fn grow_add_pool(&self, rp: Krp, n: u32) -> Result {
        pool::grow_add_pool(rp, n, self.data_size(rp))
    }
}

/// The type of `struct kprobe`'s `pre_handler`.
type PreHandler = unsafe extern "C" fn(*mut bindings::kprobe, *mut bindings::pt_regs) -> i32;

/// The kretprobe whose `kp` is `p`.
///
/// # Safety
///
/// `p` is `&rp->kp` of a registered kretprobe `rp` (so not NULL).
#[inline(always)]
unsafe fn krp_of(p: *mut bindings::kprobe) -> Krp {
    // SAFETY: `p` is not NULL and `kp` is the first member of the live `struct kretprobe`
    // (container_of with offset 0), as the contract says.
    unsafe { Krp::from_raw(NonNull::new_unchecked(p).cast()) }
}

nokprobe! {
    /// `pre_handler_kretprobe()` (static in C): installed as the `pre_handler` of every
    /// kretprobe with a fixed pool.
    ///
    /// # Safety
    ///
    /// Called by the arch or the aggregate fan-out with `p == &rp->kp` of a registered kretprobe.
    #[no_mangle]
    pub unsafe extern "C" fn pre_handler_kretprobe(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) -> i32 {
        // SAFETY: as this function's contract.
        let rp = unsafe { krp_of(p) };
        crate::kretprobe::pre_handler_kretprobe(&KERNEL, rp, regs)
    }

    /// The `pre_handler` of a kretprobe whose pool may grow (Rust only).
    ///
    /// # Safety
    ///
    /// As [`pre_handler_kretprobe`], for a kretprobe registered with a growth state.
    #[no_mangle]
    pub unsafe extern "C" fn pre_handler_kretprobe_grow(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) -> i32 {
        // SAFETY: as this function's contract.
        let rp = unsafe { krp_of(p) };
        crate::kretprobe::pre_handler_kretprobe_grow(&KERNEL, rp, regs)
    }
}
