// SPDX-License-Identifier: GPL-2.0

//! [`ProbeStore`] for the kernel: the probe table, aggregate lists and optimizer queues are
//! the C `hlist`/`list_head` members of `struct kprobe` and `struct optimized_kprobe` and the
//! C statics of `kprobes_helpers.c`; the locks are `kprobe_mutex`, `cpus_read_lock()`,
//! `jump_label_lock()` and `text_mutex`, in C's order.
//!
//! Constraints: the RCU iterators and field accessors are called on the probe-hit path: no
//! allocation, no lock, and `#[inline(always)]` so they compile into the unprobeable entry
//! points of [`super::exports`]. Mutators run with `kprobe_mutex` held.

use core::mem::offset_of;
use core::ops::ControlFlow;
use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::bindings;

#[cfg(CONFIG_OPTPROBES)]
use super::handle::to_op;
use super::handle::{c_str_bytes, Kernel, Kp};
use super::helpers::*;
use super::list;
use super::mutex::KprobeMutexGuard;
use crate::store::{Aggr, OptQueue, ProbeStore, KPROBE_TABLE_SIZE};

/// The bucket `bucket` (masked to the table size) of `rkp_kprobe_table`.
#[inline(always)]
fn bucket_head(bucket: usize) -> *mut bindings::hlist_head {
    // SAFETY: only the address of an in-bounds element is formed (the index is masked); no
    // reference to the mutable static is created.
    unsafe {
        addr_of_mut!(rkp_kprobe_table)
            .cast::<bindings::hlist_head>()
            .add(bucket & (KPROBE_TABLE_SIZE - 1))
    }
}

/// `hlist_entry(n, struct kprobe, hlist)`.
///
/// # Safety
///
/// `n` is the `hlist` member of a `struct kprobe`.
#[inline(always)]
unsafe fn container_of_hlist(n: NonNull<bindings::hlist_node>) -> NonNull<bindings::kprobe> {
    // SAFETY: by the caller, stepping back by the member's offset stays inside the kprobe.
    unsafe { n.byte_sub(offset_of!(bindings::kprobe, hlist)).cast() }
}

/// `list_entry(n, struct kprobe, list)`.
///
/// # Safety
///
/// `n` is the `list` member of a `struct kprobe`.
#[inline(always)]
unsafe fn container_of_list(n: NonNull<bindings::list_head>) -> NonNull<bindings::kprobe> {
    // SAFETY: by the caller, stepping back by the member's offset stays inside the kprobe.
    unsafe { n.byte_sub(offset_of!(bindings::kprobe, list)).cast() }
}

#[cfg(CONFIG_OPTPROBES)]
fn queue_id(q: OptQueue) -> i32 {
    match q {
        OptQueue::Optimizing => 0,
        OptQueue::Unoptimizing => 1,
        OptQueue::Freeing => 2,
    }
}

impl ProbeStore for Kernel {
    type Probe = Kp;
    type Regs = *mut bindings::pt_regs;
    type Guard<'a> = KprobeMutexGuard;

