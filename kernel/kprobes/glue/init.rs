// SPDX-License-Identifier: GPL-2.0

//! Init-time and module-notifier entry points, called from the initcalls and notifier blocks in
//! `kprobes_helpers.c` (whose helpers log C's exact messages, with the `kprobes: ` prefix).
//!
//! Constraints: process context; `rkp_init_kprobes` runs once at early_initcall, before any
//! probe registers, and must not hold `kprobe_mutex` across `arch_init_kprobes()` (which may
//! register probes).

use core::ffi::{c_int, c_uint};

use kernel::bindings;

use super::helpers::rkp_dereference_symbol_descriptor;

use super::handle::{Module, KERNEL};
use crate::blacklist::ModuleAreas;
use crate::errno::to_c_ret;
use crate::register::{self, ModuleEvent};

/// `init_kprobes()` up to and including `arch_init_kprobes()`, in C's order (the blacklist and
/// its message, the kretprobe blacklist, the global arm state, the optprobe slot size); returns
/// the arch's result.
///
/// # Safety
///
/// `[start, end)` is the `_kprobe_blacklist` section.
#[no_mangle]
pub unsafe extern "C" fn rkp_init_kprobes(start: *const usize, end: *const usize) -> c_int {
    let n = (end as usize).saturating_sub(start as usize) / core::mem::size_of::<usize>();
    let nokprobe = (0..n).map(|i| {
        // SAFETY: `i < n` entries of the linker section starting at `start`.
        let addr = unsafe { start.add(i).read() };
        // SAFETY: resolves a function descriptor (identity on most arches).
        unsafe { rkp_dereference_symbol_descriptor(addr) }
    });
    to_c_ret(register::init_kprobes(&KERNEL, nokprobe))
}

/// The module notifier's work (`kprobes_module_callback()`); `event` 0 COMING, 1 LIVE, 2 GOING.
///
/// # Safety
///
/// `module` is the notified module; `blacklist` holds `nblacklist` addresses (or is NULL).
#[no_mangle]
pub unsafe extern "C" fn rkp_kprobes_module_event(
    module: *mut core::ffi::c_void,
    event: c_int,
    blacklist: *const usize,
    nblacklist: c_uint,
    kprobes_text: usize,
    kprobes_text_size: usize,
    noinstr_text: usize,
    noinstr_text_size: usize,
) {
    let Some(m) = core::ptr::NonNull::new(module.cast::<bindings::module>()) else {
        return;
    };
    // A registration batch's module answers no longer hold (glue/symbatch.rs).
    #[cfg(all(CONFIG_MODULES, CONFIG_KALLSYMS, not(CONFIG_HAVE_FUNCTION_DESCRIPTORS)))]
    super::symbatch::GENERATION.fetch_add(1, core::sync::atomic::Ordering::AcqRel);
    let event = match event {
        0 => ModuleEvent::Coming,
        1 => ModuleEvent::Live,
        2 => ModuleEvent::Going,
        _ => return,
    };
    let list: &[usize] = if blacklist.is_null() {
        &[]
    } else {
        // SAFETY: caller contract: `nblacklist` entries of the module's `_kprobe_blacklist`.
        unsafe { core::slice::from_raw_parts(blacklist, nblacklist as usize) }
    };
    let areas = ModuleAreas {
        kprobe_blacklist: list,
        kprobes_text: (kprobes_text, kprobes_text_size),
        noinstr_text: (noinstr_text, noinstr_text_size),
    };
    // SAFETY: the notified module stays alive for the notifier call.
    let m = unsafe { Module::from_raw(m) };
    register::kprobes_module_callback(&KERNEL, m, event, &areas);
}

/// `optimize_all_kprobes()` at subsys_initcall (OPTPROBES); logs "kprobe jump-optimization is
/// enabled. All kprobes are optimized if possible." as C does.
#[no_mangle]
pub extern "C" fn rkp_optimize_all_kprobes() {
    crate::optimizer::optimize_all_kprobes(&KERNEL);
}
