// SPDX-License-Identifier: GPL-2.0

//! Storage of registered probes: the abstraction over the intrusive links of `struct kprobe`.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate. In the kernel the
//! probe table must stay the C `hlist` inside `struct kprobe` and the aggregate's child list the
//! C `list_head` (trace_kprobe tests `hlist_unhashed(&p->hlist)` and `list_empty(&p->list)`), and
//! the optimizer queues are the `list_head` inside `struct optimized_kprobe` (the arch's
//! `arch_optimize_kprobes` unlinks from them). So the core never owns probe memory: it drives a
//! [`ProbeStore`] whose primitives are named after, and must behave exactly like, the C list
//! helpers they stand for, including the poisoning of unlinked entries (an unlinked child still
//! looks registered through `list_empty`). The host test-suite implements the trait with a
//! simulation that models those C semantics; the kernel glue implements it with `kernel::bindings`
//! and the C helpers.
//!
//! Readers (the probe-hit path) use only the `*_rcu` iterators and field reads, never a lock;
//! every mutating primitive is called with `kprobe_mutex` held (the [`KprobeState`] guard).

use core::ops::{ControlFlow, DerefMut};

/// `KPROBE_HASH_BITS`: the probe table has `1 << 6` buckets.
pub const KPROBE_HASH_BITS: u32 = 6;
/// `KPROBE_TABLE_SIZE`: number of hash buckets.
pub const KPROBE_TABLE_SIZE: usize = 1 << KPROBE_HASH_BITS;

/// `KPROBE_FLAG_GONE`: the probed text has been freed (module unload, init memory).
pub const KPROBE_FLAG_GONE: u32 = 1;
/// `KPROBE_FLAG_DISABLED`: disabled by the user or by the core.
pub const KPROBE_FLAG_DISABLED: u32 = 2;
/// `KPROBE_FLAG_OPTIMIZED`: queued for optimization, optimized, or queued for unoptimization.
pub const KPROBE_FLAG_OPTIMIZED: u32 = 4;
/// `KPROBE_FLAG_FTRACE`: armed through ftrace.
pub const KPROBE_FLAG_FTRACE: u32 = 8;
/// `KPROBE_FLAG_ON_FUNC_ENTRY`: the probe sits on a function entry.
pub const KPROBE_FLAG_ON_FUNC_ENTRY: u32 = 16;

/// `kprobe_gone()`.
#[inline(always)]
pub const fn flags_gone(flags: u32) -> bool {
    flags & KPROBE_FLAG_GONE != 0
}

/// `kprobe_disabled()`: DISABLED or GONE.
#[inline(always)]
pub const fn flags_disabled(flags: u32) -> bool {
    flags & (KPROBE_FLAG_DISABLED | KPROBE_FLAG_GONE) != 0
}

/// `kprobe_optimized()`.
#[inline(always)]
pub const fn flags_optimized(flags: u32) -> bool {
    flags & KPROBE_FLAG_OPTIMIZED != 0
}

/// `kprobe_ftrace()`.
pub const fn flags_ftrace(flags: u32) -> bool {
    flags & KPROBE_FLAG_FTRACE != 0
}

/// `hash_ptr(addr, KPROBE_HASH_BITS)`: the bucket of a probe address (`include/linux/hash.h`).
///
/// Bucket order is visible in debugfs `kprobes/list`, so this must match C bit for bit.
#[inline(always)]
pub const fn hash_ptr(addr: usize) -> usize {
    if usize::BITS == 64 {
        const GOLDEN_RATIO_64: u64 = 0x61C8864680B583EB;
        ((addr as u64).wrapping_mul(GOLDEN_RATIO_64) >> (64 - KPROBE_HASH_BITS)) as usize
    } else {
        const GOLDEN_RATIO_32: u32 = 0x61C88647;
        ((addr as u32).wrapping_mul(GOLDEN_RATIO_32) >> (32 - KPROBE_HASH_BITS)) as usize
    }
}

/// The three optimizer queues of `kernel/kprobes.c`, all guarded by `kprobe_mutex`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OptQueue {
    /// `optimizing_list`: waiting for the jump to be installed.
    Optimizing,
    /// `unoptimizing_list`: waiting for the jump to be removed.
    Unoptimizing,
    /// `freeing_list`: unoptimized, waiting to be disarmed and (if unused) freed.
    Freeing,
}

