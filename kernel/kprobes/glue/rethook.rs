// SPDX-License-Identifier: GPL-2.0

//! The kretprobe instance pool on the rethook path (`KRETPROBE_ON_RETHOOK`: x86, riscv,
//! loongarch, powerpc, s390): a `struct rethook` per kretprobe, and its return handler.
//!
//! Constraints: [`instance_try_get`], [`instance_recycle`], [`instance_hook`], the `grow_note_*`
//! functions, [`grow_kick`] and [`kretprobe_rethook_handler`] run on the probe-hit and
//! function-return paths (any context, NMI included: no allocation, no lock, no sleep); all but
//! the handler are inlined into the `.kprobes.text` entry points, the handler sits there itself.
//!
//! Growing pools (issue 40, Rust only): a kretprobe whose `grow_max` is above its `maxactive`
//! gets a `struct rkp_kretprobe_grow` (`rp->grow`, `kprobes_helpers.h`) holding up to
//! `RKP_GROW_MAX_POOLS` extra rethooks, each with `data = rp` and this file's handler, tried in
//! order after `rp->rh`. The hit path only counts and kicks an `irq_work`, whose handler queues
//! the worker ([`rkp_kretprobe_grow_work`]), which allocates a pool and publishes it under the
//! state's mutex. Unregistration detaches (`rethook_free()`) every pool where it detaches
//! `rp->rh`, once the probe is out of the text and the hash, and frees the state after the grace
//! period, after the last kick and worker are done. A kretprobe with `grow_max` 0 has
//! `rp->grow == NULL`: its pool and everything it counts are C's.

use core::ffi::c_void;
use core::ptr::{self, addr_of, addr_of_mut, NonNull};
use core::sync::atomic::{AtomicU32, Ordering};

use kernel::bindings;

use super::handle::{Krp, KERNEL};
use super::helpers::{
    rkp_kretprobe_grow as Grow, rkp_kretprobe_grow_alloc, rkp_kretprobe_grow_detach,
    rkp_kretprobe_grow_free, rkp_kretprobe_grow_kick, rkp_kretprobe_grow_publish,
    rkp_warn_kretprobe_rethook_handler, RKP_GROW_MAX_POOLS,
};
use super::percpu::{clear_current_kprobe, set_current_kprobe, set_kprobe_status};
use crate::errno::{Errno, Result, MAX_ERRNO};
use crate::kretprobe_grow::{GrowCounts, GROW_MAX_POOLS};

// The C state holds as many extra pools as the logic may ask for.
const _: () = assert!(RKP_GROW_MAX_POOLS as usize == GROW_MAX_POOLS);

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
/// data is `rp` and whose handler is [`kretprobe_rethook_handler`]. May sleep.
fn alloc_rethook(rp: Krp, num: i32, data_size: usize) -> Result<*mut bindings::rethook> {
    let size = core::mem::size_of::<bindings::kretprobe_instance>() + data_size;
    let size = i32::try_from(size).map_err(|_| Errno::E2BIG)?;
    // SAFETY: rethook_alloc() may sleep (GFP_KERNEL), which its callers (registration, the
    // worker) allow; it keeps `data` only as an opaque pointer handed back to the handler, and
    // the handler is a function with the `rethook_handler_t` signature.
    let rh = unsafe {
        bindings::rethook_alloc(
            rp.as_ptr().cast::<c_void>(),
            Some(kretprobe_rethook_handler),
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

/// `rethook_alloc()` with `maxactive` nodes of `sizeof(kretprobe_instance) + data_size` bytes.
pub fn alloc_instance_pool(rp: Krp, maxactive: i32, data_size: usize) -> Result {
    // SAFETY: `rp` live; registration owns it: a fixed pool until `grow_alloc()` says otherwise
    // (the field is the core's; what a caller left there is not a state).
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).grow), ptr::null_mut()) };
    let rh = alloc_rethook(rp, maxactive, data_size)?;
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
    free_grow(rp);
}

