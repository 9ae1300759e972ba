// SPDX-License-Identifier: GPL-2.0

//! [`BlacklistStore`] for the kernel: `kprobe_blacklist`, the C list of `kprobes_helpers.c`
//! that debugfs `blacklist` shows, and the arch's `kretprobe_blacklist[]`.
//!
//! Constraints: writers hold `kprobe_mutex` (or run at init); the hit path never reads them
//! (registration checks them).

use core::mem::offset_of;
use core::ops::ControlFlow;
use core::ptr::{self, addr_of, addr_of_mut};

use kernel::bindings;

use super::handle::Kernel;
use super::helpers::*;
use crate::blacklist::BlacklistStore;
use crate::errno::{from_c_ret, Result};

impl BlacklistStore for Kernel {
    fn blacklist_add_tail(&self, start: usize, end: usize) -> Result {
        // SAFETY: allocation and list insertion under kprobe_mutex or at init.
        from_c_ret(unsafe { rkp_blacklist_add_tail(start, end) })
    }
    fn blacklist_for_each(
        &self,
        mut f: impl FnMut(usize, usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let rcu = kernel::sync::rcu::read_lock();
        let mut r = ControlFlow::Continue(());
        // `list_for_each_entry_rcu()` written out: registration walks thousands of entries.
        for ent in BlacklistWalk::new() {
            // SAFETY: `ent` is a live entry inside the RCU section.
            let (s, e) = unsafe { ((*ent).start_addr as usize, (*ent).end_addr as usize) };
            r = f(s, e);
            if r.is_break() {
                break;
            }
        }
        drop(rcu);
        r
    }
    fn blacklist_remove_if(&self, mut pred: impl FnMut(usize, usize) -> bool) {
        // `list_for_each_entry_safe()`: writers hold kprobe_mutex, and the next entry is read
        // before the current one may be unlinked and handed to kfree_rcu().
        let head = addr_of_mut!(rkp_kprobe_blacklist);
        // SAFETY: the head is initialised statically; kprobe_mutex held.
        let mut node = unsafe { ptr::read_volatile(addr_of!((*head).next)) };
        while node != head {
            // SAFETY: `node` is the `list` member of a linked entry (kprobe_mutex held).
            let next = unsafe { ptr::read_volatile(addr_of!((*node).next)) };
            // SAFETY: as above.
            let ent = unsafe { blacklist_entry(node) };
            // SAFETY: `ent` is live (writers are serialised by kprobe_mutex).
            let (s, e) = unsafe { ((*ent).start_addr as usize, (*ent).end_addr as usize) };
            if pred(s, e) {
                // SAFETY: list_del_rcu + kfree_rcu of a live, linked entry.
                unsafe { rkp_blacklist_remove(ent) };
            }
            node = next;
        }
    }
}

/// `list_entry(node, struct kprobe_blacklist_entry, list)`.
///
/// # Safety
///
/// `node` is the `list` member of a `struct kprobe_blacklist_entry`.
#[inline(always)]
unsafe fn blacklist_entry(node: *mut bindings::list_head) -> *mut bindings::kprobe_blacklist_entry {
    let off = offset_of!(bindings::kprobe_blacklist_entry, list);
    // SAFETY: by the caller, stepping back from the member to its entry stays in bounds.
    unsafe { node.byte_sub(off) }.cast()
}

/// Walks `rkp_kprobe_blacklist` as `list_for_each_entry_rcu()` does: the successor of an entry
/// is read when the walk moves on, so the user must not unlink the entry it was given.
///
/// # Invariants
///
/// `cur` is the `list` member of a live entry, or the list head. The user is an RCU reader or
/// holds `kprobe_mutex`.
struct BlacklistWalk {
    head: *mut bindings::list_head,
    cur: *mut bindings::list_head,
}

impl BlacklistWalk {
    fn new() -> Self {
        // Only the address of the C static is taken (no reference to it is formed).
        let head = addr_of_mut!(rkp_kprobe_blacklist);
        // INVARIANT: starts at the head.
        BlacklistWalk { head, cur: head }
    }
}

impl Iterator for BlacklistWalk {
    type Item = *mut bindings::kprobe_blacklist_entry;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        // The list is circular, so the head ends the walk (a linked node's `next` is never
        // NULL): one load and one compare per entry, as in C.
        // SAFETY: by the invariant `cur` is the head or a live entry's `list`; READ_ONCE of its
        // `next`, as rcu_dereference_raw().
        let next = unsafe { ptr::read_volatile(addr_of!((*self.cur).next)) };
        if next == self.head {
            return None;
        }
        // INVARIANT: `next` is linked, so it is a live entry's `list` member.
        self.cur = next;
        // SAFETY: as just said.
        Some(unsafe { blacklist_entry(next) })
    }
}

/// Resolves `kretprobe_blacklist[]` (the arch's array, C data in every arch); C logs each
/// name it cannot find.
pub(crate) fn c_init_kretprobe_blacklist() {
    // SAFETY: called once from init_kprobes(), before anything reads the blacklist.
    unsafe { rkp_init_kretprobe_blacklist() };
}

/// Whether `addr` is a resolved entry of the arch's `kretprobe_blacklist[]`.
pub(crate) fn c_in_kretprobe_blacklist(addr: usize) -> bool {
    let mut i = 0;
    loop {
        // SAFETY: bounded by the arch's terminator or size, checked in C.
        let bp = unsafe { rkp_kretprobe_blackpoint(i) };
        if bp.is_null() {
            return false;
        }
        // SAFETY: `bp` points into the arch's static array.
        if unsafe { (*bp).addr } as usize == addr {
            return true;
        }
        i += 1;
    }
}
