// SPDX-License-Identifier: GPL-2.0

//! What the x86_64 kprobes arch layer needs from the kernel: reading and poking text, the
//! instruction-slot caches and their execmem pages, the tables a probe address is checked
//! against, the trap frame, and the warnings of the trap handlers. Small functions and one
//! type over the kernel's C (and the NOKPROBE wrappers of its static inlines in `rust_glue.c`),
//! so that `native.rs` calls no binding itself.
//!
//! Constraints: what the probe-hit path reaches ([`TrapRegs`], the `warn_*` functions,
//! [`unrecoverable`]) is `#[inline(always)]` and so part of its caller in `.kprobes.text`, or a
//! C function in the kprobes blacklist (`hitpath-check.py` proves it on the object). The rest
//! runs in process context under `kprobe_mutex` (and `text_mutex` where it pokes text).

use core::ffi::c_void;
use core::ptr;

use kernel::bindings;

/// The CPU enforces SMAP (`boot_cpu_has(X86_FEATURE_SMAP)`).
pub(crate) fn smap() -> bool {
    // SAFETY: reads a boot CPU feature bit.
    unsafe { bindings::rkp_x86_smap() }
}

/// Copies `N` bytes of kernel memory at `addr` (`copy_from_kernel_nofault()`); `None` if it
/// cannot be read.
pub(crate) fn read_kernel<const N: usize>(addr: usize) -> Option<[u8; N]> {
    let mut buf = [0u8; N];
    read_kernel_into(addr, &mut buf).then_some(buf)
}

/// Fills `buf` with the kernel memory at `addr` (`copy_from_kernel_nofault()`); false if it
/// cannot be read.
fn read_kernel_into(addr: usize, buf: &mut [u8]) -> bool {
    // SAFETY: `buf` is valid for writes of its length; the source is checked by the nofault
    // copy.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(
            buf.as_mut_ptr().cast(),
            addr as *const c_void,
            buf.len(),
        )
    };
    ret == 0
}

/// `perf_event_text_poke()`: tells perf that the `old` bytes at `addr` became `new` (either may
/// be empty: a slot allocated or freed).
pub(crate) fn perf_text_poke(addr: usize, old: &[u8], new: &[u8]) {
    let p = |s: &[u8]| {
        if s.is_empty() {
            ptr::null()
        } else {
            s.as_ptr().cast()
        }
    };
    // SAFETY: the slices are valid for their lengths (NULL for empty, as C passes); `addr` is
    // only recorded.
    unsafe {
        bindings::perf_event_text_poke(addr as *const c_void, p(old), old.len(), p(new), new.len())
    };
}

/// `text_poke(addr, bytes, len)`.
///
/// # Safety
///
/// `addr..addr + bytes.len()` is kernel text or an instruction slot of ours that no CPU
/// executes in a way the write can break; `text_mutex` is held.
pub(crate) unsafe fn text_poke(addr: usize, bytes: &[u8]) {
    // SAFETY: by the function's contract; `bytes` is valid for its length.
    unsafe { bindings::text_poke(addr as *mut c_void, bytes.as_ptr().cast(), bytes.len()) };
}

/// `text_poke_bytes(addrs, bytes, nr)`: writes `bytes[i]` at `addrs[i]` for every `i`, as
/// `text_poke()` of each byte, in one session of the poking mm with interrupts disabled.
///
/// # Safety
///
/// Each address is kernel text that no CPU executes in a way the write of its byte can break;
/// `text_mutex` is held.
pub(crate) unsafe fn text_poke_bytes(addrs: &[usize], bytes: &[u8]) {
    let nr = addrs.len().min(bytes.len());
    // SAFETY: by the function's contract; both arrays are valid for `nr` elements, and
    // `usize` is `unsigned long`.
    unsafe { bindings::text_poke_bytes(addrs.as_ptr().cast(), bytes.as_ptr(), nr) };
}

/// `text_poke_bp(addr, bytes, len, NULL)`: replaces one instruction of live text through an
/// int3, with the IPI rounds that make every CPU see either the old or the new instruction.
///
/// # Safety
///
/// `addr` is the start of an instruction of kernel text that `bytes` (one instruction) may
/// replace while other CPUs run it; `text_mutex` is held.
pub(crate) unsafe fn text_poke_bp(addr: usize, bytes: &[u8]) {
    // SAFETY: by the function's contract; `bytes` is valid for its length.
    unsafe {
        bindings::text_poke_bp(
            addr as *mut c_void,
            bytes.as_ptr().cast(),
            bytes.len(),
            ptr::null(),
        )
    };
}

/// `text_poke_sync()`: every CPU serializes, so none runs text it fetched before a poke.
pub(crate) fn text_poke_sync() {
    // SAFETY: an IPI round to serialize every CPU; no memory is passed.
    unsafe { bindings::text_poke_sync() };
}

/// The tables a probe address is checked against (`kernel/extable.c`, kCFI, kgdb,
/// alternatives, ftrace, jump labels, static calls) and the entry text's bounds.
pub(crate) mod tables {
    use kernel::bindings;

