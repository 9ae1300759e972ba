// SPDX-License-Identifier: GPL-2.0

//! Growing kretprobe pools (issue 40, Rust only), on both instance-pool paths: the state
//! `rp->grow` (`struct rkp_kretprobe_grow`, `kprobes_helpers.h`), its counters, the kick and
//! the worker's entry point. What a pool is stays with its path: rethooks ([`super::rethook`])
//! or `kretprobe_holder`s with their own objpool ([`super::objpool`]).
//!
//! Constraints: [`extra_pools`], [`grow_note_take`], [`grow_note_put`] and [`grow_kick`] run
//! on the probe-hit and function-return paths (any context, NMI included: no allocation, no lock,
//! no sleep) and are `#[inline(always)]` into the `.kprobes.text` entry points. The hit path only
//! counts and kicks an `irq_work`, whose handler queues the worker
//! ([`rkp_kretprobe_grow_work`]), which allocates a pool and publishes it under the state's
//! mutex. Unregistration detaches every extra pool where it detaches the first one, once the
//! probe is out of the text and the hash, and releases them and frees the state after the grace
//! period, after the last kick and worker are done. A kretprobe with `grow_max` 0 has
//! `rp->grow == NULL`: its pool and everything it counts are C's.

use core::ptr::{self, addr_of, addr_of_mut, NonNull};
use core::sync::atomic::{AtomicU32, Ordering};

use kernel::bindings;

use super::handle::{Krp, KERNEL};
use super::helpers::{
    rkp_kretprobe_grow as Grow, rkp_kretprobe_grow_alloc, rkp_kretprobe_grow_detach,
    rkp_kretprobe_grow_free, rkp_kretprobe_grow_kick, rkp_kretprobe_grow_publish,
    RKP_GROW_MAX_POOLS,
};
use crate::errno::{Errno, Result};
use crate::kretprobe_grow::{kick_from, GrowCounts, GROW_MAX_POOLS, NO_KICK};

// The C state holds as many extra pools as the logic may ask for.
const _: () = assert!(RKP_GROW_MAX_POOLS as usize == GROW_MAX_POOLS);

/// An extra pool: what `rp->rh` is on the rethook path, what `rp->rph` is on the objpool path.
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
pub type Pool = bindings::rethook;
/// An extra pool: what `rp->rh` is on the rethook path, what `rp->rph` is on the objpool path.
#[cfg(not(CONFIG_KRETPROBE_ON_RETHOOK))]
pub type Pool = bindings::kretprobe_holder;

/// `rp->grow`: a growing pool's state, NULL for C's fixed pool.
#[inline(always)]
fn grow_of(rp: Krp) -> *mut Grow {
    // SAFETY: `rp` is live (type invariant); the field is written only at registration and
    // unregistration, never while a hit or the worker can read it.
    unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).grow)) }.cast()
}

/// At registration, before the first pool is allocated: `rp` has C's fixed pool until
/// [`grow_alloc`] says otherwise (the field is the core's; what a caller left there is not a
/// state).
pub fn grow_clear(rp: Krp) {
    // SAFETY: `rp` live; registration owns it and the probe is not registered yet.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).grow), ptr::null_mut()) };
}

/// The published extra pools of a kretprobe, in the order they are tried; see [`extra_pools`].
///
/// # Invariants
///
/// `g` is NULL, or the live growth state of a kretprobe whose probe is reachable from this hit,
/// with `n <= RKP_GROW_MAX_POOLS` pools published.
pub struct ExtraPools {
    g: *mut Grow,
    n: usize,
    i: usize,
}

/// The extra pools of `rp` published so far, in order; none for a fixed pool. Probe-hit path,
/// while `rp` is registered (its pre-handler).
///
/// Each pool stays live while the probe is reachable: a published pool is released only after
/// the detach, which runs once the probe is out of the text and the hash, and a grace period,
/// which the hit holds off.
#[inline(always)]
pub fn extra_pools(rp: Krp) -> ExtraPools {
    let g = grow_of(rp);
    let n = if g.is_null() {
        0
    } else {
        // SAFETY: `g` is live while the probe is reachable (freed a grace period after it left
        // the hash; the hit path runs with preemption disabled); `npools` is aligned, and
        // changed only by the publisher's store-release, which this acquire pairs with, so
        // `pools[..n]` are set.
        let n = unsafe { AtomicU32::from_ptr(addr_of_mut!((*g).npools)) }.load(Ordering::Acquire);
        (n as usize).min(GROW_MAX_POOLS)
    };
    // INVARIANT: `g` as above, `n` clamped to the array.
    ExtraPools { g, n, i: 0 }
}

impl Iterator for ExtraPools {
    type Item = *mut Pool;

