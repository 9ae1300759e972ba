// SPDX-License-Identifier: GPL-2.0

//! The kretprobe instance pool on the objpool path (`!KRETPROBE_ON_RETHOOK`: arm64): a
//! `struct kretprobe_holder` per kretprobe, the per-task instance lists of
//! [`TaskInstances`], and the C-linkage entry points the arch and the scheduler call:
//! `__kretprobe_trampoline_handler()`, `kretprobe_find_ret_addr()` and `kprobe_flush_task()`.
//!
//! Constraints: everything reached from [`instance_try_get`], [`instance_recycle`],
//! [`instance_hook`] and the entry points runs on the probe-hit or function-return path
//! (preemption disabled, no allocation, no lock) and is `#[inline(always)]` into a
//! `.kprobes.text` function or is one. The holder outlives its kretprobe: unregistration clears
//! `rph->rp` (RCU), instances still in flight then go back through `call_rcu()` and
//! `objpool_drop()`, and the objpool frees the holder (`kretprobe_fini_pool`) with its last
//! object. A task's list is only touched by that task, or once it is dead.
//!
//! Growing pools (issue 40, Rust only; [`super::grow`]): a kretprobe whose `grow_max` is above
//! its `maxactive` has extra holders, each with its own objpool whose objects point back to it,
//! tried in order after `rp->rph`. Every rule above holds per holder: an instance goes back to
//! its own holder's pool (`ri->rph`, which is `rp->rph` for the first pool, as in C), the
//! unregistration clears each holder's `rp` where it clears `rp->rph->rp`, releases each pool
//! where it releases the first one, and each holder goes with its own pool's last object.

use core::ffi::{c_int, c_ulong, c_void};
use core::mem::offset_of;
use core::ptr::{self, addr_of, addr_of_mut, NonNull};

use kernel::bindings;

use super::grow::{extra_pools, grow_clear, grow_detach, grow_free, grow_note_put, grow_publish};
use super::handle::Krp;
use super::handle::{Kernel, Kp, KERNEL};
use super::helpers::*;
use super::percpu::set_current_kprobe;
use crate::errno::{Errno, Result};
use crate::kretprobe::{self, TaskInstances};

/// An instance is a `struct kretprobe_instance`.
pub type Instance = NonNull<bindings::kretprobe_instance>;

/// The `struct kretprobe_instance *` that `ri` is.
#[inline(always)]
pub fn instance_ptr(ri: Instance) -> *mut bindings::kretprobe_instance {
    ri.as_ptr()
}

#[inline(always)]
fn holder_of(rp: Krp) -> *mut bindings::kretprobe_holder {
    // SAFETY: `rp` is live (type invariant).
    unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).rph)) }
}

/// `kretprobe_init_inst()`: every object of the pool points back to its holder.
///
/// # Safety
///
/// Called by objpool_init() with an object of at least `sizeof(struct kretprobe_instance)`
/// bytes and the holder as `context`.
unsafe extern "C" fn kretprobe_init_inst(nod: *mut c_void, context: *mut c_void) -> c_int {
    let ri = nod.cast::<bindings::kretprobe_instance>();
    // SAFETY: per the function's contract `ri` is a pool object being initialised.
    unsafe { ptr::write(addr_of_mut!((*ri).rph), context.cast()) };
    0
}

/// `kretprobe_fini_pool()`: the pool is gone, so is its holder.
///
/// C's name, unmangled: a probe on it counts the pools freed, on either core.
///
/// # Safety
///
/// Called once by the objpool when its last object is released, with the holder as `context`.
#[no_mangle]
unsafe extern "C" fn kretprobe_fini_pool(
    _head: *mut bindings::objpool_head,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `context` is the holder kzalloc()ed in alloc_instance_pool(); nothing refers to it
    // any more (the objpool calls this after its last object).
    unsafe { bindings::kfree(context) };
    0
}

nokprobe! {
    /// `free_rp_inst_rcu()`: an instance of an unregistered kretprobe leaves its pool.
    ///
    /// # Safety
    ///
    /// Called by RCU with the `rcu` head of an instance queued by `drop_instance_rcu()`.
    #[no_mangle]
    unsafe extern "C" fn free_rp_inst_rcu(head: *mut bindings::callback_head) {
        let off = offset_of!(bindings::kretprobe_instance, rcu);
        let ri = head
            .cast::<u8>()
            .wrapping_sub(off)
            .cast::<bindings::kretprobe_instance>();
        // SAFETY: `head` is the `rcu` member of a live instance (container_of); its holder
        // outlives every object of the pool.
        unsafe {
            let rph = ptr::read(addr_of!((*ri).rph));
            bindings::objpool_drop(ri.cast(), addr_of_mut!((*rph).pool));
        }
    }
}

