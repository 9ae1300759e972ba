// SPDX-License-Identifier: GPL-2.0

//! The value one `register_kprobes()`, `unregister_kprobes()` or `unregister_kretprobes()` call
//! owns (Rust only: C works probe by probe): for a registration, the ftrace filter additions it
//! records and applies together, and each entry's fields as its caller passed them; for an
//! unregistration, the ftrace filter removals and breakpoint removals its top halves defer and
//! write together, the index its top halves look hash entries up in, and whether it holds the
//! text locks.
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

use super::errno::Result;
use super::store::{DisarmRecord, ProbeStore};
use super::text::{FtraceOps, KernelText, ProbeFields};

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

/// The ftrace filter changes of one ops a batch recorded: `addrs[..len]`, made by batch entries
/// `entries[..len]`.
///
/// # Invariants
///
/// `len <= addrs.len() == entries.len()`; no address is recorded twice.
struct OpsRecords<S: ProbeStore> {
    addrs: S::Buf<usize>,
    entries: S::Buf<usize>,
    len: usize,
}

impl<S: ProbeStore> OpsRecords<S> {
    fn new(s: &S, room: usize) -> Option<Self> {
        // INVARIANT: both buffers have `room` elements, none recorded.
        Some(OpsRecords {
            addrs: s.alloc_buf(room, 0)?,
            entries: s.alloc_buf(room, 0)?,
            len: 0,
        })
    }

    fn position(&self, addr: usize) -> Option<usize> {
        self.addrs[..self.len].iter().position(|&x| x == addr)
    }

    /// Removes record `i`; the last one takes its place.
    fn remove(&mut self, i: usize) {
        let last = self.len - 1;
        self.addrs.swap(i, last);
        self.entries.swap(i, last);
        // INVARIANT: one record fewer, the others kept.
        self.len = last;
    }
}

/// The ftrace filter changes a batch recorded, per ops, to apply in one filter update each
/// (`ftrace_set_filter_ips()`), where C updates the filter, and so every call site of the
/// kernel, once per probe.
pub struct FtraceRecords<S: ProbeStore> {
    ops: [OpsRecords<S>; 2],
}

impl<S: ProbeStore + KernelText> FtraceRecords<S> {
    /// Room for `room` records per ops, or `None` without memory.
    fn new(s: &S, room: usize) -> Option<Self> {
        Some(FtraceRecords {
            ops: [OpsRecords::new(s, room)?, OpsRecords::new(s, room)?],
        })
    }

    /// Records `addr` for `ops`, made by batch entry `entry`; false when there is no room (an
    /// entry records at most once, so a batch with room for each never sees it) or `addr` is
    /// recorded already.
    fn add(&mut self, ops: FtraceOps, addr: usize, entry: usize) -> bool {
        let r = &mut self.ops[ops as usize];
        if r.position(addr).is_some() || r.len == r.addrs.len() {
            return false;
        }
        r.addrs[r.len] = addr;
        r.entries[r.len] = entry;
        // INVARIANT: a new address, within room.
        r.len += 1;
        true
    }