/// The core's scalar state, all of it guarded by `kprobe_mutex`.
#[derive(Debug)]
pub struct KprobeState {
    /// `kprobes_all_disarmed`: debugfs `enabled` is 0; nothing gets armed.
    pub all_disarmed: bool,
    /// `kprobes_allow_optimization` (OPTPROBES): set at subsys_initcall and by the sysctl.
    pub allow_optimization: bool,
    /// `kprobe_ftrace_enabled`: users of `kprobe_ftrace_ops` (a C `int`, see `disarm_kprobe_ftrace`).
    pub ftrace_enabled: i32,
    /// `kprobe_ipmodify_enabled`: users of `kprobe_ipmodify_ops`.
    pub ipmodify_enabled: i32,
}

impl KprobeState {
    /// The state before `init_kprobes`: like C's zero-initialised statics.
    pub const fn new() -> Self {
        KprobeState {
            all_disarmed: false,
            allow_optimization: false,
            ftrace_enabled: 0,
            ipmodify_enabled: 0,
        }
    }
}

impl Default for KprobeState {
    fn default() -> Self {
        Self::new()
    }
}

/// An aggregate probe: the probe the core allocates for an address with more than one probe
/// (or one it optimizes), whose children are the caller's probes. With OPTPROBES its memory is
/// an `optimized_kprobe` (`container_of(ap, struct optimized_kprobe, kp)`), which the optimizer
/// queues and the arch's optprobe hooks reach through the handle; so every operation that needs
/// an aggregate takes this type, and "this probe is an aggregate" is checked once, where the
/// handle is made ([`Aggr::of`]), not assumed by each caller.
///
/// # Invariants
///
/// The probe was allocated by [`ProbeStore::alloc_aggr_kprobe`] and not freed yet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Aggr<P>(P);

impl<P: Copy> Aggr<P> {
    /// `p`, if it is an aggregate (`kprobe_aggrprobe(p)`).
    #[inline(always)]
    pub fn of<S: ProbeStore<Probe = P>>(s: &S, p: P) -> Option<Self> {
        // INVARIANT: only aggregates get `aggr_pre_handler` (`init_aggr_kprobe`).
        s.is_aggr(p).then_some(Aggr(p))
    }

    /// Wraps a probe known to be an aggregate.
    ///
    /// # Safety
    ///
    /// `p` was allocated by [`ProbeStore::alloc_aggr_kprobe`] and is not freed: the platform's
    /// allocation, or a probe whose handler is `aggr_pre_handler` (the hit path, called
    /// through that handler).
    #[inline(always)]
    pub unsafe fn new_unchecked(p: P) -> Self {
        // INVARIANT: as the caller guarantees.
        Aggr(p)
    }

    /// The aggregate's own `struct kprobe`.
    #[inline(always)]
    pub fn kp(self) -> P {
        self.0
    }
}

/// A breakpoint removal an unregistration batch recorded (`batch.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DisarmRecord<P> {
    /// The hash entry whose breakpoint is removed.
    pub probe: P,
    /// Its address (never 0).
    pub addr: usize,
    /// It is to be unlinked once the breakpoint is written.
    pub unlink: bool,
}

/// Intrusive storage of probes (hash table, aggregate child lists, optimizer queues), plus the
/// locks and RCU waits that guard it.
///
/// Every method mirrors one C primitive named in its doc; implementations must keep that
/// primitive's semantics. Mutators are only called with the `kprobe_mutex` guard alive; the
/// `_rcu` iterators and field accessors may be called from the probe-hit path and must neither
/// allocate nor sleep.
pub trait ProbeStore {
    /// Handle to a `struct kprobe` (a caller's probe or a core-allocated aggregate).
    type Probe: Copy + Eq + core::fmt::Debug;
    /// Handle to the `struct pt_regs` of a probe hit.
    type Regs: Copy;
    /// Guard of `kprobe_mutex`, giving access to the state it protects.
    type Guard<'a>: DerefMut<Target = KprobeState>
    where
        Self: 'a;

