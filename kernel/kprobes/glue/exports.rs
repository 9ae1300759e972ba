// SPDX-License-Identifier: GPL-2.0

//! C-linkage entry points with the names and signatures of `include/linux/kprobes.h`, each a
//! thin shim from raw pointers to [`Kp`] handles and from `Result` to 0/-errno.
//!
//! Constraints: the probe-hit entry points (`get_kprobe`, `aggr_pre_handler`,
//! `aggr_post_handler`, `opt_pre_handler`, `kprobes_inc_nmissed_count`) are `nokprobe!`
//! functions with C's symbol names, so they and the logic inlined into them are unprobeable, as
//! C's `NOKPROBE_SYMBOL`s are (`hitpath-check.py` proves nothing they reach is left out of line
//! elsewhere); they neither allocate nor lock. A NULL probe pointer passed to the API, which C
//! would dereference, is refused with -EINVAL or ignored, in an array too; the hit-path handlers
//! take the arch's pointer to the hashed probe, never NULL, unchecked as C does.
//! `EXPORT_SYMBOL_GPL` for the module-facing functions is emitted from C (`kprobes_helpers.c`).

use core::ffi::c_int;
use core::ptr::NonNull;

use kernel::bindings;

#[cfg(CONFIG_KRETPROBES)]
use super::handle::Krp;
use super::handle::{Kp, KERNEL};
use crate::errno::{to_c_ret, Errno, Result};
#[cfg(CONFIG_KRETPROBES)]
use crate::kretprobe;
use crate::store::Aggr;
use crate::{blacklist, optimizer, register, table};

/// A probe pointer received from C as a handle; NULL is `None`.
///
/// # Safety
///
/// `p` is NULL or points to a `struct kprobe` that stays valid for the call.
#[inline(always)]
unsafe fn kp(p: *mut bindings::kprobe) -> Option<Kp> {
    // SAFETY: non-NULL here, and valid for the call by the caller's contract.
    NonNull::new(p).map(|p| unsafe { Kp::from_raw(p) })
}

/// The aggregate a hit-path handler was called with.
///
/// # Safety
///
/// `p` is non-NULL and points to a live probe: the arch calls `ap->pre_handler(ap, regs)` (and
/// the optimized path `opt_pre_handler(&op->kp, regs)`) with the hashed probe itself, as C's
/// handlers, which dereference it unchecked, rely on.
#[inline(always)]
unsafe fn hit_kp(p: *mut bindings::kprobe) -> Kp {
    // SAFETY: non-NULL and live by the caller's contract.
    unsafe { Kp::from_raw(NonNull::new_unchecked(p)) }
}

fn ret(r: Result) -> c_int {
    to_c_ret(r)
}

nokprobe! {
    /// `get_kprobe()`: the hash entry at `addr`, or NULL.
    ///
    /// # Safety
    ///
    /// Caller holds `kprobe_mutex` or runs with preemption disabled.
    #[no_mangle]
    pub unsafe extern "C" fn get_kprobe(addr: *mut core::ffi::c_void) -> *mut bindings::kprobe {
        table::get_kprobe(&KERNEL, addr as usize).map_or(core::ptr::null_mut(), Kp::as_ptr)
    }
}

nokprobe! {
    /// `aggr_pre_handler()` (static in C; installed as an aggregate's `pre_handler`).
    ///
    /// # Safety
    ///
    /// `p` is a hashed aggregate and the caller is a probe handler (preemption disabled).
    #[no_mangle]
    pub unsafe extern "C" fn aggr_pre_handler(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: the arch calls an aggregate's pre_handler with that aggregate (`# Safety`),
        // which the core allocated.
        let ap = unsafe { Aggr::new_unchecked(hit_kp(p)) };
        table::aggr_pre_handler(&KERNEL, ap, regs)
    }
}

nokprobe! {
    /// `aggr_post_handler()` (static in C; installed as an aggregate's `post_handler`).
    ///
    /// # Safety
    ///
    /// As for [`aggr_pre_handler`].
    #[no_mangle]
    pub unsafe extern "C" fn aggr_post_handler(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
        flags: usize,
    ) {
        // SAFETY: the arch calls an aggregate's post_handler with that aggregate (`# Safety`),
        // which the core allocated.
        let ap = unsafe { Aggr::new_unchecked(hit_kp(p)) };
        table::aggr_post_handler(&KERNEL, ap, regs, flags);
    }
}

nokprobe! {
    /// `opt_pre_handler()`: the optimized path's fan-out.
    ///
    /// # Safety
    ///
    /// As for [`aggr_pre_handler`].
    #[no_mangle]
    pub unsafe extern "C" fn opt_pre_handler(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) {
        // SAFETY: the arch's optimized callback passes `&op->kp` of a live aggregate (`# Safety`),
        // which the core allocated.
        let ap = unsafe { Aggr::new_unchecked(hit_kp(p)) };
        table::opt_pre_handler(&KERNEL, ap, regs);
    }
}

