// SPDX-License-Identifier: GPL-2.0

//! Per-CPU variables defined in C.
//!
//! C header: [`include/linux/percpu-defs.h`](srctree/include/linux/percpu-defs.h)
//!
//! Only what compiles to an inline sequence, as C's macros do, is offered: `this_cpu_ptr()` on
//! uniprocessor kernels (the variable itself) and on x86_64 (the variable's per-CPU offset plus
//! this CPU's `this_cpu_off`, read `%gs`-relative). Elsewhere there is no inline form in Rust
//! and callers use C.

/// Whether [`this_cpu_ptr`] is available in this configuration.
pub const THIS_CPU_PTR: bool = cfg!(any(not(CONFIG_SMP), CONFIG_X86_64));

/// Returns this CPU's instance of the per-CPU variable `var` (`this_cpu_ptr(&var)`).
///
/// Reads no memory but this CPU's `this_cpu_off` and never faults, so it may be used in any
/// context, including NMI and the kprobe handlers.
///
/// # Safety
///
/// `var` is the address of a variable defined with `DEFINE_PER_CPU()` (taken from its
/// symbol, e.g. `addr_of_mut!(bindings::var)`). The result is this CPU's instance only while
/// the caller cannot migrate (preemption or interrupts disabled).
#[cfg(any(not(CONFIG_SMP), CONFIG_X86_64))]
#[inline(always)]
pub unsafe fn this_cpu_ptr<T>(var: *mut T) -> *mut T {
    #[cfg(CONFIG_SMP)]
    {
        let off: usize;
        // SAFETY: a `%gs`-relative load of this CPU's `this_cpu_off`, as C's
        // `raw_cpu_read_long(this_cpu_off)`; it touches no other memory and keeps the flags.
        unsafe {
            core::arch::asm!(
                "movq %gs:{off}(%rip), {r}",
                r = out(reg) off,
                off = sym crate::bindings::this_cpu_off,
                options(att_syntax, nostack, readonly, pure, preserves_flags)
            )
        };
        // Per-CPU symbols are offsets into the per-CPU area (as C's `arch_raw_cpu_ptr()`
        // adds them); the kernel's relocation keeps them so under KASLR.
        (var as usize).wrapping_add(off) as *mut T
    }
    #[cfg(not(CONFIG_SMP))]
    {
        var
    }
}

/// Does nothing; the expansion of [`this_cpu_write_usize!`] calls it so that the macro can
/// only be used inside an `unsafe` block, where its caller states why its contract holds.
///
/// # Safety
///
/// The contract of [`this_cpu_write_usize!`].
#[doc(hidden)]
#[inline(always)]
pub unsafe fn this_cpu_write_requires_unsafe() {}

/// Writes `val` to this CPU's instance of the pointer-sized per-CPU variable `$var`, or to the
/// pointer-sized field at byte offset `$off` of it (`this_cpu_write(var, val)`,
/// `this_cpu_write(var.field, val)`), as one `%gs`-relative store on x86_64 SMP, where C's
/// `this_cpu_write()` is one too; a plain volatile store on UP. `const $val` stores a constant
/// as an immediate, as C does for one.
///
/// `$var` is the path of a `DEFINE_PER_CPU()` variable (from `bindings`), `$off` a constant
/// (`core::mem::offset_of!`), `$val` a `usize`. Only where [`THIS_CPU_PTR`] holds. The
/// expansion calls an `unsafe fn`, so the macro can only be used inside an `unsafe` block.
///
/// # Safety
///
/// The caller cannot migrate (preemption or interrupts disabled) and is the only writer of
/// this CPU's instance, and the variable (or field) has the size and alignment of a `usize`.
///
/// # Examples
///
/// ```ignore
/// // SAFETY: preemption is disabled and only this CPU writes its `current_kprobe`.
/// unsafe { kernel::this_cpu_write_usize!(bindings::current_kprobe, const 0) };
/// ```
#[cfg(any(not(CONFIG_SMP), CONFIG_X86_64))]
#[macro_export]
macro_rules! this_cpu_write_usize {
    ($var:path, $off:expr, const $val:expr) => {{
        $crate::percpu::this_cpu_write_requires_unsafe();
        #[cfg(CONFIG_SMP)]
        // SAFETY: a store to this CPU's instance, addressed as C addresses per-CPU data (`%gs`
        // base plus the variable's per-CPU offset); the caller's contract covers the rest.
        unsafe {
            ::core::arch::asm!(
                "movq ${v}, %gs:{var}+{off}(%rip)",
                v = const $val,
                var = sym $var,
                off = const $off,
                options(att_syntax, nostack, preserves_flags)
            )
        };
        #[cfg(not(CONFIG_SMP))]
        // SAFETY: on UP the per-CPU variable is a plain one; the caller's contract.
        unsafe {
            ::core::ptr::write_volatile(
                ::core::ptr::addr_of_mut!($var).cast::<u8>().add($off).cast::<usize>(),
                $val,
            )
        };
    }};
    ($var:path, const $val:expr) => {
        $crate::this_cpu_write_usize!($var, 0, const $val)
    };
    ($var:path, $off:expr, $val:expr) => {{
        let val: usize = $val;
        $crate::percpu::this_cpu_write_requires_unsafe();
        #[cfg(CONFIG_SMP)]
        // SAFETY: as for a constant, above.
        unsafe {
            ::core::arch::asm!(
                "movq {v}, %gs:{var}+{off}(%rip)",
                v = in(reg) val,
                var = sym $var,
                off = const $off,
                options(att_syntax, nostack, preserves_flags)
            )
        };
        #[cfg(not(CONFIG_SMP))]
        // SAFETY: on UP the per-CPU variable is a plain one; the caller's contract.
        unsafe {
            ::core::ptr::write_volatile(
                ::core::ptr::addr_of_mut!($var).cast::<u8>().add($off).cast::<usize>(),
                val,
            )
        };
    }};
    ($var:path, $val:expr) => {
        $crate::this_cpu_write_usize!($var, 0, $val)
    };
}
