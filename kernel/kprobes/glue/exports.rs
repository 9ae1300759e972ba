// SPDX-License-Identifier: GPL-2.0

//! C-linkage entry points with the names and signatures of `include/linux/kprobes.h`, each a
//! thin shim from raw pointers to [`Kp`] handles and from `Result` to 0/-errno.
//!
//! Constraints: the probe-hit entry points (`get_kprobe`, `aggr_pre_handler`,
//! `aggr_post_handler`, `opt_pre_handler`, `kprobes_inc_nmissed_count`) are placed in
//! `.kprobes.text`, so they and the logic inlined into them are unprobeable, as C's
//! `NOKPROBE_SYMBOL`s are; they neither allocate nor lock. A NULL probe pointer passed to the
//! API, which C would dereference, is refused with -EINVAL or ignored; the hit-path handlers
//! take the arch's pointer to the hashed probe, never NULL, unchecked as C does.
//! `EXPORT_SYMBOL_GPL` for the module-facing functions is emitted from C (`kprobes_helpers.c`).

use core::ffi::c_int;
use core::ptr::NonNull;

use kernel::bindings;

#[cfg(CONFIG_KRETPROBES)]
use super::kretprobe::Krp;
use super::platform::{Kp, KERNEL};
use crate::errno::{to_c_ret, Errno, Result};
#[cfg(CONFIG_KRETPROBES)]
use crate::kretprobe;
use crate::{blacklist, optimizer, register, table};