    /// `search_exception_tables(addr)` found an entry.
    pub(crate) fn exception_at(addr: usize) -> bool {
        // SAFETY: a read-only lookup in the exception tables; any address may be asked.
        unsafe { !bindings::search_exception_tables(addr).is_null() }
    }
    /// `is_cfi_trap(addr)`: `addr` is the `ud2` of a kCFI check.
    pub(crate) fn cfi_trap_at(addr: usize) -> bool {
        // SAFETY: a lookup in the kCFI trap table.
        unsafe { bindings::rkp_x86_is_cfi_trap(addr) }
    }
    /// `kgdb_has_hit_break(addr)`.
    pub(crate) fn kgdb_break_at(addr: usize) -> bool {
        // SAFETY: a lookup in kgdb's breakpoint table.
        unsafe { bindings::rkp_x86_kgdb_has_hit_break(addr) }
    }
    /// `alternatives_text_reserved(start, end)`.
    pub(crate) fn alternatives_reserved(start: usize, end: usize) -> bool {
        // SAFETY: a lookup in the alternatives tables.
        unsafe { bindings::rkp_x86_alternatives_text_reserved(start, end) }
    }
    /// Text that ftrace, alternatives, jump labels or static calls patch in `[start, end]`.
    pub(crate) fn text_reserved(start: usize, end: usize) -> bool {
        // SAFETY: lookups in the ftrace, alternatives, jump label and static call tables.
        unsafe { bindings::rkp_x86_text_reserved(start, end) }
    }
    /// `addr` is in the entry text (`__entry_text_start` to `__entry_text_end`).
    pub(crate) fn in_entry_text(addr: usize) -> bool {
        // SAFETY: compares with two linker symbols.
        unsafe { bindings::rkp_x86_in_entry_text(addr) }
    }
    /// `[__entry_text_start, __entry_text_end)`.
    pub(crate) fn entry_text() -> (usize, usize) {
        let (mut start, mut end) = (0, 0);
        // SAFETY: out-pointers to locals.
        unsafe { bindings::rkp_x86_entry_text(&mut start, &mut end) };
        (start as usize, end as usize)
    }
}

pub(crate) use crate::glue::insn_slot::slots;

/// A page for instruction slots from execmem's kprobes range, made read-only and executable
/// (`execmem_alloc(EXECMEM_KPROBES, PAGE_SIZE)` then `set_memory_rox()`), or NULL.
pub(crate) fn alloc_rox_page() -> *mut c_void {
    // SAFETY: allocates from execmem's kprobes range.
    let page = unsafe { bindings::rkp_x86_execmem_alloc_page() };
    if !page.is_null() {
        // SAFETY: the page was just allocated and is ours.
        unsafe { bindings::rkp_x86_set_memory_rox(page) };
    }
    page
}

/// The `pr_err()` of `__copy_instruction()` for a displacement that does not fit into s32.
pub(crate) fn pr_displacement_does_not_fit(newdisp: i64) {
    // SAFETY: prints a number.
    unsafe { bindings::rkp_x86_pr_displacement_does_not_fit(newdisp) };
}

/// `WARN_ON(disabled)` of `arch_optimize_kprobes()`: a disabled probe is being optimized.
#[cfg(CONFIG_OPTPROBES)]
pub(crate) fn warn_optimize_disabled(disabled: bool) {
    // SAFETY: a WARN_ON on a flag.
    unsafe { bindings::rkp_x86_warn_optimize_disabled(disabled) };
}

/// The `WARN_ON(1)` of a probe hit in a `kprobe_status` it cannot be in.
#[inline(always)]
pub(crate) fn warn_bad_status() {
    // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
    unsafe { bindings::rkp_arch_warn_bad_status() };
}

/// The `WARN_ON(1)` of a fault while a probe's status says none can happen.
#[inline(always)]
pub(crate) fn warn_fault_status() {
    // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
    unsafe { bindings::rkp_arch_warn_fault_status() };
}

/// A probe hit while another was being single-stepped in re-entry: logs `p` and `BUG()`s.
///
/// # Safety
///
/// `p` is a live probe.
#[inline(always)]
pub(crate) unsafe fn unrecoverable(p: *mut bindings::kprobe) -> ! {
    // SAFETY: `p` is live (`# Safety`); the NOKPROBE C function logs it and BUG()s.
    unsafe { bindings::rkp_x86_unrecoverable(p) }
}

/// The trap frame handle every native arch shares; x86's field accessors follow.
pub(crate) use crate::glue::hitcpu::TrapRegs;

macro_rules! regs_fields {
    ($($(#[$m:meta])* $get:ident / $set:ident: $field:ident;)*) => {
        impl TrapRegs {
            $(
                $(#[$m])*
                #[inline(always)]
                pub(crate) fn $get(self) -> usize {
                    // SAFETY: a live trap frame (invariant).
                    unsafe { (*self.as_ptr()).$field }
                }
                $(#[$m])*
                #[inline(always)]
                pub(crate) fn $set(self, v: usize) {
                    // SAFETY: as above; this handler owns the frame.
                    unsafe { (*self.as_ptr()).$field = v }
                }
            )*
        }
    };
}

regs_fields! {
    /// `regs->ip`.
    ip / set_ip: ip;
    /// `regs->flags`.
    flags / set_flags: flags;
    /// `regs->sp`.
    sp / set_sp: sp;
}

impl TrapRegs {
    /// `user_mode(regs)`: the trap came from user space.
    #[inline(always)]
    pub(crate) fn user_mode(self) -> bool {
        // SAFETY: a live trap frame (invariant); `cs` is the saved code segment.
        unsafe { (*self.as_ptr()).__bindgen_anon_1.cs & 3 != 0 }
    }
    /// `regs->orig_ax = v`.
    #[cfg(CONFIG_OPTPROBES)]
    #[inline(always)]
    pub(crate) fn set_orig_ax(self, v: usize) {
        // SAFETY: a live trap frame (invariant), owned by this handler.
        unsafe { (*self.as_ptr()).orig_ax = v }
    }
    /// `regs->cs = cs`.
    #[cfg(CONFIG_OPTPROBES)]
    #[inline(always)]
    pub(crate) fn set_cs(self, cs: u16) {
        // SAFETY: as above.
        unsafe { (*self.as_ptr()).__bindgen_anon_1.cs = cs }
    }
}
