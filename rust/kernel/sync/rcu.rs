// SPDX-License-Identifier: GPL-2.0

//! RCU read-side critical sections.
//!
//! C header: [`include/linux/rcupdate.h`](srctree/include/linux/rcupdate.h)

use crate::bindings;
use core::marker::PhantomData;

/// Evidence that the RCU read-side lock is held on the current CPU.
///
/// Obtained from [`read_lock`]; the section ends when the guard is dropped. It is neither
/// `Send` nor `Sync`: an RCU read-side section belongs to the context that opened it.
///
/// # Invariants
///
/// The RCU read-side lock is held, by this context, while the guard exists.
///
/// # Examples
///
/// ```
/// use kernel::sync::rcu;
///
/// let guard = rcu::read_lock();
/// // RCU-protected pointers read here stay valid until `guard` is dropped.
/// drop(guard);
/// ```
#[must_use = "the RCU read-side section ends when the guard is dropped"]
pub struct Guard(PhantomData<*mut ()>);

impl Guard {
    /// Ends the read-side section now (the same as dropping the guard).
    pub fn unlock(self) {}
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: by the type invariant this context holds the read-side lock it took in
        // `read_lock`, and releases it exactly once here.
        unsafe { bindings::rcu_read_unlock() };
    }
}

/// Opens an RCU read-side critical section (`rcu_read_lock()`), which lasts as long as the
/// returned guard.
#[inline]
pub fn read_lock() -> Guard {
    // SAFETY: `rcu_read_lock()` may be called from any context; the guard releases it.
    unsafe { bindings::rcu_read_lock() };
    // INVARIANT: the lock was just taken.
    Guard(PhantomData)
}