nokprobe! {
    /// `kprobes_inc_nmissed_count()`.
    ///
    /// # Safety
    ///
    /// `p` is a hashed probe; preemption disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobes_inc_nmissed_count(p: *mut bindings::kprobe) {
        // SAFETY: NULL or a hashed probe (`# Safety`).
        if let Some(p) = unsafe { kp(p) } {
            table::kprobes_inc_nmissed_count(&KERNEL, p);
        }
    }
}

/// Whether `pre` is a kretprobe's `pre_handler`: `pre_handler_kretprobe`, or the one of a pool
/// that may grow (how `report_probe` tells `r` from `k`).
#[cfg(CONFIG_KRETPROBES)]
pub fn is_kretprobe_pre_handler(pre: usize) -> bool {
    pre == super::kretprobe::pre_handler_kretprobe as *const () as usize
        || pre == super::kretprobe::pre_handler_kretprobe_grow as *const () as usize
}

/// Without kretprobes no probe is one.
#[cfg(not(CONFIG_KRETPROBES))]
pub fn is_kretprobe_pre_handler(_pre: usize) -> bool {
    false
}

/// A kretprobe pointer received from C as a handle; NULL is `None`.
///
/// # Safety
///
/// `rp` is NULL or points to a `struct kretprobe` that stays valid for the call.
#[cfg(CONFIG_KRETPROBES)]
unsafe fn krp(rp: *mut bindings::kretprobe) -> Option<Krp> {
    // SAFETY: non-NULL here, and valid for the call by the caller's contract.
    NonNull::new(rp).map(|rp| unsafe { Krp::from_raw(rp) })
}

#[cfg(CONFIG_KRETPROBES)]
/// `register_kretprobe()`; NULL is refused with -EINVAL.
///
/// # Safety
///
/// `rp` is NULL or a valid `struct kretprobe` that stays so until it is unregistered.
#[no_mangle]
pub unsafe extern "C" fn register_kretprobe(rp: *mut bindings::kretprobe) -> c_int {
    // SAFETY: `# Safety`.
    ret(unsafe { krp(rp) }
        .ok_or(Errno::EINVAL)
        .and_then(|rp| kretprobe::register_kretprobe(&KERNEL, rp)))
}

#[cfg(CONFIG_KRETPROBES)]
/// `unregister_kretprobe()`; NULL is ignored.
///
/// # Safety
///
/// `rp` is NULL or a valid `struct kretprobe`.
#[no_mangle]
pub unsafe extern "C" fn unregister_kretprobe(rp: *mut bindings::kretprobe) {
    // SAFETY: `# Safety`.
    if let Some(rp) = unsafe { krp(rp) } {
        kretprobe::unregister_kretprobe(&KERNEL, rp);
    }
}

#[cfg(CONFIG_KRETPROBES)]
/// A C array of kretprobe pointers as optional handles; a NULL entry is `None`.
///
/// # Safety
///
/// `rps` is NULL or points to `num` readable pointers, each NULL or a kretprobe that stays valid
/// for the call (C's contract for these calls, which C does not check for NULL).
unsafe fn kretprobes<'a>(
    rps: *mut *mut bindings::kretprobe,
    num: c_int,
) -> Option<&'a [Option<Krp>]> {
    let n = usize::try_from(num).ok().filter(|&n| n > 0)?;
    let rps = NonNull::new(rps)?;
    // SAFETY: `Krp` is `repr(transparent)` over `NonNull`, so `Option<Krp>` has the layout of a
    // possibly NULL pointer (NULL is `None`); the caller guarantees `num` readable entries, each
    // NULL or a live kretprobe for the call (`Krp`'s invariant).
    Some(unsafe { core::slice::from_raw_parts(rps.as_ptr().cast::<Option<Krp>>(), n) })
}

#[cfg(CONFIG_KRETPROBES)]
/// `register_kretprobes()`. A NULL entry fails with -EINVAL after the entries before it are
/// unregistered again, as any failing entry (C dereferences it).
///
/// # Safety
///
/// `rps` is NULL or points to `num` pointers, each NULL or a valid kretprobe.
#[no_mangle]
pub unsafe extern "C" fn register_kretprobes(
    rps: *mut *mut bindings::kretprobe,
    num: c_int,
) -> c_int {
    // SAFETY: forwarded caller contract.
    match unsafe { kretprobes(rps, num) } {
        Some(rs) => ret(kretprobe::register_kretprobes(&KERNEL, rs)),
        None => Errno::EINVAL.to_neg(),
    }
}

