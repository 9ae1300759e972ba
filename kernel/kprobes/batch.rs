// SPDX-License-Identifier: GPL-2.0

//! The value one `unregister_kprobes()` or `unregister_kretprobes()` call owns (Rust only: C
//! unregisters probe by probe): the breakpoint removals its top halves defer and write
//! together, the index its top halves look hash entries up in, and whether it holds the text
//! locks.
//!
//! Constraints: `no_std`; does not name the `kernel` crate; never allocates itself: the
//! platform lends each storage as a slice it allocated for this call
//! ([`ProbeStore::alloc_buf`]), and the storage is freed when the batch is dropped at the end
//! of the call. Process context, `kprobe_mutex` held for as long as the batch lives: it is
//! reached only through the `&mut` its call passes down, never through a global.
//!
//! The same types run in the kernel and in the host simulation.
//!
//! [`ProbeStore::alloc_buf`]: super::store::ProbeStore::alloc_buf

use super::store::{DisarmRecord, ProbeStore};

/// The breakpoint removals an unregistration batch recorded since it last wrote them.
///
/// # Invariants
///
/// `slots[..len]` are `Some`, in the order they were recorded; `slots[len..]` are `None`. No
/// two records have the same address.
pub struct DisarmList<S: ProbeStore> {
    slots: S::Buf<Option<DisarmRecord<S::Probe>>>,
    len: usize,
}

impl<S: ProbeStore> DisarmList<S> {
    /// Room for `room` records, or `None` without memory.
    fn new(s: &S, room: usize) -> Option<Self> {
        // INVARIANT: every slot is `None`, `len` is 0.
        Some(DisarmList {
            slots: s.alloc_buf(room, None)?,
            len: 0,
        })
    }

    /// How many removals are recorded.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records the removal of the breakpoint of hash entry `probe` at `addr`; false when
    /// there is no room (nothing is allocated).
    fn push(&mut self, probe: S::Probe, addr: usize) -> bool {
        debug_assert!(self.find(addr).is_none(), "{addr:#x} recorded twice");
        let Some(slot) = self.slots.get_mut(self.len) else {
            return false;
        };
        *slot = Some(DisarmRecord {
            probe,
            addr,
            unlink: false,
        });
        // INVARIANT: the slot at the old `len` is now `Some`.
        self.len += 1;
        true
    }

    /// The record of `addr`. A top half unlinks the entry it has just recorded, the last one;
    /// only the same probe given twice in a batch asks for another.
    fn find(&mut self, addr: usize) -> Option<&mut DisarmRecord<S::Probe>> {
        self.slots[..self.len]
            .iter_mut()
            .rev()
            .flatten()
            .find(|r| r.addr == addr)
    }

    /// Sorts the records by address and forgets them once `f` has seen them.
    fn drain_sorted(&mut self, f: impl FnOnce(&[Option<DisarmRecord<S::Probe>>])) {
        let records = &mut self.slots[..self.len];
        records.sort_unstable_by_key(|r| r.map(|r| r.addr));
        f(records);
        records.fill(None);
        // INVARIANT: every slot is `None` again.
        self.len = 0;
    }
}

/// The hash entries by address, for the top halves of a large unregistration batch (C walks
/// the probe's hash chain for each, and with thousands of probes in the 64 buckets every walk
/// passes hundreds of entries).
///
/// Open addressing with linear probing over a power of two of slots, at most half of them
/// used. A slot holds an address (0: free; a probe is never at 0) and the entry there, `None`
/// once it has left the hash (the slot stays taken, so the probe sequences through it stay
/// whole; nothing is inserted after the build).
pub struct EntryIndex<S: ProbeStore> {
    slots: S::Buf<(usize, Option<S::Probe>)>,
    used: usize,
}

impl<S: ProbeStore> EntryIndex<S> {
    /// Room for `entries` hash entries, or `None` without memory.
    fn new(s: &S, entries: usize) -> Option<Self> {
        let n = entries.max(1).checked_mul(2)?.checked_next_power_of_two()?;
        Some(EntryIndex {
            slots: s.alloc_buf(n, (0, None))?,
            used: 0,
        })
    }

    /// The slot of `addr`, or the free one where it would go (there is always one: at most
    /// half the slots are used).
    fn slot(&self, addr: usize) -> usize {
        let slots = &self.slots[..];
        let mask = slots.len() - 1;
        // Fibonacci hashing: the top bits of the address times 2^64 / phi.
        let shift = (usize::BITS - slots.len().trailing_zeros()) % usize::BITS;
        let mut i = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> shift) & mask;
        while slots[i].0 != 0 && slots[i].0 != addr {
            i = (i + 1) & mask;
        }
        i
    }

    /// Adds hash entry `p` at `addr`; false when the index is full.
    fn insert(&mut self, addr: usize, p: S::Probe) -> bool {
        if addr == 0 || self.used.saturating_mul(2) >= self.slots.len() {
            return false;
        }
        let i = self.slot(addr);
        if self.slots[i].0 == 0 {
            self.used += 1;
        }
        self.slots[i] = (addr, Some(p));
        true
    }

    /// The hash entry at `addr`, as `get_kprobe(addr)` finds it.
    fn get(&self, addr: usize) -> Option<S::Probe> {
        self.slots[self.slot(addr)].1
    }

    /// The hash entry at `addr` has left the hash.
    fn remove(&mut self, addr: usize) {
        let i = self.slot(addr);
        self.slots[i].1 = None;
    }
}

/// The probes of the recorded breakpoint removals, in address order.
pub struct RecordedProbes<'a, S: ProbeStore>(core::slice::Iter<'a, Option<DisarmRecord<S::Probe>>>);

