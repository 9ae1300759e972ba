// SPDX-License-Identifier: GPL-2.0

//! The `list.h`/`rculist.h` link updates of the hash table and the aggregate lists, written out
//! in Rust as C inlines them, so that a registration makes no call per link.
//!
//! Constraints: writers are serialised by the caller (`kprobe_mutex`); readers walk the same
//! links under RCU, so each store a reader can observe happens in C's order, with release
//! ordering where C uses `rcu_assign_pointer()` and as a volatile store where C uses
//! `WRITE_ONCE()`. Unlinked nodes get C's `LIST_POISON1`/`LIST_POISON2`, from the arch's
//! `POISON_POINTER_DELTA` as bindgen sees it. Under
//! `CONFIG_LIST_HARDENED` (which `CONFIG_DEBUG_LIST` selects) the `list_head` updates go through
//! C, which checks both neighbours before it links or unlinks.

use core::ptr::{self, addr_of_mut};
use core::sync::atomic::{AtomicPtr, Ordering};

use kernel::bindings::{
    hlist_head, hlist_node, list_head, KPROBES_POISON_POINTER_DELTA as POISON_POINTER_DELTA,
};

/// `LIST_POISON1` (`0x100 + POISON_POINTER_DELTA`).
#[inline(always)]
fn poison1<T>() -> *mut T {
    (0x100 + POISON_POINTER_DELTA) as *mut T
}

/// `LIST_POISON2` (`0x122 + POISON_POINTER_DELTA`).
#[inline(always)]
fn poison2<T>() -> *mut T {
    (0x122 + POISON_POINTER_DELTA) as *mut T
}

#[cfg(CONFIG_LIST_HARDENED)]
use super::helpers::{rkp_list_add_rcu, rkp_list_del_rcu};

/// `rcu_assign_pointer(*slot, v)`: `smp_store_release()`.
///
/// # Safety
///
/// `slot` is a valid, aligned pointer-sized location that writers only update under the
/// caller's lock.
#[inline(always)]
unsafe fn rcu_assign_pointer<T>(slot: *mut *mut T, v: *mut T) {
    // SAFETY: `slot` is valid and aligned (caller); readers only load it, atomically
    // (READ_ONCE), and writers are serialised, so an atomic store to it races with nothing.
    unsafe { AtomicPtr::from_ptr(slot) }.store(v, Ordering::Release);
}

/// `hlist_add_head_rcu(n, h)`.
///
/// # Safety
///
/// `n` is a live, unlinked node and `h` a live head; the caller holds the writers' lock.
#[inline(always)]
pub(super) unsafe fn hlist_add_head_rcu(n: *mut hlist_node, h: *mut hlist_head) {
    // SAFETY: both live (caller); the stores are C's, in C's order.
    unsafe {
        let first = (*h).first;
        (*n).next = first;
        ptr::write_volatile(addr_of_mut!((*n).pprev), addr_of_mut!((*h).first));
        rcu_assign_pointer(addr_of_mut!((*h).first), n);
        if !first.is_null() {
            ptr::write_volatile(addr_of_mut!((*first).pprev), addr_of_mut!((*n).next));
        }
    }
}

/// `hlist_del_rcu(n)`: unlinks `n`, leaving its `next` for readers still on it.
///
/// # Safety
///
/// `n` is a live, linked node; the caller holds the writers' lock.
#[inline(always)]
pub(super) unsafe fn hlist_del_rcu(n: *mut hlist_node) {
    // SAFETY: `n` and its neighbours are linked, hence live (caller); C's stores and order.
    unsafe {
        let next = (*n).next;
        let pprev = (*n).pprev;
        ptr::write_volatile(pprev, next);
        if !next.is_null() {
            ptr::write_volatile(addr_of_mut!((*next).pprev), pprev);
        }
        ptr::write_volatile(addr_of_mut!((*n).pprev), poison2());
    }
}

