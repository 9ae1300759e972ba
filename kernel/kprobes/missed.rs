// SPDX-License-Identifier: GPL-2.0

//! Misses by cause, and the bytes of debugfs `kprobes/missed` (Rust only; C has no such file).
//!
//! Constraints: `nmissed` keeps C's meaning and value: nothing here counts anything C does not
//! count, and the causes of a probe add up to what `trace_kprobe` reports as its misses
//! (`rp->kp.nmissed + rp->nmissed` for a kretprobe, `p->nmissed` otherwise). `no_std`, no
//! allocation: text goes straight to a [`SeqSink`]. The walk is an RCU reader, as the `list`
//! walk is. Does not name the `kernel` crate.
//!
//! Design: every miss C counts has exactly one of two causes, and C already counts each in its
//! own field, so the cause needs no counter of its own:
//!
//! - [`MissCause::Recursion`]: the probe was hit while a kprobe handler ran on this CPU (the
//!   re-entry of a breakpoint, an optimized probe's detour or an ftrace site entered with
//!   `kprobe_running()`). It is the only event that increments `p->nmissed`, through
//!   `kprobes_inc_nmissed_count()` (every child of an aggregate).
//! - [`MissCause::NoInstance`]: a kretprobe's entry took no instance: more calls in flight than
//!   `maxactive` (or, on the rethook path, the pool already detached by an unregistration under
//!   way, or an entry where RCU is not watching). It is the only event that increments
//!   `rp->nmissed`.
//!
//! The Rust core increments both fields atomically, so two CPUs missing at once both count
//! (C's plain `++` can lose one). What C does not count is not counted here either: a hit that
//! ftrace's recursion guard refuses (`kprobe_ftrace_handler()` returns before it looks the probe
//! up) and a hit on a probe being disabled run no handler and leave `nmissed` alone.

use core::ops::ControlFlow;

use super::arch::Arch;
use super::debugfs::{put_probe_columns, SeqSink};
use super::store::Aggr;
use super::text::Ksym;

/// Why a probe hit ran no handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissCause {
    /// A kprobe handler was already running on this CPU (`p->nmissed`).
    Recursion,
    /// A kretprobe had no free instance (`rp->nmissed`).
    NoInstance,
}

impl MissCause {
    /// Every cause, in the order `kprobes/missed` prints them.
    pub const ALL: [MissCause; 2] = [MissCause::Recursion, MissCause::NoInstance];

    /// The cause's key in `kprobes/missed`.
    pub const fn name(self) -> &'static [u8] {
        match self {
            MissCause::Recursion => b"recursion",
            MissCause::NoInstance => b"no_instance",
        }
    }
}

/// The misses of one probe, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Missed {
    /// Hits while a kprobe handler ran on this CPU.
    pub recursion: u64,
    /// Kretprobe entries that found no free instance.
    pub no_instance: u64,
}

impl Missed {
    /// The misses of `cause`.
    pub const fn by_cause(&self, cause: MissCause) -> u64 {
        match cause {
            MissCause::Recursion => self.recursion,
            MissCause::NoInstance => self.no_instance,
        }
    }

    /// All misses: `trace_kprobe`'s figure for the probe (the counters wrap as C's do).
    pub const fn total(&self) -> u64 {
        self.recursion.wrapping_add(self.no_instance)
    }
}

/// What the walk reads of a probe beyond [`Arch`]: its kretprobe's counter.
pub trait MissStore: Arch {
    /// `container_of(p, struct kretprobe, kp)->nmissed` when `p` is a kretprobe's `kp`, else 0.
    fn kretprobe_nmissed_of(&self, p: Self::Probe) -> u64;
}

/// The misses of probe `p` (a caller's probe, never an aggregate), by cause.
pub fn missed_of<A: MissStore>(a: &A, p: A::Probe) -> Missed {
    Missed {
        recursion: a.nmissed(p),
        no_instance: a.kretprobe_nmissed_of(p),
    }
}

/// One line of `kprobes/missed`.
///
/// `"%px  %s  %s+0x%x  %s  nmissed=%lu recursion=%lu no_instance=%lu\n"`: the first columns as
/// `kprobes/list` prints them (`k` or `r`; the module name, or a space for vmlinux; `%pS` for
/// an address kallsyms cannot name), then the total and each cause.
pub fn missed_line(
    w: &mut impl SeqSink,
    shown_addr: usize,
    addr: usize,
    kretprobe: bool,
    sym: Option<Ksym<'_>>,
    m: &Missed,
) {
    put_probe_columns(w, shown_addr, addr, kretprobe, sym);
    w.put(b"  nmissed=");
    put_dec(w, m.total());
    for cause in MissCause::ALL {
        w.put(b" ");
        w.put(cause.name());
        w.put(b"=");
        put_dec(w, m.by_cause(cause));
    }
    w.put(b"\n");
}

/// `%lu`.
pub fn put_dec(w: &mut impl SeqSink, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(b) = buf.get_mut(i) {
            *b = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || i == 0 {
            break;
        }
    }
    w.put(buf.get(i..).unwrap_or_default());
}

/// The lines of one hash bucket: every probe (each child of an aggregate) that has missed, in
/// `kprobes/list` order.
///
/// `show` is `kallsyms_show_value(file->f_cred)` of the reader; the caller is an RCU reader.
pub fn show_missed_bucket<A: MissStore>(a: &A, bucket: usize, show: bool, w: &mut impl SeqSink) {
    let _ = a.for_each_in_bucket(bucket, |p| {
        let mut one = |kp: A::Probe| {
            let m = missed_of(a, kp);
            if m.total() != 0 {
                let addr = a.addr(kp);
                a.kallsyms_lookup(addr, |sym| {
                    let shown = if show { addr } else { 0 };
                    missed_line(w, shown, addr, a.is_kretprobe(kp), sym, &m);
                });
            }
            ControlFlow::Continue(())
        };
        match Aggr::of(a, p) {
            Some(ap) => {
                let _ = a.for_each_child(ap, one);
            }
            None => {
                let _ = one(p);
            }
        }
        ControlFlow::Continue(())
    });
}
