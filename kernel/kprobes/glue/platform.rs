// SPDX-License-Identifier: GPL-2.0

//! The kernel's implementation of the core's platform traits: [`Kernel`] is [`ProbeStore`],
//! [`KernelText`] and [`BlacklistStore`], and it is [`Arch`] with the arch this build selects
//! ([`SelectedArch`]: the `CArch` bridge to upstream's C arch code, or the native Rust arch).
//!
//! Constraints: every probe handle ([`Kp`]) points to a live `struct kprobe` (a caller's probe
//! for the duration of the API call that passed it, a hashed probe while it is reachable, or an
//! aggregate the core allocated and has not freed); fields C may touch concurrently are read and
//! written with volatile (READ_ONCE/WRITE_ONCE) accesses and never through `&mut`. The RCU
//! iterators and field accessors are called on the probe-hit path: no allocation, no lock, and
//! `#[inline(always)]` so they compile into the unprobeable entry points of [`super::exports`].
//! `kprobe_mutex`, the table and the optimizer queues are C statics in `kprobes_helpers.c`.

use core::cell::UnsafeCell;
use core::ffi::CStr;
use core::mem::offset_of;
use core::mem::MaybeUninit;
use core::ops::{ControlFlow, Deref, DerefMut};
use core::ptr::{self, addr_of, addr_of_mut, NonNull};
use core::slice;

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::bindings;
use kernel::sync::lock::{mutex::MutexBackend, Guard, Lock};

#[cfg(CONFIG_KPROBES_ON_FTRACE)]
use super::ftrace_batch;
use super::helpers::*;
use super::list;
use crate::arch::Arch;
use crate::blacklist::BlacklistStore;
use crate::errno::{from_c_ret, Result};
use crate::report::{Message, Report, WarnSite};
use crate::store::{KprobeState, OptQueue, ProbeStore, KPROBE_TABLE_SIZE};
#[cfg(CONFIG_KPROBES_ON_FTRACE)]
use crate::text::ProbeFields;
use crate::text::{FtraceOps, KernelText, Ksym, KSYM_NAME_LEN};

/// Handle to a `struct kprobe`.
///
/// # Invariants
///
/// The pointer refers to a live `struct kprobe` for as long as the core uses the handle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Kp(NonNull<bindings::kprobe>);

impl Kp {
    /// Wraps a pointer received from C.
    ///
    /// # Safety
    ///
    /// `p` must point to a `struct kprobe` that stays valid while the handle is used: a
    /// caller's probe for the duration of the kprobes API call that received it, or a hashed
    /// probe inside an RCU read-side section or under `kprobe_mutex`.
    #[inline(always)]
    pub unsafe fn from_raw(p: NonNull<bindings::kprobe>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Kp(p)
    }

    /// The raw pointer, for C.
    #[inline(always)]
    pub fn as_ptr(self) -> *mut bindings::kprobe {
        self.0.as_ptr()
    }

    /// `&p->hlist` (only the address is formed).
    #[inline(always)]
    fn hlist(self) -> *mut bindings::hlist_node {
        // SAFETY: the probe is live (type invariant).
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).hlist) }
    }

    /// `&p->list` (only the address is formed).
    #[inline(always)]
    fn list(self) -> *mut bindings::list_head {
        // SAFETY: the probe is live (type invariant).
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).list) }
    }

    #[inline(always)]
    fn from_c(p: *mut bindings::kprobe) -> Option<Self> {
        // SAFETY: every non-NULL pointer the C wrappers return is a live hashed probe, child or
        // queued aggregate, under the same RCU section or lock as the walk that asked for it.
        NonNull::new(p).map(|p| unsafe { Kp::from_raw(p) })
    }
}

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

