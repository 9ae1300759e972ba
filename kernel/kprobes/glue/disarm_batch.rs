// SPDX-License-Identifier: GPL-2.0

//! The storage of one `unregister_kprobes()` batch of breakpoint probes (`register.rs`,
//! `unregister_tops_locked`): the breakpoint removals its top halves recorded since the batch
//! last wrote them, each with whether the hash entry leaves the hash after the write.
//!
//! Constraints: every function takes the `&mut KprobeState` that only the `kprobe_mutex` guard
//! hands out, so the storage is only touched with that mutex held, by one task at a time.
//! Process context; `begin` allocates (GFP_KERNEL), nothing else does. An allocation failure
//! only means the breakpoints are removed one by one, as C does.

use kernel::alloc::{flags::GFP_KERNEL, KVec};

use super::platform::Kp;
use super::state_cell::{self, with, Cell};
use crate::store::{DisarmRecord, KprobeState};

/// The records, in the order they were made, and an open-addressing index of them by address
/// (linear probing over twice as many slots as there is room for records; a slot holds a
/// record's position plus one, 0 when free), so each address is found again in constant time.
struct Disarms {
    records: KVec<DisarmRecord<Kp>>,
    index: KVec<u16>,
}

// SAFETY: the probes recorded are only used under `kprobe_mutex` (the cell's contract), by
// whichever task holds it, while the `unregister_kprobes()` call that recorded them runs.
unsafe impl Send for Disarms {}

impl Disarms {
    fn new(room: usize) -> Option<Self> {
        let slots = room.checked_mul(2)?.checked_next_power_of_two()?;
        // Positions plus one fit the index's slots.
        u16::try_from(room).ok()?;
        Some(Disarms {
            records: KVec::with_capacity(room, GFP_KERNEL).ok()?,
            index: KVec::from_elem(0, slots, GFP_KERNEL).ok()?,
        })
    }

    /// The index slot of `addr`, or the free one where it would go (there is always one: at
    /// most half the slots are used).
    fn slot(&self, addr: usize) -> usize {
        let index = self.index.as_slice();
        let mask = index.len() - 1;
        // Fibonacci hashing: the top bits of the address times 2^64 / phi.
        let shift = (usize::BITS - index.len().trailing_zeros()) % usize::BITS;
        let mut i = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> shift) & mask;
        while let Some(r) = self.at(i) {
            if r.addr == addr {
                break;
            }
            i = (i + 1) & mask;
        }
        i
    }

    /// The record index slot `i` points to.
    fn at(&self, i: usize) -> Option<&DisarmRecord<Kp>> {
        let pos = usize::from(*self.index.as_slice().get(i)?);
        self.records.as_slice().get(pos.checked_sub(1)?)
    }

    fn find(&mut self, addr: usize) -> Option<&mut DisarmRecord<Kp>> {
        let pos = usize::from(self.index.as_slice()[self.slot(addr)]);
        self.records.as_mut_slice().get_mut(pos.checked_sub(1)?)
    }
}

static DISARMS: Cell<Disarms> = Cell::new();

/// Allocates room for `room` records; false on allocation failure, or while another batch
/// holds the storage.
pub(super) fn begin(st: &mut KprobeState, room: usize) -> bool {
    state_cell::begin(&DISARMS, st, || Disarms::new(room))
}

/// Records the removal of `probe`'s breakpoint at `addr`; false when there is no room.
pub(super) fn record(st: &mut KprobeState, probe: Kp, addr: usize) -> bool {
    with(&DISARMS, st, |d| {
        let Some(d) = d.as_mut() else { return false };
        if d.records.len() == d.records.capacity() {
            return false;
        }
        let slot = d.slot(addr);
        let record = DisarmRecord {
            probe,
            addr,
            unlink: false,
        };
        // Within the capacity: no allocation.
        if d.records.push(record, GFP_KERNEL).is_err() {
            return false;
        }
        // At most `room` records, which fits a `u16` (`Disarms::new`).
        d.index.as_mut_slice()[slot] = d.records.len() as u16;
        true
    })
}

pub(super) fn defer_unlink(st: &mut KprobeState, addr: usize) -> bool {
    with(&DISARMS, st, |d| {
        match d.as_mut().and_then(|d| d.find(addr)) {
            Some(r) => {
                r.unlink = true;
                true
            }
            None => false,
        }
    })
}

pub(super) fn unlinked(st: &mut KprobeState, addr: usize) -> bool {
    with(&DISARMS, st, |d| {
        d.as_mut()
            .and_then(|d| d.find(addr))
            .is_some_and(|r| r.unlink)
    })
}

/// Calls `f` with the records in address order, then forgets them.
pub(super) fn flush(st: &mut KprobeState, f: impl FnOnce(&[DisarmRecord<Kp>])) {
    // Out of the cell while `f` runs (it cannot reach the cell, having no `KprobeState`).
    let Some(mut d) = with(&DISARMS, st, |d| d.take()) else {
        return f(&[]);
    };
    let records = d.records.as_mut_slice();
    records.sort_unstable_by_key(|r| r.addr);
    f(records);
    // SAFETY: shrinking to 0 is within the capacity; the records are `Copy`, so forgetting
    // them drops nothing.
    unsafe { d.records.set_len(0) };
    d.index.as_mut_slice().fill(0);
    with(&DISARMS, st, |cell| *cell = Some(d));
}

/// Frees the storage.
pub(super) fn end(st: &mut KprobeState) {
    with(&DISARMS, st, |d| *d = None);
}
