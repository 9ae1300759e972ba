// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C wrappers in `kprobes_helpers.c` (prototypes in `kprobes_helpers.h`).
//!
//! Constraints: these are function declarations only; every struct comes from
//! `kernel::bindings`. Names are `rkp_` plus the C primitive they wrap.

use core::ffi::c_void;

use kernel::bindings::{
    hlist_head, kprobe, kprobe_blacklist_entry, kprobe_opcode_t, kretprobe_blackpoint, list_head,
    mutex,
};

// `struct module` is passed as `void *`: in some configs it embeds empty lock structs that trip
// `improper_ctypes`, and C only needs the address.
extern "C" {
    pub(super) fn rkp_kretprobe_blackpoint(i: i32) -> *mut kretprobe_blackpoint;

    pub(super) fn rkp_try_module_get(m: *mut c_void) -> bool;
    pub(super) fn rkp_module_is_coming(m: *mut c_void) -> bool;
    pub(super) fn rkp_alloc_aggr_kprobe(addr: *mut kprobe_opcode_t) -> *mut kprobe;
    pub(super) fn rkp_blacklist_add_tail(start: usize, end: usize) -> i32;
    pub(super) fn rkp_blacklist_remove(ent: *mut kprobe_blacklist_entry);
    pub(super) fn rkp_num_possible_cpus() -> u32;
    pub(super) fn rkp_synchronize_rcu_tasks();
    // On x86_64 SMP `percpu.rs` stores inline instead.
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    pub(super) fn rkp_set_current_kprobe(p: *mut kprobe);
    #[cfg(all(CONFIG_KRETPROBE_ON_RETHOOK, not(all(CONFIG_X86_64, CONFIG_SMP))))]
    pub(super) fn rkp_set_kprobe_status(status: usize);
}

// Not an empty macro on every arch (see `Kernel::flush_insn_slot`).
#[cfg(not(any(CONFIG_X86, CONFIG_ARM64, CONFIG_RISCV, CONFIG_PPC, CONFIG_S390)))]
extern "C" {
    pub(super) fn rkp_flush_insn_slot(p: *mut kprobe);
}

/// `barrier()`: orders the compiler's memory accesses, emits nothing.
#[allow(dead_code)] // unused where every caller below takes its C branch
#[inline(always)]
fn barrier() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

// What `rcu_read_lock()`, `preempt_disable()` and their pairs are beyond a compiler barrier
// depends on the config; the C wrappers are called only where they are more.
#[cfg(any(CONFIG_PREEMPT_RCU, CONFIG_PREEMPT_COUNT, CONFIG_LOCKDEP))]
extern "C" {
    fn rkp_rcu_read_lock();
    fn rkp_rcu_read_unlock();
}
#[cfg(CONFIG_PREEMPT_COUNT)]
extern "C" {
    fn rkp_preempt_disable();
    fn rkp_preempt_enable();
}

// <linux/jump_label.h> declares these only with CONFIG_JUMP_LABEL (no-op inlines otherwise),
// so a build without it has no binding for them.
#[cfg(CONFIG_JUMP_LABEL)]
extern "C" {
    pub(super) fn jump_label_lock();
    pub(super) fn jump_label_unlock();
    pub(super) fn jump_label_text_reserved(
        start: *mut c_void,
        end: *mut c_void,
    ) -> core::ffi::c_int;
}

/// `rcu_read_lock()`: with non-preemptible RCU, no preempt count and no lockdep it is
/// `barrier()`; otherwise C's.
///
/// # Safety
///
/// Paired with [`rcu_read_unlock`] in the same context.
#[inline(always)]
pub(super) unsafe fn rcu_read_lock() {
    #[cfg(any(CONFIG_PREEMPT_RCU, CONFIG_PREEMPT_COUNT, CONFIG_LOCKDEP))]
    // SAFETY: as documented above.
    unsafe {
        rkp_rcu_read_lock()
    };
    #[cfg(not(any(CONFIG_PREEMPT_RCU, CONFIG_PREEMPT_COUNT, CONFIG_LOCKDEP)))]
    barrier();
}

/// `rcu_read_unlock()`, as [`rcu_read_lock`].
///
/// # Safety
///
/// Ends a section [`rcu_read_lock`] opened.
#[inline(always)]
pub(super) unsafe fn rcu_read_unlock() {
    #[cfg(any(CONFIG_PREEMPT_RCU, CONFIG_PREEMPT_COUNT, CONFIG_LOCKDEP))]
    // SAFETY: as documented above.
    unsafe {
        rkp_rcu_read_unlock()
    };
    #[cfg(not(any(CONFIG_PREEMPT_RCU, CONFIG_PREEMPT_COUNT, CONFIG_LOCKDEP)))]
    barrier();
}

/// `preempt_disable()`: `barrier()` without a preempt count, otherwise C's.
///
/// # Safety
///
/// Paired with [`preempt_enable`] in the same context.
#[inline(always)]
pub(super) unsafe fn preempt_disable() {
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: as documented above.
    unsafe {
        rkp_preempt_disable()
    };
    #[cfg(not(CONFIG_PREEMPT_COUNT))]
    barrier();
}