#[inline(always)]
fn kp(p: *mut bindings::kprobe) -> Option<Kp> {
    // SAFETY: the kprobes API contract: a probe passed in stays valid for the call.
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

/// `get_kprobe()`: the hash entry at `addr`, or NULL.
///
/// # Safety
///
/// Caller holds `kprobe_mutex` or runs with preemption disabled.
#[no_mangle]
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn get_kprobe(addr: *mut core::ffi::c_void) -> *mut bindings::kprobe {
    table::get_kprobe(&KERNEL, addr as usize).map_or(core::ptr::null_mut(), Kp::as_ptr)
}

/// `aggr_pre_handler()` (static in C; installed as an aggregate's `pre_handler`).
///
/// # Safety
///
/// `p` is a hashed aggregate and the caller is a probe handler (preemption disabled).
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn aggr_pre_handler(
    p: *mut bindings::kprobe,
    regs: *mut bindings::pt_regs,
) -> c_int {
    // SAFETY: the arch calls an aggregate's pre_handler with that aggregate (`# Safety`).
    table::aggr_pre_handler(&KERNEL, unsafe { hit_kp(p) }, regs)
}

/// `aggr_post_handler()` (static in C; installed as an aggregate's `post_handler`).
///
/// # Safety
///
/// As for [`aggr_pre_handler`].
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn aggr_post_handler(
    p: *mut bindings::kprobe,
    regs: *mut bindings::pt_regs,
    flags: usize,
) {
    // SAFETY: the arch calls an aggregate's post_handler with that aggregate (`# Safety`).
    table::aggr_post_handler(&KERNEL, unsafe { hit_kp(p) }, regs, flags);
}

/// `opt_pre_handler()`: the optimized path's fan-out.
///
/// # Safety
///
/// As for [`aggr_pre_handler`].
#[no_mangle]
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn opt_pre_handler(p: *mut bindings::kprobe, regs: *mut bindings::pt_regs) {
    // SAFETY: the arch's optimized callback passes `&op->kp` of a live aggregate (`# Safety`).
    table::opt_pre_handler(&KERNEL, unsafe { hit_kp(p) }, regs);
}

/// `kprobes_inc_nmissed_count()`.
///
/// # Safety
///
/// `p` is a hashed probe; preemption disabled.
#[no_mangle]
#[link_section = ".kprobes.text"]
pub unsafe extern "C" fn kprobes_inc_nmissed_count(p: *mut bindings::kprobe) {
    if let Some(p) = kp(p) {
        table::kprobes_inc_nmissed_count(&KERNEL, p);
    }
}

/// The address of `pre_handler_kretprobe` (how `report_probe` tells `r` from `k`).
#[cfg(CONFIG_KRETPROBES)]
pub fn pre_handler_kretprobe_addr() -> Option<usize> {
    Some(super::kretprobe::pre_handler_kretprobe as *const () as usize)
}

/// Without kretprobes no probe is one.
#[cfg(not(CONFIG_KRETPROBES))]
pub fn pre_handler_kretprobe_addr() -> Option<usize> {
    None
}

#[cfg(CONFIG_KRETPROBES)]
fn krp(rp: *mut bindings::kretprobe) -> Option<Krp> {
    // SAFETY: the kprobes API contract: a kretprobe passed in stays valid for the call.
    NonNull::new(rp).map(|rp| unsafe { Krp::from_raw(rp) })
}

#[cfg(CONFIG_KRETPROBES)]
/// `register_kretprobe()`.
#[no_mangle]
pub extern "C" fn register_kretprobe(rp: *mut bindings::kretprobe) -> c_int {
    ret(krp(rp)
        .ok_or(Errno::EINVAL)
        .and_then(|rp| kretprobe::register_kretprobe(&KERNEL, rp)))
}

#[cfg(CONFIG_KRETPROBES)]
/// `unregister_kretprobe()`.
#[no_mangle]
pub extern "C" fn unregister_kretprobe(rp: *mut bindings::kretprobe) {
    if let Some(rp) = krp(rp) {
        kretprobe::unregister_kretprobe(&KERNEL, rp);
    }
}

#[cfg(CONFIG_KRETPROBES)]
/// Turns a C array of kretprobe pointers into handles (`Krp` is transparent).
///
/// # Safety
///
/// `rps` points to `num` valid, non-NULL kretprobe pointers.
unsafe fn kretprobes<'a>(rps: *mut *mut bindings::kretprobe, num: c_int) -> Option<&'a [Krp]> {
    let n = usize::try_from(num).ok().filter(|&n| n > 0)?;
    let rps = NonNull::new(rps)?;
    // SAFETY: `Krp` is `repr(transparent)` over a non-NULL pointer; caller contract.
    Some(unsafe { core::slice::from_raw_parts(rps.as_ptr().cast::<Krp>(), n) })
}

#[cfg(CONFIG_KRETPROBES)]
/// `register_kretprobes()`.
///
/// # Safety
///
/// `rps` points to `num` valid kretprobe pointers.
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
/// `unregister_kretprobes()`.
///
/// # Safety
///
/// `rps` points to `num` valid kretprobe pointers.
#[no_mangle]
pub unsafe extern "C" fn unregister_kretprobes(rps: *mut *mut bindings::kretprobe, num: c_int) {
    // SAFETY: forwarded caller contract.
    if let Some(rs) = unsafe { kretprobes(rps, num) } {
        kretprobe::unregister_kretprobes(&KERNEL, rs);
    }
}

/// `register_kprobe()`.
#[no_mangle]
pub extern "C" fn register_kprobe(p: *mut bindings::kprobe) -> c_int {
    ret(kp(p)
        .ok_or(Errno::EINVAL)
        .and_then(|p| register::register_kprobe(&KERNEL, p)))
}

/// Turns a C array of probe pointers into handles without allocating (`Kp` is transparent).
///
/// # Safety
///
/// `kps` points to `num` valid, non-NULL probe pointers (C's contract for these calls).
unsafe fn probes<'a>(kps: *mut *mut bindings::kprobe, num: c_int) -> Option<&'a [Kp]> {
    let n = usize::try_from(num).ok().filter(|&n| n > 0)?;
    let kps = NonNull::new(kps)?;
    // SAFETY: `Kp` is `repr(transparent)` over a non-NULL `*mut kprobe`; the caller guarantees
    // `num` valid non-NULL entries.
    Some(unsafe { core::slice::from_raw_parts(kps.as_ptr().cast::<Kp>(), n) })
}

/// `register_kprobes()`.
///
/// # Safety
///
/// `kps` points to `num` valid probe pointers.
#[no_mangle]
pub unsafe extern "C" fn register_kprobes(kps: *mut *mut bindings::kprobe, num: c_int) -> c_int {
    // SAFETY: forwarded caller contract.
    match unsafe { probes(kps, num) } {
        Some(ps) => ret(register::register_kprobes(&KERNEL, ps)),
        None => Errno::EINVAL.to_neg(),
    }
}

/// `unregister_kprobe()`.
#[no_mangle]
pub extern "C" fn unregister_kprobe(p: *mut bindings::kprobe) {
    if let Some(p) = kp(p) {
        register::unregister_kprobe(&KERNEL, p);
    }
}

/// `unregister_kprobes()`.
///
/// # Safety
///
/// `kps` points to `num` valid probe pointers.
#[no_mangle]
pub unsafe extern "C" fn unregister_kprobes(kps: *mut *mut bindings::kprobe, num: c_int) {
    // SAFETY: forwarded caller contract.
    if let Some(ps) = unsafe { probes(kps, num) } {
        register::unregister_kprobes(&KERNEL, ps);
    }
}

/// `enable_kprobe()`.
#[no_mangle]
pub extern "C" fn enable_kprobe(p: *mut bindings::kprobe) -> c_int {
    ret(kp(p)
        .ok_or(Errno::EINVAL)
        .and_then(|p| register::enable_kprobe(&KERNEL, p)))
}

/// `disable_kprobe()`.
#[no_mangle]
pub extern "C" fn disable_kprobe(p: *mut bindings::kprobe) -> c_int {
    ret(kp(p)
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
    kp(p).is_some_and(|p| optimizer::kprobe_disarmed(&KERNEL, p))
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
    kp(op.cast()).is_some_and(|ap| optimizer::optprobe_queued_unopt(&KERNEL, ap))
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
