// SPDX-License-Identifier: GPL-2.0

//! Kernel implementation of [`KretprobeStore`] on the rethook path (`KRETPROBE_ON_RETHOOK`:
//! x86, riscv, loongarch, powerpc, s390), and the two handlers the core installs.
//!
//! Constraints: [`pre_handler_kretprobe`] and [`kretprobe_rethook_handler`] run on the probe-hit
//! and function-return paths (preemption disabled, no allocation, no lock) and sit in
//! `.kprobes.text`. The instance pool is the rethook's objpool, sized at registration. The
//! objpool-only arches (arm64) need the `kretprobe_holder` variant, not written yet.

use core::ffi::c_void;
use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::bindings;

use super::helpers::*;
use super::platform::{Kernel, Kp, KERNEL};
use crate::errno::{Errno, Result, MAX_ERRNO};
use crate::kretprobe::KretprobeStore;

/// Handle to a `struct kretprobe`.
///
/// # Invariants
///
/// The pointer refers to a live `struct kretprobe` while the core uses the handle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Krp(NonNull<bindings::kretprobe>);

impl Krp {
    /// Wraps a pointer received from C.
    ///
    /// # Safety
    ///
    /// `rp` must stay valid for the duration of the API call that received it.
    pub unsafe fn from_raw(rp: NonNull<bindings::kretprobe>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Krp(rp)
    }

    fn as_ptr(self) -> *mut bindings::kretprobe {
        self.0.as_ptr()
    }
}

#[inline(always)]
fn rethook_of(rp: Krp) -> *mut bindings::rethook {
    // SAFETY: `rp` is live (type invariant).
    unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).rh)) }
}

impl KretprobeStore for Kernel {
    type Kretprobe = Krp;
    type Instance = NonNull<bindings::rethook_node>;
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
        // SAFETY: `rp` live; a plain increment as C's `rp->nmissed++`.
        unsafe {
            let f = addr_of_mut!((*rp.as_ptr()).nmissed);
            ptr::write_volatile(f, ptr::read_volatile(f).wrapping_add(1));
        }
    }
    fn set_kretprobe_handlers(&self, rp: Krp) {
        // SAFETY: `rp` live and not yet registered.
        unsafe {
            ptr::write_volatile(
                addr_of_mut!((*rp.as_ptr()).kp.pre_handler),
                Some(pre_handler_kretprobe),
            );
            ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).kp.post_handler), None);
        }
    }
    fn num_possible_cpus(&self) -> u32 {
        // SAFETY: reads the possible-CPU mask.
        unsafe { rkp_num_possible_cpus() }
    }
    fn alloc_instance_pool(&self, rp: Krp) -> Result {
        let size = core::mem::size_of::<bindings::kretprobe_instance>() + self.data_size(rp);
        let size = i32::try_from(size).map_err(|_| Errno::E2BIG)?;
        // SAFETY: allocates a rethook whose data is `rp` and whose handler is ours.
        let rh = unsafe {
            bindings::rethook_alloc(
                rp.as_ptr().cast::<c_void>(),
                Some(kretprobe_rethook_handler),
                size,
                self.maxactive(rp),
            )
        };
        let v = rh as isize;
        if v < 0 && v >= -(MAX_ERRNO as isize) {
            return Err(Errno::from_neg(v as i32).unwrap_or(Errno::ENOMEM));
        }
        // SAFETY: `rp` live; publish the pool before the probe is registered.
        unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), rh) };
        Ok(())
    }
    fn free_instance_pool(&self, rp: Krp) {
        let rh = rethook_of(rp);
        if !rh.is_null() {
            // SAFETY: `rh` is the pool allocated for `rp`; the probe never got registered.
            unsafe { bindings::rethook_free(rh) };
        }
        // SAFETY: `rp` live.
        unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), ptr::null_mut()) };
    }
    fn detach_instance_pool(&self, rp: Krp) {
        let rh = rethook_of(rp);
        // C dereferences a NULL `rh` for a never-registered kretprobe; skip it instead.
        if !rh.is_null() {
            // SAFETY: `rh` is `rp`'s pool; rethook_free() detaches in-flight nodes via RCU.
            unsafe { bindings::rethook_free(rh) };
        }
    }
    fn release_instance_pool(&self, _rp: Krp) {}

    #[inline(always)]
    fn instance_try_get(&self, rp: Krp) -> Option<Self::Instance> {
        // SAFETY: `rh` is live while the probe is registered (we are its pre_handler).
        NonNull::new(unsafe { bindings::rethook_try_get(rethook_of(rp)) })
    }
    #[inline(always)]
    fn has_entry_handler(&self, rp: Krp) -> bool {
        // SAFETY: `rp` live.
        unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).entry_handler)).is_some() }
    }
    #[inline(always)]
    fn call_entry_handler(&self, rp: Krp, ri: Self::Instance, regs: *mut bindings::pt_regs) -> i32 {
        // SAFETY: `node` is the first member of `struct kretprobe_instance`; the handler is
        // the owner's, called as C calls it.
        unsafe {
            match ptr::read_volatile(addr_of!((*rp.as_ptr()).entry_handler)) {
                Some(f) => f(ri.as_ptr().cast(), regs),
                None => 0,
            }
        }
    }
    #[inline(always)]
    fn instance_recycle(&self, _rp: Krp, ri: Self::Instance) {
        // SAFETY: `ri` came from rethook_try_get() and was not hooked.
        unsafe { bindings::rethook_recycle(ri.as_ptr()) };
    }
    #[inline(always)]
    fn instance_hook(
        &self,
        _rp: Krp,
        ri: Self::Instance,
        regs: *mut bindings::pt_regs,
        mcount: bool,
    ) {
        // SAFETY: `ri` came from rethook_try_get(); `regs` are the probe hit's.
        unsafe { bindings::rethook_hook(ri.as_ptr(), regs, mcount) };
    }
}

