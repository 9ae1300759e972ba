// SPDX-License-Identifier: GPL-2.0

//! The C side: upstream's functions built by `build.rs`, and the callbacks through which
//! they read the same [`Image`] the Rust side reads.

#![cfg(rkprobes_c_kprobes)]

use crate::image::Image;
use rkprobes_x86_insn::kprobes::{Config, KernelText, MAX_INSN_SIZE};
use std::cell::Cell;
use std::ffi::{c_int, c_uchar, c_ulong};
use std::sync::{Mutex, MutexGuard};

/// `struct rk_c_kprobe` of `csrc/kprobes_c_shim.c`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CKprobe {
    pub ret: c_int,
    pub tp_len: c_int,
    pub poked: [c_uchar; MAX_INSN_SIZE],
    pub opcode: c_uchar,
    pub boostable: c_uchar,
    pub size: c_uchar,
    pub emulate: c_uchar,
    pub op_byte: c_uchar,
    pub loop_asize: c_uchar,
    pub rel32: c_int,
}

/// `struct rk_c_optprobe` of `csrc/kprobes_c_shim.c`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COptprobe {
    pub ret: c_int,
    pub size: c_int,
    pub len: c_int,
    pub check: c_int,
    pub poked: [c_uchar; 512],
}

/// `struct pt_regs` of `csrc/kprobes_c_shim.c` (the kernel's x86-64 order).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtRegs {
    pub r15: c_ulong,
    pub r14: c_ulong,
    pub r13: c_ulong,
    pub r12: c_ulong,
    pub bp: c_ulong,
    pub bx: c_ulong,
    pub r11: c_ulong,
    pub r10: c_ulong,
    pub r9: c_ulong,
    pub r8: c_ulong,
    pub ax: c_ulong,
    pub cx: c_ulong,
    pub dx: c_ulong,
    pub si: c_ulong,
    pub di: c_ulong,
    pub orig_ax: c_ulong,
    pub ip: c_ulong,
    pub cs: c_ulong,
    pub flags: c_ulong,
    pub sp: c_ulong,
    pub ss: c_ulong,
}

extern "C" {
    static mut rk_cfg_CONFIG_PREEMPTION: c_int;
    static mut rk_cfg_CONFIG_CFI_CLANG: c_int;
    static mut rk_cfg_CONFIG_MITIGATION_RETPOLINE: c_int;
    static mut rk_cfg_CONFIG_X86_KERNEL_IBT: c_int;
    static mut rk_cfg_smap: c_int;
    static mut rk_cfg_kgdb: c_int;
    static mut rk_entry_text_start: c_ulong;
    static mut rk_entry_text_end: c_ulong;
    static mut rk_tmpl: [c_uchar; 256];
    static mut rk_tmpl_len: c_ulong;
    static mut rk_tmpl_clac: c_ulong;
    static mut rk_tmpl_val: c_ulong;
    static mut rk_tmpl_call: c_ulong;
    static mut rk_optimized_callback: c_ulong;

    fn rk_c_can_probe(addr: c_ulong) -> c_int;
    fn rk_c_can_optimize(addr: c_ulong) -> c_int;
    fn rk_c_recover(addr: c_ulong, out: *mut c_uchar) -> c_int;
    fn rk_c_adjust_kprobe_addr(addr: c_ulong, offset: c_ulong, entry: *mut c_int) -> c_ulong;
    fn rk_c_prepare_kprobe(addr: c_ulong, slot: c_ulong, post: c_int, out: *mut CKprobe) -> c_int;
    fn rk_c_emulate(regs: *mut PtRegs);
    fn rk_c_prepare_optimized_kprobe(addr: c_ulong, slot: c_ulong, out: *mut COptprobe) -> c_int;
    fn rk_c_optprobe_addr() -> c_ulong;
}

thread_local! {
    static IMAGE: Cell<*const Image> = const { Cell::new(std::ptr::null()) };
}

static LOCK: Mutex<()> = Mutex::new(());

/// Exclusive use of the C side (its globals) with `image` as the kernel it reads.
pub struct Upstream<'a> {
    _image: std::marker::PhantomData<&'a Image>,
    _lock: MutexGuard<'static, ()>,
}

/// The optprobe template the C side and the Rust side build detours around.
pub struct TemplateSpec<'a> {
    pub code: &'a [u8],
    pub clac: usize,
    pub val: usize,
    pub call: usize,
    pub callback: u64,
}