#[cfg(CONFIG_KRETPROBES)]
/// `unregister_kretprobes()`. NULL entries are skipped (C dereferences them).
///
/// # Safety
///
/// `rps` is NULL or points to `num` pointers, each NULL or a valid kretprobe.
#[no_mangle]
pub unsafe extern "C" fn unregister_kretprobes(rps: *mut *mut bindings::kretprobe, num: c_int) {
    // SAFETY: forwarded caller contract.
    if let Some(rs) = unsafe { kretprobes(rps, num) } {
        kretprobe::unregister_kretprobes(&KERNEL, rs);
    }
}

/// `register_kprobe()`; NULL is refused with -EINVAL.
///
/// # Safety
///
/// `p` is NULL or a valid `struct kprobe` that stays so until it is unregistered.
#[no_mangle]
pub unsafe extern "C" fn register_kprobe(p: *mut bindings::kprobe) -> c_int {
    // SAFETY: `# Safety`.
    ret(unsafe { kp(p) }
        .ok_or(Errno::EINVAL)
        .and_then(|p| register::register_kprobe(&KERNEL, p)))
}

/// A C array of probe pointers as optional handles, without allocating; a NULL entry is `None`.
///
/// # Safety
///
/// `kps` is NULL or points to `num` readable pointers, each NULL or a probe that stays valid for
/// the call (C's contract for these calls, which C does not check for NULL).
unsafe fn probes<'a>(kps: *mut *mut bindings::kprobe, num: c_int) -> Option<&'a [Option<Kp>]> {
    let n = usize::try_from(num).ok().filter(|&n| n > 0)?;
    let kps = NonNull::new(kps)?;
    // SAFETY: `Kp` is `repr(transparent)` over `NonNull`, so `Option<Kp>` has the layout of a
    // possibly NULL pointer (NULL is `None`); the caller guarantees `num` readable entries, each
    // NULL or a live probe for the call (`Kp`'s invariant).
    Some(unsafe { core::slice::from_raw_parts(kps.as_ptr().cast::<Option<Kp>>(), n) })
}

/// `register_kprobes()`. A NULL entry fails with -EINVAL after the entries before it are
/// unregistered again, as any failing entry (C dereferences it).
///
/// # Safety
///
/// `kps` is NULL or points to `num` pointers, each NULL or a valid probe.
#[no_mangle]
pub unsafe extern "C" fn register_kprobes(kps: *mut *mut bindings::kprobe, num: c_int) -> c_int {
    // SAFETY: forwarded caller contract.
    match unsafe { probes(kps, num) } {
        Some(ps) => ret(register::register_kprobes(&KERNEL, ps)),
        None => Errno::EINVAL.to_neg(),
    }
}

/// `unregister_kprobe()`; NULL is ignored.
///
/// # Safety
///
/// `p` is NULL or a valid `struct kprobe`.
#[no_mangle]
pub unsafe extern "C" fn unregister_kprobe(p: *mut bindings::kprobe) {
    // SAFETY: `# Safety`.
    if let Some(p) = unsafe { kp(p) } {
        register::unregister_kprobe(&KERNEL, p);
    }
}

/// `unregister_kprobes()`. NULL entries are skipped (C dereferences them).
///
/// # Safety
///
/// `kps` is NULL or points to `num` pointers, each NULL or a valid probe.
#[no_mangle]
pub unsafe extern "C" fn unregister_kprobes(kps: *mut *mut bindings::kprobe, num: c_int) {
    // SAFETY: forwarded caller contract.
    if let Some(ps) = unsafe { probes(kps, num) } {
        register::unregister_kprobes(&KERNEL, ps);
    }
}

/// `enable_kprobe()`; NULL is refused with -EINVAL.
///
/// # Safety
///
/// `p` is NULL or a valid `struct kprobe`.
#[no_mangle]
pub unsafe extern "C" fn enable_kprobe(p: *mut bindings::kprobe) -> c_int {
    // SAFETY: `# Safety`.
    ret(unsafe { kp(p) }
        .ok_or(Errno::EINVAL)
        .and_then(|p| register::enable_kprobe(&KERNEL, p)))
}

/// `disable_kprobe()`; NULL is refused with -EINVAL.
///
/// # Safety
///
/// `p` is NULL or a valid `struct kprobe`.
#[no_mangle]
pub unsafe extern "C" fn disable_kprobe(p: *mut bindings::kprobe) -> c_int {
    // SAFETY: `# Safety`.
    ret(unsafe { kp(p) }
        .ok_or(Errno::EINVAL)
        .and_then(|p| register::disable_kprobe(&KERNEL, p)))
}