/// `pre_handler_kretprobe()` (static in C): installed as every kretprobe's `pre_handler`.
///
/// # Safety
///
/// Called by the arch or the aggregate fan-out with `p == &rp->kp` of a registered kretprobe.
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn pre_handler_kretprobe(
    p: *mut bindings::kprobe,
    regs: *mut bindings::pt_regs,
) -> i32 {
    let Some(p) = NonNull::new(p) else {
        return 0;
    };
    // SAFETY: `kp` is the first member of `struct kretprobe` (container_of with offset 0).
    let rp = unsafe { Krp::from_raw(p.cast()) };
    crate::kretprobe::pre_handler_kretprobe(&KERNEL, rp, regs)
}

/// `kretprobe_rethook_handler()` (static in C): runs the user's return handler.
///
/// # Safety
///
/// Called by rethook with the node of an instance of the kretprobe `data`.
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn kretprobe_rethook_handler(
    rh: *mut bindings::rethook_node,
    data: *mut c_void,
    _ret_addr: usize,
    regs: *mut bindings::pt_regs,
) {
    let rp = data.cast::<bindings::kretprobe>();
    // C WARNs once on NULL data (a broken rethook).
    if rp.is_null() {
        return;
    }
    // SAFETY: `data` is the kretprobe this rethook was allocated for, alive while the rethook
    // calls back (rethook_free() clears the handler before the kretprobe can go).
    let Some(handler) = (unsafe { ptr::read_volatile(addr_of!((*rp).handler)) }) else {
        return;
    };
    // SAFETY: per-CPU writes with preemption disabled (rethook handler context).
    unsafe {
        rkp_set_current_kprobe(addr_of_mut!((*rp).kp));
        rkp_set_kprobe_status(bindings::KPROBE_HIT_ACTIVE as usize);
    }
    // SAFETY: `node` is the first member of `struct kretprobe_instance`.
    unsafe { handler(rh.cast(), regs) };
    // SAFETY: as above.
    unsafe { rkp_set_current_kprobe(ptr::null_mut()) };
}
