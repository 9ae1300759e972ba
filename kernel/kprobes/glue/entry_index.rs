// SPDX-License-Identifier: GPL-2.0

//! The index of the hash entries by address that the top halves of a large unregistration
//! batch look their probes up in (`register.rs`, `build_entry_index`; Rust only): C walks the
//! probe's hash chain for each, and with thousands of probes in the 64 buckets every walk
//! passes hundreds of entries (about 580 guest instructions a probe when 10000 probes are
//! unregistered: `scripts/rkprobes profile --command "bulk-unreg module 10000"`, 2026-11-27).
//!
//! Constraints: every function takes the `&mut KprobeState` that only the `kprobe_mutex` guard
//! hands out, so the index is only touched with that mutex held, by one task at a time.
//! Process context; `begin` allocates (GFP_KERNEL, vmalloc for large tables), nothing else
//! does. Without memory the chains are walked, as in C.

use kernel::alloc::{flags::GFP_KERNEL, KVVec};

use super::platform::Kp;
use super::state_cell::{self, with, Cell};
use crate::store::KprobeState;

/// The smallest batch that gets an index. Building it costs about as much per hash entry as
/// a lookup in it; a batch of `n` probes among `n` entries walks chains of `n / 64` entries,
/// half of one a lookup, so below a few thousand probes the walks cost no more than the index.
pub(super) const MIN_BATCH: usize = 2048;

/// Open addressing with linear probing over a power of two of slots, at most half of them
/// used. A slot holds an address (0: free; a probe is never at 0) and the entry there, `None`
/// once it has left the hash (the slot stays taken, so the probe sequences through it stay
/// whole; nothing is inserted after the build).
struct EntryIndex {
    slots: KVVec<(usize, Option<Kp>)>,
    used: usize,
}

// SAFETY: the probes indexed are only used under `kprobe_mutex` (the cell's contract), by
// whichever task holds it, while the `unregister_kprobes()` call that built the index runs.
unsafe impl Send for EntryIndex {}

impl EntryIndex {
    fn new(entries: usize) -> Option<Self> {
        let n = entries.max(1).checked_mul(2)?.checked_next_power_of_two()?;
        Some(EntryIndex {
            slots: KVVec::from_elem((0, None), n, GFP_KERNEL).ok()?,
            used: 0,
        })
    }

    /// The slot of `addr`, or the free one where it would go (there is always one: at most
    /// half the slots are used).
    fn slot(&self, addr: usize) -> usize {
        let slots = self.slots.as_slice();
        let mask = slots.len() - 1;
        // Fibonacci hashing: the top bits of the address times 2^64 / phi.
        let shift = (usize::BITS - slots.len().trailing_zeros()) % usize::BITS;
        let mut i = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> shift) & mask;
        while slots[i].0 != 0 && slots[i].0 != addr {
            i = (i + 1) & mask;
        }
        i
    }
}

static INDEX: Cell<EntryIndex> = Cell::new();

/// Allocates an index with room for `entries` hash entries; false on allocation failure, or
/// while another batch holds the index.
pub(super) fn begin(st: &mut KprobeState, entries: usize) -> bool {
    state_cell::begin(&INDEX, st, || EntryIndex::new(entries))
}

/// Adds the hash entry `p` at `addr`; false when the index is full or absent.
pub(super) fn insert(st: &mut KprobeState, p: Kp, addr: usize) -> bool {
    with(&INDEX, st, |x| {
        let Some(x) = x.as_mut() else { return false };
        if addr == 0 || x.used.saturating_mul(2) >= x.slots.len() {
            return false;
        }
        let i = x.slot(addr);
        if x.slots[i].0 == 0 {
            x.used += 1;
        }
        x.slots[i] = (addr, Some(p));
        true
    })
}

/// The hash entry at `addr`, as `get_kprobe(addr)` finds it.
pub(super) fn get(st: &mut KprobeState, addr: usize) -> Option<Kp> {
    with(&INDEX, st, |x| {
        let x = x.as_ref()?;
        x.slots[x.slot(addr)].1
    })
}

/// The hash entry at `addr` has left the hash.
pub(super) fn remove(st: &mut KprobeState, addr: usize) {
    with(&INDEX, st, |x| {
        if let Some(x) = x.as_mut() {
            let i = x.slot(addr);
            x.slots[i].1 = None;
        }
    })
}

/// Frees the index.
pub(super) fn end(st: &mut KprobeState) {
    with(&INDEX, st, |x| *x = None);
}
