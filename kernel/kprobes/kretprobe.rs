// SPDX-License-Identifier: GPL-2.0

//! Return probes (`CONFIG_KRETPROBES`): registration checks, the instance-pool rules on the
//! probe-hit path, and unregistration ordering.
//!
//! Constraints: [`pre_handler_kretprobe`] runs on the probe-hit path (no allocation, no lock, no
//! sleep; unprobeable in the kernel). The instance pool itself is the kernel's: a `rethook`
//! (`KRETPROBE_ON_RETHOOK`) or an `objpool` behind a `kretprobe_holder`, because the arch return
//! trampolines and `task_struct` own those nodes; the core sizes it up front at registration and
//! only applies C's rules through [`KretprobeStore`]. On the objpool path the per-task instance
//! lists and the return side (`__kretprobe_trampoline_handler()`, `kretprobe_find_ret_addr()`,
//! `kprobe_flush_task()`) are logic here too, through [`TaskInstances`]. `no_std`; does not name
//! the `kernel` crate.
//!
//! One deliberate difference: C dereferences a NULL pool when a never-registered kretprobe is
//! unregistered (contract 7.5); [`KretprobeStore::detach_instance_pool`] must tolerate that.

use super::arch::ArchHooks;
use super::errno::{Errno, Result};
use super::kretprobe_grow::{grow_cap, grow_target, next_chunk, GrowCounts};
use super::register::{
    kprobe_addr, register_all, register_kprobe, unregister_kprobe_bottom, unregister_tops,
    warn_kprobe_rereg, Platform,
};

/// `KRETPROBE_MAX_DATA_SIZE`.
pub const KRETPROBE_MAX_DATA_SIZE: usize = 4096;

/// `struct kretprobe` fields, its instance pool, and the return-hook primitives.
pub trait KretprobeStore: Platform {
    /// Handle to a `struct kretprobe`.
    type Kretprobe: Copy + Eq + core::fmt::Debug;
    /// Handle to a `struct kretprobe_instance`.
    type Instance: Copy;
    /// `CONFIG_KRETPROBES`: without it the API returns -EOPNOTSUPP or does nothing.
    const KRETPROBES: bool;

    /// `&rp->kp`.
    fn kretprobe_kp(&self, rp: Self::Kretprobe) -> Self::Probe;
    /// `rp->data_size`.
    fn data_size(&self, rp: Self::Kretprobe) -> usize;
    /// `rp->maxactive`.
    fn maxactive(&self, rp: Self::Kretprobe) -> i32;
    /// `rp->maxactive = n`.
    fn set_maxactive(&self, rp: Self::Kretprobe, n: i32);
    /// `rp->nmissed = 0`.
    fn reset_kretprobe_nmissed(&self, rp: Self::Kretprobe);
    /// `rp->nmissed++` (plain increment, hit path).
    fn inc_kretprobe_nmissed(&self, rp: Self::Kretprobe);
    /// `rp->kp.pre_handler = pre_handler_kretprobe; rp->kp.post_handler = NULL`; for a pool that
    /// may grow (`grows`), the pre-handler of [`pre_handler_kretprobe_grow`] instead.
    fn set_kretprobe_handlers(&self, rp: Self::Kretprobe, grows: bool);
    /// `num_possible_cpus()`.
    fn num_possible_cpus(&self) -> u32;

    /// Allocate `maxactive` instances of `sizeof(kretprobe_instance) + data_size` bytes; for a
    /// pool that may grow (`grows`), instances whose return calls [`instance_returned`].
    fn alloc_instance_pool(&self, rp: Self::Kretprobe, grows: bool) -> Result;
    /// Free the pool after a failed registration (`rethook_free` + NULL, or `free_rp_inst`).
    fn free_instance_pool(&self, rp: Self::Kretprobe);
    /// Under `kprobe_mutex`: detach in-flight instances (`rethook_free`, or `rph->rp = NULL`).
    fn detach_instance_pool(&self, rp: Self::Kretprobe);
    /// After the grace period: release the pool (`free_rp_inst` on the objpool path).
    fn release_instance_pool(&self, rp: Self::Kretprobe);

