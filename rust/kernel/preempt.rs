// SPDX-License-Identifier: GPL-2.0

//! Preemption control.
//!
//! C header: [`include/linux/preempt.h`](srctree/include/linux/preempt.h)
//!
//! As in C, every operation here compiles to what the configuration makes it: a compiler
//! barrier without `CONFIG_PREEMPT_COUNT`, and on x86_64 SMP kernels the one `%gs`-relative
//! instruction on the per-CPU `pcpu_hot.preempt_count` that `arch/x86/include/asm/preempt.h`
//! emits, inline. Elsewhere (and with `CONFIG_DEBUG_PREEMPT` or `CONFIG_TRACE_PREEMPT_TOGGLE`,
//! whose counting is out of line in C too) the C helpers in `rust/helpers/preempt.c` are
//! called; they are `notrace` and in the kprobes blacklist, so that the kprobe and
//! function-tracer callbacks that use them cannot recurse through them.

use crate::bindings;
use core::marker::PhantomData;
use core::sync::atomic::{compiler_fence, Ordering};

/// C's `barrier()`: orders this CPU's memory accesses, as the compiler sees them, around a
/// change of the preemption count.
#[inline(always)]
fn barrier() {
    compiler_fence(Ordering::SeqCst);
}

/// Preemption is disabled on this CPU while this guard exists (`preempt_disable()`; dropping
/// it is `preempt_enable()`, which reschedules if a reschedule became due meanwhile on a
/// preemptible kernel).
///
/// Neither `Send` nor `Sync`: the guard belongs to the context that took it.
///
/// # Invariants
///
/// This context incremented the preemption count (or, without `CONFIG_PREEMPT_COUNT`, passed
/// a compiler barrier) when the guard was made and has not decremented it for the guard since.
///
/// # Examples
///
/// ```
/// use kernel::preempt;
///
/// let guard = preempt::disable();
/// // Per-CPU data of this CPU may be used here without migrating.
/// drop(guard);
/// ```
#[must_use = "preemption is enabled again when the guard is dropped"]
pub struct Guard(PhantomData<*mut ()>);

/// Disables preemption on this CPU until the returned guard is dropped (`preempt_disable()`).
#[inline(always)]
pub fn disable() -> Guard {
    // SAFETY: balanced by the guard's `drop`.
    unsafe { imp::disable() };
    // INVARIANT: the count was just incremented.
    Guard(PhantomData)
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: by the type invariant this context incremented the count for this guard.
        unsafe { imp::enable() };
    }
}

/// The same as [`Guard`] for code that the function tracer may run (its callbacks): the
/// `_notrace` pair, which never calls into the tracer itself.
///
/// # Invariants
///
/// As [`Guard`]'s.
#[must_use = "preemption is enabled again when the guard is dropped"]
pub struct NotraceGuard(PhantomData<*mut ()>);

/// Disables preemption on this CPU until the returned guard is dropped
/// (`preempt_disable_notrace()`).
#[inline(always)]
pub fn disable_notrace() -> NotraceGuard {
    // SAFETY: balanced by the guard's `drop`.
    unsafe { imp::disable_notrace() };
    // INVARIANT: the count was just incremented.
    NotraceGuard(PhantomData)
}

impl Drop for NotraceGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: by the type invariant this context incremented the count for this guard.
        unsafe { imp::enable_notrace() };
    }
}

/// The preemption count of this CPU (`preempt_count()`): the preemption-disable depth and the
/// softirq, hardirq and NMI nesting bits (`bindings::SOFTIRQ_OFFSET` and the `*_SHIFT`/`*_BITS`
/// constants).
#[inline(always)]
pub fn count() -> u32 {
    #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
    let count = x86::read() & !bindings::PREEMPT_NEED_RESCHED;
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    // SAFETY: `preempt_count()` reads this CPU's (or this task's) count; no precondition.
    let count = unsafe { bindings::preempt_count() } as u32;
    count
}

/// Operations on this CPU's `pcpu_hot.preempt_count`, as `arch/x86/include/asm/preempt.h`.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
mod x86 {
    use crate::bindings;
    use core::mem::offset_of;

