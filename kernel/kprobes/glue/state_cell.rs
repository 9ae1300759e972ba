// SPDX-License-Identifier: GPL-2.0

//! Storage that, like [`KprobeState`], belongs to whoever holds `kprobe_mutex`: a static cell
//! reached only with the `&mut KprobeState` that the mutex guard hands out, so one task at a
//! time, with no lock of its own. The registration batch storage (`ftrace_batch`) lives in
//! such cells.

use core::cell::UnsafeCell;

use crate::store::KprobeState;

/// A value reached only with `kprobe_mutex` held; `None` when there is none.
pub(super) struct Cell<T>(UnsafeCell<Option<T>>);

impl<T> Cell<T> {
    /// An empty cell.
    pub(super) const fn new() -> Self {
        Cell(UnsafeCell::new(None))
    }
}

// SAFETY: a cell is only reached through `with`, whose callers hold `kprobe_mutex`: one task at
// a time, which may be another task than the one that stored the value (`T: Send`).
unsafe impl<T: Send> Sync for Cell<T> {}

/// Calls `f` with the contents of `cell`; `_st`, borrowed from the `kprobe_mutex` guard, is the
/// proof that the mutex is held.
pub(super) fn with<T, R>(
    cell: &'static Cell<T>,
    _st: &mut KprobeState,
    f: impl FnOnce(&mut Option<T>) -> R,
) -> R {
    // SAFETY: `_st` is borrowed from the `kprobe_mutex` guard for this call, so the mutex is
    // held and this is the only reference to the cell's contents; it does not outlive the call.
    f(unsafe { &mut *cell.0.get() })
}

/// Fills the empty `cell` with what `make` returns: false if `make` fails, or while the cell
/// holds a value (a batch that may drop the mutex between its start and its end).
pub(super) fn begin<T>(
    cell: &'static Cell<T>,
    st: &mut KprobeState,
    make: impl FnOnce() -> Option<T>,
) -> bool {
    if with(cell, st, |c| c.is_some()) {
        return false;
    }
    let value = make();
    let ok = value.is_some();
    with(cell, st, |c| *c = value);
    ok
}
