// SPDX-License-Identifier: GPL-2.0

//! The kretprobe instance pool on the rethook path (`KRETPROBE_ON_RETHOOK`: x86, riscv,
//! loongarch, powerpc, s390): a `struct rethook` per kretprobe, and its return handler.
//!
//! Constraints: [`instance_try_get`], [`instance_recycle`], [`instance_hook`] and
//! [`kretprobe_rethook_handler`] run on the probe-hit and function-return paths (preemption
//! disabled, no allocation, no lock); the first three are inlined into the `.kprobes.text` entry
//! points, the handler sits there itself.

use core::ffi::c_void;
use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::bindings;

use super::handle::Krp;
use super::helpers::rkp_warn_kretprobe_rethook_handler;
use super::percpu::{clear_current_kprobe, set_current_kprobe, set_kprobe_status};
use crate::errno::{Errno, Result, MAX_ERRNO};

/// An instance is its rethook node (the first member of `struct kretprobe_instance`).
pub type Instance = NonNull<bindings::rethook_node>;

/// The `struct kretprobe_instance *` that `ri` is.
#[inline(always)]
pub fn instance_ptr(ri: Instance) -> *mut bindings::kretprobe_instance {
    ri.as_ptr().cast()
}

#[inline(always)]
fn rethook_of(rp: Krp) -> *mut bindings::rethook {
    // SAFETY: `rp` is live (type invariant).
    unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).rh)) }
}

/// `rethook_alloc()` with `maxactive` nodes of `sizeof(kretprobe_instance) + data_size` bytes.
pub fn alloc_instance_pool(rp: Krp, maxactive: i32, data_size: usize) -> Result {
    let size = core::mem::size_of::<bindings::kretprobe_instance>() + data_size;
    let size = i32::try_from(size).map_err(|_| Errno::E2BIG)?;
    // SAFETY: allocates a rethook whose data is `rp` and whose handler is ours.
    let rh = unsafe {
        bindings::rethook_alloc(
            rp.as_ptr().cast::<c_void>(),
            Some(kretprobe_rethook_handler),
            size,
            maxactive,
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

/// `rethook_free(rp->rh); rp->rh = NULL` after a failed registration.
pub fn free_instance_pool(rp: Krp) {
    let rh = rethook_of(rp);
    if !rh.is_null() {
        // SAFETY: `rh` is the pool allocated for `rp`; the probe never got registered.
        unsafe { bindings::rethook_free(rh) };
    }
    // SAFETY: `rp` live.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), ptr::null_mut()) };
}

/// `rethook_free(rp->rh)` at unregistration: in-flight nodes are freed when they return.
pub fn detach_instance_pool(rp: Krp) {
    let rh = rethook_of(rp);
    // C dereferences a NULL `rh` for a never-registered kretprobe; skip it instead.
    if !rh.is_null() {
        // SAFETY: `rh` is `rp`'s pool; rethook_free() detaches in-flight nodes via RCU.
        unsafe { bindings::rethook_free(rh) };
    }
}

/// After the grace period: forget the rethook (it frees itself once its in-flight nodes
/// returned), so that a second `unregister_kretprobe()` finds NULL where C frees it again (a
/// use-after-free in C; a listed divergence, docs/upstream-behaviours.md).
pub fn release_instance_pool(rp: Krp) {
    // SAFETY: `rp` is live (the caller's); its kprobe left the hash a grace period ago, so no
    // `pre_handler_kretprobe()` reads `rh` any more, and in-flight nodes reach their rethook
    // through the node, not through `rp`.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), ptr::null_mut()) };
}

/// `rethook_try_get(rp->rh)`.
#[inline(always)]
pub fn instance_try_get(rp: Krp) -> Option<Instance> {
    // SAFETY: `rh` is live while the probe is registered (we are its pre_handler).
    NonNull::new(unsafe { bindings::rethook_try_get(rethook_of(rp)) })
}

/// `rethook_recycle()`.
#[inline(always)]
pub fn instance_recycle(_rp: Krp, ri: Instance) {
    // SAFETY: `ri` came from rethook_try_get() and was not hooked.
    unsafe { bindings::rethook_recycle(ri.as_ptr()) };
}

/// `rethook_hook(rhn, regs, mcount)`.
#[inline(always)]
pub fn instance_hook(ri: Instance, regs: *mut bindings::pt_regs, mcount: bool) {
    // SAFETY: `ri` came from rethook_try_get(); `regs` are the probe hit's.
    unsafe { bindings::rethook_hook(ri.as_ptr(), regs, mcount) };
}

nokprobe! {
    /// `kretprobe_rethook_handler()` (static in C): runs the user's return handler.
    ///
    /// # Safety
    ///
    /// Called by rethook with the node of an instance of the kretprobe `data`.
    #[no_mangle]
    pub unsafe extern "C" fn kretprobe_rethook_handler(
        rh: *mut bindings::rethook_node,
        data: *mut c_void,
        _ret_addr: usize,
        regs: *mut bindings::pt_regs,
    ) {
        let rp = data.cast::<bindings::kretprobe>();
        // NULL data means the rethook is broken: WARN once, as C.
        if rp.is_null() {
            // SAFETY: WARN_ON_ONCE(1) only; the helper is unprobeable, as this handler.
            unsafe { rkp_warn_kretprobe_rethook_handler() };
            return;
        }
        // SAFETY: `data` is the kretprobe this rethook was allocated for, alive while the rethook
        // calls back (rethook_free() clears the handler before the kretprobe can go).
        let Some(handler) = (unsafe { ptr::read_volatile(addr_of!((*rp).handler)) }) else {
            return;
        };
        // SAFETY: per-CPU writes with preemption disabled (rethook handler context).
        unsafe {
            set_current_kprobe(addr_of_mut!((*rp).kp));
            set_kprobe_status::<{ bindings::KPROBE_HIT_ACTIVE as usize }>();
        }
        // SAFETY: `node` is the first member of `struct kretprobe_instance`.
        unsafe { handler(rh.cast(), regs) };
        // SAFETY: as above.
        unsafe { clear_current_kprobe() };
    }
}