/// A holder and its objpool of `num` instances of `sizeof(kretprobe_instance) + data_size`
/// bytes, each pointing back to the holder; `rph->rp` is NULL. May sleep.
fn alloc_holder(num: i32, data_size: usize) -> Result<*mut bindings::kretprobe_holder> {
    let size = core::mem::size_of::<bindings::kretprobe_instance>() + data_size;
    let size = i32::try_from(size).map_err(|_| Errno::E2BIG)?;
    // SAFETY: process context (registration or the grow worker); GFP_KERNEL may sleep.
    let rph = unsafe { rkp_kzalloc_kretprobe_holder() };
    if rph.is_null() {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: `rph` is a fresh zeroed holder; the callbacks match the objpool's contract.
    let ret = unsafe {
        bindings::objpool_init(
            addr_of_mut!((*rph).pool),
            num,
            size,
            bindings::GFP_KERNEL,
            rph.cast(),
            Some(kretprobe_init_inst),
            Some(kretprobe_fini_pool),
        )
    };
    if ret != 0 {
        // SAFETY: objpool_init() failed and released what it had taken; the holder is ours.
        unsafe { bindings::kfree(rph.cast()) };
        return Err(Errno::ENOMEM);
    }
    Ok(rph)
}

/// `register_kretprobe()`'s pool: a holder and an objpool of `maxactive` instances.
///
/// `_grows` plays no part: every instance goes back through [`recycle_rp_inst`], which notes it
/// for a growing pool.
///
/// [`recycle_rp_inst`]: crate::kretprobe::recycle_rp_inst
pub fn alloc_instance_pool(rp: Krp, maxactive: i32, data_size: usize, _grows: bool) -> Result {
    grow_clear(rp);
    let rph = alloc_holder(maxactive, data_size)?;
    // SAFETY: `rp` live and not yet registered; `rph` is fully initialised before it is
    // published to the return path.
    unsafe {
        ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rph), rph);
        rkp_kretprobe_holder_set_rp(rph, rp.as_ptr());
    }
    Ok(())
}

/// The worker: one more holder of `n` instances, published after the others. May sleep.
pub fn grow_add_pool(rp: Krp, n: u32, data_size: usize) -> Result {
    let num = i32::try_from(n).map_err(|_| Errno::EINVAL)?;
    let rph = alloc_holder(num, data_size)?;
    // SAFETY: `rph` is a fresh holder whose objects point back to it, that nothing else holds;
    // the publish gives it `rp`.
    unsafe { grow_publish(rp, rph, n) }
}

/// `free_rp_inst()`: `rp->rph = NULL`, then `objpool_fini()` (the holder goes with the pool's
/// last object, possibly later).
fn free_rp_inst(rp: Krp) {
    let rph = holder_of(rp);
    if rph.is_null() {
        return;
    }
    // SAFETY: `rp` live; `rph` is its holder, whose pool is released once.
    unsafe {
        ptr::write_volatile(addr_of_mut!((*rp.as_ptr()).rph), ptr::null_mut());
        bindings::objpool_fini(addr_of_mut!((*rph).pool));
    }
}

/// Pool of a failed registration, and a growing pool's state.
pub fn free_instance_pool(rp: Krp) {
    free_rp_inst(rp);
    grow_free(rp);
}

/// `rcu_assign_pointer(rp->rph->rp, NULL)` under `kprobe_mutex`: instances returning after this
/// see no kretprobe and are dropped.
pub fn detach_instance_pool(rp: Krp) {
    let rph = holder_of(rp);
    // C dereferences a NULL `rph` for a never-registered kretprobe; skip it instead.
    if !rph.is_null() {
        // SAFETY: `rph` is `rp`'s live holder.
        unsafe { rkp_kretprobe_holder_set_rp(rph, ptr::null_mut()) };
        grow_detach(rp);
    }
}

/// After the grace period: `free_rp_inst()`, of every holder of a growing pool too.
pub fn release_instance_pool(rp: Krp) {
    free_rp_inst(rp);
    grow_free(rp);
}

