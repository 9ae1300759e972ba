// SPDX-License-Identifier: GPL-2.0

//! The per-CPU kprobe state the return-probe handlers set: `current_kprobe` and the control
//! block's `kprobe_status`.
//!
//! Constraints: called on the probe-hit path with preemption disabled, so a plain
//! `__this_cpu_write` is enough. On x86_64 SMP each write is the single `%gs`-relative store C
//! compiles `__this_cpu_write()` into (a call into C per write cost more than the write); the
//! symbols are the C per-CPU variables, so the kernel's relocation of per-CPU references
//! applies to these stores as to C's. Elsewhere the writes go through `kprobes_helpers.c`.

use kernel::bindings;

#[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
use super::helpers::rkp_set_current_kprobe;
#[cfg(all(CONFIG_KRETPROBE_ON_RETHOOK, not(all(CONFIG_X86_64, CONFIG_SMP))))]
use super::helpers::rkp_set_kprobe_status;

/// `__this_cpu_write(current_kprobe, p)`.
///
/// # Safety
///
/// Preemption is disabled (probe-hit context); `p` is NULL or a live probe.
#[inline(always)]
pub(super) unsafe fn set_current_kprobe(p: *mut bindings::kprobe) {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    // SAFETY: a store to this CPU's `current_kprobe`, addressed as C addresses per-CPU data
    // (%gs base plus the variable's per-CPU offset); no other memory is touched.
    unsafe {
        core::arch::asm!(
            "movq {p}, %gs:{var}(%rip)",
            p = in(reg) p,
            var = sym bindings::current_kprobe,
            options(att_syntax, nostack, preserves_flags)
        )
    };
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    // SAFETY: the C helper is `__this_cpu_write(current_kprobe, p)`; preemption is disabled.
    unsafe {
        rkp_set_current_kprobe(p)
    };
}

/// `get_kprobe_ctlblk()->kprobe_status = status` (the rethook return handler's).
///
/// # Safety
///
/// Preemption is disabled (probe-hit context).
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
#[inline(always)]
pub(super) unsafe fn set_kprobe_status(status: usize) {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    // SAFETY: a store to this CPU's `kprobe_ctlblk.kprobe_status` (an `unsigned long`),
    // addressed as C addresses per-CPU data; no other memory is touched.
    unsafe {
        core::arch::asm!(
            "movq {s}, %gs:{var}+{off}(%rip)",
            s = in(reg) status,
            var = sym bindings::kprobe_ctlblk,
            off = const core::mem::offset_of!(bindings::kprobe_ctlblk, kprobe_status),
            options(att_syntax, nostack, preserves_flags)
        )
    };
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    // SAFETY: the C helper is that store; preemption is disabled.
    unsafe {
        rkp_set_kprobe_status(status)
    };
}
