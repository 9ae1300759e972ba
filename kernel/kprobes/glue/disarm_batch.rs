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

/// The records, in the order they were made (at most `DISARM_BATCH_WRITE`, 64, between two
/// flushes: `register.rs`).
struct Disarms {
    records: KVec<DisarmRecord<Kp>>,
}

// SAFETY: the probes recorded are only used under `kprobe_mutex` (the cell's contract), by
// whichever task holds it, while the `unregister_kprobes()` call that recorded them runs.
unsafe impl Send for Disarms {}

impl Disarms {
    fn new(room: usize) -> Option<Self> {
        Some(Disarms {
            records: KVec::with_capacity(room, GFP_KERNEL).ok()?,
        })
    }

    /// The record of `addr`. A top half unlinks the entry it has just disarmed, the last
    /// record; only the same probe given twice in a batch asks for another (and then, with
    /// records written every 64, scans at most 64).
    fn find(&mut self, addr: usize) -> Option<&mut DisarmRecord<Kp>> {
        self.records
            .as_mut_slice()
            .iter_mut()
            .rev()
            .find(|r| r.addr == addr)
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
        let record = DisarmRecord {
            probe,
            addr,
            unlink: false,
        };
        // Within the capacity: no allocation.
        d.records.push(record, GFP_KERNEL).is_ok()
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

/// Calls `f` with `st` and the records in address order, then forgets them.
pub(super) fn flush(st: &mut KprobeState, f: impl FnOnce(&mut KprobeState, &[DisarmRecord<Kp>])) {
    // Out of the cell while `f` runs: `f` finds the cell empty (nothing to record into), and
    // the storage goes back afterwards.
    let Some(mut d) = with(&DISARMS, st, |d| d.take()) else {
        return f(st, &[]);
    };
    let records = d.records.as_mut_slice();
    records.sort_unstable_by_key(|r| r.addr);
    f(st, records);
    // SAFETY: shrinking to 0 is within the capacity; the records are `Copy`, so forgetting
    // them drops nothing.
    unsafe { d.records.set_len(0) };
    with(&DISARMS, st, |cell| *cell = Some(d));
}

/// Frees the storage.
pub(super) fn end(st: &mut KprobeState) {
    with(&DISARMS, st, |d| *d = None);
}