    /// `mutex_lock(&kprobe_mutex)`.
    fn kprobe_mutex(&self) -> Self::Guard<'_>;
    /// Runs `f` under `cpus_read_lock()`, then `jump_label_lock()` if `jump_label`, then `text_mutex`.
    fn text_locked<R>(&self, jump_label: bool, f: impl FnOnce() -> R) -> R;
    /// Runs `f` under `cpus_read_lock()` only (`optimize_all_kprobes()`, ...).
    fn cpus_read_locked<R>(&self, f: impl FnOnce() -> R) -> R;
    /// `lockdep_assert_held(&kprobe_mutex)`.
    fn assert_kprobe_mutex_held(&self);
    /// `lockdep_assert_held(&text_mutex)`.
    fn assert_text_mutex_held(&self);
    /// `lockdep_assert_cpus_held()`.
    fn assert_cpus_held(&self);
    /// `synchronize_rcu()`.
    fn synchronize_rcu(&self);
    /// `synchronize_rcu_tasks()`.
    fn synchronize_rcu_tasks(&self);
    /// `schedule_delayed_work(&optimizing_work, OPTIMIZE_DELAY)`.
    fn kick_kprobe_optimizer(&self);
    /// `flush_delayed_work(&optimizing_work)`: runs a pending optimizer pass now; called unlocked.
    fn flush_kprobe_optimizer(&self);
    /// Runs `f`, the bottom halves of an unregistration of `n` probes, in a window of
    /// [`crate::insn_slot::with_deferred_grace`] on each instruction-slot cache (Rust only): the
    /// slot caches end as after C's frees one by one, with one grace period for the
    /// collections and page releases those need (at least one per page of slots) rather than
    /// one each. Called without `kprobe_mutex`.
    fn with_slot_free_batch<R>(&self, _n: usize, f: impl FnOnce() -> R) -> R {
        f()
    }

    /// A slice of `T` the platform allocated for one call (the storage of a batch,
    /// `batch.rs`): freed when dropped. Process context, with or without `kprobe_mutex`.
    type Buf<T>: DerefMut<Target = [T]>;
    /// `n` elements of `fill` (Rust only), or `None`: no memory, or the platform does not
    /// batch (the caller then works probe by probe, as C does).
    fn alloc_buf<T: Clone>(&self, n: usize, fill: T) -> Option<Self::Buf<T>>;
    /// The smallest unregistration batch whose top halves look their hash entries up in an
    /// index of them (`batch.rs`); `usize::MAX`: none does.
    fn entry_index_min_batch(&self) -> usize {
        usize::MAX
    }
    /// What an unregistration batch's index answered for `addr` (a model checks it against
    /// the hash; the kernel has nothing to do).
    #[inline(always)]
    fn check_indexed_entry(&self, _addr: usize, _found: Option<Self::Probe>) {}

    /// `READ_ONCE(p->addr)`.
    fn addr(&self, p: Self::Probe) -> usize;
    /// `p->symbol_name`, as bytes without NUL; `None` for NULL.
    fn symbol_name(&self, p: Self::Probe) -> Option<&[u8]>;
    /// `p->offset`.
    fn offset(&self, p: Self::Probe) -> u32;
    /// `p->addr = addr`.
    fn set_addr(&self, p: Self::Probe, addr: usize);
    /// `READ_ONCE(p->flags)`.
    fn flags(&self, p: Self::Probe) -> u32;
    /// `p->flags = flags`.
    fn set_flags(&self, p: Self::Probe, flags: u32);
    /// `p->nmissed++` (plain increment, as C; hit path).
    fn inc_nmissed(&self, p: Self::Probe);
    /// `p->nmissed = 0`.
    fn reset_nmissed(&self, p: Self::Probe);
    /// `p->nmissed` (process context, under `kprobe_mutex`).
    fn nmissed(&self, p: Self::Probe) -> u64;
    /// `p->nmissed = n` (process context, under `kprobe_mutex`).
    fn set_nmissed(&self, p: Self::Probe, n: u64);
    /// `p->post_handler != NULL`.
    fn has_post_handler(&self, p: Self::Probe) -> bool;
    /// `p->pre_handler == aggr_pre_handler` (`kprobe_aggrprobe()`).
    fn is_aggr(&self, p: Self::Probe) -> bool;
    /// `p->pre_handler == pre_handler_kretprobe`.
    fn is_kretprobe(&self, p: Self::Probe) -> bool;
    /// `p->pre_handler(p, regs)` on a non-aggregate probe; 0 without calling when it is NULL
    /// (the hit path reads the pointer once, then tests and calls it).
    fn call_pre_handler(&self, p: Self::Probe, regs: Self::Regs) -> i32;
    /// `p->post_handler(p, regs, flags)` on a non-aggregate probe; nothing when it is NULL.
    fn call_post_handler(&self, p: Self::Probe, regs: Self::Regs, flags: usize);
    /// `copy_kprobe(from, to)`: copies `opcode` and `ainsn`.
    fn copy_kprobe(&self, from: Self::Probe, to: Self::Probe);

