// SPDX-License-Identifier: GPL-2.0

//! What a function-tracer (`ftrace_ops`) callback needs: its recursion protection and the
//! registers of the traced call.
//!
//! C headers: [`include/linux/trace_recursion.h`](srctree/include/linux/trace_recursion.h),
//! [`include/linux/ftrace.h`](srctree/include/linux/ftrace.h)
//!
//! On x86_64 SMP kernels both are inline, as C's `static __always_inline` functions are (the
//! current task and the preemption count are `%gs`-relative loads there); elsewhere, and with
//! `CONFIG_FTRACE_VALIDATE_RCU_IS_WATCHING`, the `notrace` C helpers of
//! `rust/helpers/ftrace.c` are called.

use crate::bindings;
use core::marker::PhantomData;

/// ftrace's recursion protection of a callback, held from [`RecursionGuard::try_lock`] until
/// it is dropped (`ftrace_test_recursion_trylock()` ... `ftrace_test_recursion_unlock()`).
/// Preemption is disabled (notrace) meanwhile, as C's lock does.
///
/// It is neither `Send` nor `Sync`: the bit it holds is the current task's, for the context
/// (normal, softirq, hardirq, NMI) that took it.
///
/// # Invariants
///
/// `bit` is set in the current task's `trace_recursion` by this context, and preemption was
/// disabled once for it, both undone by `drop`.
#[must_use = "the recursion protection is released when the guard is dropped"]
pub struct RecursionGuard {
    bit: u32,
    _not_send: PhantomData<*mut ()>,
}

impl RecursionGuard {
    /// Takes the recursion protection of the function-tracer callback running for the call
    /// at `ip` from `parent_ip` (the callback's first two arguments); `None` if this context
    /// is already inside such a callback (the tracer is recursing), which C also records when
    /// `CONFIG_FTRACE_RECORD_RECURSION` is set.
    #[inline(always)]
    pub fn try_lock(ip: usize, parent_ip: usize) -> Option<Self> {
        let bit = imp::trylock(ip, parent_ip)?;
        // INVARIANT: `trylock` set `bit` and disabled preemption.
        Some(Self {
            bit,
            _not_send: PhantomData,
        })
    }
}

impl Drop for RecursionGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: by the type invariant this context set `self.bit` and disabled preemption
        // once; both are undone here, once.
        unsafe { imp::unlock(self.bit) };
    }
}

/// The full registers of the traced call (`ftrace_get_regs()`), or NULL when the callback's
/// `ftrace_ops` did not ask for them (`FTRACE_OPS_FL_SAVE_REGS`) or `fregs` is NULL.
///
/// # Safety
///
/// `fregs` is NULL or the `ftrace_regs` the callback received, and the callback has not
/// returned.
#[inline(always)]
pub unsafe fn regs(fregs: *mut bindings::ftrace_regs) -> *mut bindings::pt_regs {
    #[cfg(all(CONFIG_X86_64, CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS))]
    {
        if fregs.is_null() {
            return core::ptr::null_mut();
        }
        // With `HAVE_DYNAMIC_FTRACE_WITH_ARGS`, x86's `fregs` is a `struct __arch_ftrace_regs`
        // whose `cs` the trampoline sets only when it saved every register
        // (arch/x86/include/asm/ftrace.h).
        let arch = fregs.cast::<bindings::__arch_ftrace_regs>();
        // SAFETY: `fregs` is the live `ftrace_regs` of this callback (`# Safety`).
        let regs = unsafe { core::ptr::addr_of_mut!((*arch).regs) };
        // SAFETY: as above; a plain read of the saved `cs` (the 16-bit member of its union,
        // as C reads it).
        if unsafe { (*regs).__bindgen_anon_1.cs } == 0 {
            core::ptr::null_mut()
        } else {
            regs
        }
    }
    #[cfg(not(all(CONFIG_X86_64, CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS)))]
    // SAFETY: the helper is C's `ftrace_get_regs()`, given what the callback received.
    unsafe {
        bindings::ftrace_get_regs(fregs)
    }
}

/// Inline, as C's.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP, not(CONFIG_FTRACE_VALIDATE_RCU_IS_WATCHING)))]
mod imp {
    use crate::{bindings, preempt};
    use core::ptr::addr_of_mut;

