// SPDX-License-Identifier: GPL-2.0

//! The miss counters `p->nmissed` and `rp->nmissed`, incremented with one atomic add each.
//!
//! Constraints: called on the probe-hit path (any context, NMI included): inline, no lock. A
//! leaf of the glue (it imports no other glue module), so both the probe store and the
//! kretprobe glue use it.

#[cfg(CONFIG_KRETPROBES)]
use core::sync::atomic::AtomicI32;
use core::sync::atomic::{AtomicUsize, Ordering};

/// `p->nmissed++` (an `unsigned long`) as one atomic add.
///
/// C's plain `++` loses a miss when two CPUs miss the same probe at once; a relaxed atomic add
/// loses none and orders nothing, which the readers (`trace_kprobe`'s profile, debugfs
/// `kprobes/missed`, READ_ONCE) do not need. Runs on the probe-hit path: inline, lock-free.
///
/// # Safety
///
/// `counter` is valid for reads and writes for the call, and every access that may run
/// concurrently with it is an atomic add of this module or a READ_ONCE (`read_volatile`) read:
/// the core writes the counter otherwise only while the probe is not armed (registration's
/// reset, a failed batch's restore), and C users only read it.
#[inline(always)]
pub(super) unsafe fn inc_nmissed(counter: *mut usize) {
    // SAFETY: valid, and aligned as the `unsigned long` (`usize` in the bindings) it is;
    // concurrent accesses are atomic adds or READ_ONCE reads (`# Safety`), marked accesses under
    // the kernel memory model.
    unsafe { AtomicUsize::from_ptr(counter) }.fetch_add(1, Ordering::Relaxed);
}

/// `rp->nmissed++` (an `int`) as one atomic add, wrapping where C's signed overflow is undefined.
///
/// # Safety
///
/// As [`inc_nmissed`].
#[cfg(CONFIG_KRETPROBES)]
#[inline(always)]
pub(super) unsafe fn inc_kretprobe_nmissed(counter: *mut core::ffi::c_int) {
    // SAFETY: valid, and aligned as the `int` it is; concurrent accesses are atomic adds or
    // READ_ONCE reads (`# Safety`), marked accesses under the kernel memory model.
    unsafe { AtomicI32::from_ptr(counter) }.fetch_add(1, Ordering::Relaxed);
}
