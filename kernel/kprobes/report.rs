// SPDX-License-Identifier: GPL-2.0

//! What the core tells the kernel log: the WARN sites and the `kprobes: ` messages of
//! `kernel/kprobes.c`, reported through the platform so that the kernel emits them exactly as C
//! does and the host tests can assert each one.
//!
//! Constraints: `no_std`, does not name the `kernel` crate. [`Report::warn`] is called in the
//! same cases, in the same order, as C evaluates its `WARN*()` condition to true; the logic
//! reports every occurrence, and the kernel glue keeps C's once-per-site semantics
//! (`WARN_ON_ONCE`, `WARN_ONCE`) with one C helper, and so one static flag, per site. Only the
//! kretprobe hit-path sites are reported directly by the glue of that path.

/// A `WARN*()` site of `kernel/kprobes.c` (Linux 6.12), named after the function that holds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WarnSite {
    /// `__get_insn_slot()`: `WARN_ON(1)`, a page's `nused` said it had a clean slot and it had
    /// none (the count is repaired).
    GetInsnSlot,
    /// `__free_insn_slot()`: `WARN_ON(1)` for a slot no page holds, `WARN_ON()` for one that is
    /// not in use (a double free).
    FreeInsnSlot,
    /// `do_free_cleaned_kprobes()`: `WARN_ON_ONCE()`, an aggregate on the freeing list is still
    /// in use (it stays on the hash).
    DoFreeCleanedKprobes,
    /// `optimize_kprobe()`: `WARN_ON_ONCE()`, an aggregate about to be queued is already on a
    /// queue.
    OptimizeKprobe,
    /// `reuse_unused_kprobe()`: `WARN_ON_ONCE()`, an unused aggregate is on no optimizer queue
    /// (with OPTPROBES), or exists at all (without).
    ReuseUnusedKprobe,
    /// `__disarm_kprobe_ftrace()`: `WARN()` "Failed to unregister kprobe-ftrace (error %d)".
    DisarmKprobeFtraceUnregister {
        /// The error of `unregister_ftrace_function()`.
        err: i32,
    },
    /// `__disarm_kprobe_ftrace()`: `WARN_ONCE()` "Failed to disarm kprobe-ftrace at %pS (error
    /// %d)".
    DisarmKprobeFtraceFilter {
        /// The probe address.
        addr: usize,
        /// The error of `ftrace_set_filter_ip()`.
        err: i32,
    },
    /// `warn_kprobe_rereg()`: `WARN_ON_ONCE()`, the probe is already registered.
    ///
    /// A static inline in C, so its once-flag is per function it is inlined into:
    /// `register_kprobe()` and `register_kretprobe()` (the `__bug_table` of clang 22's x86_64
    /// `kernel/kprobes.o` holds its line in both), and the core keeps one flag for each.
    WarnKprobeRereg {
        /// Reached from `register_kretprobe()` (else from `register_kprobe()`).
        kretprobe: bool,
    },
    /// `__unregister_kprobe_top()`: `WARN_ON()`, the hash entry owning a child is not an
    /// aggregate.
    UnregisterKprobeTop,
    /// Rust only (`register_kprobes()` as one batch): the ftrace filter additions a rolled-back
    /// batch could not forget (an aggregate armed on one ops and disarmed on the other, which C
    /// leaves in the filter too) could not be applied either.
    FtraceBatchLeftover {
        /// The error of the filter update or of `register_ftrace_function()`.
        err: i32,
    },
}

/// A `kprobes: `-prefixed message of `kernel/kprobes.c` that the core logic decides on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Message {
    /// `pr_err` "Failed to populate blacklist (error %d), kprobes not restricted, be careful
    /// using them!".
    PopulateBlacklistFailed(i32),
    /// `pr_info` "kprobe jump-optimization is enabled. All kprobes are optimized if possible.".
    OptimizationEnabled,
    /// `pr_info` "kprobe jump-optimization is disabled. All kprobes are based on software
    /// breakpoint.".
    OptimizationDisabled,
    /// `pr_info` "Kprobes globally enabled".
    GloballyEnabled,
    /// `pr_warn` "Kprobes globally enabled, but failed to enable %d out of %d probes. Please
    /// check which kprobes are kept disabled via debugfs.".
    GloballyEnabledPartly {
        /// Probes that failed to arm.
        errors: u32,
        /// Probes attempted.
        total: u32,
    },
    /// `pr_info` "Kprobes globally disabled".
    GloballyDisabled,
    /// `pr_warn` "Kprobes globally disabled, but failed to disable %d out of %d probes. Please
    /// check which kprobes are kept enabled via debugfs.".
    GloballyDisabledPartly {
        /// Probes that failed to disarm.
        errors: u32,
        /// Probes attempted.
        total: u32,
    },
}

/// The kernel log as the core sees it.
pub trait Report {
    /// A `WARN*()` of C fired at `site`.
    fn warn(&self, site: WarnSite);
    /// C logs `msg` here.
    fn message(&self, msg: Message);
}
