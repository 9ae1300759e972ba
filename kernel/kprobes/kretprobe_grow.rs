// SPDX-License-Identifier: GPL-2.0

//! Growing kretprobe instance pools (Rust only, opt-in; issue 40): whether a kretprobe grows,
//! when, by how much and up to what.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate. [`should_grow`] is
//! decided on the probe-hit path, which may be in NMI, as one count compared with its
//! [`kick_from`] level, and a pool that should grow is only *kicked* (in the kernel an `irq_work`, which is NMI-safe); the growing
//! itself (`kretprobe::grow_work()`) runs in a worker, never on the hit path and never under
//! `kprobe_mutex`. A kretprobe whose `grow_max` is 0 (every C user today) never gets here: its
//! pool is the fixed one of C, and what it does and counts is C's.
//!
//! Design: 6.12's instance pools cannot grow in place. An `objpool` is sized at
//! `objpool_init()` (its per-CPU rings and its reference count), and `rethook_free()` clears the
//! handler first, so replacing a pool by a larger one would lose the returns of the instances
//! still in flight. The hit path counts the instances in flight and the entries it missed; the
//! worker grows the pools to the demand those show ([`grow_target`]), so a burst of sleepers
//! that all returned before the worker ran still leaves a pool the next burst fits in. A growing kretprobe therefore has extra pools, "chunks", tried in order after
//! its first one; each chunk at least doubles the instances up to the cap, and the
//! last chunk there is room for takes everything up to the cap, so at most [`GROW_MAX_POOLS`]
//! extra pools exist whatever the cap. All are freed at unregistration, as the first one is.

use super::errno::{Errno, Result};

/// The most extra pools (chunks) one kretprobe may have besides its first.
pub const GROW_MAX_POOLS: usize = 16;

/// `OBJPOOL_NR_OBJECT_MAX`: the most objects one `objpool` (so one chunk) may hold.
pub const OBJPOOL_NR_OBJECT_MAX: u32 = 1 << 24;

/// What a growing kretprobe's pools hold, as its hit path and worker see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrowCounts {
    /// Instances taken and not yet given back (returned or recycled).
    pub in_flight: u32,
    /// Instances in all its pools.
    pub total: u32,
    /// The most instances it may have (`rp->grow_max`).
    pub cap: u32,
    /// Extra pools so far.
    pub pools: usize,
    /// Entries that found every pool empty since the worker last looked (misses).
    pub wanted: u32,
}

/// Whether a kretprobe grows, from `rp->maxactive` (after the default was applied) and
/// `rp->grow_max`: `Some(cap)` when it may grow from `maxactive` to `cap` instances.
///
/// `grow_max` 0 (the default) or at most `maxactive` keeps C's fixed pool. A negative
/// `grow_max` is refused with -EINVAL, as is one no `objpool` can hold.
pub fn grow_cap(maxactive: i32, grow_max: i32) -> Result<Option<u32>> {
    let cap = u32::try_from(grow_max).map_err(|_| Errno::EINVAL)?;
    if cap > OBJPOOL_NR_OBJECT_MAX {
        return Err(Errno::EINVAL);
    }
    Ok(u32::try_from(maxactive)
        .ok()
        .filter(|&m| cap > m)
        .map(|_| cap))
}

/// The low-water mark: a pool grows when fewer than half its instances are free.
///
/// Half, not less: the worker is a scheduled thread, and a burst of callers that all sleep in
/// the function (the case growing is for) keeps entering while it is woken; the earlier the
/// kick, the fewer of them find the pools empty.
pub const fn low_water(total: u32) -> u32 {
    let half = total / 2;
    if half == 0 {
        1
    } else {
        half
    }
}

/// Whether the hit path should kick the worker: an entry found every pool empty, or fewer free
/// instances than the low-water mark are left; and there is room to grow.
///
/// The policy's definition; the hit path decides it through [`kick_from`].
pub fn should_grow(c: &GrowCounts) -> bool {
    c.total < c.cap
        && c.pools < GROW_MAX_POOLS
        && (c.wanted > 0 || c.total.saturating_sub(c.in_flight) < low_water(c.total))
}

/// [`kick_from`] of a pool with no room to grow: no in-flight count reaches it.
pub const NO_KICK: u32 = u32::MAX;

/// The in-flight count from which a hit kicks the worker, given the pools' `total`, `cap` and
/// extra `pools`; [`NO_KICK`] when there is no room to grow. The worker stores it when the
/// pools change, so that the hit path compares one count with it. An entry that took an
/// instance kicks when `in_flight >= kick_from(..)`, which is [`should_grow`] of its counts with
/// `wanted` 0 (fewer free than [`low_water`] is `in_flight > total - low_water(total)`; the
/// misses the worker has not seen yet each kicked when they happened); an entry that found every
/// pool empty kicks when `kick_from(..) != NO_KICK`, which is [`should_grow`] with `wanted > 0`.
pub const fn kick_from(total: u32, cap: u32, pools: usize) -> u32 {
    if total < cap && pools < GROW_MAX_POOLS {
        // `low_water(total) <= total` but for `total == 0`, where every count kicks.
        total.saturating_add(1).saturating_sub(low_water(total))
    } else {
        NO_KICK
    }
}

/// How many instances the worker grows the pools to: twice the demand (the calls in flight and
/// those missed since it last looked), within the cap. At or below `total`: no growth.
///
/// Twice, so that a pool grown to its target is at its low-water mark ([`low_water`]) and no
/// sooner under it: the worker, which looks again after each chunk, stops there.
pub fn grow_target(c: &GrowCounts) -> u32 {
    let demand = c.in_flight.saturating_add(c.wanted);
    demand.saturating_mul(2).min(c.cap)
}

/// The instances of the next chunk towards `target`: what the target still lacks, but at least
/// as many as the pools hold already (so the pools at least double, and a cap is reached within
/// [`GROW_MAX_POOLS`]), within the cap and the room of one `objpool`; the last chunk allowed takes
/// everything up to the cap. 0 when nothing may be added.
///
/// One chunk to the target rather than doublings towards it: each chunk is an allocation the
/// callers of a burst keep entering during.
pub fn next_chunk(c: &GrowCounts, target: u32) -> u32 {
    if c.pools >= GROW_MAX_POOLS {
        return 0;
    }
    let room = c.cap.saturating_sub(c.total).min(OBJPOOL_NR_OBJECT_MAX);
    if c.pools + 1 == GROW_MAX_POOLS {
        room
    } else {
        c.total.max(1).max(target.saturating_sub(c.total)).min(room)
    }
}