/// `objpool_pop(&rp->rph->pool)`.
#[inline(always)]
pub fn instance_try_get(rp: Krp) -> Option<Instance> {
    // SAFETY: `rph` is live while the probe is registered (we are its pre_handler).
    NonNull::new(unsafe { rkp_objpool_pop(holder_of(rp)) })
}

nokprobe! {
    /// A growing pool whose first holder is empty: each extra holder's pool in order. Out of
    /// line, so that the pre-handler keeps the registers of its common case.
    #[inline(never)]
    #[cold]
    pub fn grow_try_get(rp: Krp) -> Option<Instance> {
        for rph in extra_pools(rp) {
            // SAFETY: `rph` is a published extra holder, live while the probe is reachable
            // (`extra_pools`); its pool is released only after that.
            if let Some(ri) = NonNull::new(unsafe { rkp_objpool_pop(rph) }) {
                return Some(ri);
            }
        }
        None
    }
}

/// `objpool_push(ri, &ri->rph->pool)`: back to the pool `ri` came from, which is C's
/// `&rp->rph->pool` but for an extra pool of a growing kretprobe.
#[inline(always)]
pub fn instance_recycle(_rp: Krp, ri: Instance) {
    // SAFETY: `ri` is an object of one of `rp`'s pools, not on any list; its holder (set at
    // objpool_init(), never changed) is live while `rp` is reachable (registered, or found
    // through `ri->rph->rp` under RCU): it goes only with its pool's last object, after the
    // release that follows the grace period.
    unsafe { rkp_objpool_push(ri.as_ptr(), ptr::read(addr_of!((*ri.as_ptr()).rph))) };
}

/// `arch_prepare_kretprobe()` and `__llist_add()` onto `current`'s list.
///
/// `mcount` plays no part: without rethook there are no kretprobes on ftrace.
#[inline(always)]
pub fn instance_hook(ri: Instance, regs: *mut bindings::pt_regs, _mcount: bool) {
    kretprobe::hook_instance(&KERNEL, ri, regs);
}

/// Handle to a task's `kretprobe_instances` list.
///
/// # Invariants
///
/// The pointer refers to the list head of `current`, or of a dead task being flushed.
#[derive(Clone, Copy)]
pub struct TaskList(NonNull<bindings::llist_head>);

/// `container_of(node, struct kretprobe_instance, llist)`; NULL stays `None`.
#[inline(always)]
fn instance_of(node: *mut bindings::llist_node) -> Option<Instance> {
    if node.is_null() {
        return None;
    }
    let off = offset_of!(bindings::kretprobe_instance, llist);
    NonNull::new(node.cast::<u8>().wrapping_sub(off).cast())
}

#[inline(always)]
fn node_of(ri: Option<Instance>) -> *mut bindings::llist_node {
    match ri {
        // SAFETY: `ri` is a live instance (the trait contract); only the member address is taken.
        Some(ri) => unsafe { addr_of_mut!((*ri.as_ptr()).llist) },
        None => ptr::null_mut(),
    }
}

impl TaskInstances for Kernel {
    type Kretprobe = Krp;
    type Instance = Instance;
    type Task = TaskList;
    type Probe = Kp;
    type Regs = *mut bindings::pt_regs;