    /// `alloc_aggr_kprobe()` memory: a zeroed `optimized_kprobe` (or `kprobe` without OPTPROBES)
    /// with `addr` set and `op->list` initialised; `None` on -ENOMEM.
    fn alloc_aggr_kprobe(&self, addr: usize) -> Option<Aggr<Self::Probe>>;
    /// `kfree()` of an aggregate from [`ProbeStore::alloc_aggr_kprobe`].
    fn kfree_aggr_kprobe(&self, ap: Aggr<Self::Probe>);
    /// `ap->pre_handler = aggr_pre_handler`.
    fn set_aggr_pre_handler(&self, ap: Aggr<Self::Probe>);
    /// `ap->post_handler = on ? aggr_post_handler : NULL`.
    fn set_aggr_post_handler(&self, ap: Aggr<Self::Probe>, on: bool);

    /// `hlist_for_each_entry_rcu` over one bucket, newest first, stopping on `Break`.
    ///
    /// `f` must not unlink entries of the walked bucket.
    fn for_each_in_bucket(
        &self,
        bucket: usize,
        f: impl FnMut(Self::Probe) -> ControlFlow<()>,
    ) -> ControlFlow<()>;
    /// `hlist_add_head_rcu(&p->hlist, &kprobe_table[bucket])`.
    fn hlist_add_head_rcu(&self, bucket: usize, p: Self::Probe);
    /// `hlist_del_rcu(&p->hlist)` (leaves `p` looking hashed).
    fn hlist_del_rcu(&self, p: Self::Probe);
    /// `hlist_replace_rcu(&old->hlist, &new->hlist)`.
    fn hlist_replace_rcu(&self, old: Self::Probe, new: Self::Probe);
    /// `INIT_HLIST_NODE(&p->hlist)`.
    fn init_hlist_node(&self, p: Self::Probe);

    /// `INIT_LIST_HEAD(&p->list)`.
    fn init_list_head(&self, p: Self::Probe);
    /// `list_add_rcu(&p->list, &ap->list)`: `p` becomes the newest child of `ap`.
    fn list_add_rcu(&self, p: Self::Probe, ap: Aggr<Self::Probe>);
    /// `list_del_rcu(&p->list)` (poisons `prev` only).
    fn list_del_rcu(&self, p: Self::Probe);
    /// `list_del(&p->list)` (poisons both links).
    fn list_del(&self, p: Self::Probe);
    /// `list_empty(&p->list)`.
    fn list_empty(&self, p: Self::Probe) -> bool;
    /// `list_is_singular(&p->list)`.
    fn list_is_singular(&self, p: Self::Probe) -> bool;
    /// `list_entry(p->list.next, struct kprobe, list)`.
    fn list_next_entry(&self, p: Self::Probe) -> Self::Probe;
    /// `list_for_each_entry_rcu(kp, &ap->list, list)`, newest first, stopping on `Break`.
    fn for_each_child(
        &self,
        ap: Aggr<Self::Probe>,
        f: impl FnMut(Self::Probe) -> ControlFlow<()>,
    ) -> ControlFlow<()>;

    /// `list_empty(&op->list)` of the aggregate's `optimized_kprobe`.
    fn op_list_empty(&self, ap: Aggr<Self::Probe>) -> bool;
    /// `list_add(&op->list, queue)`.
    fn queue_add(&self, ap: Aggr<Self::Probe>, q: OptQueue);
    /// `list_del_init(&op->list)`.
    fn queue_del_init(&self, ap: Aggr<Self::Probe>);
    /// `list_move(&op->list, queue)`.
    fn queue_move(&self, ap: Aggr<Self::Probe>, q: OptQueue);
    /// `list_empty(queue)`.
    fn queue_empty(&self, q: OptQueue) -> bool;
    /// Whether `ap` is on `q` (`optprobe_queued_unopt()` walks the list).
    fn queue_contains(&self, q: OptQueue, ap: Aggr<Self::Probe>) -> bool;
    /// `list_for_each_entry_safe` over `q`: `f` may unlink or move the entry it is given.
    fn queue_for_each_safe(&self, q: OptQueue, f: impl FnMut(Aggr<Self::Probe>));
}
