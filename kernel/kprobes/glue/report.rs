// SPDX-License-Identifier: GPL-2.0

//! C's WARN sites and `kprobes: ` messages, for the core's [`Report`] trait: each is a
//! function of `kprobes_helpers.c`, so the splat and the log line are C's, byte for byte.
//!
//! Constraints: `warn` may be called in any context; `message` in process context.

use super::handle::Kernel;
use super::helpers::*;
use crate::report::{Message, Report, WarnSite};

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

impl Report for Kernel {
    fn warn(&self, site: WarnSite) {
        warn(site);
    }
    fn message(&self, msg: Message) {
        message(msg);
    }
}