    #[inline(always)]
    fn kprobes_initialized(&self) -> bool {
        // SAFETY: reads a boolean set once at init.
        unsafe { rkp_kprobes_initialized() }
    }
    #[inline(always)]
    fn current_task(&self) -> TaskList {
        // SAFETY: `current` is valid in any context that runs this.
        let head = unsafe { rkp_current_kretprobe_instances() };
        // INVARIANT: `current`'s list head.
        // SAFETY: the address of a member of `current` is never NULL.
        TaskList(unsafe { NonNull::new_unchecked(head) })
    }
    #[inline(always)]
    fn first_instance(&self, task: TaskList) -> Option<Instance> {
        // SAFETY: `task` is a live list head (type invariant).
        instance_of(unsafe { ptr::read_volatile(addr_of!((*task.0.as_ptr()).first)) })
    }
    #[inline(always)]
    fn set_first_instance(&self, task: TaskList, ri: Option<Instance>) {
        // SAFETY: as above; only this task (or the flusher of a dead one) writes it.
        unsafe { ptr::write_volatile(addr_of_mut!((*task.0.as_ptr()).first), node_of(ri)) };
    }
    #[inline(always)]
    fn next_instance(&self, ri: Instance) -> Option<Instance> {
        // SAFETY: `ri` is a live instance on a task list.
        instance_of(unsafe { ptr::read_volatile(addr_of!((*ri.as_ptr()).llist.next)) })
    }
    #[inline(always)]
    fn set_next_instance(&self, ri: Instance, next: Option<Instance>) {
        // SAFETY: as above.
        unsafe { ptr::write_volatile(addr_of_mut!((*ri.as_ptr()).llist.next), node_of(next)) };
    }
    #[inline(always)]
    fn ret_addr(&self, ri: Instance) -> usize {
        // SAFETY: `ri` live.
        unsafe { ptr::read_volatile(addr_of!((*ri.as_ptr()).ret_addr)) as usize }
    }
    #[inline(always)]
    fn set_ret_addr(&self, ri: Instance, addr: usize) {
        // SAFETY: `ri` live and owned by the returning task.
        unsafe { ptr::write_volatile(addr_of_mut!((*ri.as_ptr()).ret_addr), addr as *mut _) };
    }
    #[inline(always)]
    fn frame_pointer(&self, ri: Instance) -> usize {
        // SAFETY: `ri` live.
        unsafe { ptr::read_volatile(addr_of!((*ri.as_ptr()).fp)) as usize }
    }
    #[inline(always)]
    fn kretprobe_trampoline_addr(&self) -> usize {
        // SAFETY: returns a constant address.
        unsafe { rkp_kretprobe_trampoline_addr() }
    }
    #[inline(always)]
    fn get_kretprobe(&self, ri: Instance) -> Option<Krp> {
        // SAFETY: `ri` live; its holder outlives the pool's objects; `rph->rp` is read once
        // (rcu_dereference) and is live until the grace period after it is cleared, and we run
        // with preemption disabled.
        let rp = unsafe {
            let rph = ptr::read_volatile(addr_of!((*ri.as_ptr()).rph));
            ptr::read_volatile(addr_of!((*rph).rp))
        };
        // SAFETY: a non-NULL `rph->rp` is a registered kretprobe (see above).
        NonNull::new(rp).map(|rp| unsafe { Krp::from_raw(rp) })
    }
    #[inline(always)]
    fn kretprobe_probe(&self, rp: Krp) -> Kp {
        // SAFETY: `kp` is the first member of a live `struct kretprobe`, so non-NULL and live.
        unsafe { Kp::from_raw(NonNull::new_unchecked(addr_of_mut!((*rp.as_ptr()).kp))) }
    }
    #[inline(always)]
    fn has_return_handler(&self, rp: Krp) -> bool {
        // SAFETY: `rp` live.
        unsafe { ptr::read_volatile(addr_of!((*rp.as_ptr()).handler)).is_some() }
    }
    #[inline(always)]
    fn call_return_handler(&self, rp: Krp, ri: Instance, regs: *mut bindings::pt_regs) {
        // SAFETY: `rp` live; the handler is the owner's, called as C calls it.
        unsafe {
            if let Some(f) = ptr::read_volatile(addr_of!((*rp.as_ptr()).handler)) {
                f(ri.as_ptr(), regs);
            }
        }
    }
    #[inline(always)]
    fn kprobe_running(&self) -> Option<Kp> {
        // SAFETY: per-CPU read with preemption disabled.
        let p = unsafe { rkp_kprobe_running() };
        // SAFETY: the running probe stays live while it runs (it is this CPU's).
        NonNull::new(p).map(|p| unsafe { Kp::from_raw(p) })
    }
    #[inline(always)]
    fn set_current_kprobe(&self, p: Option<Kp>) {
        let p = p.map_or(ptr::null_mut(), Kp::as_ptr);
        // SAFETY: per-CPU write with preemption disabled.
        unsafe { set_current_kprobe(p) };
    }
    #[inline(always)]
    fn kprobe_busy_begin(&self) {
        // SAFETY: paired with kprobe_busy_end() by the caller.
        unsafe { bindings::kprobe_busy_begin() };
    }
    #[inline(always)]
    fn kprobe_busy_end(&self) {
        // SAFETY: after kprobe_busy_begin().
        unsafe { bindings::kprobe_busy_end() };
    }
    #[inline(always)]
    fn arch_prepare_kretprobe(&self, ri: Instance, regs: *mut bindings::pt_regs) {
        // SAFETY: `ri` is a fresh pool object; `regs` are the probe hit's.
        unsafe { bindings::arch_prepare_kretprobe(ri.as_ptr(), regs) };
    }
    #[inline(always)]
    fn instruction_pointer_set(&self, regs: *mut bindings::pt_regs, addr: usize) {
        // SAFETY: `regs` are the trampoline's saved registers.
        unsafe { rkp_instruction_pointer_set(regs, addr) };
    }
    #[inline(always)]
    fn arch_kretprobe_fixup_return(&self, regs: *mut bindings::pt_regs, addr: usize) {
        // SAFETY: as above.
        unsafe { bindings::arch_kretprobe_fixup_return(regs, addr as *mut _) };
    }
    #[inline(always)]
    fn pool_push(&self, rp: Krp, ri: Instance) {
        instance_recycle(rp, ri);
    }
    #[inline(always)]
    fn note_instance_back(&self, rp: Krp) {
        grow_note_put(rp);
    }
    #[inline(always)]
    fn drop_instance_rcu(&self, ri: Instance) {
        // SAFETY: `ri` is off every list and its `rcu` head is free; the callback only drops it
        // from its pool.
        unsafe { bindings::call_rcu(addr_of_mut!((*ri.as_ptr()).rcu), Some(free_rp_inst_rcu)) };
    }
    #[inline(always)]
    fn warn_frame_mismatch(&self) {
        // SAFETY: WARN_ON_ONCE(1) only.
        unsafe { rkp_warn_kretprobe_frame_mismatch() };
    }
}

