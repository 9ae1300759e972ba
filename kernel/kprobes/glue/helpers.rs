// SPDX-License-Identifier: GPL-2.0

//! The C half of the core (`kprobes_helpers.c`) and the kernel functions the glue calls, as
//! bindgen declares them from `kprobes_helpers.h` (patch `0002` shows it the header).
//!
//! Constraints: nothing is declared by hand here; each group is re-exported under the
//! configuration the header declares it in. Names are `rkp_` plus the C primitive they wrap.

pub(super) use kernel::bindings::{
    kprobe_mutex, rkp_alloc_aggr_kprobe, rkp_blacklist_add_tail, rkp_blacklist_remove,
    rkp_init_kretprobe_blacklist, rkp_init_optinsn_slots, rkp_kprobe_blacklist, rkp_kprobe_table,
    rkp_kretprobe_blackpoint, rkp_module_is_coming, rkp_num_possible_cpus, rkp_pr_globally,
    rkp_pr_optimization, rkp_pr_populate_blacklist_failed, rkp_synchronize_rcu_tasks,
    rkp_try_module_get, rkp_warn___disarm_kprobe_ftrace, rkp_warn___free_insn_slot,
    rkp_warn___get_insn_slot, rkp_warn___unregister_kprobe_top, rkp_warn_do_free_cleaned_kprobes,
    rkp_warn_ftrace_batch_leftover, rkp_warn_optimize_kprobe, rkp_warn_reuse_unused_kprobe,
    rkp_warn_warn_kprobe_rereg, text_mutex,
};

#[cfg(CONFIG_LOCKDEP)]
pub(super) use kernel::bindings::{
    rkp_lockdep_assert_cpus_held, rkp_lockdep_assert_kprobe_mutex_held,
    rkp_lockdep_assert_text_mutex_held,
};

// Where the kernel crate has an inline `this_cpu_ptr()`, `percpu.rs` stores inline instead.
#[cfg(not(any(not(CONFIG_SMP), CONFIG_X86_64)))]
pub(super) use kernel::bindings::rkp_set_current_kprobe;
#[cfg(all(CONFIG_KRETPROBE_ON_RETHOOK, not(any(not(CONFIG_SMP), CONFIG_X86_64))))]
pub(super) use kernel::bindings::rkp_set_kprobe_status;

// Not an empty macro on every arch (see `CArch::flush_insn_slot`; a Rust arch has its own).
#[cfg(all(
    not(CONFIG_KPROBES_RUST_ARCH),
    not(any(CONFIG_X86, CONFIG_ARM64, CONFIG_RISCV, CONFIG_PPC, CONFIG_S390))
))]
pub(super) use kernel::bindings::rkp_flush_insn_slot;

// <linux/jump_label.h> declares these only with CONFIG_JUMP_LABEL (no-op inlines otherwise).
#[cfg(CONFIG_JUMP_LABEL)]
pub(super) use kernel::bindings::{jump_label_lock, jump_label_text_reserved, jump_label_unlock};

#[cfg(CONFIG_PREEMPT_COUNT)]
use kernel::bindings::{rkp_preempt_disable, rkp_preempt_enable};

/// `barrier()`: orders the compiler's memory accesses, emits nothing.
#[cfg(not(CONFIG_PREEMPT_COUNT))]
#[inline(always)]
fn barrier() {
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
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
pub(super) use kernel::bindings::{
    rkp_current_kretprobe_instances, rkp_instruction_pointer_set, rkp_kprobe_running,
    rkp_kprobes_initialized, rkp_kretprobe_holder_set_rp, rkp_kretprobe_ret_addr_bug,
    rkp_kretprobe_trampoline_addr, rkp_kzalloc_kretprobe_holder, rkp_objpool_pop, rkp_objpool_push,
    rkp_task_kretprobe_instances, rkp_warn_kretprobe_frame_mismatch, rkp_warn_kretprobe_no_cursor,
};

#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
pub(super) use kernel::bindings::rkp_warn_kretprobe_rethook_handler;

#[cfg(CONFIG_KRETPROBES)]
pub(super) use kernel::bindings::{
    rkp_kretprobe_grow, rkp_kretprobe_grow_alloc, rkp_kretprobe_grow_detach,
    rkp_kretprobe_grow_free, rkp_kretprobe_grow_kick, rkp_kretprobe_grow_publish,
    RKP_GROW_MAX_POOLS,
};

#[cfg(CONFIG_OPTPROBES)]
pub(super) use kernel::bindings::{
    rkp_flush_kprobe_optimizer, rkp_kick_kprobe_optimizer, rkp_queue_contains, rkp_queue_del_init,
    rkp_queue_empty, rkp_queue_move, rkp_queue_next,
};

// The queue add is inline, or with hardened lists through C's checked `list_add()`.
#[cfg(all(CONFIG_OPTPROBES, not(CONFIG_LIST_HARDENED)))]
pub(super) use kernel::bindings::rkp_opt_queues;
#[cfg(all(CONFIG_OPTPROBES, CONFIG_LIST_HARDENED))]
pub(super) use kernel::bindings::rkp_queue_add;

// The C arch's list-based optimize hooks (a Rust arch walks the queues itself).
#[cfg(all(CONFIG_OPTPROBES, not(CONFIG_KPROBES_RUST_ARCH)))]
pub(super) use kernel::bindings::{rkp_arch_optimize_kprobes, rkp_arch_unoptimize_kprobes};

// A function off x86 (x86 has a static inline, written out in `carch.rs`); the declaration in
// <linux/kprobes.h> is hidden from bindgen by x86's inline of the same name. Only the C arch
// (`carch.rs`) calls it.
#[cfg(all(CONFIG_OPTPROBES, not(CONFIG_X86), not(CONFIG_KPROBES_RUST_ARCH)))]
pub(super) use kernel::bindings::arch_prepared_optinsn;

#[cfg(CONFIG_KPROBES_ON_FTRACE)]
pub(super) use kernel::bindings::{
    rkp_ftrace_filter_has, rkp_ftrace_set_filter_ip, rkp_ftrace_set_filter_ips,
    rkp_kprobe_ftrace_disabled, rkp_register_ftrace_function, rkp_unregister_ftrace_function,
};

pub(super) use kernel::bindings::rkp_dereference_symbol_descriptor;

pub(super) use kernel::bindings::{
    rkp_cond_synchronize_rcu, rkp_insn_page_add, rkp_insn_page_alloc, rkp_insn_page_remove,
};

#[cfg(CONFIG_LIST_HARDENED)]
pub(super) use kernel::bindings::{rkp_list_add_rcu, rkp_list_del_rcu};