    /// Forgets the record of `addr` for `ops`; false if there is none.
    fn cancel(&mut self, ops: FtraceOps, addr: usize) -> bool {
        let r = &mut self.ops[ops as usize];
        match r.position(addr) {
            Some(i) => {
                r.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether `addr` is recorded for `ops`.
    fn contains(&self, ops: FtraceOps, addr: usize) -> bool {
        self.ops[ops as usize].position(addr).is_some()
    }

    /// Takes the record of the lowest entry: `(ops, addr, entry)`.
    fn take_first(&mut self) -> Option<(FtraceOps, usize, usize)> {
        let mut best: Option<(usize, usize, usize)> = None;
        for (o, r) in self.ops.iter().enumerate() {
            for (i, &e) in r.entries[..r.len].iter().enumerate() {
                if best.is_none_or(|(_, _, be)| e < be) {
                    best = Some((o, i, e));
                }
            }
        }
        let (o, i, entry) = best?;
        let r = &mut self.ops[o];
        let addr = r.addrs[i];
        r.remove(i);
        Some(([FtraceOps::Plain, FtraceOps::Ipmodify][o], addr, entry))
    }

    /// One filter update of the records of `ops`: added, or taken out again with `remove`
    /// (`ftrace_set_filter_ips()`, all or nothing); the records kept. Nothing to do is `Ok`.
    fn apply(&self, s: &S, ops: FtraceOps, remove: bool) -> Result {
        let r = &self.ops[ops as usize];
        if r.len == 0 {
            return Ok(());
        }
        s.ftrace_set_filter_ips(ops, &r.addrs[..r.len], remove)
    }

    /// Forgets the records of `ops`.
    fn forget(&mut self, ops: FtraceOps) {
        // INVARIANT: nothing recorded.
        self.ops[ops as usize].len = 0;
    }

    /// Whether nothing is recorded.
    fn is_empty(&self) -> bool {
        self.ops.iter().all(|r| r.len == 0)
    }
}

/// What a registration batch keeps besides its records.
struct Registering<S: ProbeStore> {
    /// The ftrace filter additions recorded (the ops counts include them).
    adds: FtraceRecords<S>,
    /// `register_ftrace_function()` of each ops recorded with the additions: its first user
    /// is a recorded probe.
    register_deferred: [bool; 2],
    /// ftrace refused to apply the records when an entry was about to join a probe already at
    /// its address: the caller redoes them one by one.
    failed: bool,
    /// The entry being registered, given with each record.
    entry: usize,
}

/// What one batch call shares down its calls: a registration (`register_kprobes()`) or an
/// unregistration (`unregister_kprobes()`, `unregister_kretprobes()`, and the rollback of a
/// registration batch). [`Batch::none`] is C's probe-by-probe behaviour.
///
/// # Invariants
///
/// While `disarms` is `Some`, the call holds the text locks (`text_locks_held`), and every
/// hash entry whose breakpoint removal is recorded there is still in the hash and still armed:
/// it leaves the hash only in [`Batch::flush`], after the write. While `index` is `Some`,
/// it holds exactly the hash's entries: nothing joins the hash, and each entry that leaves it
/// is removed from the index ([`Batch::hash_del`]). While `reg` is `Some`, the call holds
/// `kprobe_mutex` (but for the grace period of a rollback, after its records are applied or
/// forgotten), and each recorded addition is counted in its ops' user count. `removes` holds
/// only addresses that are in their ops' filter.
pub struct Batch<S: ProbeStore> {
    disarms: Option<DisarmList<S>>,
    index: Option<EntryIndex<S>>,
    text_locks_held: bool,
    reg: Option<Registering<S>>,
    /// A registration batch's entries' `addr`, `flags` and `nmissed` as its caller passed
    /// them, kept past [`Batch::end_registering`] for the rollback.
    saved: Option<S::Buf<ProbeFields>>,
    removes: Option<FtraceRecords<S>>,
}

impl<S: ProbeStore + KernelText> Batch<S> {
    /// No batch: every filter change and breakpoint is written, every entry looked up, as C
    /// does.
    pub const fn none() -> Self {
        Batch {
            disarms: None,
            index: None,
            text_locks_held: false,
            reg: None,
            saved: None,
            removes: None,
        }
    }

    /// A registration batch of `n` entries: room to record one filter addition per entry and
    /// ops, and each entry's fields. `None` without memory (the caller registers probe by
    /// probe, as C does).
    pub fn registering(s: &S, n: usize) -> Option<Self> {
        let reg = Registering {
            adds: FtraceRecords::new(s, n)?,
            register_deferred: [false; 2],
            failed: false,
            entry: 0,
        };
        Some(Batch {
            reg: Some(reg),
            saved: Some(s.alloc_buf(n, ProbeFields::default())?),
            ..Self::none()
        })
    }

    /// Whether arming through ftrace is recorded (a registration batch) rather than done.
    pub fn defers_arming(&self) -> bool {
        self.reg.is_some()
    }

    /// Saves entry `i`'s fields before the batch touches it.
    pub fn save_entry(&mut self, i: usize, fields: ProbeFields) {
        if let Some(slot) = self.saved.as_mut().and_then(|v| v.get_mut(i)) {
            *slot = fields;
        }
    }

    /// The fields saved for entry `i`.
    pub fn saved_entry(&self, i: usize) -> ProbeFields {
        self.saved
            .as_ref()
            .and_then(|v| v.get(i).copied())
            .unwrap_or_default()
    }

    /// The entry being registered from now on.
    pub fn set_entry(&mut self, i: usize) {
        if let Some(r) = self.reg.as_mut() {
            r.entry = i;
        }
    }

    /// Records the addition of `addr` to `ops`' filter by the current entry, and, if it is
    /// the ops' `first_user`, its registration. False outside a registration batch.
    pub fn record_arming(&mut self, ops: FtraceOps, addr: usize, first_user: bool) -> bool {
        let Some(r) = self.reg.as_mut() else {
            return false;
        };
        let added = r.adds.add(ops, addr, r.entry);
        debug_assert!(added, "{addr:#x}: an addition recorded twice, or no room");
        if first_user {
            r.register_deferred[ops as usize] = true;
        }
        true
    }

    /// Forgets a recorded addition of `addr` to `ops`' filter (rolling the batch back), and
    /// the ops' registration with it if it was its `last_user`; false if there is none.
    pub fn cancel_arming(&mut self, ops: FtraceOps, addr: usize, last_user: bool) -> bool {
        let Some(r) = self.reg.as_mut() else {
            return false;
        };
        if !r.adds.cancel(ops, addr) {
            return false;
        }
        if last_user {
            r.register_deferred[ops as usize] = false;
        }
        true
    }

    /// Whether `ops`' registration is recorded with the additions.
    pub fn register_deferred(&self, ops: FtraceOps) -> bool {
        self.reg
            .as_ref()
            .is_some_and(|r| r.register_deferred[ops as usize])
    }

    /// `ops` is registered, or needs no registration any more.
    pub fn clear_register_deferred(&mut self, ops: FtraceOps) {
        if let Some(r) = self.reg.as_mut() {
            r.register_deferred[ops as usize] = false;
        }
    }

    /// ftrace refused the records before a join: the caller redoes them one by one.
    pub fn set_failed(&mut self) {
        if let Some(r) = self.reg.as_mut() {
            r.failed = true;
        }
    }

    /// Whether [`Batch::set_failed`] was called since the last time this was asked.
    pub fn take_failed(&mut self) -> bool {
        self.reg
            .as_mut()
            .is_some_and(|r| core::mem::take(&mut r.failed))
    }

    /// Takes the recorded addition of the lowest entry: `(ops, addr, entry)`.
    pub fn take_first_arming(&mut self) -> Option<(FtraceOps, usize, usize)> {
        self.reg.as_mut()?.adds.take_first()
    }

    /// Records again an addition taken with [`Batch::take_first_arming`] that failed, for the
    /// rollback to forget; `entry` is the entry being rolled back from.
    pub fn put_back_arming(&mut self, ops: FtraceOps, addr: usize, entry: usize) {
        if let Some(r) = self.reg.as_mut() {
            r.entry = entry;
            let added = r.adds.add(ops, addr, entry);
            debug_assert!(added, "{addr:#x} put back twice");
        }
    }

    /// One filter update adding the recorded additions of `ops` (or, `remove`, taking them out
    /// again), the records kept.
    pub fn apply_armings(&self, s: &S, ops: FtraceOps, remove: bool) -> Result {
        self.reg
            .as_ref()
            .map_or(Ok(()), |r| r.adds.apply(s, ops, remove))
    }

    /// Forgets the recorded additions of `ops`.
    pub fn forget_armings(&mut self, ops: FtraceOps) {
        if let Some(r) = self.reg.as_mut() {
            r.adds.forget(ops);
        }
    }

    /// The end of the recording: arming through ftrace is done from now on (the saved
    /// fields stay). Every record must have been applied or forgotten.
    pub fn end_registering(&mut self) {
        debug_assert!(
            self.reg.as_ref().is_none_or(|r| r.adds.is_empty()),
            "ftrace additions left at the end of a registration batch"
        );
        self.reg = None;
    }

    /// An unregistration batch from now on records the removals from the ftrace filters
    /// that cannot fail (the address in that ops' filter), room for `n`; false without memory.
    pub fn begin_ftrace_removals(&mut self, s: &S, n: usize) -> bool {
        self.removes = FtraceRecords::new(s, n);
        self.removes.is_some()
    }

    /// Records the removal of `addr` from `ops`' filter, which holds it; false when nothing is
    /// recorded (no batch, no room, or recorded already: the caller removes it now).
    pub fn record_ftrace_removal(&mut self, ops: FtraceOps, addr: usize) -> bool {
        self.removes.as_mut().is_some_and(|r| r.add(ops, addr, 0))
    }

    /// Whether the removal of `addr` from `ops`' filter is recorded.
    pub fn ftrace_removal_recorded(&self, ops: FtraceOps, addr: usize) -> bool {
        self.removes.as_ref().is_some_and(|r| r.contains(ops, addr))
    }

    /// Applies the recorded removals of `ops` in one filter update; on success they are
    /// forgotten, on failure they stay (the filter unchanged).
    pub fn apply_ftrace_removals(&mut self, s: &S, ops: FtraceOps) -> Result {
        let Some(r) = self.removes.as_mut() else {
            return Ok(());
        };
        r.apply(s, ops, true)?;
        r.forget(ops);
        Ok(())
    }

    /// Takes one recorded removal: `(ops, addr)`.
    pub fn take_ftrace_removal(&mut self) -> Option<(FtraceOps, usize)> {
        self.removes
            .as_mut()?
            .take_first()
            .map(|(ops, addr, _)| (ops, addr))
    }

    /// The end of the removals: nothing may be recorded any more.
    pub fn end_ftrace_removals(&mut self) {
        debug_assert!(
            self.removes.as_ref().is_none_or(FtraceRecords::is_empty),
            "ftrace removals left at the end of a batch"
        );
        self.removes = None;
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

    /// With the text locks held by the caller ([`Batch::hold_text_locks`]): records
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
    /// walked, as in C). The caller adds every entry ([`Batch::index_insert`]) before it
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

    /// The top halves are done: no index any more (the hash may change once the mutex is
    /// dropped).
    pub fn end_index(&mut self) {
        self.index = None;
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