    fn kprobe_mutex(&self) -> KprobeMutexGuard {
        KprobeMutexGuard::lock()
    }
    fn text_locked<R>(&self, jump_label: bool, f: impl FnOnce() -> R) -> R {
        // kprobes.c's order: cpus_read_lock(), jump_label_lock() if asked, text_mutex. Each is
        // a no-op inline where its config is off.
        #[cfg(CONFIG_HOTPLUG_CPU)]
        // SAFETY: process context, none of the three held.
        unsafe {
            bindings::cpus_read_lock()
        };
        #[cfg(CONFIG_JUMP_LABEL)]
        if jump_label {
            // SAFETY: as above.
            unsafe { jump_label_lock() };
        }
        // SAFETY: as above.
        unsafe { bindings::mutex_lock(addr_of_mut!(text_mutex)) };
        let r = f();
        // SAFETY: releases what was taken above, in reverse order.
        unsafe { bindings::mutex_unlock(addr_of_mut!(text_mutex)) };
        #[cfg(CONFIG_JUMP_LABEL)]
        if jump_label {
            // SAFETY: taken above.
            unsafe { jump_label_unlock() };
        }
        #[cfg(not(CONFIG_JUMP_LABEL))]
        let _ = jump_label;
        #[cfg(CONFIG_HOTPLUG_CPU)]
        // SAFETY: taken above.
        unsafe {
            bindings::cpus_read_unlock()
        };
        r
    }
    fn cpus_read_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(CONFIG_HOTPLUG_CPU)]
        // SAFETY: process context, the CPU hotplug lock not held yet.
        unsafe {
            bindings::cpus_read_lock()
        };
        let r = f();
        #[cfg(CONFIG_HOTPLUG_CPU)]
        // SAFETY: taken above.
        unsafe {
            bindings::cpus_read_unlock()
        };
        r
    }
    #[inline(always)]
    fn assert_kprobe_mutex_held(&self) {
        #[cfg(CONFIG_LOCKDEP)]
        // SAFETY: only inspects lockdep's state of the current task.
        unsafe {
            rkp_lockdep_assert_kprobe_mutex_held()
        };
    }
    #[inline(always)]
    fn assert_text_mutex_held(&self) {
        #[cfg(CONFIG_LOCKDEP)]
        // SAFETY: as above.
        unsafe {
            rkp_lockdep_assert_text_mutex_held()
        };
    }
    #[inline(always)]
    fn assert_cpus_held(&self) {
        #[cfg(CONFIG_LOCKDEP)]
        // SAFETY: as above.
        unsafe {
            rkp_lockdep_assert_cpus_held()
        };
    }
    fn synchronize_rcu(&self) {
        // SAFETY: process context, no RCU read-side section held.
        unsafe { bindings::synchronize_rcu() };
    }
    fn synchronize_rcu_tasks(&self) {
        // SAFETY: as above (the optimizer work); a macro in some configs, hence the wrapper.
        unsafe { rkp_synchronize_rcu_tasks() };
    }
    fn kick_kprobe_optimizer(&self) {
        #[cfg(CONFIG_OPTPROBES)]
        // SAFETY: schedules the static delayed work.
        unsafe {
            rkp_kick_kprobe_optimizer()
        };
    }
    fn flush_kprobe_optimizer(&self) {
        #[cfg(CONFIG_OPTPROBES)]
        // SAFETY: called without kprobe_mutex, which the work takes.
        unsafe {
            rkp_flush_kprobe_optimizer()
        };
    }

    fn with_slot_free_batch<R>(&self, n: usize, f: impl FnOnce() -> R) -> R {
        super::insn_slot::with_free_batch(n, f)
    }

    type Buf<T> = KVVec<T>;
    fn alloc_buf<T: Clone>(&self, n: usize, fill: T) -> Option<KVVec<T>> {
        KVVec::from_elem(fill, n, GFP_KERNEL).ok()
    }
    /// The smallest unregistration batch that gets an index of the hash entries. Building it
    /// costs about as much per hash entry as a lookup in it; a batch of `n` probes among `n`
    /// entries walks chains of `n / 64` entries, half of one a lookup, so below a few thousand
    /// probes the walks cost no more than the index (`scripts/rkprobes profile --command
    /// "bulk-unreg module 10000"`, 2026-11-27: about 580 guest instructions a probe in the
    /// chain walks of C's 64 buckets).
    fn entry_index_min_batch(&self) -> usize {
        2048
    }

    #[inline(always)]
    fn addr(&self, p: Kp) -> usize {
        // SAFETY: `p` is live (type invariant); READ_ONCE of a field C may write.
        unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).addr)) as usize }
    }
    fn symbol_name(&self, p: Kp) -> Option<&[u8]> {
        // SAFETY: `p` is live; its owner keeps `symbol_name` (NULL or a C string) valid during
        // the registration call that asks for it, which outlives every use of the slice.
        unsafe {
            let name = ptr::read_volatile(addr_of!((*p.as_ptr()).symbol_name));
            (!name.is_null()).then(|| c_str_bytes(name.cast()))
        }
    }
    fn offset(&self, p: Kp) -> u32 {
        // SAFETY: `p` is live.
        unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).offset)) }
    }
    fn set_addr(&self, p: Kp, addr: usize) {
        // SAFETY: `p` is live; WRITE_ONCE.
        unsafe { ptr::write_volatile(addr_of_mut!((*p.as_ptr()).addr), addr as *mut _) };
    }
    #[inline(always)]
    fn flags(&self, p: Kp) -> u32 {
        // SAFETY: `p` is live; READ_ONCE.
        unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).flags)) }
    }
    fn set_flags(&self, p: Kp, flags: u32) {
        // SAFETY: `p` is live; WRITE_ONCE (kprobe_mutex held by the core).
        unsafe { ptr::write_volatile(addr_of_mut!((*p.as_ptr()).flags), flags) };
    }
    #[inline(always)]
    fn inc_nmissed(&self, p: Kp) {
        // SAFETY: `p` is live, so its `nmissed` is valid and aligned for the call; every other
        // access that can race with it is this atomic add or a READ_ONCE read (`inc_nmissed`'s
        // `# Safety`: the core resets it only while the probe is not armed).
        unsafe { super::nmissed::inc_nmissed(addr_of_mut!((*p.as_ptr()).nmissed)) };
    }
    fn reset_nmissed(&self, p: Kp) {
        // SAFETY: `p` is live.
        unsafe { ptr::write_volatile(addr_of_mut!((*p.as_ptr()).nmissed), 0) };
    }
    fn nmissed(&self, p: Kp) -> u64 {
        // SAFETY: `p` is live.
        let n = unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).nmissed)) };
        // `unsigned long`, as wide as `u64` on every arch this core builds for.
        n as u64
    }
    fn set_nmissed(&self, p: Kp, n: u64) {
        // SAFETY: `p` is live; `nmissed` is an `unsigned long`, as wide as `usize`.
        unsafe { ptr::write_volatile(addr_of_mut!((*p.as_ptr()).nmissed), n as _) };
    }
    #[inline(always)]
    fn has_post_handler(&self, p: Kp) -> bool {
        // SAFETY: `p` is live.
        unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).post_handler)).is_some() }
    }
    #[inline(always)]
    fn is_aggr(&self, p: Kp) -> bool {
        // SAFETY: `p` is live.
        let pre = unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).pre_handler)) };
        pre.map(|f| f as usize) == Some(super::exports::aggr_pre_handler as *const () as usize)
    }
    fn is_kretprobe(&self, p: Kp) -> bool {
        // SAFETY: `p` is live.
        let pre = unsafe { ptr::read_volatile(addr_of!((*p.as_ptr()).pre_handler)) };
        pre.is_some_and(|f| super::exports::is_kretprobe_pre_handler(f as usize))
    }
    #[inline(always)]
    fn call_pre_handler(&self, p: Kp, regs: *mut bindings::pt_regs) -> i32 {
        // SAFETY: `p` is live; the handler is the probe owner's, called as C calls it.
        unsafe {
            match ptr::read_volatile(addr_of!((*p.as_ptr()).pre_handler)) {
                Some(f) => f(p.as_ptr(), regs),
                None => 0,
            }
        }
    }
    #[inline(always)]
    fn call_post_handler(&self, p: Kp, regs: *mut bindings::pt_regs, flags: usize) {
        // SAFETY: as for `call_pre_handler`.
        unsafe {
            if let Some(f) = ptr::read_volatile(addr_of!((*p.as_ptr()).post_handler)) {
                f(p.as_ptr(), regs, flags as _);
            }
        }
    }
    fn copy_kprobe(&self, from: Kp, to: Kp) {
        // SAFETY: both live and distinct; `opcode` and `ainsn` are plain data (memcpy in C).
        unsafe {
            let (f, t) = (from.as_ptr(), to.as_ptr());
            ptr::copy_nonoverlapping(addr_of!((*f).opcode), addr_of_mut!((*t).opcode), 1);
            ptr::copy_nonoverlapping(addr_of!((*f).ainsn), addr_of_mut!((*t).ainsn), 1);
        }
    }

    fn alloc_aggr_kprobe(&self, addr: usize) -> Option<Aggr<Kp>> {
        // SAFETY: allocates and initialises a fresh aggregate; process context.
        let p = Kp::from_c(unsafe { rkp_alloc_aggr_kprobe(addr as *mut _) })?;
        // SAFETY: just allocated by `rkp_alloc_aggr_kprobe()`, as an optimized_kprobe with
        // OPTPROBES.
        Some(unsafe { Aggr::new_unchecked(p) })
    }
    fn kfree_aggr_kprobe(&self, ap: Aggr<Kp>) {
        // The allocation is the optimized_kprobe around `ap` with OPTPROBES, `ap` without.
        #[cfg(CONFIG_OPTPROBES)]
        let obj = to_op(ap).cast::<core::ffi::c_void>();
        #[cfg(not(CONFIG_OPTPROBES))]
        let obj = ap.kp().as_ptr().cast::<core::ffi::c_void>();
        // SAFETY: `ap` came from `alloc_aggr_kprobe` (type invariant) and is unreachable (the
        // core's contract).
        unsafe { bindings::kfree(obj) };
    }
    fn set_aggr_pre_handler(&self, ap: Aggr<Kp>) {
        // SAFETY: `ap` is live and ours.
        unsafe {
            ptr::write_volatile(
                addr_of_mut!((*ap.kp().as_ptr()).pre_handler),
                Some(super::exports::aggr_pre_handler),
            )
        };
    }
    fn set_aggr_post_handler(&self, ap: Aggr<Kp>, on: bool) {
        let h: bindings::kprobe_post_handler_t = if on {
            Some(super::exports::aggr_post_handler)
        } else {
            None
        };
        // SAFETY: `ap` is live and ours.
        unsafe { ptr::write_volatile(addr_of_mut!((*ap.kp().as_ptr()).post_handler), h) };
    }

    #[inline(always)]
    fn for_each_in_bucket(
        &self,
        bucket: usize,
        mut f: impl FnMut(Kp) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        // `hlist_for_each_entry_rcu()` written out, so the walk costs no call per node.
        // SAFETY: the bucket head is a static; readers hold kprobe_mutex or run with preemption
        // disabled (an RCU reader), as get_kprobe() requires, so every node read stays live.
        let mut node = unsafe { ptr::read_volatile(addr_of!((*bucket_head(bucket)).first)) };
        while let Some(n) = NonNull::new(node) {
            // SAFETY: every node in the table is the `hlist` member of a hashed `struct kprobe`.
            let p = unsafe { Kp::from_raw(container_of_hlist(n)) };
            f(p)?;
            // SAFETY: `n` is still hashed or RCU-protected (`f` does not unlink in this bucket);
            // READ_ONCE of the next pointer, as rcu_dereference_raw().
            node = unsafe { ptr::read_volatile(addr_of!((*n.as_ptr()).next)) };
        }
        ControlFlow::Continue(())
    }
    fn hlist_add_head_rcu(&self, bucket: usize, p: Kp) {
        // SAFETY: kprobe_mutex held; `p` live and unhashed, the bucket head a static.
        unsafe { list::hlist_add_head_rcu(p.hlist(), bucket_head(bucket)) };
    }
    fn hlist_del_rcu(&self, p: Kp) {
        // SAFETY: kprobe_mutex held; `p` hashed.
        unsafe { list::hlist_del_rcu(p.hlist()) };
    }
    fn hlist_replace_rcu(&self, old: Kp, new: Kp) {
        // SAFETY: kprobe_mutex held; `old` hashed, `new` initialised and unhashed.
        unsafe { list::hlist_replace_rcu(old.hlist(), new.hlist()) };
    }
    fn init_hlist_node(&self, p: Kp) {
        // INIT_HLIST_NODE(): both links NULL.
        let node = p.hlist();
        // SAFETY: `p` live, not yet linked (or being re-initialised by its owner).
        unsafe {
            ptr::addr_of_mut!((*node).next).write(ptr::null_mut());
            ptr::addr_of_mut!((*node).pprev).write(ptr::null_mut());
        }
    }
    fn init_list_head(&self, p: Kp) {
        // INIT_LIST_HEAD(): WRITE_ONCE(list->next, list), then list->prev = list.
        let list = p.list();
        // SAFETY: as above.
        unsafe {
            ptr::write_volatile(ptr::addr_of_mut!((*list).next), list);
            ptr::addr_of_mut!((*list).prev).write(list);
        }
    }
    fn list_add_rcu(&self, p: Kp, ap: Aggr<Kp>) {
        // SAFETY: kprobe_mutex held; both live, `p` on no list, `ap`'s list initialised.
        unsafe { list::list_add_rcu(p.list(), ap.kp().list()) };
    }
    fn list_del_rcu(&self, p: Kp) {
        // SAFETY: kprobe_mutex held; `p` linked.
        unsafe { list::list_del_rcu(p.list()) };
    }
    fn list_del(&self, p: Kp) {
        // SAFETY: kprobe_mutex held, after a grace period; `p` linked.
        unsafe { list::list_del(p.list()) };
    }
    fn list_empty(&self, p: Kp) -> bool {
        let list = p.list();
        // SAFETY: `p` is live; READ_ONCE of `list.next`, as list_empty().
        unsafe { ptr::read_volatile(addr_of!((*list).next)) == list }
    }
    fn list_is_singular(&self, p: Kp) -> bool {
        let list = p.list();
        // SAFETY: `p` is live; list_is_singular(): one other node, so next and prev agree.
        let (next, prev) = unsafe { (ptr::read_volatile(addr_of!((*list).next)), (*list).prev) };
        next != list && next == prev
    }
    fn list_next_entry(&self, p: Kp) -> Kp {
        // SAFETY: `p` is live.
        let next = unsafe { (*p.list()).next };
        // SAFETY: `p` is linked to its aggregate (the core checked `list_is_singular`), so its
        // successor is non-NULL and the `list` member of a live `struct kprobe`.
        unsafe { Kp::from_raw(container_of_list(NonNull::new_unchecked(next))) }
    }
    #[inline(always)]
    fn for_each_child(
        &self,
        ap: Aggr<Kp>,
        mut f: impl FnMut(Kp) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        // `list_for_each_entry_rcu(kp, &ap->list, list)` written out.
        // SAFETY: `ap` is a live aggregate (type invariant); RCU reader or kprobe_mutex held.
        let head = unsafe { addr_of_mut!((*ap.kp().as_ptr()).list) };
        // SAFETY: `head` is live; READ_ONCE of `next`, as rcu_dereference_raw().
        let mut next = unsafe { ptr::read_volatile(addr_of!((*head).next)) };
        while next != head {
            // SAFETY: a linked `list_head`'s `next` is never NULL (INIT_LIST_HEAD, list_add_rcu
            // and list_del_rcu keep it pointing at an entry or the head), and every entry on an
            // aggregate's list is the `list` member of a live child.
            let n = unsafe { NonNull::new_unchecked(next) };
            // SAFETY: as above.
            let kp = unsafe { Kp::from_raw(container_of_list(n)) };
            f(kp)?;
            // SAFETY: `n` is still on the list or RCU-protected; READ_ONCE of its `next`.
            next = unsafe { ptr::read_volatile(addr_of!((*n.as_ptr()).next)) };
        }
        ControlFlow::Continue(())
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn op_list_empty(&self, ap: Aggr<Kp>) -> bool {
        // list_empty(&op->list).
        // SAFETY: `ap` is an optimized_kprobe (an `Aggr`, allocated as one with OPTPROBES), so
        // `to_op` gives a live one; only the member's address is formed, then READ_ONCE of its
        // `next`.
        unsafe {
            let list = ptr::addr_of_mut!((*to_op(ap)).list);
            ptr::read_volatile(addr_of!((*list).next)) == list
        }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn op_list_empty(&self, _ap: Aggr<Kp>) -> bool {
        true
    }
    #[cfg(all(CONFIG_OPTPROBES, CONFIG_LIST_HARDENED))]
    fn queue_add(&self, ap: Aggr<Kp>, q: OptQueue) {
        // SAFETY: kprobe_mutex held; `ap` an optimized_kprobe (an `Aggr`) not on a queue.
        unsafe { rkp_queue_add(ap.kp().as_ptr(), queue_id(q)) };
    }
    #[cfg(all(CONFIG_OPTPROBES, not(CONFIG_LIST_HARDENED)))]
    #[inline(always)]
    fn queue_add(&self, ap: Aggr<Kp>, q: OptQueue) {
        // `list_add(&op->list, queue)` inline (C's `list_add()` is).
        // SAFETY: `ap` is an optimized_kprobe (an `Aggr`, allocated as one with OPTPROBES), so
        // `to_op` gives a live one and only its member's address is formed; the queue head is
        // an in-bounds element of the static array (`queue_id` is 0..=2), no reference to the
        // mutable static is made; `op->list` is on no queue (caller) and the queues are only
        // touched under kprobe_mutex, which is held.
        unsafe {
            let head = addr_of_mut!(rkp_opt_queues)
                .cast::<bindings::list_head>()
                .add(queue_id(q) as usize);
            list::list_add(addr_of_mut!((*to_op(ap)).list), head);
        }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_add(&self, _ap: Aggr<Kp>, _q: OptQueue) {}
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_del_init(&self, ap: Aggr<Kp>) {
        // SAFETY: kprobe_mutex held; `ap` an optimized_kprobe.
        unsafe { rkp_queue_del_init(ap.kp().as_ptr()) };
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_del_init(&self, _ap: Aggr<Kp>) {}
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_move(&self, ap: Aggr<Kp>, q: OptQueue) {
        // SAFETY: kprobe_mutex held; `ap` an optimized_kprobe.
        unsafe { rkp_queue_move(ap.kp().as_ptr(), queue_id(q)) };
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_move(&self, _ap: Aggr<Kp>, _q: OptQueue) {}
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_empty(&self, q: OptQueue) -> bool {
        // SAFETY: kprobe_mutex held.
        unsafe { rkp_queue_empty(queue_id(q)) }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_empty(&self, _q: OptQueue) -> bool {
        true
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_contains(&self, q: OptQueue, ap: Aggr<Kp>) -> bool {
        // SAFETY: kprobe_mutex held; `ap` an optimized_kprobe.
        unsafe { rkp_queue_contains(queue_id(q), ap.kp().as_ptr()) }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_contains(&self, _q: OptQueue, _ap: Aggr<Kp>) -> bool {
        false
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_for_each_safe(&self, q: OptQueue, mut f: impl FnMut(Aggr<Kp>)) {
        let q = queue_id(q);
        // SAFETY: kprobe_mutex held; the next entry is read before `f` may move the current one
        // (list_for_each_entry_safe).
        let mut cur = Kp::from_c(unsafe { rkp_queue_next(q, ptr::null_mut()) });
        while let Some(op) = cur {
            // SAFETY: as above.
            let next = Kp::from_c(unsafe { rkp_queue_next(q, op.as_ptr()) });
            // SAFETY: only aggregates are queued (`queue_add` takes an `Aggr`).
            f(unsafe { Aggr::new_unchecked(op) });
            cur = next;
        }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_for_each_safe(&self, _q: OptQueue, _f: impl FnMut(Aggr<Kp>)) {}
}
