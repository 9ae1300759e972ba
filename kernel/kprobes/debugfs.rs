// SPDX-License-Identifier: GPL-2.0

//! The bytes of debugfs `kprobes/list` and `kprobes/blacklist`, identical to C's
//! `report_probe()` and `kprobe_blacklist_seq_show()`.
//!
//! Constraints: output must match C byte for byte (tools parse these files); `no_std`, no
//! allocation: text goes straight to a [`SeqSink`] (in the kernel, `seq_write` on the
//! `seq_file`), numbers are formatted on the stack. The `list` walk is an RCU reader (C disables
//! preemption around each bucket); the `blacklist` walk runs under `kprobe_mutex`, which the glue
//! holds from `start` to `stop`. Does not name the `kernel` crate.
//!
//! Format reference: `%px` is the address as `2 * sizeof(void *)` zero-padded lower-case hex
//! digits; `%pS` of an address kallsyms cannot name is `0x%lx`; `%ps` is the symbol name plus
//! ` [module]`, or `0x%lx`.

use core::ops::ControlFlow;

use super::arch::Arch;
use super::blacklist::BlacklistStore;
use super::store::{flags_disabled, flags_ftrace, flags_gone, flags_optimized, Aggr};
use super::text::Ksym;

/// Where formatted bytes go (`seq_write()` in the kernel).
pub trait SeqSink {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `%px`: fixed-width, zero-padded lower-case hex of a pointer.
pub fn put_px(w: &mut impl SeqSink, v: usize) {
    let mut buf = [0u8; 2 * core::mem::size_of::<usize>()];
    let n = buf.len();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = HEX[(v >> (4 * (n - 1 - i))) & 0xf];
    }
    w.put(&buf);
}

/// `%lx` / `%x`: minimal lower-case hex (`0` for zero).
///
/// On the probe-hit path (`dump_kprobe()`): inlined, and free of panics.
#[inline(always)]
pub fn put_hex(w: &mut impl SeqSink, v: u64) {
    let mut buf = [0u8; 16];
    let n = buf.len();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = HEX[((v >> (4 * (n - 1 - i))) & 0xf) as usize];
    }
    // One digit per started nibble, at least one.
    let digits = (16 - (v.leading_zeros() / 4) as usize).max(1);
    w.put(buf.get(n.saturating_sub(digits)..).unwrap_or(&buf));
}

/// `%ps` of `addr` given its kallsyms answer.
fn put_ps(w: &mut impl SeqSink, addr: usize, sym: Option<Ksym<'_>>) {
    match sym {
        Some(k) => {
            w.put(k.name);
            if let Some(m) = k.module {
                w.put(b" [");
                w.put(m);
                w.put(b"]");
            }
        }
        None => {
            w.put(b"0x");
            put_hex(w, addr as u64);
        }
    }
}

/// `%pS` of `addr` given its kallsyms answer: `name+0xoff/0xsize [module]`, or `0x%lx`.
///
/// The kernel's `%#lx` prints `0x0` for zero (unlike libc), hence `+0x0/0x..`. On the
/// probe-hit path (`dump_kprobe()`): inlined.
#[inline(always)]
pub fn put_ps_offset(w: &mut impl SeqSink, addr: usize, sym: Option<Ksym<'_>>) {
    match sym {
        Some(k) => {
            w.put(k.name);
            w.put(b"+0x");
            put_hex(w, k.offset as u64);
            w.put(b"/0x");
            put_hex(w, k.size as u64);
            if let Some(m) = k.module {
                w.put(b" [");
                w.put(m);
                w.put(b"]");
            }
        }
        None => {
            w.put(b"0x");
            put_hex(w, addr as u64);
        }
    }
}

/// `dump_kprobe()`'s message body (the glue prints it with `pr_err`, prefix `kprobes: `).
///
/// `"Dump kprobe:\n.symbol_name = %s, .offset = %x, .addr = %pS\n"`; a NULL name is `(null)`.
/// On the probe-hit path (a fault in a handler): inlined into the glue's unprobeable caller.
#[inline(always)]
pub fn dump_kprobe(
    w: &mut impl SeqSink,
    symbol_name: Option<&[u8]>,
    offset: u32,
    addr: usize,
    sym: Option<Ksym<'_>>,
) {
    w.put(b"Dump kprobe:\n.symbol_name = ");
    w.put(symbol_name.unwrap_or(b"(null)"));
    w.put(b", .offset = ");
    put_hex(w, u64::from(offset));
    w.put(b", .addr = ");
    put_ps_offset(w, addr, sym);
    w.put(b"\n");
}

/// What `report_probe()` prints for one probe.
#[derive(Clone, Copy, Debug)]
pub struct ProbeLine<'a> {
    /// `p->addr`, or 0 when `!kallsyms_show_value()`.
    pub shown_addr: usize,
    /// `p->addr` itself (for the `%pS` fallback, which C prints unhidden).
    pub addr: usize,
    /// `p->pre_handler == pre_handler_kretprobe`: type `r`, else `k`.
    pub kretprobe: bool,
    /// kallsyms answer for the hash entry's address (name, offset, module).
    pub sym: Option<Ksym<'a>>,
    /// Flags of the probe (GONE/DISABLED are the child's).
    pub flags: u32,
    /// Flags of the hash entry (OPTIMIZED/FTRACE are the aggregate's).
    pub entry_flags: u32,
}

