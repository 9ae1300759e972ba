// SPDX-License-Identifier: GPL-2.0

//! The per-CPU kprobe state the return-probe handlers set: `current_kprobe` and the control
//! block's `kprobe_status`.
//!
//! Constraints: called on the probe-hit path with preemption disabled, so a plain
//! `__this_cpu_write` is enough. Where the kernel crate has it inline (`kernel::percpu`:
//! uniprocessor, and x86_64 where it is the one `%gs`-relative store C's is) the write is
//! inline; elsewhere it goes through the `__kprobes` helpers of `kprobes_helpers.c` (a helper
//! of the kernel crate would be probeable).

use kernel::bindings;
#[cfg(all(CONFIG_KRETPROBE_ON_RETHOOK, not(CONFIG_SMP)))]
use kernel::percpu::this_cpu_ptr;

#[cfg(not(any(not(CONFIG_SMP), CONFIG_X86_64)))]
use super::helpers::rkp_set_current_kprobe;
#[cfg(all(CONFIG_KRETPROBE_ON_RETHOOK, not(any(not(CONFIG_SMP), CONFIG_X86_64))))]
use super::helpers::rkp_set_kprobe_status;

/// `__this_cpu_write(current_kprobe, p)`.
///
/// # Safety
///
/// Preemption is disabled (probe-hit context); `p` is NULL or a live probe.
#[inline(always)]
pub(crate) unsafe fn set_current_kprobe(p: *mut bindings::kprobe) {
    #[cfg(any(not(CONFIG_SMP), CONFIG_X86_64))]
    // SAFETY: `current_kprobe` is a pointer-sized DEFINE_PER_CPU variable; preemption is
    // disabled and only this CPU writes its instance (`# Safety`).
    unsafe {
        kernel::this_cpu_write_usize!(bindings::current_kprobe, p as usize)
    };
    #[cfg(not(any(not(CONFIG_SMP), CONFIG_X86_64)))]
    // SAFETY: the C helper is `__this_cpu_write(current_kprobe, p)`; preemption is disabled.
    unsafe {
        rkp_set_current_kprobe(p)
    };
}

/// `__this_cpu_write(current_kprobe, NULL)`, the NULL stored as an immediate as C's is.
///
/// # Safety
///
/// Preemption is disabled (probe-hit context).
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
#[inline(always)]
pub(crate) unsafe fn clear_current_kprobe() {
    #[cfg(any(not(CONFIG_SMP), CONFIG_X86_64))]
    // SAFETY: as in `set_current_kprobe`.
    unsafe {
        kernel::this_cpu_write_usize!(bindings::current_kprobe, const 0)
    };
    #[cfg(not(any(not(CONFIG_SMP), CONFIG_X86_64)))]
    // SAFETY: as in `set_current_kprobe`.
    unsafe {
        rkp_set_current_kprobe(core::ptr::null_mut())
    };
}

/// `get_kprobe_ctlblk()->kprobe_status = STATUS` (the rethook return handler's), the status
/// stored as an immediate, as C's constant is.
///
/// # Safety
///
/// Preemption is disabled (probe-hit context).
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
#[inline(always)]
pub(crate) unsafe fn set_kprobe_status<const STATUS: usize>() {
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    let status = STATUS;
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    // SAFETY: `kprobe_ctlblk.kprobe_status` is an `unsigned long` here (x86_64); preemption
    // is disabled and only this CPU writes its instance (`# Safety`).
    unsafe {
        kernel::this_cpu_write_usize!(
            bindings::kprobe_ctlblk,
            core::mem::offset_of!(bindings::kprobe_ctlblk, kprobe_status),
            const STATUS
        )
    };
    #[cfg(not(CONFIG_SMP))]
    // SAFETY: `kprobe_ctlblk` is a DEFINE_PER_CPU variable, a plain one on UP; preemption is
    // disabled and only this CPU writes it. `kprobe_status` is narrower on some arches (riscv).
    unsafe {
        let kcb = this_cpu_ptr(core::ptr::addr_of_mut!(bindings::kprobe_ctlblk));
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*kcb).kprobe_status), status as _)
    };
    #[cfg(not(any(not(CONFIG_SMP), CONFIG_X86_64)))]
    // SAFETY: the C helper is that store; preemption is disabled.
    unsafe {
        rkp_set_kprobe_status(status)
    };
}