/// Frees `rp->grow` (if any) and clears it. May sleep.
fn free_grow(rp: Krp) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` came from rkp_kretprobe_grow_alloc() for `rp` and is freed once, here:
        // the pointer is cleared below. No hit reads it any more: the probe never got registered
        // (a failed registration), or it left the hash and a grace period passed since (the
        // release after unregistration). The callee waits for a kick and a worker in flight.
        unsafe { rkp_kretprobe_grow_free(g) };
        // SAFETY: `rp` live.
        unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).grow), ptr::null_mut()) };
    }
}

/// `rethook_free(rp->rh)` at unregistration: in-flight nodes are freed when they return.
pub fn detach_instance_pool(rp: Krp) {
    let rh = rethook_of(rp);
    // C dereferences a NULL `rh` for a never-registered kretprobe; skip it instead.
    if !rh.is_null() {
        // SAFETY: `rh` is `rp`'s pool; rethook_free() detaches in-flight nodes via RCU.
        unsafe { bindings::rethook_free(rh) };
        let g = grow_of(rp);
        if !g.is_null() {
            // SAFETY: `g` is `rp`'s live growth state (freed only by the release after this);
            // the callee marks it dying under its mutex, which the worker never holds across an
            // allocation or with a lock of the core, and rethook_free()s its pools as above.
            unsafe { rkp_kretprobe_grow_detach(g) };
        }
    }
}

/// After the grace period: forget the rethook (it frees itself once its in-flight nodes
/// returned), so that a second `unregister_kretprobe()` finds NULL where C frees it again (a
/// use-after-free in C; a listed divergence, docs/upstream-behaviours.md).
pub fn release_instance_pool(rp: Krp) {
    free_grow(rp);
    // SAFETY: `rp` is live (the caller's); its kprobe left the hash a grace period ago, so no
    // `pre_handler_kretprobe()` reads `rh` any more, and in-flight nodes reach their rethook
    // through the node, not through `rp`.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rh), ptr::null_mut()) };
}

/// `rethook_try_get(rp->rh)`; for a growing pool, then each extra pool in order.
#[inline(always)]
pub fn instance_try_get(rp: Krp) -> Option<Instance> {
    // SAFETY: `rh` is live while the probe is registered (we are its pre_handler).
    if let Some(ri) = NonNull::new(unsafe { bindings::rethook_try_get(rethook_of(rp)) }) {
        return Some(ri);
    }
    let g = grow_of(rp);
    if g.is_null() {
        return None;
    }
    // SAFETY: `g` is live while the probe is reachable (freed a grace period after it left the
    // hash; the hit path runs with preemption disabled); `npools` is aligned, and changed only
    // by the publisher's store-release, which this acquire pairs with, so `pools[..n]` are set.
    let n = unsafe { AtomicU32::from_ptr(addr_of_mut!((*g).npools)) }.load(Ordering::Acquire);
    let n = (n as usize).min(GROW_MAX_POOLS);
    for i in 0..n {
        // SAFETY: `i < RKP_GROW_MAX_POOLS` (the `const` assert above), so in the array of `g`
        // (live, as above); the entry was written before `npools` was released past it and is
        // never written again.
        let rh = unsafe {
            ptr::read_volatile(addr_of!((*g).pools).cast::<*mut bindings::rethook>().add(i))
        };
        // SAFETY: a published pool is freed (rethook_free(), then objpool_fini() after a grace
        // period) only by the detach, which runs once this probe is out of the text and the
        // hash; this hit holds off that grace period. rethook_try_get() returns NULL for a
        // rethook being freed.
        if let Some(ri) = NonNull::new(unsafe { bindings::rethook_try_get(rh) }) {
            return Some(ri);
        }
    }
    None
}

/// `rp->grow`: a growing pool's state, NULL for C's fixed pool.
#[inline(always)]
fn grow_of(rp: Krp) -> *mut Grow {
    // SAFETY: `rp` is live (type invariant); the field is written only at registration and
    // unregistration, never while a hit or the worker can read it.
    unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).grow)) }.cast()
}

/// One of the atomic counters of a growing pool's state.
///
/// # Safety
///
/// `field` points to a `u32` field of a live `struct rkp_kretprobe_grow` that is only
/// accessed atomically (this function, or C's READ_ONCE/WRITE_ONCE under the state's mutex:
/// marked accesses under the kernel memory model) while the returned reference is used.
#[inline(always)]
unsafe fn counter<'a>(field: *mut u32) -> &'a AtomicU32 {
    // SAFETY: valid and aligned as the `unsigned int` it is; accesses are atomic (`# Safety`).
    unsafe { AtomicU32::from_ptr(field) }
}

/// A growing pool's counts, after noting an instance `taken` or an entry that found every pool
/// empty (`!taken`); `None` (nothing noted) for a fixed pool. Probe-hit path.
#[inline(always)]
pub fn grow_note_take(rp: Krp, taken: bool) -> Option<GrowCounts> {
    let g = grow_of(rp);
    if g.is_null() {
        return None;
    }
    // SAFETY: `g` is live while the probe is reachable (see `instance_try_get`); these fields
    // are only accessed atomically.
    let (in_flight, wanted, total, npools) = unsafe {
        (
            counter(addr_of_mut!((*g).in_flight)),
            counter(addr_of_mut!((*g).wanted)),
            counter(addr_of_mut!((*g).total)),
            counter(addr_of_mut!((*g).npools)),
        )
    };
    let (in_flight, wanted) = if taken {
        (
            in_flight.fetch_add(1, Ordering::Relaxed).wrapping_add(1),
            wanted.load(Ordering::Relaxed),
        )
    } else {
        (
            in_flight.load(Ordering::Relaxed),
            wanted.fetch_add(1, Ordering::Relaxed).wrapping_add(1),
        )
    };
    // SAFETY: `g` live; `cap` is written before the probe is registered and never again.
    let cap = unsafe { ptr::read_volatile(addr_of!((*g).cap)) };
    Some(GrowCounts {
        in_flight,
        cap,
        total: total.load(Ordering::Relaxed),
        pools: npools.load(Ordering::Relaxed) as usize,
        wanted,
    })
}