/// The columns `report_probe()` starts a line with, up to its first tag, without the space
/// before it: `"%px  %s  %s+0x%x  %s"`, or `"%px  %s  %pS"` for an address kallsyms cannot name.
///
/// `kprobes/missed` starts its lines the same way.
pub fn put_probe_columns(
    w: &mut impl SeqSink,
    shown_addr: usize,
    addr: usize,
    kretprobe: bool,
    sym: Option<Ksym<'_>>,
) {
    put_px(w, shown_addr);
    w.put(if kretprobe { b"  r  " } else { b"  k  " });
    match sym {
        Some(k) => {
            // "%s+0x%x  %s": the offset is passed as an int.
            w.put(k.name);
            w.put(b"+0x");
            put_hex(w, u64::from(k.offset as u32));
            w.put(b"  ");
            w.put(k.module.unwrap_or(b" "));
        }
        None => {
            // "%pS" of an address kallsyms cannot name.
            w.put(b"0x");
            put_hex(w, addr as u64);
        }
    }
}

/// `report_probe()`: one line of `kprobes/list`.
pub fn report_probe(w: &mut impl SeqSink, l: &ProbeLine<'_>) {
    put_probe_columns(w, l.shown_addr, l.addr, l.kretprobe, l.sym);
    w.put(b" ");
    if flags_gone(l.flags) {
        w.put(b"[GONE]");
    }
    if flags_disabled(l.flags) && !flags_gone(l.flags) {
        w.put(b"[DISABLED]");
    }
    if flags_optimized(l.entry_flags) {
        w.put(b"[OPTIMIZED]");
    }
    if flags_ftrace(l.entry_flags) {
        w.put(b"[FTRACE]");
    }
    w.put(b"\n");
}

/// `show_kprobe_addr()`: every line of one hash bucket (the seq_file iterates buckets 0..64).
///
/// `show` is `kallsyms_show_value(file->f_cred)` of the reader.
pub fn show_kprobe_addr<A: Arch>(a: &A, bucket: usize, show: bool, w: &mut impl SeqSink) {
    let _ = a.for_each_in_bucket(bucket, |p| {
        let addr = a.addr(p);
        a.kallsyms_lookup(addr, |sym| {
            let line = |kp: A::Probe, entry_flags: u32| ProbeLine {
                shown_addr: if show { a.addr(kp) } else { 0 },
                addr: a.addr(kp),
                kretprobe: a.is_kretprobe(kp),
                sym,
                flags: a.flags(kp),
                entry_flags,
            };
            if let Some(ap) = Aggr::of(a, p) {
                let ef = a.flags(p);
                let _ = a.for_each_child(ap, |kp| {
                    report_probe(w, &line(kp, ef));
                    ControlFlow::Continue(())
                });
            } else {
                report_probe(w, &line(p, a.flags(p)));
            }
        });
        ControlFlow::Continue(())
    });
}

/// `kprobe_blacklist_seq_show()`: `"0x%px-0x%px\t%ps\n"`, zeros when values are hidden.
pub fn blacklist_line(
    w: &mut impl SeqSink,
    start: usize,
    end: usize,
    show: bool,
    sym: Option<Ksym<'_>>,
) {
    w.put(b"0x");
    put_px(w, if show { start } else { 0 });
    w.put(b"-0x");
    put_px(w, if show { end } else { 0 });
    w.put(b"\t");
    put_ps(w, start, sym);
    w.put(b"\n");
}

/// The whole `kprobes/blacklist` file; the caller holds `kprobe_mutex`.
///
/// `show` is `kallsyms_show_value(file->f_cred)` of the reader.
pub fn show_blacklist<A: Arch + BlacklistStore>(a: &A, show: bool, w: &mut impl SeqSink) {
    let _ = a.blacklist_for_each(|start, end| {
        a.kallsyms_lookup(start, |sym| blacklist_line(w, start, end, show, sym));
        ControlFlow::Continue(())
    });
}

/// Buffer sink for callers that format into a fixed array (e.g. a `seq_file` page).
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl<'a> SliceSink<'a> {
    /// A sink writing into `buf`.
    #[inline(always)]
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceSink {
            buf,
            len: 0,
            overflow: false,
        }
    }
    /// The bytes written so far.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
    /// Whether some output did not fit (the `seq_file` then retries with a larger buffer).
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
}

// On the probe-hit path (`dump_kprobe()`): inlined, and free of panics.
impl SeqSink for SliceSink<'_> {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        let room = self.buf.get_mut(self.len..).unwrap_or_default();
        let n = bytes.len().min(room.len());
        if let (Some(dst), Some(src)) = (room.get_mut(..n), bytes.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.len = self.len.saturating_add(n);
        self.overflow |= n < bytes.len();
    }
}
