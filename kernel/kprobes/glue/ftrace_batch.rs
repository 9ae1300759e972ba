// SPDX-License-Identifier: GPL-2.0

//! The storage of one `register_kprobes()` batch (`register.rs`, `register_kprobes_batched`):
//! the ftrace filter additions it records per ops, applied with one `ftrace_set_filter_ips()`
//! each at its end, and the `addr`/`flags` of each entry as the caller passed them; or of one
//! `unregister_kprobes()` batch: the filter removals it records.
//!
//! Constraints: every function takes the `&mut KprobeState` that only the `kprobe_mutex` guard
//! hands out, so the storage is only touched with that mutex held, by one task at a time.
//! Process context; `begin` allocates (GFP_KERNEL, vmalloc for large batches), nothing else
//! does. An allocation failure only means the batch is registered probe by probe, as C does.

use kernel::alloc::{flags::GFP_KERNEL, KVVec};

use super::helpers::rkp_ftrace_set_filter_ips;
use super::platform::ftrace_ops_id;
use super::state_cell::{self, with, Cell};
use crate::errno::{from_c_ret, Result};
use crate::store::KprobeState;
use crate::text::{FtraceOps, ProbeFields};

/// Filter additions of one ops: `addrs[..len]`, made by entries `entries[..len]`; room for one
/// per batch entry.
struct Adds {
    addrs: KVVec<usize>,
    entries: KVVec<usize>,
    len: usize,
}

impl Adds {
    fn new(n: usize) -> Option<Self> {
        Some(Adds {
            addrs: KVVec::from_elem(0, n, GFP_KERNEL).ok()?,
            entries: KVVec::from_elem(0, n, GFP_KERNEL).ok()?,
            len: 0,
        })
    }

    /// Removes record `i` (the last one takes its place).
    fn remove(&mut self, i: usize) {
        let last = self.len - 1;
        self.addrs.as_mut_slice().swap(i, last);
        self.entries.as_mut_slice().swap(i, last);
        self.len = last;
    }
}

struct Batch {
    adds: [Adds; 2],
    saved: KVVec<ProbeFields>,
}

static BATCH: Cell<Batch> = Cell::new();

fn ops_index(ops: FtraceOps) -> usize {
    ftrace_ops_id(ops) as usize
}

fn alloc(n: usize) -> Option<Batch> {
    Some(Batch {
        adds: [Adds::new(n)?, Adds::new(n)?],
        saved: KVVec::from_elem(ProbeFields::default(), n, GFP_KERNEL).ok()?,
    })
}

/// Allocates the storage for `n` entries; false on allocation failure, or while another batch
/// holds it (between its `begin` and `end` it may drop the mutex for a grace period).
pub(super) fn begin(st: &mut KprobeState, n: usize) -> bool {
    state_cell::begin(&BATCH, st, || alloc(n))
}

/// Frees the storage.
pub(super) fn end(st: &mut KprobeState) {
    with(&BATCH, st, |b| *b = None);
}

pub(super) fn save(st: &mut KprobeState, i: usize, fields: ProbeFields) {
    with(&BATCH, st, |b| {
        if let Some(slot) = b.as_mut().and_then(|b| b.saved.as_mut_slice().get_mut(i)) {
            *slot = fields;
        }
    });
}

pub(super) fn saved(st: &mut KprobeState, i: usize) -> ProbeFields {
    with(&BATCH, st, |b| {
        b.as_ref()
            .and_then(|b| b.saved.as_slice().get(i).copied())
            .unwrap_or_default()
    })
}

pub(super) fn add(st: &mut KprobeState, ops: FtraceOps, addr: usize) {
    let entry = st.ftrace_batch_entry;
    with(&BATCH, st, |b| {
        let Some(b) = b.as_mut() else { return };
        let a = &mut b.adds[ops_index(ops)];
        // Room for one per entry, and an entry arms at most once: never full.
        let len = a.len;
        if let (Some(x), Some(e)) = (
            a.addrs.as_mut_slice().get_mut(len),
            a.entries.as_mut_slice().get_mut(len),
        ) {
            *x = addr;
            *e = entry;
            a.len += 1;
        }
    });
}

pub(super) fn cancel(st: &mut KprobeState, ops: FtraceOps, addr: usize) -> bool {
    with(&BATCH, st, |b| {
        let Some(b) = b.as_mut() else { return false };
        let a = &mut b.adds[ops_index(ops)];
        let Some(i) = a.addrs.as_slice()[..a.len].iter().position(|&x| x == addr) else {
            return false;
        };
        a.remove(i);
        true
    })
}

pub(super) fn take_first(st: &mut KprobeState) -> Option<(FtraceOps, usize, usize)> {
    with(&BATCH, st, |b| {
        let b = b.as_mut()?;
        let mut best: Option<(usize, usize, usize)> = None;
        for (o, a) in b.adds.iter().enumerate() {
            for (i, &e) in a.entries.as_slice()[..a.len].iter().enumerate() {
                if best.map_or(true, |(_, _, be)| e < be) {
                    best = Some((o, i, e));
                }
            }
        }
        let (o, i, entry) = best?;
        let a = &mut b.adds[o];
        let addr = a.addrs.as_slice()[i];
        a.remove(i);
        let ops = [FtraceOps::Plain, FtraceOps::Ipmodify][o];
        Some((ops, addr, entry))
    })
}

pub(super) fn recorded(st: &mut KprobeState, ops: FtraceOps, addr: usize) -> bool {
    with(&BATCH, st, |b| {
        b.as_ref().is_some_and(|b| {
            let a = &b.adds[ops_index(ops)];
            a.addrs.as_slice()[..a.len].contains(&addr)
        })
    })
}

pub(super) fn flush(st: &mut KprobeState, ops: FtraceOps) -> Result {
    flush_dir(st, ops, false, true)
}

pub(super) fn flush_remove(st: &mut KprobeState, ops: FtraceOps) -> Result {
    flush_dir(st, ops, true, true)
}

pub(super) fn apply(st: &mut KprobeState, ops: FtraceOps, remove: bool) -> Result {
    flush_dir(st, ops, remove, false)
}

pub(super) fn forget(st: &mut KprobeState, ops: FtraceOps) {
    with(&BATCH, st, |b| {
        if let Some(b) = b.as_mut() {
            b.adds[ops_index(ops)].len = 0;
        }
    });
}

/// One filter update of the records of `ops`, forgotten after it when `forget`.
fn flush_dir(st: &mut KprobeState, ops: FtraceOps, remove: bool, forget: bool) -> Result {
    with(&BATCH, st, |b| {
        let Some(b) = b.as_mut() else { return Ok(()) };
        let a = &mut b.adds[ops_index(ops)];
        if a.len == 0 {
            return Ok(());
        }
        // `len` fits: it is at most the batch's entry count, a C `int` in `register_kprobes()`.
        let cnt = a.len as u32;
        // SAFETY: `addrs[..len]` are initialised addresses that ftrace only reads during the
        // call; `kprobe_mutex` is held, as C holds it around `ftrace_set_filter_ip()`.
        from_c_ret(unsafe {
            rkp_ftrace_set_filter_ips(ftrace_ops_id(ops), a.addrs.as_mut_ptr().cast(), cnt, remove)
        })?;
        if forget {
            a.len = 0;
        }
        Ok(())
    })
}
