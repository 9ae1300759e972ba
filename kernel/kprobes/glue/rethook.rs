// SPDX-License-Identifier: GPL-2.0

//! The kretprobe instance pool on the rethook path (`KRETPROBE_ON_RETHOOK`: x86, riscv,
//! loongarch, powerpc, s390): a `struct rethook` per kretprobe, and its return handler.
//!
//! Constraints: [`instance_try_get`], [`instance_recycle`], [`instance_hook`] and
//! [`kretprobe_rethook_handler`] run on the probe-hit and
//! function-return paths (any context, NMI included: no allocation, no lock, no sleep); all but
//! the handler are inlined into the `.kprobes.text` entry points, the handler sits there itself.
//!
//! Growing pools (issue 40, Rust only; [`super::grow`]): a kretprobe whose `grow_max` is above
//! its `maxactive` has extra rethooks, each with `data = rp` and this file's handler, tried in
//! order after `rp->rh`, detached (`rethook_free()`) where `rp->rh` is.

use core::ffi::c_void;
use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::bindings;

use super::grow::{extra_pools, grow_clear, grow_detach, grow_free, grow_publish};
use super::handle::{Krp, KERNEL};
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

/// `rethook_alloc()` of `num` nodes of `sizeof(kretprobe_instance) + data_size` bytes, whose
/// data is `rp` and whose handler is [`kretprobe_rethook_handler`], or for a pool that may grow
/// [`kretprobe_rethook_handler_grow`]. May sleep.
fn alloc_rethook(
    rp: Krp,
    num: i32,
    data_size: usize,
    grows: bool,
) -> Result<*mut bindings::rethook> {
    let size = core::mem::size_of::<bindings::kretprobe_instance>() + data_size;
    let size = i32::try_from(size).map_err(|_| Errno::E2BIG)?;
    // SAFETY: rethook_alloc() may sleep (GFP_KERNEL), which its callers (registration, the
    // worker) allow; it keeps `data` only as an opaque pointer handed back to the handler, and
    // the handler is a function with the `rethook_handler_t` signature.
    let rh = unsafe {
        bindings::rethook_alloc(
            rp.as_ptr().cast::<c_void>(),
            Some(if grows {
                kretprobe_rethook_handler_grow
            } else {
                kretprobe_rethook_handler
            }),
            size,
            num,
        )
    };
    let v = rh as isize;
    if v < 0 && v >= -(MAX_ERRNO as isize) {
        return Err(Errno::from_neg(v as i32).unwrap_or(Errno::ENOMEM));
    }
    Ok(rh)
}

/// `rethook_alloc()` with `maxactive` nodes of `sizeof(kretprobe_instance) + data_size` bytes;
/// those of a pool that may grow (`grows`) note their return.
pub fn alloc_instance_pool(rp: Krp, maxactive: i32, data_size: usize, grows: bool) -> Result {
    grow_clear(rp);
    let rh = alloc_rethook(rp, maxactive, data_size, grows)?;
    // SAFETY: `rp` live; publish the pool before the probe is registered.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), rh) };
    Ok(())
}

/// `rethook_free(rp->rh); rp->rh = NULL` after a failed registration, and a growing pool's state.
pub fn free_instance_pool(rp: Krp) {
    let rh = rethook_of(rp);
    if !rh.is_null() {
        // SAFETY: `rh` is the pool allocated for `rp`; the probe never got registered.
        unsafe { bindings::rethook_free(rh) };
    }
    // SAFETY: `rp` live.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), ptr::null_mut()) };
    grow_free(rp);
}

/// `rethook_free(rp->rh)` at unregistration: in-flight nodes are freed when they return.
pub fn detach_instance_pool(rp: Krp) {
    let rh = rethook_of(rp);
    // C dereferences a NULL `rh` for a never-registered kretprobe; skip it instead.
    if !rh.is_null() {
        // SAFETY: `rh` is `rp`'s pool; rethook_free() detaches in-flight nodes via RCU.
        unsafe { bindings::rethook_free(rh) };
        grow_detach(rp);
    }
}

/// After the grace period: forget the rethook (it frees itself once its in-flight nodes
/// returned), so that a second `unregister_kretprobe()` finds NULL where C frees it again (a
/// use-after-free in C; a listed divergence, docs/upstream-behaviours.md).
pub fn release_instance_pool(rp: Krp) {
    grow_free(rp);
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

nokprobe! {
    /// A growing pool whose first rethook is empty: each extra pool in order. Out of line, so
    /// that the pre-handler keeps the registers of its common case.
    #[inline(never)]
    #[cold]
    pub fn grow_try_get(rp: Krp) -> Option<Instance> {
        for rh in extra_pools(rp) {
            // SAFETY: `rh` is a published extra pool, live while the probe is reachable
            // (`extra_pools`); rethook_try_get() returns NULL for a rethook being freed.
            if let Some(ri) = NonNull::new(unsafe { bindings::rethook_try_get(rh) }) {
                return Some(ri);
            }
        }
        None
    }
}

/// The worker: one more pool of `n` instances, published after the others. May sleep.
pub fn grow_add_pool(rp: Krp, n: u32, data_size: usize) -> Result {
    let num = i32::try_from(n).map_err(|_| Errno::EINVAL)?;
    let rh = alloc_rethook(rp, num, data_size, true)?;
    // SAFETY: `rh` is a fresh rethook of `rp` (its data) that nothing else holds.
    unsafe { grow_publish(rp, rh, n) }
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

/// The body of both return handlers: a growing pool's (`GROW`) first notes the instance back.
///
/// # Safety
///
/// As [`kretprobe_rethook_handler`].
#[inline(always)]
unsafe fn rethook_handler<const GROW: bool>(
    rh: *mut bindings::rethook_node,
    data: *mut c_void,
    regs: *mut bindings::pt_regs,
) {
    let rp = data.cast::<bindings::kretprobe>();
    // NULL data means the rethook is broken: WARN once, as C.
    if rp.is_null() {
        // SAFETY: WARN_ON_ONCE(1) only; the helper is unprobeable, as this handler.
        unsafe { rkp_warn_kretprobe_rethook_handler() };
        return;
    }
    if GROW {
        // SAFETY: `rp` is not NULL (checked above) and is the kretprobe this rethook was
        // allocated for, alive while the rethook calls back (rethook_free() clears the handler
        // before the kretprobe can go).
        let krp = unsafe { Krp::from_raw(NonNull::new_unchecked(rp)) };
        crate::kretprobe::instance_returned(&KERNEL, krp);
    }
    // SAFETY: `rp` is live, as above.
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

nokprobe! {
    /// `kretprobe_rethook_handler()` (static in C): runs the user's return handler. The handler
    /// of a fixed pool's rethook, C's.
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
        // SAFETY: as this function's contract.
        unsafe { rethook_handler::<false>(rh, data, regs) }
    }

    /// The handler of every rethook of a pool that may grow: as [`kretprobe_rethook_handler`],
    /// and the instance is counted back (Rust only).
    ///
    /// # Safety
    ///
    /// Called by rethook with the node of an instance of the growing kretprobe `data`.
    #[no_mangle]
    pub unsafe extern "C" fn kretprobe_rethook_handler_grow(
        rh: *mut bindings::rethook_node,
        data: *mut c_void,
        _ret_addr: usize,
        regs: *mut bindings::pt_regs,
    ) {
        // SAFETY: as this function's contract.
        unsafe { rethook_handler::<true>(rh, data, regs) }
    }
}