    #[inline(always)]
    fn next(&mut self) -> Option<*mut Pool> {
        if self.i >= self.n {
            return None;
        }
        // SAFETY: `i < n <= RKP_GROW_MAX_POOLS` (the type invariant and the `const` assert
        // above), so in the array of `g`, which is live and not NULL when `n > 0`; the entry was
        // written before `npools` was released past it and is never written again.
        let pool = unsafe {
            ptr::read_volatile(addr_of!((*self.g).pools).cast::<*mut Pool>().add(self.i))
        };
        self.i += 1;
        Some(pool)
    }
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

/// Notes an instance of a growing pool `taken`, or an entry that found every pool empty
/// (`!taken`), and whether to kick the worker: [`KretprobeStore::grow_note_take`]. Probe-hit
/// path, for a kretprobe with a growth state.
///
/// [`KretprobeStore::grow_note_take`]: crate::kretprobe::KretprobeStore::grow_note_take
#[inline(always)]
pub fn grow_note_take(rp: Krp, taken: bool) -> bool {
    let g = grow_of(rp);
    if g.is_null() {
        return false;
    }
    // SAFETY: `g` is live while the probe is reachable (see `extra_pools`); these fields
    // are only accessed atomically.
    let (in_flight, wanted, kick_from) = unsafe {
        (
            counter(addr_of_mut!((*g).in_flight)),
            counter(addr_of_mut!((*g).wanted)),
            counter(addr_of_mut!((*g).kick_from)),
        )
    };
    if taken {
        in_flight.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
            >= kick_from.load(Ordering::Relaxed)
    } else {
        wanted.fetch_add(1, Ordering::Relaxed);
        kick_from.load(Ordering::Relaxed) != NO_KICK
    }
}

/// Stores the [`kick_from`] level of `g`'s pools as they are now. Called by the only writer of
/// `total` and `npools` (registration, then the worker), after it changed them.
///
/// # Safety
///
/// `g` is a live growth state.
unsafe fn store_kick_from(g: *mut Grow) {
    // SAFETY: `g` live (the contract); these fields are only accessed atomically, `cap` is
    // written once before.
    unsafe {
        let level = kick_from(
            counter(addr_of_mut!((*g).total)).load(Ordering::Relaxed),
            ptr::read_volatile(addr_of!((*g).cap)),
            counter(addr_of_mut!((*g).npools)).load(Ordering::Relaxed) as usize,
        );
        counter(addr_of_mut!((*g).kick_from)).store(level, Ordering::Relaxed);
    }
}

/// A growing pool's instance went back (recycled unused, or its function returned). Probe-hit
/// and function-return paths, while `rp` is registered or found through its pool under RCU.
#[inline(always)]
pub fn grow_note_put(rp: Krp) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` is live while an instance of `rp` can be recycled from the pre-handler or
        // reach `rp` from its pool (the release waits a grace period after the detach of every
        // pool, after which no instance reaches `rp`); `in_flight` is only accessed atomically.
        // Every put follows the take that counted the instance, so it does not wrap.
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

/// At registration, after the first pool: `rp` may grow from `total` to `cap` instances. May
/// sleep.
pub fn grow_alloc(rp: Krp, cap: u32, total: u32) -> Result {
    // SAFETY: allocates (GFP_KERNEL) and initialises a state for `rp`, which stays live while
    // the state is (it is freed at unregistration or after a failed registration).
    let g = unsafe { rkp_kretprobe_grow_alloc(rp.as_ptr(), cap, total) };
    if g.is_null() {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: `g` is the fresh state, not yet reachable from a hit.
    unsafe { store_kick_from(g) };
    // SAFETY: `rp` live; registration owns it, and the probe is not registered yet.
    unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).grow), g.cast()) };
    Ok(())
}

/// The worker: `pool`, `n` fresh instances of `rp` that nothing else holds, becomes the next
/// extra pool; it is freed instead when `rp` is being unregistered. May sleep.
///
/// # Safety
///
/// `pool` is a fully initialised pool of `rp` (a rethook with `data == rp`, or a holder whose
/// objpool's objects point back to it), handed over to this call.
pub unsafe fn grow_publish(rp: Krp, pool: *mut Pool, n: u32) -> Result {
    let g = grow_of(rp);
    if g.is_null() {
        return Err(Errno::ENOENT);
    }
    // SAFETY: `g` live (the worker, as in `grow_counts`); `pool` as the function's contract: the
    // callee publishes it, or detaches and releases it when `rp` is being unregistered.
    match unsafe { rkp_kretprobe_grow_publish(g, pool, n) } {
        0 => {
            // SAFETY: `g` live, as above; the worker is the only publisher.
            unsafe { store_kick_from(g) };
            Ok(())
        }
        e => Err(Errno::from_neg(e).unwrap_or(Errno::ENOENT)),
    }
}

/// Under `kprobe_mutex`, where the first pool is detached: no pool is published any more, and
/// each extra pool is detached as the first one is.
pub fn grow_detach(rp: Krp) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` is `rp`'s live growth state (freed only by the release after this);
        // the callee marks it dying under its mutex, which the worker never holds across an
        // allocation or with a lock of the core, and detaches its pools as the first one.
        unsafe { rkp_kretprobe_grow_detach(g) };
    }
}

/// Releases the extra pools and frees `rp->grow` (if any), then clears it. May sleep.
pub fn grow_free(rp: Krp) {
    let g = grow_of(rp);
    if !g.is_null() {
        // SAFETY: `g` came from rkp_kretprobe_grow_alloc() for `rp` and is freed once, here:
        // the pointer is cleared below. No hit reads it any more: the probe never got registered
        // (a failed registration), or it left the hash and a grace period passed since the
        // detach (the release after unregistration). The callee waits for a kick and a worker in
        // flight, then releases the extra pools as the first one is released.
        unsafe { rkp_kretprobe_grow_free(g) };
        // SAFETY: `rp` live.
        unsafe { ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).grow), ptr::null_mut()) };
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
