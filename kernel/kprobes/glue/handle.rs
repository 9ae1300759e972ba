// SPDX-License-Identifier: GPL-2.0

//! The handles the core's platform traits are implemented on: [`Kernel`], the platform itself,
//! [`Kp`] for a `struct kprobe`, `Krp` for a `struct kretprobe` and [`Module`] for a
//! `struct module`.
//!
//! Constraints: every probe handle points to a live `struct kprobe` (a caller's probe for the
//! duration of the API call that passed it, a hashed probe while it is reachable, or an
//! aggregate the core allocated and has not freed); fields C may touch concurrently are read and
//! written with volatile (READ_ONCE/WRITE_ONCE) accesses and never through `&mut`. The helpers
//! here are `#[inline(always)]`: the probe-hit path uses them.

#[cfg(CONFIG_OPTPROBES)]
use core::mem::offset_of;
use core::ptr::{self, addr_of, NonNull};

use kernel::bindings;

#[cfg(CONFIG_OPTPROBES)]
use crate::store::Aggr;

/// The kernel platform. All state lives in C statics and `mutex.rs`, but for the symbol
/// answers of a registration batch: [`KERNEL`] has none; `with_symbol_batch()` hands its call a
/// `Kernel` of its own that has them (`glue/text.rs`), dropped when the call returns.
pub struct Kernel {
    pub(super) syms: Option<super::symbatch::Batch>,
}

/// The platform every path but a registration batch uses.
pub static KERNEL: Kernel = Kernel { syms: None };

/// Handle to a `struct kprobe`.
///
/// # Invariants
///
/// The pointer refers to a live `struct kprobe` for as long as the core uses the handle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Kp(NonNull<bindings::kprobe>);

impl Kp {
    /// Wraps a pointer received from C.
    ///
    /// # Safety
    ///
    /// `p` must point to a `struct kprobe` that stays valid while the handle is used: a
    /// caller's probe for the duration of the kprobes API call that received it, or a hashed
    /// probe inside an RCU read-side section or under `kprobe_mutex`.
    #[inline(always)]
    pub unsafe fn from_raw(p: NonNull<bindings::kprobe>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Kp(p)
    }

    /// The raw pointer, for C.
    #[inline(always)]
    pub fn as_ptr(self) -> *mut bindings::kprobe {
        self.0.as_ptr()
    }

    /// `&p->hlist` (only the address is formed).
    #[inline(always)]
    pub(super) fn hlist(self) -> *mut bindings::hlist_node {
        // SAFETY: the probe is live (type invariant).
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).hlist) }
    }

    /// `&p->list` (only the address is formed).
    #[inline(always)]
    pub(super) fn list(self) -> *mut bindings::list_head {
        // SAFETY: the probe is live (type invariant).
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).list) }
    }

    #[inline(always)]
    pub(super) fn from_c(p: *mut bindings::kprobe) -> Option<Self> {
        // SAFETY: every non-NULL pointer the C wrappers return is a live hashed probe, child or
        // queued aggregate, under the same RCU section or lock as the walk that asked for it.
        NonNull::new(p).map(|p| unsafe { Kp::from_raw(p) })
    }
}

/// `container_of(ap, struct optimized_kprobe, kp)`: the arch hooks take the optimized probe.
///
/// Only the address is computed. It is the live `struct optimized_kprobe` around `ap`: an
/// [`Aggr`] was allocated by `alloc_aggr_kprobe()` (type invariant), and with OPTPROBES every
/// aggregate is allocated as one (`rkp_alloc_aggr_kprobe`).
#[cfg(CONFIG_OPTPROBES)]
#[inline(always)]
pub(crate) fn to_op(ap: Aggr<Kp>) -> *mut bindings::optimized_kprobe {
    ap.kp()
        .as_ptr()
        .wrapping_byte_sub(offset_of!(bindings::optimized_kprobe, kp))
        .cast()
}

/// Handle to a `struct kretprobe`.
///
/// # Invariants
///
/// The pointer refers to a live `struct kretprobe` while the core uses the handle.
#[cfg(CONFIG_KRETPROBES)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Krp(NonNull<bindings::kretprobe>);

#[cfg(CONFIG_KRETPROBES)]
impl Krp {
    /// Wraps a pointer received from C.
    ///
    /// # Safety
    ///
    /// `rp` must stay valid for the duration of the API call that received it.
    #[inline(always)]
    pub unsafe fn from_raw(rp: NonNull<bindings::kretprobe>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Krp(rp)
    }

    /// The raw pointer, for C.
    #[inline(always)]
    pub fn as_ptr(self) -> *mut bindings::kretprobe {
        self.0.as_ptr()
    }
}

/// Handle to a `struct module`.
///
/// # Invariants
///
/// The module is pinned (a reference held, or its notifier running) while the handle is used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Module(NonNull<bindings::module>);

impl Module {
    /// Wraps a module pointer.
    ///
    /// # Safety
    ///
    /// The module must stay alive while the handle is used.
    pub unsafe fn from_raw(m: NonNull<bindings::module>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Module(m)
    }

    /// The raw pointer, for C.
    pub fn as_ptr(self) -> *mut bindings::module {
        self.0.as_ptr()
    }

    /// `within_module_mem_type()` (`addr - base < size`) for any of `types`: C's
    /// `within_module_init()` and `within_module_core()` loop over a class of them.
    ///
    /// The descriptors are read, never borrowed: `do_init_module()` clears those of the init
    /// memory (`base`, `size`) while it frees it, with no lock the core holds, so a registration
    /// or a notifier can read them during that write. C reads them plainly; here each field is
    /// one volatile (`READ_ONCE()`) load, and no reference to the `struct module_memory` is
    /// formed.
    #[cfg(CONFIG_MODULES)]
    pub(super) fn within_mem(self, addr: usize, types: &[bindings::mod_mem_type]) -> bool {
        let m = self.0.as_ptr();
        types.iter().any(|&t| {
            let i = t as usize;
            if i >= bindings::mod_mem_type_MOD_MEM_NUM_TYPES as usize {
                return false;
            }
            // SAFETY: the module is pinned (type invariant), so its `mem` array is live; `i` is
            // in bounds (checked above) and only the element's address is formed.
            let mem = unsafe { addr_of!((*m).mem).cast::<bindings::module_memory>().add(i) };
            // SAFETY: `mem` points into the live array; word-sized volatile loads of fields
            // that may be rewritten concurrently (see above), as READ_ONCE().
            let (base, size) = unsafe {
                (
                    ptr::read_volatile(addr_of!((*mem).base)) as usize,
                    ptr::read_volatile(addr_of!((*mem).size)) as usize,
                )
            };
            addr.wrapping_sub(base) < size
        })
    }
}

/// The bytes of a C string before its NUL, measured with the kernel's `strlen()`.
///
/// Used on the probe-hit path (`dump_kprobe()`), which has no panic path: `CStr::from_ptr()`
/// adds 1 to the length with an overflow check.
///
/// # Safety
///
/// `s` is a NUL-terminated string that stays valid and unchanged for `'a`.
#[inline(always)]
pub(super) unsafe fn c_str_bytes<'a>(s: *const u8) -> &'a [u8] {
    // SAFETY: the `strlen(s)` bytes before the NUL are initialised and live for `'a`.
    unsafe { core::slice::from_raw_parts(s, bindings::strlen(s.cast())) }
}