/// `preempt_enable()`, as [`preempt_disable`].
///
/// # Safety
///
/// Ends a section [`preempt_disable`] opened.
#[inline(always)]
pub(super) unsafe fn preempt_enable() {
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: as documented above.
    unsafe {
        rkp_preempt_enable()
    };
    #[cfg(not(CONFIG_PREEMPT_COUNT))]
    barrier();
}

#[cfg(all(CONFIG_KRETPROBES, not(CONFIG_KRETPROBE_ON_RETHOOK)))]
extern "C" {
    pub(super) fn rkp_kzalloc_kretprobe_holder() -> *mut kernel::bindings::kretprobe_holder;
    pub(super) fn rkp_kretprobe_holder_set_rp(
        rph: *mut kernel::bindings::kretprobe_holder,
        rp: *mut kernel::bindings::kretprobe,
    );
    pub(super) fn rkp_objpool_pop(
        rph: *mut kernel::bindings::kretprobe_holder,
    ) -> *mut kernel::bindings::kretprobe_instance;
    pub(super) fn rkp_objpool_push(
        ri: *mut kernel::bindings::kretprobe_instance,
        rph: *mut kernel::bindings::kretprobe_holder,
    );
    pub(super) fn rkp_kprobes_initialized() -> bool;
    pub(super) fn rkp_kprobe_running() -> *mut kprobe;
    pub(super) fn rkp_current_kretprobe_instances() -> *mut kernel::bindings::llist_head;
    // `struct task_struct` is passed as `void *`, as `struct module` is.
    pub(super) fn rkp_task_kretprobe_instances(
        tk: *mut c_void,
    ) -> *mut kernel::bindings::llist_head;
    pub(super) fn rkp_kretprobe_trampoline_addr() -> usize;
    pub(super) fn rkp_instruction_pointer_set(regs: *mut kernel::bindings::pt_regs, addr: usize);
    pub(super) fn rkp_warn_kretprobe_no_cursor();
    pub(super) fn rkp_warn_kretprobe_frame_mismatch();
    pub(super) fn rkp_kretprobe_ret_addr_bug() -> !;
}

#[cfg(CONFIG_OPTPROBES)]
extern "C" {
    pub(super) fn rkp_queue_add(ap: *mut kprobe, q: i32);
    pub(super) fn rkp_queue_del_init(ap: *mut kprobe);
    pub(super) fn rkp_queue_move(ap: *mut kprobe, q: i32);
    pub(super) fn rkp_queue_empty(q: i32) -> bool;
    pub(super) fn rkp_queue_contains(q: i32, ap: *mut kprobe) -> bool;
    pub(super) fn rkp_queue_next(q: i32, ap: *mut kprobe) -> *mut kprobe;
    // The C arch's list-based optimize hooks (a Rust arch walks the queues itself).
    #[cfg(not(CONFIG_KPROBES_RUST_ARCH))]
    pub(super) fn rkp_arch_optimize_kprobes();
    #[cfg(not(CONFIG_KPROBES_RUST_ARCH))]
    pub(super) fn rkp_arch_unoptimize_kprobes();
    pub(super) fn rkp_kick_kprobe_optimizer();
    pub(super) fn rkp_flush_kprobe_optimizer();
}

// A function off x86 (x86 has a static inline, written out in `platform.rs`); the declaration
// in <linux/kprobes.h> is hidden from bindgen by x86's inline of the same name.
#[cfg(all(CONFIG_OPTPROBES, not(CONFIG_X86)))]
extern "C" {
    pub(super) fn arch_prepared_optinsn(optinsn: *mut kernel::bindings::arch_optimized_insn)
        -> i32;
}

#[cfg(CONFIG_KPROBES_ON_FTRACE)]
extern "C" {
    pub(super) fn rkp_kprobe_ftrace_disabled() -> bool;
    pub(super) fn rkp_ftrace_set_filter_ip(ops: i32, addr: usize, remove: bool) -> i32;
    pub(super) fn rkp_register_ftrace_function(ops: i32) -> i32;
    pub(super) fn rkp_unregister_ftrace_function(ops: i32) -> i32;
}

extern "C" {
    /// The probe hash buckets (`kprobe_table` in C), defined in `kprobes_helpers.c` so that the
    /// table keeps C's placement; the core reads it under RCU and links under `kprobe_mutex`.
    pub(super) static mut rkp_kprobe_table: [hlist_head; crate::store::KPROBE_TABLE_SIZE];
    /// `kprobe_blacklist` in C: the RCU list of `struct kprobe_blacklist_entry`.
    pub(super) static mut rkp_kprobe_blacklist: list_head;
}

// The mutexes are only ever passed to `mutex_lock()`/`mutex_unlock()` by address; with lock
// debugging `struct mutex` embeds empty structs, which `improper_ctypes` would flag.
#[allow(improper_ctypes)]
extern "C" {
    /// `kprobe_mutex`, defined in `kprobes_helpers.c` as `kernel/kprobes.c` defines it.
    pub(super) static mut kprobe_mutex: mutex;
    /// The kernel's `text_mutex` (`<linux/memory.h>`), which bindgen is not shown.
    pub(super) static mut text_mutex: mutex;
}