impl<S: ProbeStore> Iterator for RecordedProbes<'_, S> {
    type Item = S::Probe;

    fn next(&mut self) -> Option<S::Probe> {
        self.0.by_ref().flatten().next().map(|r| r.probe)
    }
}

/// What one unregistration call's top halves share.
///
/// # Invariants
///
/// While `disarms` is `Some`, the call holds the text locks (`text_locks_held`), and every
/// hash entry whose breakpoint removal is recorded there is still in the hash and still armed:
/// it leaves the hash only in [`UnregBatch::flush`], after the write. While `index` is `Some`,
/// it holds exactly the hash's entries: nothing joins the hash, and each entry that leaves it
/// is removed from the index ([`UnregBatch::hash_del`]).
pub struct UnregBatch<S: ProbeStore> {
    disarms: Option<DisarmList<S>>,
    index: Option<EntryIndex<S>>,
    text_locks_held: bool,
}

impl<S: ProbeStore> UnregBatch<S> {
    /// No batch: every breakpoint is written, every entry looked up, as C does.
    pub const fn none() -> Self {
        UnregBatch {
            disarms: None,
            index: None,
            text_locks_held: false,
        }
    }

    /// Whether the caller holds the text locks around the whole batch.
    pub fn text_locks_held(&self) -> bool {
        self.text_locks_held
    }

    /// Whether breakpoint removals are recorded rather than written one by one.
    pub fn defers_disarms(&self) -> bool {
        self.disarms.is_some()
    }

    /// How many breakpoint removals wait for the next write.
    pub fn recorded(&self) -> usize {
        self.disarms.as_ref().map_or(0, DisarmList::len)
    }

    /// With the text locks held by the caller ([`UnregBatch::hold_text_locks`]): records
    /// breakpoint removals from now on, room for `room` between two writes. False without
    /// memory (they are then written one by one).
    pub fn begin_disarms(&mut self, s: &S, room: usize) -> bool {
        debug_assert!(self.text_locks_held, "records without the text locks");
        // INVARIANT: the records start while the caller holds the text locks.
        self.disarms = DisarmList::new(s, room);
        self.disarms.is_some()
    }

    /// The text locks are about to be dropped: nothing may be recorded any more (the caller
    /// has flushed).
    pub fn end_disarms(&mut self) {
        debug_assert_eq!(self.recorded(), 0, "records left at the end of a batch");
        self.disarms = None;
        self.text_locks_held = false;
    }

    /// The caller holds the text locks around the whole batch: disarming takes them no more.
    pub fn hold_text_locks(&mut self) {
        self.text_locks_held = true;
    }

    /// Records the removal of the breakpoint of hash entry `p`; false when nothing is recorded
    /// (no batch, or no room: the caller writes it now).
    pub fn record_disarm(&mut self, s: &S, p: S::Probe) -> bool {
        let addr = s.addr(p);
        self.disarms.as_mut().is_some_and(|d| d.push(p, addr))
    }

    /// If the breakpoint at `addr` is recorded: its hash entry leaves the hash once it is
    /// written, and true.
    pub fn defer_unlink(&mut self, addr: usize) -> bool {
        match self.disarms.as_mut().and_then(|d| d.find(addr)) {
            Some(r) => {
                debug_assert!(!r.unlink, "{addr:#x} unlinked twice");
                r.unlink = true;
                true
            }
            None => false,
        }
    }

    /// Whether the hash entry at `addr` waits to be unlinked.
    pub fn unlink_deferred(&mut self, addr: usize) -> bool {
        self.disarms
            .as_mut()
            .and_then(|d| d.find(addr))
            .is_some_and(|r| r.unlink)
    }

    /// Writes the recorded breakpoint removals (`write`, given the probes in address order),
    /// then unlinks the hash entries that waited for that.
    pub fn flush(&mut self, s: &S, write: impl FnOnce(RecordedProbes<'_, S>)) {
        let Some(mut d) = self.disarms.take() else {
            return;
        };
        d.drain_sorted(|records| {
            // Each recorded probe is still a hash entry (type invariant).
            write(RecordedProbes(records.iter()));
            for r in records.iter().flatten().filter(|r| r.unlink) {
                self.hash_del(s, r.probe);
            }
        });
        self.disarms = Some(d);
    }

    /// `hlist_del_rcu(&p->hlist)`, and out of the index if there is one.
    pub fn hash_del(&mut self, s: &S, p: S::Probe) {
        s.hlist_del_rcu(p);
        if let Some(x) = self.index.as_mut() {
            x.remove(s.addr(p));
        }
    }

    /// Starts an index of the hash's `entries` entries; false without memory (the hash is then
    /// walked, as in C). The caller adds every entry ([`UnregBatch::index_insert`]) before it
    /// looks one up.
    pub fn begin_index(&mut self, s: &S, entries: usize) -> bool {
        self.index = EntryIndex::new(s, entries);
        self.index.is_some()
    }

    /// Adds hash entry `p` to the index being built; false (and no index any more) when it
    /// is full.
    pub fn index_insert(&mut self, s: &S, p: S::Probe) -> bool {
        let added = self.index.as_mut().is_some_and(|x| x.insert(s.addr(p), p));
        if !added {
            // INVARIANT: an index that misses an entry is no index.
            self.index = None;
        }
        added
    }

    /// Whether the top halves look entries up in an index.
    pub fn indexes(&self) -> bool {
        self.index.is_some()
    }

    /// `get_kprobe(addr)` through the index: `None` when there is no index (the caller walks
    /// the hash), else `Some` of what the hash holds at `addr`.
    pub fn indexed(&self, s: &S, addr: usize) -> Option<Option<S::Probe>> {
        let found = self.index.as_ref()?.get(addr);
        s.check_indexed_entry(addr, found);
        Some(found)
    }
}