nokprobe! {
    /// `__kretprobe_trampoline_handler()`: called by the arch trampoline (between
    /// `kprobe_busy_begin()` and `kprobe_busy_end()`) when a kretprobe'd function returns.
    ///
    /// # Safety
    ///
    /// `regs` are the returning function's registers, `frame_pointer` its frame, on `current`.
    #[no_mangle]
    pub unsafe extern "C" fn __kretprobe_trampoline_handler(
        regs: *mut bindings::pt_regs,
        frame_pointer: *mut c_void,
    ) -> c_ulong {
        match kretprobe::kretprobe_trampoline_handler(&KERNEL, regs, frame_pointer as usize) {
            Some(addr) => addr as c_ulong,
            // No instance: C says so and BUG()s; returning would jump to nowhere.
            // SAFETY: does not return.
            None => unsafe { rkp_kretprobe_ret_addr_bug() },
        }
    }
}

nokprobe! {
    /// `kretprobe_find_ret_addr()`: for the arch unwinders, the real return address of frame `fp`
    /// on `tsk`, resuming after `*cur`; 0 if none.
    ///
    /// # Safety
    ///
    /// `tsk` is `current` or a task that is not running; `cur` is NULL (a WARN) or points to a
    /// cursor that is NULL on the first call.
    #[no_mangle]
    pub unsafe extern "C" fn kretprobe_find_ret_addr(
        tsk: *mut c_void,
        fp: *mut c_void,
        cur: *mut *mut bindings::llist_node,
    ) -> c_ulong {
        if cur.is_null() {
            // SAFETY: WARN_ON_ONCE(1) only.
            unsafe { rkp_warn_kretprobe_no_cursor() };
            return 0;
        }
        // SAFETY: the address of a member of a valid task (the function's contract).
        let Some(head) = NonNull::new(unsafe { rkp_task_kretprobe_instances(tsk.cast()) }) else {
            return 0;
        };
        // INVARIANT: `tsk` is current or not running (the function's contract).
        let task = TaskList(head);
        // SAFETY: `cur` is valid (checked non-NULL; the function's contract).
        let mut c = instance_of(unsafe { ptr::read(cur) });
        let ret = kretprobe::kretprobe_find_ret_addr(&KERNEL, task, fp as usize, &mut c);
        // SAFETY: as above.
        unsafe { ptr::write(cur, node_of(c)) };
        ret as c_ulong
    }
}

nokprobe! {
    /// `kprobe_flush_task()`: called from `delayed_put_task_struct()` for a dead task, whose
    /// instances (functions that never returned) go back to their pools.
    ///
    /// # Safety
    ///
    /// `tk` is a dead task nobody else walks the list of.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_flush_task(tk: *mut c_void) {
        if tk.is_null() {
            return;
        }
        // SAFETY: the address of a member of a valid task (the function's contract).
        let Some(head) = NonNull::new(unsafe { rkp_task_kretprobe_instances(tk.cast()) }) else {
            return;
        };
        // INVARIANT: a dead task's list, flushed once.
        kretprobe::kprobe_flush_task(&KERNEL, TaskList(head));
    }
}