    /// `rethook_try_get()` / `objpool_pop()` of the first pool: `None` when it is empty.
    fn instance_try_get(&self, rp: Self::Kretprobe) -> Option<Self::Instance>;
    /// `rp->entry_handler(ri, regs)`, or 0 without an entry handler (one read of the field).
    fn call_entry_handler(&self, rp: Self::Kretprobe, ri: Self::Instance, regs: Self::Regs) -> i32;
    /// `rethook_recycle()` / `objpool_push()`: give an unused instance back.
    fn instance_recycle(&self, rp: Self::Kretprobe, ri: Self::Instance);
    /// `rethook_hook(rhn, regs, mcount)` / `arch_prepare_kretprobe()` + `__llist_add()`.
    fn instance_hook(
        &self,
        rp: Self::Kretprobe,
        ri: Self::Instance,
        regs: Self::Regs,
        mcount: bool,
    );

    // Growing pools (Rust only, `kretprobe_grow`): the defaults are a fixed pool, C's; those
    // called on the hit path are inlined into the unprobeable entry points.

    /// `rp->grow_max` (Rust only): the most instances the pool may grow to; 0 for a fixed pool.
    fn grow_max(&self, _rp: Self::Kretprobe) -> i32 {
        0
    }
    /// At registration, after [`KretprobeStore::alloc_instance_pool`]: the state of a pool that
    /// may grow to `cap`. The pool's free, detach and release then cover the extra pools too.
    fn grow_alloc(&self, _rp: Self::Kretprobe, _cap: u32) -> Result {
        Err(Errno::EOPNOTSUPP)
    }
    /// A growing pool's extra pools, tried in order once the first one is empty (hit path).
    #[inline(always)]
    fn grow_try_get(&self, _rp: Self::Kretprobe) -> Option<Self::Instance> {
        None
    }
    /// Notes (hit path) an instance of a growing pool taken (`taken`) or an entry that found
    /// every pool empty (`!taken`), and says whether to kick the worker: the in-flight count
    /// reached the pool's [`kick_from`] level, or a miss while there is room to grow. That is
    /// [`should_grow`] of the counts after the note (`kretprobe_grow`'s host tests show it), for
    /// one atomic add and one compare. Called only for a pool that may grow.
    ///
    /// [`kick_from`]: super::kretprobe_grow::kick_from
    /// [`should_grow`]: super::kretprobe_grow::should_grow
    #[inline(always)]
    fn grow_note_take(&self, _rp: Self::Kretprobe, _taken: bool) -> bool {
        false
    }
    /// Notes (hit or return path) that an instance of a growing pool went back.
    #[inline(always)]
    fn grow_note_put(&self, _rp: Self::Kretprobe) {}
    /// Asks for [`grow_work`] on the pool, from the hit path (any context, NMI included).
    #[inline(always)]
    fn grow_kick(&self, _rp: Self::Kretprobe) {}
    /// A growing pool's counts as they are (the worker); `None` for a fixed pool or one being
    /// unregistered.
    fn grow_counts(&self, _rp: Self::Kretprobe) -> Option<GrowCounts> {
        None
    }
    /// The worker: forgets `n` of the misses [`KretprobeStore::grow_counts`] showed it.
    fn grow_forget_wanted(&self, _rp: Self::Kretprobe, _n: u32) {}
    /// The worker: allocates `n` more instances and publishes them as one more pool; fails when
    /// the memory is not there or the kretprobe is being unregistered.
    fn grow_add_pool(&self, _rp: Self::Kretprobe, _n: u32) -> Result {
        Err(Errno::EOPNOTSUPP)
    }
}