    const NMI_MASK: u32 = ((1 << bindings::NMI_BITS) - 1) << bindings::NMI_SHIFT;
    const HARDIRQ_MASK: u32 = ((1 << bindings::HARDIRQ_BITS) - 1) << bindings::HARDIRQ_SHIFT;
    const START: u32 = bindings::TRACE_FTRACE_BIT;

    /// `&current->trace_recursion`.
    #[inline(always)]
    fn trace_recursion() -> *mut usize {
        let task: *mut bindings::task_struct;
        // SAFETY: `current` on x86_64 (`this_cpu_read_stable(pcpu_hot.current_task)`): a
        // `%gs`-relative load of this CPU's running task, which is at offset 0 of `pcpu_hot`.
        unsafe {
            core::arch::asm!(
                "movq %gs:{var}(%rip), {t}",
                t = out(reg) task,
                var = sym bindings::pcpu_hot,
                options(att_syntax, nostack, preserves_flags, readonly)
            )
        };
        // SAFETY: the running task is live while it runs; only the place is computed.
        unsafe { addr_of_mut!((*task).trace_recursion).cast() }
    }

    /// `trace_test_and_set_recursion(ip, parent_ip, TRACE_FTRACE_START)`.
    #[inline(always)]
    pub(super) fn trylock(_ip: usize, _parent_ip: usize) -> Option<u32> {
        let place = trace_recursion();
        // SAFETY: the running task's own field, which only the task itself (and interrupts
        // nested in it, which restore it) changes; READ_ONCE as C's.
        let val = unsafe { core::ptr::read_volatile(place) } as u32;
        // `interrupt_context_level()`: 0 normal, 1 softirq, 2 hardirq, 3 NMI.
        let pc = preempt::count();
        let level = u32::from(pc & NMI_MASK != 0)
            + u32::from(pc & (NMI_MASK | HARDIRQ_MASK) != 0)
            + u32::from(pc & (NMI_MASK | HARDIRQ_MASK | bindings::SOFTIRQ_OFFSET) != 0);
        let mut bit = bindings::TRACE_CTX_NORMAL - level + START;
        if val & (1 << bit) != 0 {
            // A trace in an interrupt that arrived before the preemption count said so: one
            // such level is let through on the transition bit, as C does.
            bit = bindings::TRACE_CTX_TRANSITION + START;
            if val & (1 << bit) != 0 {
                #[cfg(CONFIG_FTRACE_RECORD_RECURSION)]
                // SAFETY: records the addresses for `recursed_functions`; any context.
                unsafe {
                    bindings::ftrace_record_recursion(_ip as _, _parent_ip as _)
                };
                return None;
            }
        }
        // SAFETY: as the read above; a plain store as C's.
        unsafe { place.write_volatile((val | 1 << bit) as usize) };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: balanced in `unlock`, which the guard calls once.
        unsafe { preempt::disable_notrace_raw() };
        Some(bit)
    }

    /// `trace_clear_recursion(bit)`.
    ///
    /// # Safety
    ///
    /// `bit` came from `trylock` in this context and is released once.
    #[inline(always)]
    pub(super) unsafe fn unlock(bit: u32) {
        // SAFETY: balances `trylock`'s (`# Safety`).
        unsafe { preempt::enable_notrace_raw() };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        let place = trace_recursion();
        // SAFETY: the running task's own field, as in `trylock`; C's plain `&=`.
        unsafe { place.write_volatile(place.read_volatile() & !(1usize << bit)) };
    }
}

/// Through the C helpers.
#[cfg(not(all(CONFIG_X86_64, CONFIG_SMP, not(CONFIG_FTRACE_VALIDATE_RCU_IS_WATCHING))))]
mod imp {
    use crate::bindings;

    #[inline(always)]
    pub(super) fn trylock(ip: usize, parent_ip: usize) -> Option<u32> {
        // SAFETY: the helper is C's `ftrace_test_recursion_trylock()`; any context.
        let bit = unsafe { bindings::ftrace_test_recursion_trylock(ip as _, parent_ip as _) };
        u32::try_from(bit).ok()
    }

    /// # Safety
    ///
    /// `bit` came from `trylock` in this context and is released once.
    #[inline(always)]
    pub(super) unsafe fn unlock(bit: u32) {
        // SAFETY: the helper is C's `ftrace_test_recursion_unlock()` (`# Safety`).
        unsafe { bindings::ftrace_test_recursion_unlock(bit as _) };
    }
}
