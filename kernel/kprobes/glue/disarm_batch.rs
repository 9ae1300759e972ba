// SPDX-License-Identifier: GPL-2.0

//! The storage of one `unregister_kprobes()` batch of breakpoint probes (`register.rs`,
//! `unregister_kprobes_top_all`): the breakpoints its top halves remove, recorded to be written
//! together at their end, each with whether the hash entry there leaves the hash after that.
//!
//! Constraints: every function takes the `&mut KprobeState` that only the `kprobe_mutex` guard
//! hands out, so the storage is only touched with that mutex held, by one task at a time.
//! Process context; `disarm_begin` allocates (GFP_KERNEL, vmalloc for large batches), nothing
//! else does. An allocation failure only means the breakpoints are removed one by one, as C
//! does.

use kernel::alloc::{flags::GFP_KERNEL, KVVec};

use super::state_cell::{with, Cell};
use crate::store::KprobeState;
use crate::text::DisarmRecord;

/// The breakpoint removals of an unregistration batch: an open-addressing table (linear
/// probing; address 0, where no probe is, marks a free slot) with at least twice as many slots
/// as the batch has entries, so each address is found again in constant time.
struct Disarms {
    slots: KVVec<DisarmRecord>,
}

impl Disarms {
    fn new(n: usize) -> Option<Self> {
        let len = n.checked_mul(2)?.checked_next_power_of_two()?;
        Some(Disarms {
            slots: KVVec::from_elem(DisarmRecord::default(), len, GFP_KERNEL).ok()?,
        })
    }

    /// The slot of `addr`, or the free one where it would go (there is always one: at most
    /// half the slots are used).
    fn slot(&mut self, addr: usize) -> Option<&mut DisarmRecord> {
        let slots = self.slots.as_mut_slice();
        let mask = slots.len().checked_sub(1)?;
        // Fibonacci hashing: the top bits of the address times 2^64 / phi.
        let shift = (usize::BITS - slots.len().trailing_zeros()) % usize::BITS;
        let mut i = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> shift) & mask;
        while slots[i].addr != 0 && slots[i].addr != addr {
            i = (i + 1) & mask;
        }
        slots.get_mut(i)
    }
}

static DISARMS: Cell<Disarms> = Cell::new();

/// Allocates the storage for the breakpoint removals of `n` entries; false on allocation
/// failure, or while another batch holds it.
pub(super) fn begin(st: &mut KprobeState, n: usize) -> bool {
    if with(&DISARMS, st, |d| d.is_some()) {
        return false;
    }
    let disarms = Disarms::new(n);
    let ok = disarms.is_some();
    with(&DISARMS, st, |d| *d = disarms);
    ok
}

pub(super) fn record(st: &mut KprobeState, addr: usize) {
    with(&DISARMS, st, |d| {
        if let Some(slot) = d.as_mut().and_then(|d| d.slot(addr)) {
            *slot = DisarmRecord {
                addr,
                unlink: false,
            };
        }
    })
}

pub(super) fn defer_unlink(st: &mut KprobeState, addr: usize) -> bool {
    with(&DISARMS, st, |d| {
        match d.as_mut().and_then(|d| d.slot(addr)) {
            Some(slot) if slot.addr == addr => {
                slot.unlink = true;
                true
            }
            _ => false,
        }
    })
}

pub(super) fn unlinked(st: &mut KprobeState, addr: usize) -> bool {
    with(&DISARMS, st, |d| {
        d.as_mut()
            .and_then(|d| d.slot(addr))
            .is_some_and(|slot| slot.addr == addr && slot.unlink)
    })
}

/// Calls `f` with the records in address order, then forgets them.
pub(super) fn flush(st: &mut KprobeState, f: impl FnOnce(&[DisarmRecord])) {
    // Out of the cell while `f` runs (it cannot reach the cell, having no `KprobeState`).
    let Some(mut d) = with(&DISARMS, st, |d| d.take()) else {
        return f(&[]);
    };
    let slots = d.slots.as_mut_slice();
    let mut used = 0;
    for i in 0..slots.len() {
        if slots[i].addr != 0 {
            slots.swap(used, i);
            used += 1;
        }
    }
    let records = &mut slots[..used];
    records.sort_unstable_by_key(|r| r.addr);
    f(records);
    records.fill(DisarmRecord::default());
    with(&DISARMS, st, |cell| *cell = Some(d));
}

/// Frees the storage.
pub(super) fn end(st: &mut KprobeState) {
    with(&DISARMS, st, |d| *d = None);
}