/// The `maxactive` default: `max(10, 2 * num_possible_cpus())`.
pub fn default_maxactive(num_possible_cpus: u32) -> i32 {
    let n = num_possible_cpus.saturating_mul(2).max(10);
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `register_kretprobe()`.
pub fn register_kretprobe<A: KretprobeStore>(a: &A, rp: A::Kretprobe) -> Result {
    if !A::KRETPROBES {
        return Err(Errno::EOPNOTSUPP);
    }
    let kp = a.kretprobe_kp(rp);
    let addr = a.addr(kp);
    // kprobe_on_func_entry(), keeping the resolved address for the blacklist check (C resolves
    // the same inputs twice, with the same result).
    let (resolved, on_func_entry) = kprobe_addr(a, addr, a.symbol_name(kp), a.offset(kp) as usize)?;
    if !on_func_entry {
        return Err(Errno::EINVAL);
    }
    // Only when `kp.addr` was given can a re-registration be recognised this early.
    if addr != 0 {
        warn_kprobe_rereg(a, kp, true)?;
    }
    if A::Hooks::in_kretprobe_blacklist(a, resolved) {
        return Err(Errno::EINVAL);
    }
    if a.data_size(rp) > KRETPROBE_MAX_DATA_SIZE {
        return Err(Errno::E2BIG);
    }
    if a.maxactive(rp) <= 0 {
        a.set_maxactive(rp, default_maxactive(a.num_possible_cpus()));
    }
    let cap = grow_cap(a.maxactive(rp), a.grow_max(rp))?;
    a.set_kretprobe_handlers(rp, cap.is_some());
    a.alloc_instance_pool(rp, cap.is_some())?;
    if let Some(cap) = cap {
        if let Err(e) = a.grow_alloc(rp, cap) {
            a.free_instance_pool(rp);
            return Err(e);
        }
    }
    a.reset_kretprobe_nmissed(rp);
    let ret = register_kprobe(a, kp);
    if ret.is_err() {
        a.free_instance_pool(rp);
    }
    ret
}

/// `register_kretprobes()`: all or nothing; a `None` entry (a NULL in the caller's array) fails
/// with -EINVAL as in [`crate::register::register_kprobes`].
pub fn register_kretprobes<A: KretprobeStore, R: Copy + Into<Option<A::Kretprobe>>>(
    a: &A,
    rps: &[R],
) -> Result {
    if !A::KRETPROBES {
        return Err(Errno::EOPNOTSUPP);
    }
    if rps.is_empty() {
        return Err(Errno::EINVAL);
    }
    let name_of = |i: usize| {
        rps[i]
            .into()
            .and_then(|rp| a.symbol_name(a.kretprobe_kp(rp)))
    };
    let addr_of = |i: usize| rps[i].into().map_or(0, |rp| a.addr(a.kretprobe_kp(rp)));
    a.with_symbol_batch(rps.len(), name_of, addr_of, |a| {
        register_all(
            rps,
            |rp| register_kretprobe(a, rp),
            |done| unregister_kretprobes(a, done),
        )
    })
}

/// `unregister_kretprobes()`: tops and pool detach under the mutex, one grace period, bottoms.
/// A `None` entry (a NULL in the caller's array) is skipped.
pub fn unregister_kretprobes<A: KretprobeStore, R: Copy + Into<Option<A::Kretprobe>>>(
    a: &A,
    rps: &[R],
) {
    if !A::KRETPROBES || rps.is_empty() {
        return;
    }
    unregister_tops(
        a,
        &mut a.kprobe_mutex(),
        rps,
        |rp| rp.into().map(|rp| a.kretprobe_kp(rp)),
        |rp| {
            if let Some(rp) = rp.into() {
                a.detach_instance_pool(rp);
            }
        },
    );
    a.synchronize_rcu();
    a.with_slot_free_batch(rps.len(), || {
        for rp in rps.iter().filter_map(|&rp| rp.into()) {
            let kp = a.kretprobe_kp(rp);
            if a.addr(kp) != 0 {
                unregister_kprobe_bottom(a, kp);
                a.release_instance_pool(rp);
            }
        }
    });
}

/// `unregister_kretprobe()`.
pub fn unregister_kretprobe<A: KretprobeStore>(a: &A, rp: A::Kretprobe) {
    unregister_kretprobes(a, &[rp]);
}

/// `pre_handler_kretprobe()`: take an instance, run the entry handler, hook the return.
///
/// Always returns 0 (the single-step is never skipped). An empty pool counts in `rp->nmissed`;
/// a non-zero entry handler gives the instance back and installs no return hook. This is the
/// pre-handler of a fixed pool, C's, and reads nothing C does not: growing pools have
/// [`pre_handler_kretprobe_grow`].
#[inline(always)]
pub fn pre_handler_kretprobe<A: KretprobeStore>(a: &A, rp: A::Kretprobe, regs: A::Regs) -> i32 {
    pre_handler::<A, false>(a, rp, regs)
}

/// The pre-handler of a pool that may grow: as [`pre_handler_kretprobe`], trying the extra
/// pools when the first is empty, counting the instances in flight, and kicking the worker when
/// the pools run low.
#[inline(always)]
pub fn pre_handler_kretprobe_grow<A: KretprobeStore>(
    a: &A,
    rp: A::Kretprobe,
    regs: A::Regs,
) -> i32 {
    pre_handler::<A, true>(a, rp, regs)
}

#[inline(always)]
fn pre_handler<A: KretprobeStore, const GROW: bool>(a: &A, rp: A::Kretprobe, regs: A::Regs) -> i32 {
    let mut ri = a.instance_try_get(rp);
    if GROW {
        if ri.is_none() {
            ri = a.grow_try_get(rp);
        }
        if a.grow_note_take(rp, ri.is_some()) {
            a.grow_kick(rp);
        }
    }
    let Some(ri) = ri else {
        a.inc_kretprobe_nmissed(rp);
        return 0;
    };
    if a.call_entry_handler(rp, ri, regs) != 0 {
        a.instance_recycle(rp, ri);
        if GROW {
            a.grow_note_put(rp);
        }
    } else {
        let mcount = super::store::flags_ftrace(a.flags(a.kretprobe_kp(rp)));
        a.instance_hook(rp, ri, regs, mcount);
    }
    0
}

/// The return path of a growing pool on the rethook path: an instance hooked by
/// [`pre_handler_kretprobe_grow`] came back (its function returned and the return handler ran).
/// A fixed pool's return handler does not call it. The objpool path notes it in
/// [`recycle_rp_inst`].
#[inline(always)]
pub fn instance_returned<A: KretprobeStore>(a: &A, rp: A::Kretprobe) {
    a.grow_note_put(rp);
}

/// The worker of a growing pool: adds a chunk towards [`grow_target`], then looks at the
/// counts again, until the pools reach the target of what it last saw (process context, may
/// sleep, no lock of the core held). Looking again after each chunk keeps up with a burst whose
/// callers kept entering while the chunk was allocated. At most [`GROW_MAX_POOLS`] chunks are
/// ever added, so the loop ends. A chunk that cannot be allocated ends the work; the next miss
/// kicks it again.
///
/// [`GROW_MAX_POOLS`]: super::kretprobe_grow::GROW_MAX_POOLS
pub fn grow_work<A: KretprobeStore>(a: &A, rp: A::Kretprobe) {
    while let Some(c) = a.grow_counts(rp) {
        let target = grow_target(&c);
        let n = if c.total < target {
            next_chunk(&c, target)
        } else {
            0
        };
        // The misses seen are in the target now (or the pools are at the cap): forget them.
        a.grow_forget_wanted(rp, c.wanted);
        if n == 0 || a.grow_add_pool(rp, n).is_err() {
            return;
        }
    }
}

/// The objpool path's per-task instance lists (`!KRETPROBE_ON_RETHOOK`, arm64).
///
/// There the pool is a `kretprobe_holder` and an instance in flight sits on its task's
/// `kretprobe_instances` list (newest first) until the probed function returns through the arch
/// trampoline, which calls [`kretprobe_trampoline_handler`]. The list is only touched by its
/// own task, or by [`kprobe_flush_task`] once the task is dead, so the plain `__llist_*` field
/// accesses below need no atomics. Every method runs on the probe-hit or function-return path:
/// no allocation, no lock, no sleep.
pub trait TaskInstances {
    /// Handle to a `struct kretprobe`.
    type Kretprobe: Copy;
    /// Handle to a `struct kretprobe_instance`.
    type Instance: Copy + PartialEq;
    /// Handle to a task's `kretprobe_instances` list head.
    type Task: Copy;
    /// Handle to a `struct kprobe`.
    type Probe: Copy;
    /// `struct pt_regs *`.
    type Regs: Copy;

    /// `kprobes_initialized`.
    fn kprobes_initialized(&self) -> bool;
    /// `current`'s list.
    fn current_task(&self) -> Self::Task;
    /// `tsk->kretprobe_instances.first`.
    fn first_instance(&self, task: Self::Task) -> Option<Self::Instance>;
    /// `tsk->kretprobe_instances.first = ri`.
    fn set_first_instance(&self, task: Self::Task, ri: Option<Self::Instance>);
    /// `ri->llist.next`.
    fn next_instance(&self, ri: Self::Instance) -> Option<Self::Instance>;
    /// `ri->llist.next = next`.
    fn set_next_instance(&self, ri: Self::Instance, next: Option<Self::Instance>);
    /// `ri->ret_addr`.
    fn ret_addr(&self, ri: Self::Instance) -> usize;
    /// `ri->ret_addr = addr`.
    fn set_ret_addr(&self, ri: Self::Instance, addr: usize);
    /// `ri->fp`.
    fn frame_pointer(&self, ri: Self::Instance) -> usize;
    /// `kretprobe_trampoline_addr()`.
    fn kretprobe_trampoline_addr(&self) -> usize;
    /// `get_kretprobe(ri)`: `ri->rph->rp` under RCU, `None` once the kretprobe is unregistered.
    fn get_kretprobe(&self, ri: Self::Instance) -> Option<Self::Kretprobe>;
    /// `&rp->kp`.
    fn kretprobe_probe(&self, rp: Self::Kretprobe) -> Self::Probe;
    /// `rp->handler != NULL`.
    fn has_return_handler(&self, rp: Self::Kretprobe) -> bool;
    /// `rp->handler(ri, regs)`.
    fn call_return_handler(&self, rp: Self::Kretprobe, ri: Self::Instance, regs: Self::Regs);
    /// `kprobe_running()`.
    fn kprobe_running(&self) -> Option<Self::Probe>;
    /// `__this_cpu_write(current_kprobe, p)`.
    fn set_current_kprobe(&self, p: Option<Self::Probe>);
    /// `kprobe_busy_begin()`.
    fn kprobe_busy_begin(&self);
    /// `kprobe_busy_end()`.
    fn kprobe_busy_end(&self);
    /// `arch_prepare_kretprobe(ri, regs)`: save the return address and frame, divert the return.
    fn arch_prepare_kretprobe(&self, ri: Self::Instance, regs: Self::Regs);
    /// `instruction_pointer_set(regs, addr)`.
    fn instruction_pointer_set(&self, regs: Self::Regs, addr: usize);
    /// `arch_kretprobe_fixup_return(regs, addr)`.
    fn arch_kretprobe_fixup_return(&self, regs: Self::Regs, addr: usize);
    /// `objpool_push(ri, &rp->rph->pool)`: back to the pool `ri` came from (`ri->rph`'s; an
    /// extra pool of a growing kretprobe has a holder of its own).
    fn pool_push(&self, rp: Self::Kretprobe, ri: Self::Instance);
    /// [`KretprobeStore::grow_note_put`]: an instance of a growing pool went back; nothing for a
    /// fixed pool.
    fn note_instance_back(&self, rp: Self::Kretprobe);
    /// `call_rcu(&ri->rcu, free_rp_inst_rcu)`: drop `ri` from its orphaned pool after a grace
    /// period.
    fn drop_instance_rcu(&self, ri: Self::Instance);
    /// `WARN_ON_ONCE()` for an instance whose frame is not the returning one.
    fn warn_frame_mismatch(&self);
}

/// The hook half of `pre_handler_kretprobe()` on the objpool path: `arch_prepare_kretprobe()`,
/// then `__llist_add(&ri->llist, &current->kretprobe_instances)`.
#[inline(always)]
pub fn hook_instance<A: TaskInstances>(a: &A, ri: A::Instance, regs: A::Regs) {
    a.arch_prepare_kretprobe(ri, regs);
    let task = a.current_task();
    a.set_next_instance(ri, a.first_instance(task));
    a.set_first_instance(task, Some(ri));
}

/// `recycle_rp_inst()`: back to the pool, or, when the kretprobe is gone, freed after a grace
/// period (an orphaned pool goes when its last object is dropped). A growing pool counts it back
/// only while the kretprobe is there: its counts go with it.
#[inline(always)]
pub fn recycle_rp_inst<A: TaskInstances>(a: &A, ri: A::Instance) {
    match a.get_kretprobe(ri) {
        Some(rp) => {
            a.note_instance_back(rp);
            a.pool_push(rp, ri);
        }
        None => a.drop_instance_rcu(ri),
    }
}

/// `kprobe_flush_task()`: a dead task's instances (functions that never returned) are recycled.
pub fn kprobe_flush_task<A: TaskInstances>(a: &A, task: A::Task) {
    if !a.kprobes_initialized() {
        return;
    }
    a.kprobe_busy_begin();
    let mut node = a.first_instance(task);
    a.set_first_instance(task, None);
    while let Some(ri) = node {
        node = a.next_instance(ri);
        recycle_rp_inst(a, ri);
    }
    a.kprobe_busy_end();
}

/// `__kretprobe_find_ret_addr()`: the next real return address on `task`'s list after `*cur`
/// (from the top when `None`), leaving `*cur` at its instance; 0 when there is none.
///
/// Instances whose saved address is the trampoline itself (a kretprobe'd function called from
/// the trampoline path) are skipped.
#[inline(always)]
pub fn find_ret_addr<A: TaskInstances>(
    a: &A,
    task: A::Task,
    cur: &mut Option<A::Instance>,
) -> usize {
    let trampoline = a.kretprobe_trampoline_addr();
    let mut node = match *cur {
        None => a.first_instance(task),
        Some(c) => a.next_instance(c),
    };
    while let Some(ri) = node {
        let ret = a.ret_addr(ri);
        if ret != trampoline {
            *cur = Some(ri);
            return ret;
        }
        node = a.next_instance(ri);
    }
    0
}

/// `kretprobe_find_ret_addr()`: the real return address of the frame `fp` on `task`, 0 if none.
///
/// The unwinders call it repeatedly with the same cursor, one frame at a time.
pub fn kretprobe_find_ret_addr<A: TaskInstances>(
    a: &A,
    task: A::Task,
    fp: usize,
    cur: &mut Option<A::Instance>,
) -> usize {
    loop {
        let ret = find_ret_addr(a, task, cur);
        match *cur {
            Some(ri) if ret != 0 && a.frame_pointer(ri) != fp => continue,
            _ => return ret,
        }
    }
}

/// `__kretprobe_trampoline_handler()`: a kretprobe'd function returned to the trampoline.
///
/// Runs the return handler of every instance of this frame (newest first, with `current_kprobe`
/// set to its probe and `ri->ret_addr` to the real return address), lets the arch fix the
/// return, unlinks the frame's instances and recycles them. Returns the real return address, or
/// `None` when `current` has no instance with one: a kernel bug, upon which C BUG()s, so the
/// caller must not continue; nothing was changed in that case.
pub fn kretprobe_trampoline_handler<A: TaskInstances>(
    a: &A,
    regs: A::Regs,
    frame_pointer: usize,
) -> Option<usize> {
    let task = a.current_task();
    let mut last = None;
    let correct_ret_addr = find_ret_addr(a, task, &mut last);
    let last = last.filter(|_| correct_ret_addr != 0)?;

    // A stack trace taken by the handler starts from the real return address.
    a.instruction_pointer_set(regs, correct_ret_addr);

    let mut node = a.first_instance(task);
    while let Some(ri) = node {
        if a.frame_pointer(ri) != frame_pointer {
            a.warn_frame_mismatch();
            break;
        }
        if let Some(rp) = a.get_kretprobe(ri) {
            if a.has_return_handler(rp) {
                let prev = a.kprobe_running();
                a.set_current_kprobe(Some(a.kretprobe_probe(rp)));
                a.set_ret_addr(ri, correct_ret_addr);
                a.call_return_handler(rp, ri, regs);
                a.set_current_kprobe(prev);
            }
        }
        if ri == last {
            break;
        }
        node = a.next_instance(ri);
    }

    a.arch_kretprobe_fixup_return(regs, correct_ret_addr);

    let mut node = a.first_instance(task);
    a.set_first_instance(task, a.next_instance(last));
    a.set_next_instance(last, None);
    while let Some(ri) = node {
        node = a.next_instance(ri);
        recycle_rp_inst(a, ri);
    }
    Some(correct_ret_addr)
}