    // `pcpu_hot` is a union of the fields and padding: every field is at its offset in the
    // anonymous structure.
    const COUNT: usize = offset_of!(
        bindings::pcpu_hot__bindgen_ty_1__bindgen_ty_1,
        preempt_count
    );

    /// `raw_cpu_read_4(pcpu_hot.preempt_count)`.
    #[inline(always)]
    pub(super) fn read() -> u32 {
        let v: u32;
        // SAFETY: a `%gs`-relative load of this CPU's `pcpu_hot.preempt_count`, which every
        // CPU has from its first instruction; it never faults and keeps the flags.
        unsafe {
            core::arch::asm!(
                "movl %gs:{var}+{off}(%rip), {v:e}",
                v = out(reg) v,
                var = sym bindings::pcpu_hot,
                off = const COUNT,
                options(att_syntax, nostack, preserves_flags, readonly)
            )
        };
        v
    }

    /// `__preempt_count_inc()`.
    ///
    /// # Safety
    ///
    /// Balanced by a decrement in the same context.
    #[cfg(all(
        CONFIG_PREEMPT_COUNT,
        not(CONFIG_DEBUG_PREEMPT),
        not(CONFIG_TRACE_PREEMPT_TOGGLE)
    ))]
    #[inline(always)]
    pub(super) unsafe fn inc() {
        // SAFETY: one read-modify-write of this CPU's count, which interrupts restore as they
        // found it, so it needs no lock; the caller keeps it balanced.
        unsafe {
            core::arch::asm!(
                "incl %gs:{var}+{off}(%rip)",
                var = sym bindings::pcpu_hot,
                off = const COUNT,
                options(att_syntax, nostack)
            )
        };
    }

    /// `__preempt_count_dec()`.
    ///
    /// # Safety
    ///
    /// Balances an increment of the same context.
    #[cfg(all(
        CONFIG_PREEMPT_COUNT,
        not(CONFIG_PREEMPTION),
        not(CONFIG_DEBUG_PREEMPT),
        not(CONFIG_TRACE_PREEMPT_TOGGLE)
    ))]
    #[inline(always)]
    pub(super) unsafe fn dec() {
        // SAFETY: as `inc`'s.
        unsafe {
            core::arch::asm!(
                "decl %gs:{var}+{off}(%rip)",
                var = sym bindings::pcpu_hot,
                off = const COUNT,
                options(att_syntax, nostack)
            )
        };
    }

    /// `__preempt_count_dec_and_test()`: decrements the count and returns whether it reached
    /// zero, which on x86 (whose count holds the inverted need-resched bit) means that
    /// preemption is enabled again and a reschedule is due.
    ///
    /// # Safety
    ///
    /// Balances an increment of the same context.
    #[cfg(all(
        CONFIG_PREEMPT_COUNT,
        CONFIG_PREEMPTION,
        not(CONFIG_DEBUG_PREEMPT),
        not(CONFIG_TRACE_PREEMPT_TOGGLE)
    ))]
    #[inline(always)]
    pub(super) unsafe fn dec_and_test() -> bool {
        let zero: u8;
        // SAFETY: as `inc`'s.
        unsafe {
            core::arch::asm!(
                "decl %gs:{var}+{off}(%rip)",
                "sete {z}",
                z = out(reg_byte) zero,
                var = sym bindings::pcpu_hot,
                off = const COUNT,
                options(att_syntax, nostack)
            )
        };
        zero != 0
    }
}

/// Without a preemption count: compiler barriers, as C's.
#[cfg(not(CONFIG_PREEMPT_COUNT))]
mod imp {
    use super::barrier;

    // `unsafe` as the other configurations' are: the callers balance them.
    #[inline(always)]
    pub(super) unsafe fn disable() {
        barrier();
    }
    #[inline(always)]
    pub(super) unsafe fn enable() {
        barrier();
    }
    #[inline(always)]
    pub(super) unsafe fn disable_notrace() {
        barrier();
    }
    #[inline(always)]
    pub(super) unsafe fn enable_notrace() {
        barrier();
    }
}

