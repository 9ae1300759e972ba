// SPDX-License-Identifier: GPL-2.0

//! Bodies of debugfs `kprobes/{list,enabled,blacklist,missed}`, the sysctl `debug/kprobes-optimization`
//! and `dump_kprobe()`; the files, the sysctl table and the log lines are in `kprobes_helpers.c`.
//!
//! Constraints: process context; the `list` walk is an RCU reader (the C caller disables
//! preemption), the `blacklist` walk runs under `kprobe_mutex`. Output goes straight to the
//! `seq_file` (no allocation); the bytes are those of `crate::debugfs`, host-tested against C's
//! format strings.

use core::ffi::{c_int, c_void};
#[cfg(CONFIG_KRETPROBES)]
use core::ptr::{self, addr_of};

use kernel::bindings;

use super::handle::{Kernel, Kp, KERNEL};
use crate::debugfs::{self, SeqSink};
use crate::missed::{self, MissStore};
use crate::store::ProbeStore;
use crate::text::KernelText;

struct Seq(*mut bindings::seq_file);

impl SeqSink for Seq {
    fn put(&mut self, bytes: &[u8]) {
        // SAFETY: `self.0` is the seq_file of the current show() call; seq_write() copies
        // (and records an overflow, so the seq_file retries with a larger buffer).
        unsafe { bindings::seq_write(self.0, bytes.as_ptr().cast::<c_void>(), bytes.len()) };
    }
}

/// `show_kprobe_addr()` for every bucket, in order.
///
/// # Safety
///
/// `m` is the seq_file being shown; preemption is disabled by the caller (RCU reader).
#[no_mangle]
pub unsafe extern "C" fn rkp_show_kprobes(m: *mut bindings::seq_file, show_value: bool) {
    let mut w = Seq(m);
    for bucket in 0..crate::store::KPROBE_TABLE_SIZE {
        debugfs::show_kprobe_addr(&KERNEL, bucket, show_value, &mut w);
    }
}

impl MissStore for Kernel {
    fn kretprobe_nmissed_of(&self, p: Kp) -> u64 {
        #[cfg(CONFIG_KRETPROBES)]
        if self.is_kretprobe(p) {
            let rp = p.as_ptr().cast::<bindings::kretprobe>();
            // SAFETY: only `register_kretprobe()` installs `pre_handler_kretprobe`, on the `kp`
            // of a `struct kretprobe`, its first member; `p` is live (the walk's RCU read side),
            // so `rp` is the live kretprobe. READ_ONCE of the counter the hit path increments.
            let n = unsafe { ptr::read_volatile(addr_of!((*rp).nmissed)) };
            // An `int`, widened as `trace_kprobe` adds it to `kp.nmissed` (sign-extended).
            return n as i64 as u64;
        }
        #[cfg(not(CONFIG_KRETPROBES))]
        let _ = p;
        0
    }
}

/// Every line of `kprobes/missed` (Rust only), bucket by bucket as `kprobes/list`.
///
/// # Safety
///
/// `m` is the seq_file being shown; preemption is disabled by the caller (RCU reader).
#[no_mangle]
pub unsafe extern "C" fn rkp_show_missed(m: *mut bindings::seq_file, show_value: bool) {
    let mut w = Seq(m);
    for bucket in 0..crate::store::KPROBE_TABLE_SIZE {
        missed::show_missed_bucket(&KERNEL, bucket, show_value, &mut w);
    }
}

/// The whole `kprobes/blacklist` file, under `kprobe_mutex` as C holds it.
///
/// # Safety
///
/// `m` is the seq_file being shown.
#[no_mangle]
pub unsafe extern "C" fn rkp_show_blacklist(m: *mut bindings::seq_file, show_value: bool) {
    let _guard = KERNEL.kprobe_mutex();
    debugfs::show_blacklist(&KERNEL, show_value, &mut Seq(m));
}

/// `kprobes_all_disarmed` (the `enabled` file prints its negation).
#[no_mangle]
pub extern "C" fn rkp_kprobes_all_disarmed() -> bool {
    KERNEL.kprobe_mutex().all_disarmed
}

/// `arm_all_kprobes()` (`enable`) or `disarm_all_kprobes()`, which log C's message: returns the
/// last per-probe error (0 if none), for the debugfs writer.
#[no_mangle]
pub extern "C" fn rkp_set_all_kprobes(enable: bool) -> c_int {
    let sw = if enable {
        crate::register::arm_all_kprobes(&KERNEL)
    } else {
        crate::register::disarm_all_kprobes(&KERNEL)
    };
    crate::errno::to_c_ret(sw.ret)
}

/// `kprobes_allow_optimization`, for the sysctl read.
#[no_mangle]
pub extern "C" fn rkp_kprobes_allow_optimization() -> bool {
    KERNEL.kprobe_mutex().allow_optimization
}

/// The sysctl's re-apply step (the core logs a change as C does).
#[no_mangle]
pub extern "C" fn rkp_kprobes_optimization_sysctl(value: bool) {
    crate::optimizer::kprobes_optimization_sysctl(&KERNEL, value);
}

nokprobe! {
    /// `dump_kprobe()`'s body: formats C's message into `buf` (NUL-terminated) for
    /// `pr_err("%s")`. Unprobeable as `dump_kprobe()` is (a fault in a probe handler calls it).
    ///
    /// # Safety
    ///
    /// `kp` is NULL or a live probe; `buf` has room for `len` bytes.
    #[no_mangle]
    pub unsafe extern "C" fn rkp_dump_kprobe(kp: *mut bindings::kprobe, buf: *mut u8, len: usize) {
        if buf.is_null() {
            return;
        }
        // SAFETY: caller contract on `buf`.
        let out = unsafe { core::slice::from_raw_parts_mut(buf, len) };
        // The message, then its NUL; nothing at all for `len == 0`.
        let Some((_, text)) = out.split_last_mut() else {
            return;
        };
        let mut w = debugfs::SliceSink::new(text);
        if let Some(p) = core::ptr::NonNull::new(kp) {
            // SAFETY: caller contract on `kp`.
            let p = unsafe { Kp::from_raw(p) };
            let addr = KERNEL.addr(p);
            KERNEL.kallsyms_lookup(addr, |sym| {
                debugfs::dump_kprobe(&mut w, KERNEL.symbol_name(p), KERNEL.offset(p), addr, sym);
            });
        }
        let n = w.bytes().len();
        if let Some(nul) = out.get_mut(n) {
            *nul = 0;
        }
    }
}