/// A growing pool's instance went back (recycled unused, or its function returned). Probe-hit
/// and function-return paths.
#[inline(always)]
pub fn grow_note_put(rp: Krp) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` is live while an instance of `rp` can run a handler or be recycled from
        // the pre-handler (the release waits a grace period after `rethook_free()` of every
        // pool, which stops the handlers); `in_flight` is only accessed atomically. Every put
        // follows the take that counted the instance, so it does not wrap.
        unsafe { counter(addr_of_mut!((*g).in_flight)) }.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Asks for the worker: `irq_work_queue()`, NMI-safe. Probe-hit path.
#[inline(always)]
pub fn grow_kick(rp: Krp) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` is live while the probe is reachable; the release waits for a queued kick
        // (irq_work_sync()) before it frees `g`. The callee is in the blacklist (NOKPROBE).
        unsafe { rkp_kretprobe_grow_kick(g) };
    }
}

/// The worker's view: `None` for a fixed pool or one being unregistered.
pub fn grow_counts(rp: Krp) -> Option<GrowCounts> {
    let g = grow_of(rp);
    if g.is_null() {
        return None;
    }
    // SAFETY: the worker runs before the release's kthread_cancel_work_sync() returns, so `g`
    // is live; `dying` changes under the state's mutex, a stale `false` only costs an
    // allocation that the publish then frees.
    if unsafe { ptr::read_volatile(addr_of!((*g).dying)) } {
        return None;
    }
    // SAFETY: `g` live, as above; these fields are only accessed atomically.
    unsafe {
        Some(GrowCounts {
            in_flight: counter(addr_of_mut!((*g).in_flight)).load(Ordering::Relaxed),
            cap: ptr::read_volatile(addr_of!((*g).cap)),
            total: counter(addr_of_mut!((*g).total)).load(Ordering::Relaxed),
            pools: counter(addr_of_mut!((*g).npools)).load(Ordering::Relaxed) as usize,
            wanted: counter(addr_of_mut!((*g).wanted)).load(Ordering::Relaxed),
        })
    }
}

/// The worker forgets `n` misses it has acted on.
pub fn grow_forget_wanted(rp: Krp, n: u32) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` live (the worker, as in `grow_counts`); `wanted` is only accessed
        // atomically.
        let wanted = unsafe { counter(addr_of_mut!((*g).wanted)) };
        let _ = wanted.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            Some(w.saturating_sub(n))
        });
    }
}

/// At registration, after [`alloc_instance_pool`]: `rp` may grow from `total` to `cap`
/// instances. May sleep.
pub fn grow_alloc(rp: Krp, cap: u32, total: u32) -> Result {
    // SAFETY: allocates (GFP_KERNEL) and initialises a state for `rp`, which stays live while
    // the state is (it is freed at unregistration or after a failed registration).
    let g = unsafe { rkp_kretprobe_grow_alloc(rp.as_ptr(), cap, total) };
    if g.is_null() {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: `rp` live; registration owns it, and the probe is not registered yet.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).grow), g.cast()) };
    Ok(())
}

/// The worker: one more pool of `n` instances, published after the others. May sleep.
pub fn grow_add_pool(rp: Krp, n: u32, data_size: usize) -> Result {
    let g = grow_of(rp);
    if g.is_null() {
        return Err(Errno::ENOENT);
    }
    let num = i32::try_from(n).map_err(|_| Errno::EINVAL)?;
    let rh = alloc_rethook(rp, num, data_size)?;
    // SAFETY: `g` live (the worker, as in `grow_counts`); `rh` is a fresh rethook of `rp` that
    // nothing else holds: the callee publishes it, or frees it when `rp` is being unregistered.
    match unsafe { rkp_kretprobe_grow_publish(g, rh, n) } {
        0 => Ok(()),
        e => Err(Errno::from_neg(e).unwrap_or(Errno::ENOENT)),
    }
}

/// The worker (`kprobes_helpers.c` queues it from the kick): grows `rp`'s pools.
///
/// # Safety
///
/// `rp` is a kretprobe with a growth state, called from that state's work item, which the
/// release cancels (waiting for it) before the state or `rp` can go.
#[no_mangle]
pub unsafe extern "C" fn rkp_kretprobe_grow_work(rp: *mut bindings::kretprobe) {
    let Some(rp) = NonNull::new(rp) else {
        return;
    };
    // SAFETY: a live `struct kretprobe` (`# Safety`).
    let rp = unsafe { Krp::from_raw(rp) };
    crate::kretprobe::grow_work(&KERNEL, rp);
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
        // SAFETY: `rp` is not NULL (checked above) and is the kretprobe this rethook was
        // allocated for, alive while the rethook calls back (rethook_free() clears the handler
        // before the kretprobe can go).
        let krp = unsafe { Krp::from_raw(NonNull::new_unchecked(rp)) };
        crate::kretprobe::instance_returned(&KERNEL, krp);
        // SAFETY: as above.
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