impl<'a> Upstream<'a> {
    /// Takes the C side for `image` with `cfg` and the optprobe template `tmpl`.
    pub fn new(image: &'a Image, cfg: &Config, tmpl: &TemplateSpec<'_>) -> Upstream<'a> {
        let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        IMAGE.with(|c| c.set(image));
        assert!(tmpl.code.len() <= 256, "template longer than rk_tmpl");
        // SAFETY: LOCK is held, so no other thread touches the C globals, and this thread
        // calls no C function while writing them.
        unsafe {
            rk_cfg_CONFIG_PREEMPTION = cfg.preemption.into();
            rk_cfg_CONFIG_CFI_CLANG = cfg.cfi_clang.into();
            rk_cfg_CONFIG_MITIGATION_RETPOLINE = cfg.no_jump_tables.into();
            rk_cfg_CONFIG_X86_KERNEL_IBT = cfg.ibt.into();
            rk_cfg_smap = cfg.smap.into();
            rk_cfg_kgdb = cfg.kgdb.into();
            rk_entry_text_start = image.entry_text.0;
            rk_entry_text_end = image.entry_text.1;
            let t = &mut *std::ptr::addr_of_mut!(rk_tmpl);
            t[..tmpl.code.len()].copy_from_slice(tmpl.code);
            rk_tmpl_len = tmpl.code.len() as c_ulong;
            rk_tmpl_clac = tmpl.clac as c_ulong;
            rk_tmpl_val = tmpl.val as c_ulong;
            rk_tmpl_call = tmpl.call as c_ulong;
            rk_optimized_callback = tmpl.callback;
        }
        Upstream {
            _image: std::marker::PhantomData,
            _lock: lock,
        }
    }

    /// Sets `CONFIG_PREEMPTION`.
    pub fn set_preemption(&mut self, on: bool) {
        // SAFETY: `self` holds LOCK.
        unsafe { rk_cfg_CONFIG_PREEMPTION = on.into() };
    }

    /// `can_probe()`.
    pub fn can_probe(&mut self, addr: u64) -> bool {
        // SAFETY: `self` holds LOCK and IMAGE points to a live image.
        unsafe { rk_c_can_probe(addr) != 0 }
    }

    /// `recover_probed_instruction()` and the bytes it points to.
    pub fn recover(&mut self, addr: u64) -> Option<[u8; MAX_INSN_SIZE]> {
        let mut out = [0u8; MAX_INSN_SIZE];
        // SAFETY: as in `can_probe`; `out` has room for MAX_INSN_SIZE bytes.
        let ok = unsafe { rk_c_recover(addr, out.as_mut_ptr()) };
        (ok != 0).then_some(out)
    }

    /// `can_optimize()`.
    pub fn can_optimize(&mut self, addr: u64) -> bool {
        // SAFETY: as in `can_probe`.
        unsafe { rk_c_can_optimize(addr) != 0 }
    }

    /// `arch_adjust_kprobe_addr()`: the address (0 for NULL) and `on_func_entry`.
    pub fn adjust_kprobe_addr(&mut self, addr: u64, offset: u64) -> (u64, bool) {
        let mut entry = 0;
        // SAFETY: as in `can_probe`; `entry` is a valid out pointer.
        let a = unsafe { rk_c_adjust_kprobe_addr(addr, offset, &mut entry) };
        (a, entry != 0)
    }

    /// `arch_prepare_kprobe()` with the slot at `slot`.
    pub fn prepare_kprobe(&mut self, addr: u64, slot: u64, post: bool) -> CKprobe {
        let mut out = CKprobe::default();
        // SAFETY: as in `can_probe`; `out` is a valid out pointer.
        unsafe { rk_c_prepare_kprobe(addr, slot, post.into(), &mut out) };
        out
    }

    /// Runs the emulation of the probe last prepared by [`Self::prepare_kprobe`].
    ///
    /// # Safety
    ///
    /// `regs.sp` must point into writable host memory with 8 bytes below and above it.
    pub unsafe fn emulate(&mut self, regs: &mut PtRegs) {
        // SAFETY: the caller guarantees the stack; `self` holds LOCK.
        unsafe { rk_c_emulate(regs) }
    }

    /// `arch_prepare_optimized_kprobe()` then `arch_check_optimized_kprobe()`.
    pub fn prepare_optimized_kprobe(&mut self, addr: u64, slot: u64) -> COptprobe {
        let mut out = COptprobe {
            ret: 0,
            size: 0,
            len: 0,
            check: 0,
            poked: [0; 512],
        };
        // SAFETY: as in `can_probe`; `out` is a valid out pointer.
        unsafe { rk_c_prepare_optimized_kprobe(addr, slot, &mut out) };
        out
    }

    /// The `struct optimized_kprobe` address the C side loads into the detour.
    pub fn optprobe_addr(&self) -> u64 {
        // SAFETY: a pure function of a static's address.
        unsafe { rk_c_optprobe_addr() }
    }
}

