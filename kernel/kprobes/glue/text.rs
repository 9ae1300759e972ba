// SPDX-License-Identifier: GPL-2.0

//! [`KernelText`] for the kernel: kallsyms, text and section checks, modules and the two
//! kprobes `ftrace_ops`, through the kernel's functions and `kprobes_helpers.c`.
//!
//! Constraints: process context (registration, module notifier, debugfs), never the probe-hit
//! path; a registration batch's symbol answers come from `symbatch.rs` where the kernel has
//! them.

use core::ffi::CStr;
use core::mem::MaybeUninit;
use core::ptr::{self, addr_of};
use core::slice;

use kernel::bindings;

use super::handle::{c_str_bytes, Kernel, Module};
use super::helpers::*;
use super::symbatch::{self, Batch as SymBatch};
#[cfg(CONFIG_KPROBES_ON_FTRACE)]
use crate::errno::from_c_ret;
use crate::errno::Result;
use crate::text::{FtraceOps, KernelText, Ksym, KSYM_NAME_LEN};

/// The index of `ops` in `rkp_ftrace_ops()` (kprobes_helpers.c).
#[cfg(CONFIG_KPROBES_ON_FTRACE)]
pub(super) fn ftrace_ops_id(ops: FtraceOps) -> i32 {
    match ops {
        FtraceOps::Plain => 0,
        FtraceOps::Ipmodify => 1,
    }
}

/// Copies `name` and a NUL into `buf` (not zeroed first: only those bytes are read); `None` if
/// it does not fit or holds a NUL (no such kernel symbol).
pub(super) fn c_name<'a>(
    name: &[u8],
    buf: &'a mut MaybeUninit<[u8; KSYM_NAME_LEN]>,
) -> Option<&'a CStr> {
    if name.len() >= KSYM_NAME_LEN || name.contains(&0) {
        return None;
    }
    let p = buf.as_mut_ptr().cast::<u8>();
    // SAFETY: `name.len() + 1 <= KSYM_NAME_LEN` bytes are written inside `buf` and only they
    // are borrowed; the last is the only NUL among them (checked above).
    unsafe {
        ptr::copy_nonoverlapping(name.as_ptr(), p, name.len());
        p.add(name.len()).write(0);
        Some(CStr::from_bytes_with_nul_unchecked(slice::from_raw_parts(
            p,
            name.len() + 1,
        )))
    }
}

impl KernelText for Kernel {
    type Module = Module;