/// `kprobe_on_func_entry()`.
///
/// # Safety
///
/// `sym` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn kprobe_on_func_entry(
    addr: *mut bindings::kprobe_opcode_t,
    sym: *const core::ffi::c_char,
    offset: usize,
) -> c_int {
    // SAFETY: caller contract on `sym`.
    let sym = (!sym.is_null()).then(|| unsafe { core::ffi::CStr::from_ptr(sym) }.to_bytes());
    ret(register::kprobe_on_func_entry(
        &KERNEL,
        addr as usize,
        sym,
        offset,
    ))
}

/// `within_kprobe_blacklist()`.
#[no_mangle]
pub extern "C" fn within_kprobe_blacklist(addr: usize) -> bool {
    blacklist::within_kprobe_blacklist(&KERNEL, addr)
}

/// `kprobe_add_ksym_blacklist()`: the symbol size, or -errno.
#[no_mangle]
pub extern "C" fn kprobe_add_ksym_blacklist(entry: usize) -> c_int {
    match blacklist::kprobe_add_ksym_blacklist(&KERNEL, entry) {
        Ok(size) => c_int::try_from(size).unwrap_or(c_int::MAX),
        Err(e) => e.to_neg(),
    }
}

/// `kprobe_add_area_blacklist()`.
#[no_mangle]
pub extern "C" fn kprobe_add_area_blacklist(start: usize, end: usize) -> c_int {
    ret(blacklist::kprobe_add_area_blacklist(&KERNEL, start, end))
}

/// `kprobe_free_init_mem()`.
#[no_mangle]
pub extern "C" fn kprobe_free_init_mem() {
    register::kprobe_free_init_mem(&KERNEL);
}

/// `kprobe_disarmed()` (OPTPROBES; called by the x86 arch with a hashed probe).
///
/// # Safety
///
/// `p` is a hashed probe and the caller holds `kprobe_mutex`.
#[no_mangle]
pub unsafe extern "C" fn kprobe_disarmed(p: *mut bindings::kprobe) -> bool {
    // SAFETY: NULL or a hashed probe (`# Safety`).
    unsafe { kp(p) }.is_some_and(|p| optimizer::kprobe_disarmed(&KERNEL, p))
}

/// `wait_for_kprobe_optimizer()`.
#[no_mangle]
pub extern "C" fn wait_for_kprobe_optimizer() {
    optimizer::wait_for_kprobe_optimizer(&KERNEL);
}

/// Body of the optimizer's delayed work (declared in kprobes_helpers.h).
#[no_mangle]
pub extern "C" fn rkp_kprobe_optimizer() {
    optimizer::kprobe_optimizer(&KERNEL);
}

/// `optprobe_queued_unopt()` (OPTPROBES; x86 `__recover_optprobed_insn`).
///
/// # Safety
///
/// `op` is a hashed `optimized_kprobe`; the caller holds `kprobe_mutex`.
#[cfg(CONFIG_OPTPROBES)]
#[no_mangle]
pub unsafe extern "C" fn optprobe_queued_unopt(op: *mut bindings::optimized_kprobe) -> bool {
    // `kp` is the first member of `struct optimized_kprobe`.
    // SAFETY: NULL or a hashed probe (`# Safety`).
    let Some(p) = (unsafe { kp(op.cast()) }) else {
        return false;
    };
    // SAFETY: an `optimized_kprobe` (`# Safety`), so one the core allocated as an aggregate.
    let ap = unsafe { Aggr::new_unchecked(p) };
    optimizer::optprobe_queued_unopt(&KERNEL, ap)
}

/// `register_kretprobe()` without `CONFIG_KRETPROBES`.
#[cfg(not(CONFIG_KRETPROBES))]
#[no_mangle]
pub extern "C" fn register_kretprobe(_rp: *mut bindings::kretprobe) -> c_int {
    Errno::EOPNOTSUPP.to_neg()
}

/// `register_kretprobes()` without `CONFIG_KRETPROBES`.
#[cfg(not(CONFIG_KRETPROBES))]
#[no_mangle]
pub extern "C" fn register_kretprobes(_rps: *mut *mut bindings::kretprobe, _num: c_int) -> c_int {
    Errno::EOPNOTSUPP.to_neg()
}

/// `unregister_kretprobe()` without `CONFIG_KRETPROBES`: nothing to do.
#[cfg(not(CONFIG_KRETPROBES))]
#[no_mangle]
pub extern "C" fn unregister_kretprobe(_rp: *mut bindings::kretprobe) {}

/// `unregister_kretprobes()` without `CONFIG_KRETPROBES`: nothing to do.
#[cfg(not(CONFIG_KRETPROBES))]
#[no_mangle]
pub extern "C" fn unregister_kretprobes(_rps: *mut *mut bindings::kretprobe, _num: c_int) {}
