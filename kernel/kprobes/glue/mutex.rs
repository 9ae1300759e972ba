// SPDX-License-Identifier: GPL-2.0

//! `kprobe_mutex` and the scalar state it guards ([`KprobeState`]): the C mutex of
//! `kprobes_helpers.c`, taken through the kernel crate's `Lock`.
//!
//! Constraints: process context; the state is reached only through a [`KprobeMutexGuard`].

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::ptr::addr_of_mut;

use kernel::sync::lock::{mutex::MutexBackend, Guard, Lock};

use super::helpers::kprobe_mutex;
use crate::store::KprobeState;

struct StateCell(UnsafeCell<KprobeState>);

// SAFETY: the state is only reached through `KprobeMutexGuard`, which holds `kprobe_mutex`.
unsafe impl Sync for StateCell {}

/// The scalar state, guarded by the C `kprobe_mutex`.
static STATE: StateCell = StateCell(UnsafeCell::new(KprobeState::new()));

/// Holds `kprobe_mutex`; gives access to the state it guards.
pub struct KprobeMutexGuard {
    _guard: Guard<'static, (), MutexBackend>,
}

impl KprobeMutexGuard {
    pub(super) fn lock() -> Self {
        // SAFETY: `kprobe_mutex` is C's `DEFINE_MUTEX()` in `kprobes_helpers.c`: initialised at
        // compile time, never moved or freed.
        let mutex = unsafe { Lock::<(), MutexBackend>::from_raw(addr_of_mut!(kprobe_mutex)) };
        KprobeMutexGuard {
            _guard: mutex.lock(),
        }
    }
}

impl Deref for KprobeMutexGuard {
    type Target = KprobeState;
    fn deref(&self) -> &KprobeState {
        // SAFETY: `kprobe_mutex` is held for the guard's lifetime, so nobody else accesses STATE.
        unsafe { &*STATE.0.get() }
    }
}

impl DerefMut for KprobeMutexGuard {
    fn deref_mut(&mut self) -> &mut KprobeState {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference from this guard.
        unsafe { &mut *STATE.0.get() }
    }
}