    fn with_symbol_batch<'a, R>(
        &'a self,
        n: usize,
        name_of: impl Fn(usize) -> Option<&'a [u8]>,
        addr_of: impl Fn(usize) -> usize,
        f: impl FnOnce(&Self) -> R,
    ) -> R {
        match SymBatch::build(n, name_of, addr_of) {
            // The call's own platform; its batch points to the caller's names, which outlive
            // it: it is dropped before this returns.
            Some(b) => f(&Kernel { syms: Some(b) }),
            None => f(self),
        }
    }
    fn kallsyms_lookup_name(&self, name: &[u8]) -> usize {
        if let Some(addr) = self.syms.as_ref().and_then(|b| b.lookup_name(name)) {
            return addr;
        }
        let mut buf = MaybeUninit::uninit();
        let Some(c) = c_name(name, &mut buf) else {
            return 0;
        };
        // SAFETY: `c` is a NUL-terminated string on our stack.
        unsafe { bindings::kallsyms_lookup_name(c.as_ptr().cast()) as usize }
    }
    fn kallsyms_lookup_size_offset(&self, addr: usize) -> Option<(usize, usize)> {
        if let Some(answer) = self.syms.as_ref().and_then(|b| b.lookup_size_offset(addr)) {
            return Some(answer);
        }
        let (mut size, mut offset) = (0, 0);
        // SAFETY: out-pointers to locals.
        let ok =
            unsafe { bindings::kallsyms_lookup_size_offset(addr as _, &mut size, &mut offset) };
        (ok != 0).then_some((size as usize, offset as usize))
    }
    fn kallsyms_lookup<R>(&self, addr: usize, f: impl FnOnce(Option<Ksym<'_>>) -> R) -> R {
        // Not zeroed: C writes the name and its NUL, and only they are read.
        let mut buf = MaybeUninit::<[u8; KSYM_NAME_LEN]>::uninit();
        let (mut size, mut offset) = (0, 0);
        let mut modname = ptr::null_mut();
        // SAFETY: out-pointers to locals; `buf` is KSYM_NAME_LEN long. The module name stays
        // valid while the caller keeps the module from going (preemption disabled or module
        // mutex), as for C's callers.
        let sym = unsafe {
            let name = bindings::kallsyms_lookup(
                addr as _,
                &mut size,
                &mut offset,
                &mut modname,
                buf.as_mut_ptr().cast(),
            );
            (!name.is_null()).then(|| Ksym {
                name: c_str_bytes(name.cast()),
                offset: offset as usize,
                size: size as usize,
                module: (!modname.is_null()).then(|| c_str_bytes(modname.cast())),
            })
        };
        f(sym)
    }
    fn lookup_symbol_name<R>(&self, addr: usize, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        let f = match self.syms.as_ref() {
            Some(b) => match b.with_symbol_name(addr, f) {
                Ok(r) => return r,
                Err(f) => f,
            },
            None => f,
        };
        // Not zeroed, as C's is not (a 512-byte memset twice per registration): only the bytes
        // up to the name's NUL, which lookup_symbol_name() writes, are ever read.
        let mut buf = MaybeUninit::<[u8; KSYM_NAME_LEN]>::uninit();
        let p = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: `buf` is KSYM_NAME_LEN long, as lookup_symbol_name() requires.
        if unsafe { bindings::lookup_symbol_name(addr as _, p) } != 0 {
            return f(None);
        }
        // SAFETY: on success C has written a name and its NUL within the buffer (it NULs the
        // last byte first), so the bytes `strlen()` reads, up to that NUL, are initialised.
        f(Some(unsafe { CStr::from_ptr(p.cast()) }.to_bytes()))
    }
    fn core_kernel_text(&self, addr: usize) -> bool {
        // SAFETY: pure address query.
        unsafe { bindings::core_kernel_text(addr as _) != 0 }
    }
    fn kernel_text_address(&self, addr: usize) -> bool {
        // SAFETY: pure address query.
        unsafe { bindings::kernel_text_address(addr as _) != 0 }
    }
    // Each of the next four is a function only under the config named; without it C has a
    // static inline answering NULL or 0, as the other branch does.
    fn module_text_address(&self, addr: usize) -> Option<Module> {
        #[cfg(CONFIG_MODULES)]
        {
            // SAFETY: called with preemption disabled (check_kprobe_address_safe).
            let m = core::ptr::NonNull::new(unsafe { bindings::__module_text_address(addr as _) })?;
            // SAFETY: the module cannot be freed while preemption is disabled, and the caller
            // pins it (`try_module_get`) before it enables preemption again.
            return Some(unsafe { Module::from_raw(m) });
        }
        #[cfg(not(CONFIG_MODULES))]
        {
            let _ = addr;
            None
        }
    }
    fn in_gate_area_no_mm(&self, addr: usize) -> bool {
        // __HAVE_ARCH_GATE_AREA: x86_64 among the arches this core builds for.
        #[cfg(CONFIG_X86_64)]
        // SAFETY: pure address query.
        return unsafe { bindings::in_gate_area_no_mm(addr as _) } != 0;
        #[cfg(not(CONFIG_X86_64))]
        {
            let _ = addr;
            false
        }
    }
    fn jump_label_text_reserved(&self, addr: usize) -> bool {
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: jump_label_lock held by the caller.
        return unsafe { jump_label_text_reserved(addr as *mut _, addr as *mut _) } != 0;
        #[cfg(not(CONFIG_JUMP_LABEL))]
        {
            let _ = addr;
            false
        }
    }
    fn static_call_text_reserved(&self, addr: usize) -> bool {
        #[cfg(CONFIG_HAVE_STATIC_CALL_INLINE)]
        // SAFETY: pure address query.
        return unsafe { bindings::static_call_text_reserved(addr as *mut _, addr as *mut _) } != 0;
        #[cfg(not(CONFIG_HAVE_STATIC_CALL_INLINE))]
        {
            let _ = addr;
            false
        }
    }
    fn find_bug(&self, addr: usize) -> bool {
        // SAFETY: pure address query.
        unsafe { !bindings::find_bug(addr as _).is_null() }
    }
    fn jump_label_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        // jump_label_lock() (a no-op inline without CONFIG_JUMP_LABEL), then preempt_disable().
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: process context; released below.
        unsafe {
            jump_label_lock()
        };
        // SAFETY: released below, in reverse order.
        unsafe { preempt_disable() };
        let r = f();
        // SAFETY: taken above.
        unsafe { preempt_enable() };
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: taken above.
        unsafe {
            jump_label_unlock()
        };
        r
    }
    fn kprobes_text(&self) -> (usize, usize) {
        // Linker symbols: only their addresses are taken.
        (
            addr_of!(bindings::__kprobes_text_start) as usize,
            addr_of!(bindings::__kprobes_text_end) as usize,
        )
    }
    fn noinstr_text(&self) -> (usize, usize) {
        // Linker symbols: only their addresses are taken.
        (
            addr_of!(bindings::__noinstr_text_start) as usize,
            addr_of!(bindings::__noinstr_text_end) as usize,
        )
    }
    fn init_mem(&self) -> (usize, usize) {
        // Linker symbols: only their addresses are taken.
        (
            addr_of!(bindings::__init_begin) as usize,
            addr_of!(bindings::__init_end) as usize,
        )
    }
    fn try_module_get(&self, m: Module) -> bool {
        // SAFETY: `m` came from `module_text_address` under preemption disabled.
        unsafe { rkp_try_module_get(m.as_ptr().cast()) }
    }
    fn module_put(&self, m: Module) {
        // Without CONFIG_MODULE_UNLOAD no reference is counted and C's `module_put()` is an
        // empty inline (and without CONFIG_MODULES no `Module` exists to reach here).
        #[cfg(CONFIG_MODULE_UNLOAD)]
        // SAFETY: balances a successful `try_module_get`.
        unsafe {
            bindings::module_put(m.as_ptr())
        };
        #[cfg(not(CONFIG_MODULE_UNLOAD))]
        let _ = m;
    }
    #[cfg(CONFIG_MODULES)]
    fn within_module_init(&self, addr: usize, m: Module) -> bool {
        // mod_mem_type_is_init().
        m.within_mem(
            addr,
            &[
                bindings::mod_mem_type_MOD_INIT_TEXT,
                bindings::mod_mem_type_MOD_INIT_DATA,
                bindings::mod_mem_type_MOD_INIT_RODATA,
            ],
        )
    }
    #[cfg(CONFIG_MODULES)]
    fn within_module_core(&self, addr: usize, m: Module) -> bool {
        // mod_mem_type_is_core(): every type that is not init.
        m.within_mem(
            addr,
            &[
                bindings::mod_mem_type_MOD_TEXT,
                bindings::mod_mem_type_MOD_DATA,
                bindings::mod_mem_type_MOD_RODATA,
                bindings::mod_mem_type_MOD_RO_AFTER_INIT,
            ],
        )
    }
    // Without CONFIG_MODULES no `Module` exists (`module_text_address` gives none); C's inlines
    // answer false.
    #[cfg(not(CONFIG_MODULES))]
    fn within_module_init(&self, _addr: usize, _m: Module) -> bool {
        false
    }
    #[cfg(not(CONFIG_MODULES))]
    fn within_module_core(&self, _addr: usize, _m: Module) -> bool {
        false
    }
    fn module_is_coming(&self, m: Module) -> bool {
        // SAFETY: `m` is pinned (type invariant); C only reads its state.
        unsafe { rkp_module_is_coming(m.as_ptr().cast()) }
    }
    fn ftrace_location(&self, addr: usize) -> usize {
        // A function with CONFIG_DYNAMIC_FTRACE, an inline returning 0 without.
        #[cfg(CONFIG_DYNAMIC_FTRACE)]
        {
            if let Some(loc) = self
                .syms
                .as_ref()
                .and_then(|b| symbatch::ftrace_location(b, addr))
            {
                return loc;
            }
            // SAFETY: pure address query.
            return unsafe { bindings::ftrace_location(addr as _) } as usize;
        }
        #[cfg(not(CONFIG_DYNAMIC_FTRACE))]
        {
            let _ = addr;
            0
        }
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_set_filter_ip(&self, ops: FtraceOps, addr: usize, remove: bool) -> Result {
        // SAFETY: kprobe_mutex held; one of the two static ftrace_ops.
        from_c_ret(unsafe { rkp_ftrace_set_filter_ip(ftrace_ops_id(ops), addr, remove) })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn register_ftrace_function(&self, ops: FtraceOps) -> Result {
        // SAFETY: as above.
        from_c_ret(unsafe { rkp_register_ftrace_function(ftrace_ops_id(ops)) })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn unregister_ftrace_function(&self, ops: FtraceOps) -> Result {
        // SAFETY: as above.
        from_c_ret(unsafe { rkp_unregister_ftrace_function(ftrace_ops_id(ops)) })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn kprobe_ftrace_disabled(&self) -> bool {
        // SAFETY: READ_ONCE of a bool.
        unsafe { rkp_kprobe_ftrace_disabled() }
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_set_filter_ips(&self, ops: FtraceOps, addrs: &[usize], remove: bool) -> Result {
        // A batch has at most as many addresses as its caller's array has entries, a C `int`.
        let cnt = u32::try_from(addrs.len()).map_err(|_| crate::errno::Errno::EINVAL)?;
        // SAFETY: `addrs` is `cnt` initialised addresses (`usize` is `unsigned long` in the
        // kernel) that ftrace only reads during the call; one of the two static ftrace_ops;
        // kprobe_mutex held by the core's caller, as C holds it around its filter updates.
        from_c_ret(unsafe {
            rkp_ftrace_set_filter_ips(ftrace_ops_id(ops), addrs.as_ptr().cast(), cnt, remove)
        })
    }
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn ftrace_filter_has(&self, ops: FtraceOps, addr: usize) -> bool {
        // SAFETY: one of the two static ftrace_ops; kprobe_mutex held by the core's caller.
        unsafe { rkp_ftrace_filter_has(ftrace_ops_id(ops), addr) }
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn ftrace_set_filter_ip(&self, _ops: FtraceOps, _addr: usize, _remove: bool) -> Result {
        Err(crate::errno::Errno::ENODEV)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn register_ftrace_function(&self, _ops: FtraceOps) -> Result {
        Err(crate::errno::Errno::ENODEV)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn unregister_ftrace_function(&self, _ops: FtraceOps) -> Result {
        Err(crate::errno::Errno::ENODEV)
    }
    #[cfg(not(CONFIG_KPROBES_ON_FTRACE))]
    fn kprobe_ftrace_disabled(&self) -> bool {
        false
    }
}