/// Inline, as C's.
#[cfg(all(
    CONFIG_PREEMPT_COUNT,
    CONFIG_X86_64,
    CONFIG_SMP,
    not(CONFIG_DEBUG_PREEMPT),
    not(CONFIG_TRACE_PREEMPT_TOGGLE)
))]
mod imp {
    use super::{barrier, x86};
    use crate::bindings;

    // Callers: balanced with `enable`, as the guards keep them.
    #[inline(always)]
    pub(super) unsafe fn disable() {
        // SAFETY: the caller balances it.
        unsafe { x86::inc() };
        barrier();
    }
    #[inline(always)]
    pub(super) unsafe fn enable() {
        barrier();
        #[cfg(CONFIG_PREEMPTION)]
        // SAFETY: balances `disable`; `__preempt_schedule()` is what C calls when the count
        // drops to zero with a reschedule due.
        unsafe {
            if x86::dec_and_test() {
                bindings::__preempt_schedule();
            }
        }
        #[cfg(not(CONFIG_PREEMPTION))]
        // SAFETY: balances `disable`.
        unsafe {
            x86::dec()
        };
    }
    #[inline(always)]
    pub(super) unsafe fn disable_notrace() {
        // SAFETY: as `disable`.
        unsafe { disable() };
    }
    #[inline(always)]
    pub(super) unsafe fn enable_notrace() {
        barrier();
        #[cfg(CONFIG_PREEMPTION)]
        // SAFETY: as `enable`, with the scheduler entry C's `preempt_enable_notrace()` uses.
        unsafe {
            if x86::dec_and_test() {
                bindings::__preempt_schedule_notrace();
            }
        }
        #[cfg(not(CONFIG_PREEMPTION))]
        // SAFETY: balances `disable_notrace`.
        unsafe {
            x86::dec()
        };
    }
}

/// Through the C helpers.
#[cfg(all(
    CONFIG_PREEMPT_COUNT,
    not(all(
        CONFIG_X86_64,
        CONFIG_SMP,
        not(CONFIG_DEBUG_PREEMPT),
        not(CONFIG_TRACE_PREEMPT_TOGGLE)
    ))
))]
mod imp {
    use crate::bindings;

    // Callers: balanced with `enable`, as the guards keep them.
    #[inline(always)]
    pub(super) unsafe fn disable() {
        // SAFETY: the helper is C's `preempt_disable()`; the caller balances it.
        unsafe { bindings::preempt_disable() };
    }
    #[inline(always)]
    pub(super) unsafe fn enable() {
        // SAFETY: the helper is C's `preempt_enable()`; it balances `disable`.
        unsafe { bindings::preempt_enable() };
    }
    #[inline(always)]
    pub(super) unsafe fn disable_notrace() {
        // SAFETY: the helper is C's `preempt_disable_notrace()`; the caller balances it.
        unsafe { bindings::preempt_disable_notrace() };
    }
    #[inline(always)]
    pub(super) unsafe fn enable_notrace() {
        // SAFETY: the helper is C's `preempt_enable_notrace()`; it balances `disable_notrace`.
        unsafe { bindings::preempt_enable_notrace() };
    }
}

/// Disables preemption without a guard (`preempt_disable_notrace()`), for code that hands
/// the matching enable to another scope of its own (such as [`crate::ftrace`]'s recursion
/// guard, which keeps a bit number, not a guard).
///
/// # Safety
///
/// Balanced by exactly one [`enable_notrace_raw`] in the same context.
// Only the inline recursion guard of `crate::ftrace` needs it.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP, not(CONFIG_FTRACE_VALIDATE_RCU_IS_WATCHING)))]
#[inline(always)]
pub(crate) unsafe fn disable_notrace_raw() {
    // SAFETY: the caller balances it.
    unsafe { imp::disable_notrace() };
}

/// `preempt_enable_notrace()` without a guard.
///
/// # Safety
///
/// Balances one [`disable_notrace_raw`] of the same context.
// Only the inline recursion guard of `crate::ftrace` needs it.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP, not(CONFIG_FTRACE_VALIDATE_RCU_IS_WATCHING)))]
#[inline(always)]
pub(crate) unsafe fn enable_notrace_raw() {
    // SAFETY: the caller's contract.
    unsafe { imp::enable_notrace() };
}