/// `hlist_replace_rcu(old, new)`: `new` takes `old`'s place.
///
/// # Safety
///
/// `old` is a live, linked node, `new` a live, unlinked one; the caller holds the writers' lock.
#[inline(always)]
pub(super) unsafe fn hlist_replace_rcu(old: *mut hlist_node, new: *mut hlist_node) {
    // SAFETY: `old` and its neighbours are linked, hence live, `new` is live (caller); `new`
    // is fully linked before it is published through `*pprev`, as C orders it.
    unsafe {
        let next = (*old).next;
        (*new).next = next;
        let pprev = (*old).pprev;
        ptr::write_volatile(addr_of_mut!((*new).pprev), pprev);
        rcu_assign_pointer(pprev, new);
        if !next.is_null() {
            ptr::write_volatile(addr_of_mut!((*next).pprev), addr_of_mut!((*new).next));
        }
        ptr::write_volatile(addr_of_mut!((*old).pprev), poison2());
    }
}

/// `list_add_rcu(new, head)`: `new` right after `head`.
///
/// # Safety
///
/// `new` is live and unlinked, `head` live and linked (or empty); the caller holds the writers'
/// lock.
#[inline(always)]
pub(super) unsafe fn list_add_rcu(new: *mut list_head, head: *mut list_head) {
    #[cfg(CONFIG_LIST_HARDENED)]
    // SAFETY: as documented above; C checks the neighbours, then links.
    unsafe {
        rkp_list_add_rcu(new, head)
    };
    #[cfg(not(CONFIG_LIST_HARDENED))]
    // SAFETY: `head` and its successor are live (caller); `new` is complete before it is
    // published through `head->next`, as C orders it.
    unsafe {
        let next = (*head).next;
        (*new).next = next;
        (*new).prev = head;
        rcu_assign_pointer(addr_of_mut!((*head).next), new);
        (*next).prev = new;
    }
}

/// `list_add(new, head)`: `new` right after `head`, for lists no reader walks without the
/// writers' lock (C's plain stores: `WRITE_ONCE()` only where C has it).
///
/// # Safety
///
/// `new` is live and unlinked, `head` live and linked (or empty); the caller holds the lock
/// that serialises every access to the list.
#[cfg(all(CONFIG_OPTPROBES, not(CONFIG_LIST_HARDENED)))]
#[inline(always)]
pub(super) unsafe fn list_add(new: *mut list_head, head: *mut list_head) {
    // SAFETY: `head` and its successor are live and nothing else touches the list (caller).
    unsafe {
        let next = (*head).next;
        (*next).prev = new;
        (*new).next = next;
        (*new).prev = head;
        ptr::write_volatile(addr_of_mut!((*head).next), new);
    }
}

/// `__list_del_entry()` without the checks: the neighbours of `entry` are joined.
///
/// # Safety
///
/// `entry` is live and linked; the caller holds the writers' lock.
#[cfg(not(CONFIG_LIST_HARDENED))]
#[inline(always)]
unsafe fn list_unlink(entry: *mut list_head) {
    // SAFETY: a linked entry's neighbours are live (caller).
    unsafe {
        let (prev, next) = ((*entry).prev, (*entry).next);
        (*next).prev = prev;
        ptr::write_volatile(addr_of_mut!((*prev).next), next);
    }
}

/// `list_del_rcu(entry)`: unlinks `entry`, leaving its `next` for readers still on it.
///
/// # Safety
///
/// As for [`list_unlink`].
#[inline(always)]
pub(super) unsafe fn list_del_rcu(entry: *mut list_head) {
    #[cfg(CONFIG_LIST_HARDENED)]
    // SAFETY: as documented above; C checks the neighbours, then unlinks.
    unsafe {
        rkp_list_del_rcu(entry)
    };
    #[cfg(not(CONFIG_LIST_HARDENED))]
    // SAFETY: as documented above; `entry` stays live, only its `prev` is poisoned.
    unsafe {
        list_unlink(entry);
        (*entry).prev = poison2();
    }
}

/// `list_del(entry)`: unlinks `entry` and poisons both its links (`list_del_rcu()`, then
/// `next` too: with no reader left on `entry`, the order of the two poison stores is moot).
///
/// # Safety
///
/// As for [`list_unlink`]; no reader can still be on `entry` (a grace period has passed).
#[inline(always)]
pub(super) unsafe fn list_del(entry: *mut list_head) {
    // SAFETY: as documented above; `entry` stays live.
    unsafe {
        list_del_rcu(entry);
        (*entry).next = poison1();
    }
}