/// `container_of(ap, struct optimized_kprobe, kp)`: the arch hooks take the optimized probe.
///
/// Only the address is computed; the callers' contract is that `ap` is an aggregate, and with
/// OPTPROBES every aggregate is allocated as a `struct optimized_kprobe`
/// (`rkp_alloc_aggr_kprobe`).
#[cfg(CONFIG_OPTPROBES)]
#[inline(always)]
pub(crate) fn to_op(ap: Kp) -> *mut bindings::optimized_kprobe {
    ap.as_ptr()
        .wrapping_byte_sub(offset_of!(bindings::optimized_kprobe, kp))
        .cast()
}

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
    fn lock() -> Self {
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

// kprobes_helpers.c: one function per WARN site (each keeps its own once-flag), the messages,
// the lockdep assertions (defined with CONFIG_LOCKDEP only) and the init steps.

/// Emits C's WARN for `site` (a splat in the log, once per site where C warns once).
pub(super) fn warn(site: WarnSite) {
    // SAFETY: each helper only WARNs (and formats its two scalars); any context.
    unsafe {
        match site {
            WarnSite::GetInsnSlot => rkp_warn___get_insn_slot(),
            WarnSite::FreeInsnSlot => rkp_warn___free_insn_slot(),
            WarnSite::DoFreeCleanedKprobes => rkp_warn_do_free_cleaned_kprobes(),
            WarnSite::OptimizeKprobe => rkp_warn_optimize_kprobe(),
            WarnSite::ReuseUnusedKprobe => rkp_warn_reuse_unused_kprobe(),
            WarnSite::DisarmKprobeFtraceUnregister { err } => {
                rkp_warn___disarm_kprobe_ftrace(true, 0, err)
            }
            WarnSite::DisarmKprobeFtraceFilter { addr, err } => {
                rkp_warn___disarm_kprobe_ftrace(false, addr, err)
            }
            WarnSite::WarnKprobeRereg { kretprobe } => rkp_warn_warn_kprobe_rereg(kretprobe),
            WarnSite::UnregisterKprobeTop => rkp_warn___unregister_kprobe_top(),
            WarnSite::FtraceBatchLeftover { err } => rkp_warn_ftrace_batch_leftover(err),
        }
    }
}

/// Logs C's `kprobes: ` message `msg`.
pub(super) fn message(msg: Message) {
    // SAFETY: each helper only formats its scalars into a printk; process context.
    unsafe {
        match msg {
            Message::PopulateBlacklistFailed(err) => rkp_pr_populate_blacklist_failed(err),
            Message::OptimizationEnabled => rkp_pr_optimization(true),
            Message::OptimizationDisabled => rkp_pr_optimization(false),
            Message::GloballyEnabled => rkp_pr_globally(true, 0, 0),
            Message::GloballyEnabledPartly { errors, total } => {
                rkp_pr_globally(true, errors, total)
            }
            Message::GloballyDisabled => rkp_pr_globally(false, 0, 0),
            Message::GloballyDisabledPartly { errors, total } => {
                rkp_pr_globally(false, errors, total)
            }
        }
    }
}

/// The kernel platform (a unit type; all state lives in C statics and [`STATE`]).
pub struct Kernel;

/// The one instance.
pub static KERNEL: Kernel = Kernel;

/// The index of `ops` in `rkp_ftrace_ops()` (kprobes_helpers.c).
#[cfg(CONFIG_KPROBES_ON_FTRACE)]
pub(super) fn ftrace_ops_id(ops: FtraceOps) -> i32 {
    match ops {
        FtraceOps::Plain => 0,
        FtraceOps::Ipmodify => 1,
    }
}

#[cfg(CONFIG_OPTPROBES)]
fn queue_id(q: OptQueue) -> i32 {
    match q {
        OptQueue::Optimizing => 0,
        OptQueue::Unoptimizing => 1,
        OptQueue::Freeing => 2,
    }
}

/// Copies `name` and a NUL into `buf` (not zeroed first: only those bytes are read); `None` if
/// it does not fit or holds a NUL (no such kernel symbol).
/// The bytes of a C string before its NUL, measured with the kernel's `strlen()`.
///
/// Used on the probe-hit path (`dump_kprobe()`), which has no panic path: `CStr::from_ptr()`
/// adds 1 to the length with an overflow check.
///
/// # Safety
///
/// `s` is a NUL-terminated string that stays valid and unchanged for `'a`.
#[inline(always)]
unsafe fn c_str_bytes<'a>(s: *const u8) -> &'a [u8] {
    // SAFETY: the `strlen(s)` bytes before the NUL are initialised and live for `'a`.
    unsafe { slice::from_raw_parts(s, bindings::strlen(s.cast())) }
}

pub(super) fn c_name<'a>(
    name: &[u8],
    buf: &'a mut MaybeUninit<[u8; KSYM_NAME_LEN]>,
) -> Option<&'a CStr> {
    if name.len() >= KSYM_NAME_LEN || name.contains(&0) {
        return None;
    }
    let p = buf.as_mut_ptr().cast::<u8>();
    // SAFETY: `name.len() + 1 <= KSYM_NAME_LEN` bytes are written inside `buf` and only they
    // are borrowed; the last is the only NUL among them (checked above).
    unsafe {
        ptr::copy_nonoverlapping(name.as_ptr(), p, name.len());
        p.add(name.len()).write(0);
        Some(CStr::from_bytes_with_nul_unchecked(slice::from_raw_parts(
            p,
            name.len() + 1,
        )))
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
        // SAFETY: `p` is live; a plain increment, as C's `p->nmissed++`.
        unsafe {
            let f = addr_of_mut!((*p.as_ptr()).nmissed);
            ptr::write_volatile(f, ptr::read_volatile(f).wrapping_add(1));
        }
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
        pre.map(|f| f as usize) == super::exports::pre_handler_kretprobe_addr()
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

    fn alloc_aggr_kprobe(&self, addr: usize) -> Option<Kp> {
        // SAFETY: allocates and initialises a fresh aggregate; process context.
        Kp::from_c(unsafe { rkp_alloc_aggr_kprobe(addr as *mut _) })
    }
    fn kfree_aggr_kprobe(&self, ap: Kp) {
        // The allocation is the optimized_kprobe around `ap` with OPTPROBES, `ap` without.
        #[cfg(CONFIG_OPTPROBES)]
        let obj = to_op(ap).cast::<core::ffi::c_void>();
        #[cfg(not(CONFIG_OPTPROBES))]
        let obj = ap.as_ptr().cast::<core::ffi::c_void>();
        // SAFETY: `ap` came from `alloc_aggr_kprobe` and is unreachable (the core's contract).
        unsafe { bindings::kfree(obj) };
    }
    fn set_aggr_pre_handler(&self, ap: Kp) {
        // SAFETY: `ap` is live and ours.
        unsafe {
            ptr::write_volatile(
                addr_of_mut!((*ap.as_ptr()).pre_handler),
                Some(super::exports::aggr_pre_handler),
            )
        };
    }
    fn set_aggr_post_handler(&self, ap: Kp, on: bool) {
        let h: bindings::kprobe_post_handler_t = if on {
            Some(super::exports::aggr_post_handler)
        } else {
            None
        };
        // SAFETY: `ap` is live and ours.
        unsafe { ptr::write_volatile(addr_of_mut!((*ap.as_ptr()).post_handler), h) };
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
    fn list_add_rcu(&self, p: Kp, ap: Kp) {
        // SAFETY: kprobe_mutex held; both live, `p` on no list, `ap`'s list initialised.
        unsafe { list::list_add_rcu(p.list(), ap.list()) };
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
    fn for_each_child(&self, ap: Kp, mut f: impl FnMut(Kp) -> ControlFlow<()>) -> ControlFlow<()> {
        // `list_for_each_entry_rcu(kp, &ap->list, list)` written out.
        // SAFETY: `ap` is a live aggregate (type invariant); RCU reader or kprobe_mutex held.
        let head = unsafe { addr_of_mut!((*ap.as_ptr()).list) };
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
    fn op_list_empty(&self, ap: Kp) -> bool {
        // list_empty(&op->list).
        // SAFETY: `ap` is an optimized_kprobe (all aggregates are, with OPTPROBES), so `to_op`
        // gives a live one; only the member's address is formed, then READ_ONCE of its `next`.
        unsafe {
            let list = ptr::addr_of_mut!((*to_op(ap)).list);
            ptr::read_volatile(addr_of!((*list).next)) == list
        }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn op_list_empty(&self, _ap: Kp) -> bool {
        true
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_add(&self, ap: Kp, q: OptQueue) {
        // SAFETY: kprobe_mutex held; `ap` an optimized_kprobe not on a queue.
        unsafe { rkp_queue_add(ap.as_ptr(), queue_id(q)) };
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_add(&self, _ap: Kp, _q: OptQueue) {}
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_del_init(&self, ap: Kp) {
        // SAFETY: kprobe_mutex held.
        unsafe { rkp_queue_del_init(ap.as_ptr()) };
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_del_init(&self, _ap: Kp) {}
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_move(&self, ap: Kp, q: OptQueue) {
        // SAFETY: kprobe_mutex held.
        unsafe { rkp_queue_move(ap.as_ptr(), queue_id(q)) };
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_move(&self, _ap: Kp, _q: OptQueue) {}
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
    fn queue_contains(&self, q: OptQueue, ap: Kp) -> bool {
        // SAFETY: kprobe_mutex held.
        unsafe { rkp_queue_contains(queue_id(q), ap.as_ptr()) }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_contains(&self, _q: OptQueue, _ap: Kp) -> bool {
        false
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn queue_for_each_safe(&self, q: OptQueue, mut f: impl FnMut(Kp)) {
        let q = queue_id(q);
        // SAFETY: kprobe_mutex held; the next entry is read before `f` may move the current one
        // (list_for_each_entry_safe).
        let mut cur = Kp::from_c(unsafe { rkp_queue_next(q, ptr::null_mut()) });
        while let Some(op) = cur {
            // SAFETY: as above.
            let next = Kp::from_c(unsafe { rkp_queue_next(q, op.as_ptr()) });
            f(op);
            cur = next;
        }
    }
    #[cfg(not(CONFIG_OPTPROBES))]
    fn queue_for_each_safe(&self, _q: OptQueue, _f: impl FnMut(Kp)) {}
}

/// Handle to a `struct module`.
///
/// # Invariants
///
/// The module is pinned (a reference held, or its notifier running) while the handle is used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Module(NonNull<bindings::module>);

impl Module {
    /// Wraps a module pointer.
    ///
    /// # Safety
    ///
    /// The module must stay alive while the handle is used.
    pub unsafe fn from_raw(m: NonNull<bindings::module>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Module(m)
    }

    /// `within_module_mem_type()` (`addr - base < size`) for any of `types`: C's
    /// `within_module_init()` and `within_module_core()` loop over a class of them.
    ///
    /// The descriptors are read, never borrowed: `do_init_module()` clears those of the init
    /// memory (`base`, `size`) while it frees it, with no lock the core holds, so a registration
    /// or a notifier can read them during that write. C reads them plainly; here each field is
    /// one volatile (`READ_ONCE()`) load, and no reference to the `struct module_memory` is
    /// formed.
    #[cfg(CONFIG_MODULES)]
    fn within_mem(self, addr: usize, types: &[bindings::mod_mem_type]) -> bool {
        let m = self.0.as_ptr();
        types.iter().any(|&t| {
            let i = t as usize;
            if i >= bindings::mod_mem_type_MOD_MEM_NUM_TYPES as usize {
                return false;
            }
            // SAFETY: the module is pinned (type invariant), so its `mem` array is live; `i` is
            // in bounds (checked above) and only the element's address is formed.
            let mem = unsafe { addr_of!((*m).mem).cast::<bindings::module_memory>().add(i) };
            // SAFETY: `mem` points into the live array; word-sized volatile loads of fields
            // that may be rewritten concurrently (see above), as READ_ONCE().
            let (base, size) = unsafe {
                (
                    ptr::read_volatile(addr_of!((*mem).base)) as usize,
                    ptr::read_volatile(addr_of!((*mem).size)) as usize,
                )
            };
            addr.wrapping_sub(base) < size
        })
    }
}

/// The registration batch's answers (`glue/symbatch.rs`), where the kernel has them.
#[cfg(all(CONFIG_MODULES, CONFIG_KALLSYMS, not(CONFIG_HAVE_FUNCTION_DESCRIPTORS)))]
use super::symbatch;

/// Without modules (or with function descriptors) a batch has nothing to index.
#[cfg(not(all(CONFIG_MODULES, CONFIG_KALLSYMS, not(CONFIG_HAVE_FUNCTION_DESCRIPTORS))))]
mod symbatch {
    pub(super) fn run<'a, R>(
        _n: usize,
        _name_of: impl Fn(usize) -> Option<&'a [u8]>,
        f: impl FnOnce() -> R,
    ) -> R {
        f()
    }
    pub(super) fn lookup_name(_name: &[u8]) -> Option<usize> {
        None
    }
    pub(super) fn lookup_size_offset(_addr: usize) -> Option<(usize, usize)> {
        None
    }
    pub(super) fn with_symbol_name<R, F: FnOnce(Option<&[u8]>) -> R>(
        _addr: usize,
        f: F,
    ) -> Result<R, F> {
        Err(f)
    }
    #[cfg(CONFIG_DYNAMIC_FTRACE)]
    pub(super) fn ftrace_location(_addr: usize) -> Option<usize> {
        None
    }
}

impl KernelText for Kernel {
    type Module = Module;

    fn with_symbol_batch<'a, R>(
        &'a self,
        n: usize,
        name_of: impl Fn(usize) -> Option<&'a [u8]>,
        f: impl FnOnce() -> R,
    ) -> R {
        symbatch::run(n, name_of, f)
    }
    fn kallsyms_lookup_name(&self, name: &[u8]) -> usize {
        if let Some(addr) = symbatch::lookup_name(name) {
            return addr;
        }
        let mut buf = MaybeUninit::uninit();
        let Some(c) = c_name(name, &mut buf) else {
            return 0;
        };
        // SAFETY: `c` is a NUL-terminated string on our stack.
        unsafe { bindings::kallsyms_lookup_name(c.as_ptr().cast()) as usize }
    }
    fn kallsyms_lookup_size_offset(&self, addr: usize) -> Option<(usize, usize)> {
        if let Some(answer) = symbatch::lookup_size_offset(addr) {
            return Some(answer);
        }
        let (mut size, mut offset) = (0, 0);
        // SAFETY: out-pointers to locals.
        let ok =
            unsafe { bindings::kallsyms_lookup_size_offset(addr as _, &mut size, &mut offset) };
        (ok != 0).then_some((size as usize, offset as usize))
    }
    fn kallsyms_lookup<R>(&self, addr: usize, f: impl FnOnce(Option<Ksym<'_>>) -> R) -> R {
        // Not zeroed: C writes the name and its NUL, and only they are read.
        let mut buf = MaybeUninit::<[u8; KSYM_NAME_LEN]>::uninit();
        let (mut size, mut offset) = (0, 0);
        let mut modname = ptr::null_mut();
        // SAFETY: out-pointers to locals; `buf` is KSYM_NAME_LEN long. The module name stays
        // valid while the caller keeps the module from going (preemption disabled or module
        // mutex), as for C's callers.
        let sym = unsafe {
            let name = bindings::kallsyms_lookup(
                addr as _,
                &mut size,
                &mut offset,
                &mut modname,
                buf.as_mut_ptr().cast(),
            );
            (!name.is_null()).then(|| Ksym {
                name: c_str_bytes(name.cast()),
                offset: offset as usize,
                size: size as usize,
                module: (!modname.is_null()).then(|| c_str_bytes(modname.cast())),
            })
        };
        f(sym)
    }
    fn lookup_symbol_name<R>(&self, addr: usize, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        let f = match symbatch::with_symbol_name(addr, f) {
            Ok(r) => return r,
            Err(f) => f,
        };
        // Not zeroed, as C's is not (a 512-byte memset twice per registration): only the bytes
        // up to the name's NUL, which lookup_symbol_name() writes, are ever read.
        let mut buf = MaybeUninit::<[u8; KSYM_NAME_LEN]>::uninit();
        let p = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: `buf` is KSYM_NAME_LEN long, as lookup_symbol_name() requires.
        if unsafe { bindings::lookup_symbol_name(addr as _, p) } != 0 {
            return f(None);
        }
        // SAFETY: on success C has written a name and its NUL within the buffer (it NULs the
        // last byte first), so the bytes `strlen()` reads, up to that NUL, are initialised.
        f(Some(unsafe { CStr::from_ptr(p.cast()) }.to_bytes()))
    }
    fn core_kernel_text(&self, addr: usize) -> bool {
        // SAFETY: pure address query.
        unsafe { bindings::core_kernel_text(addr as _) != 0 }
    }
    fn kernel_text_address(&self, addr: usize) -> bool {
        // SAFETY: pure address query.
        unsafe { bindings::kernel_text_address(addr as _) != 0 }
    }
    // Each of the next four is a function only under the config named; without it C has a
    // static inline answering NULL or 0, as the other branch does.
    fn module_text_address(&self, addr: usize) -> Option<Module> {
        #[cfg(CONFIG_MODULES)]
        // SAFETY: called with preemption disabled (check_kprobe_address_safe).
        return NonNull::new(unsafe { bindings::__module_text_address(addr as _) }).map(Module);
        #[cfg(not(CONFIG_MODULES))]
        {
            let _ = addr;
            None
        }
    }
    fn in_gate_area_no_mm(&self, addr: usize) -> bool {
        // __HAVE_ARCH_GATE_AREA: x86_64 among the arches this core builds for.
        #[cfg(CONFIG_X86_64)]
        // SAFETY: pure address query.
        return unsafe { bindings::in_gate_area_no_mm(addr as _) } != 0;
        #[cfg(not(CONFIG_X86_64))]
        {
            let _ = addr;
            false
        }
    }
    fn jump_label_text_reserved(&self, addr: usize) -> bool {
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: jump_label_lock held by the caller.
        return unsafe { jump_label_text_reserved(addr as *mut _, addr as *mut _) } != 0;
        #[cfg(not(CONFIG_JUMP_LABEL))]
        {
            let _ = addr;
            false
        }
    }
    fn static_call_text_reserved(&self, addr: usize) -> bool {
        #[cfg(CONFIG_HAVE_STATIC_CALL_INLINE)]
        // SAFETY: pure address query.
        return unsafe { bindings::static_call_text_reserved(addr as *mut _, addr as *mut _) } != 0;
        #[cfg(not(CONFIG_HAVE_STATIC_CALL_INLINE))]
        {
            let _ = addr;
            false
        }
    }
    fn find_bug(&self, addr: usize) -> bool {
        // SAFETY: pure address query.
        unsafe { !bindings::find_bug(addr as _).is_null() }
    }
    fn jump_label_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        // jump_label_lock() (a no-op inline without CONFIG_JUMP_LABEL), then preempt_disable().
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: process context; released below.
        unsafe {
            jump_label_lock()
        };
        // SAFETY: released below, in reverse order.
        unsafe { preempt_disable() };
        let r = f();
        // SAFETY: taken above.
        unsafe { preempt_enable() };
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: taken above.
        unsafe {
            jump_label_unlock()
        };
        r
    }
    fn kprobes_text(&self) -> (usize, usize) {
        // Linker symbols: only their addresses are taken.
        (
            addr_of!(bindings::__kprobes_text_start) as usize,
            addr_of!(bindings::__kprobes_text_end) as usize,
        )
    }
    fn noinstr_text(&self) -> (usize, usize) {
        // Linker symbols: only their addresses are taken.
        (
            addr_of!(bindings::__noinstr_text_start) as usize,
            addr_of!(bindings::__noinstr_text_end) as usize,
        )
    }
    fn init_mem(&self) -> (usize, usize) {
        // Linker symbols: only their addresses are taken.
        (
            addr_of!(bindings::__init_begin) as usize,
            addr_of!(bindings::__init_end) as usize,
        )
    }
    fn try_module_get(&self, m: Module) -> bool {
        // SAFETY: `m` came from `module_text_address` under preemption disabled.
        unsafe { rkp_try_module_get(m.0.as_ptr().cast()) }
    }
    fn module_put(&self, m: Module) {
        // Without CONFIG_MODULE_UNLOAD no reference is counted and C's `module_put()` is an
        // empty inline (and without CONFIG_MODULES no `Module` exists to reach here).
        #[cfg(CONFIG_MODULE_UNLOAD)]
        // SAFETY: balances a successful `try_module_get`.
        unsafe {
            bindings::module_put(m.0.as_ptr())
        };
        #[cfg(not(CONFIG_MODULE_UNLOAD))]
        let _ = m;
    }
    #[cfg(CONFIG_MODULES)]
    fn within_module_init(&self, addr: usize, m: Module) -> bool {
        // mod_mem_type_is_init().
        m.within_mem(
            addr,
            &[
                bindings::mod_mem_type_MOD_INIT_TEXT,
                bindings::mod_mem_type_MOD_INIT_DATA,
                bindings::mod_mem_type_MOD_INIT_RODATA,
            ],
        )
    }
    #[cfg(CONFIG_MODULES)]
    fn within_module_core(&self, addr: usize, m: Module) -> bool {
        // mod_mem_type_is_core(): every type that is not init.
        m.within_mem(
            addr,
            &[
                bindings::mod_mem_type_MOD_TEXT,
                bindings::mod_mem_type_MOD_DATA,
                bindings::mod_mem_type_MOD_RODATA,
                bindings::mod_mem_type_MOD_RO_AFTER_INIT,
            ],
        )
    }
    // Without CONFIG_MODULES no `Module` exists (`module_text_address` gives none); C's inlines
    // answer false.
    #[cfg(not(CONFIG_MODULES))]
    fn within_module_init(&self, _addr: usize, _m: Module) -> bool {
        false
    }
    #[cfg(not(CONFIG_MODULES))]
    fn within_module_core(&self, _addr: usize, _m: Module) -> bool {
        false
    }
    fn module_is_coming(&self, m: Module) -> bool {
        // SAFETY: `m` is pinned (type invariant); C only reads its state.
        unsafe { rkp_module_is_coming(m.0.as_ptr().cast()) }
    }
    fn ftrace_location(&self, addr: usize) -> usize {
        // A function with CONFIG_DYNAMIC_FTRACE, an inline returning 0 without.
        #[cfg(CONFIG_DYNAMIC_FTRACE)]
        {
            if let Some(loc) = symbatch::ftrace_location(addr) {
                return loc;
            }
            // SAFETY: pure address query.
            return unsafe { bindings::ftrace_location(addr as _) } as usize;
        }
        #[cfg(not(CONFIG_DYNAMIC_FTRACE))]
        {
            let _ = addr;
            0
        }
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_set_filter_ip(&self, ops: FtraceOps, addr: usize, remove: bool) -> Result {
        // SAFETY: kprobe_mutex held; one of the two static ftrace_ops.
        from_c_ret(unsafe { rkp_ftrace_set_filter_ip(ftrace_ops_id(ops), addr, remove) })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn register_ftrace_function(&self, ops: FtraceOps) -> Result {
        // SAFETY: as above.
        from_c_ret(unsafe { rkp_register_ftrace_function(ftrace_ops_id(ops)) })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn unregister_ftrace_function(&self, ops: FtraceOps) -> Result {
        // SAFETY: as above.
        from_c_ret(unsafe { rkp_unregister_ftrace_function(ftrace_ops_id(ops)) })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn kprobe_ftrace_disabled(&self) -> bool {
        // SAFETY: READ_ONCE of a bool.
        unsafe { rkp_kprobe_ftrace_disabled() }
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_begin(&self, st: &mut KprobeState, n: usize) -> bool {
        ftrace_batch::begin(st, n)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_end(&self, st: &mut KprobeState) {
        ftrace_batch::end(st)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_save(&self, st: &mut KprobeState, i: usize, saved: ProbeFields) {
        ftrace_batch::save(st, i, saved)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_saved(&self, st: &mut KprobeState, i: usize) -> ProbeFields {
        ftrace_batch::saved(st, i)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_add(&self, st: &mut KprobeState, ops: FtraceOps, addr: usize) {
        ftrace_batch::add(st, ops, addr)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_filter_has(&self, ops: FtraceOps, addr: usize) -> bool {
        // SAFETY: one of the two static ftrace_ops; kprobe_mutex held by the core's caller.
        unsafe { rkp_ftrace_filter_has(ftrace_ops_id(ops), addr) }
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_recorded(&self, st: &mut KprobeState, ops: FtraceOps, addr: usize) -> bool {
        ftrace_batch::recorded(st, ops, addr)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_flush_remove(&self, st: &mut KprobeState, ops: FtraceOps) -> Result {
        ftrace_batch::flush_remove(st, ops)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_take_first(&self, st: &mut KprobeState) -> Option<(FtraceOps, usize, usize)> {
        ftrace_batch::take_first(st)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_cancel(&self, st: &mut KprobeState, ops: FtraceOps, addr: usize) -> bool {
        ftrace_batch::cancel(st, ops, addr)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_flush(&self, st: &mut KprobeState, ops: FtraceOps) -> Result {
        ftrace_batch::flush(st, ops)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_apply(&self, st: &mut KprobeState, ops: FtraceOps, remove: bool) -> Result {
        ftrace_batch::apply(st, ops, remove)
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_batch_forget(&self, st: &mut KprobeState, ops: FtraceOps) {
        ftrace_batch::forget(st, ops)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn ftrace_set_filter_ip(&self, _ops: FtraceOps, _addr: usize, _remove: bool) -> Result {
        Err(crate::errno::Errno::ENODEV)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn register_ftrace_function(&self, _ops: FtraceOps) -> Result {
        Err(crate::errno::Errno::ENODEV)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn unregister_ftrace_function(&self, _ops: FtraceOps) -> Result {
        Err(crate::errno::Errno::ENODEV)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn kprobe_ftrace_disabled(&self) -> bool {
        false
    }
}

impl Report for Kernel {
    fn warn(&self, site: WarnSite) {
        warn(site);
    }
    fn message(&self, msg: Message) {
        message(msg);
    }
}

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

impl Arch for Kernel {
    type Hooks = SelectedArch;
}

/// The arch of this build: upstream's C arch code through the `CArch` bridge.
#[cfg(not(CONFIG_KPROBES_RUST_ARCH))]
pub type SelectedArch = super::carch::CArch;

/// Resolves `kretprobe_blacklist[]` (the arch's array, C data in every arch); C logs each
/// name it cannot find.
pub(crate) fn c_init_kretprobe_blacklist() {
    // SAFETY: called once from init_kprobes(), before anything reads the blacklist.
    unsafe { rkp_init_kretprobe_blacklist() };
}

/// `kprobe_optinsn_slots.insn_size = MAX_OPTINSN_SIZE` where the arch has optprobe slots.
pub(crate) fn c_init_optinsn_slots() {
    // SAFETY: called once from init_kprobes(), before arch_init_kprobes() and so before any
    // slot of the cache is taken.
    unsafe { rkp_init_optinsn_slots() };
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

/// The arch of this build: the native Rust x86_64 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_X86_64))]
pub type SelectedArch = crate::x86_native::X86;

/// The arch of this build: the native Rust arm64 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_ARM64))]
pub type SelectedArch = crate::arm64_native::Arm64;

/// The arch of this build: the native Rust riscv arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_RISCV))]
pub type SelectedArch = crate::riscv_native::Riscv;

/// The arch of this build: the native Rust loongarch arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_LOONGARCH))]
pub type SelectedArch = crate::loongarch_native::Loongarch;

/// The arch of this build: the native Rust s390 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_S390))]
pub type SelectedArch = crate::s390_native::S390;

/// The arch of this build: the native Rust ppc64 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_PPC64))]
pub type SelectedArch = crate::powerpc_native::Ppc64;