impl Drop for Upstream<'_> {
    fn drop(&mut self) {
        IMAGE.with(|c| c.set(std::ptr::null()));
    }
}

fn with_image<T>(default: T, f: impl FnOnce(&Image) -> T) -> T {
    IMAGE.with(|c| {
        let p = c.get();
        // SAFETY: IMAGE is non-null only while an `Upstream` borrowing the image is alive on
        // this thread, and the C side calls back only from inside its methods.
        match unsafe { p.as_ref() } {
            Some(img) => f(img),
            None => default,
        }
    })
}

/// Reads `len` kernel bytes at `addr` into `buf` (`copy_from_kernel_nofault()`).
///
/// # Safety
///
/// `buf` must be valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn rk_env_read(addr: c_ulong, buf: *mut c_uchar, len: c_int) -> c_int {
    let len = usize::try_from(len).unwrap_or(0);
    // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
    let out = unsafe { std::slice::from_raw_parts_mut(buf, len) };
    with_image(0, |img| img.read(addr, out).into())
}

/// `get_kprobe(addr)`: the other probe's first byte, whether it is optimized, and its
/// copied bytes.
///
/// # Safety
///
/// `opcode` and `optimized` must be valid for writes, `copied` for `DISP32_SIZE` bytes.
#[no_mangle]
pub unsafe extern "C" fn rk_env_probe(
    addr: c_ulong,
    opcode: *mut c_uchar,
    optimized: *mut c_int,
    copied: *mut c_uchar,
) -> c_int {
    with_image(0, |img| match img.probe.get().filter(|p| p.addr == addr) {
        Some(p) => {
            let bytes = p.optimized.unwrap_or_default();
            // SAFETY: the caller guarantees the three pointers are valid for writes.
            unsafe {
                *opcode = p.opcode;
                *optimized = p.optimized.is_some().into();
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), copied, bytes.len());
            }
            1
        }
        None => 0,
    })
}

#[no_mangle]
extern "C" fn rk_env_ftrace(addr: c_ulong) -> c_int {
    with_image(0, |img| img.is_ftrace(addr).into())
}

/// `kallsyms_lookup_size_offset()`.
///
/// # Safety
///
/// `size` and `offset` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn rk_env_lookup(
    addr: c_ulong,
    size: *mut c_ulong,
    offset: *mut c_ulong,
) -> c_int {
    with_image(0, |img| match img.lookup_size_offset(addr) {
        Some(s) => {
            // SAFETY: the caller guarantees both pointers are valid for writes.
            unsafe {
                *size = s.size;
                *offset = s.offset;
            }
            1
        }
        None => 0,
    })
}

#[no_mangle]
extern "C" fn rk_env_extable(addr: c_ulong) -> c_int {
    with_image(0, |img| img.search_exception_tables(addr).into())
}

#[no_mangle]
extern "C" fn rk_env_cfi_trap(addr: c_ulong) -> c_int {
    with_image(0, |img| img.is_cfi_trap(addr).into())
}

#[no_mangle]
extern "C" fn rk_env_kgdb(addr: c_ulong) -> c_int {
    with_image(0, |img| img.kgdb_has_hit_break(addr).into())
}

#[no_mangle]
extern "C" fn rk_env_alternatives(start: c_ulong, end: c_ulong) -> c_int {
    with_image(0, |img| img.alternatives_text_reserved(start, end).into())
}

#[no_mangle]
extern "C" fn rk_env_reserved(start: c_ulong, end: c_ulong) -> c_int {
    with_image(0, |img| img.ftrace_text_reserved(start, end).into())
}
