// SPDX-License-Identifier: GPL-2.0

//! Calls into upstream's C (built by `build.rs`) and the callback it makes back.
//!
//! The C reads the image's bytes through a pointer to the image's buffer, and asks kallsyms
//! through `rk_env_lookup()`, which answers from the thread's current image.

use crate::image::Image;
use crate::kprobes::{KernelText, PtRegs};
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static ENV: RefCell<Option<Arc<Image>>> = const { RefCell::new(None) };
}

#[cfg(rkprobes_c_riscv)]
mod c {
    use crate::kprobes::PtRegs;
    extern "C" {
        pub fn rk_set_text(host: *const u8, base: u64);
        pub fn rk_decode_word(insn: u32, handler: *mut i32) -> i32;
        pub fn rk_noc_decode_word(insn: u32, handler: *mut i32) -> i32;
        pub fn rk_decode_at(kaddr: u64, handler: *mut i32) -> i32;
        pub fn rk_check(kaddr: u64) -> i32;
        pub fn rk_prepare(
            kaddr: u64,
            opcode: *mut u32,
            handler: *mut i32,
            has_slot: *mut i32,
            slot: *mut u8,
            restore: *mut u64,
        ) -> i32;
        pub fn rk_simulate(handler: i32, opcode: u32, addr: u64, regs: *mut PtRegs) -> i32;
    }
}

/// Whether upstream's C was built.
pub const AVAILABLE: bool = cfg!(rkprobes_c_riscv);

/// What the C's slot holds before `arch_prepare_kprobe()` writes it (`RK_SLOT_FILL`).
pub const SLOT_FILL: u8 = 0xa5;

/// Makes `image` the one the C reads on this thread.
pub fn install(image: Arc<Image>) {
    #[cfg(rkprobes_c_riscv)]
    // SAFETY: the buffer lives as long as `image`, which the thread-local keeps until the next
    // `install`; the C only reads it, through `rk_*()` calls made while it is installed.
    unsafe {
        c::rk_set_text(image.bytes.as_ptr(), image.base)
    };
    ENV.with(|e| *e.borrow_mut() = Some(image));
}

/// `kallsyms_lookup_size_offset()` for the C.
///
/// # Safety
///
/// `size` and `offset` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn rk_env_lookup(addr: u64, size: *mut u64, offset: *mut u64) -> i32 {
    let found = ENV.with(|e| {
        e.borrow()
            .as_deref()
            .and_then(|img| Some((img.symbol_size(addr)?, img.lookup_offset(addr)?)))
    });
    match found {
        Some((s, o)) => {
            // SAFETY: the caller passes pointers to its locals.
            unsafe {
                *size = s;
                *offset = o;
            }
            1
        }
        None => 0,
    }
}

/// The C's `enum probe_insn` and handler number (0 none, 1..=9 as in `simulate-insn.h`).
pub use rkprobes_difftest_common::shim::Verdict;

#[cfg(rkprobes_c_riscv)]
/// `riscv_probe_decode_insn()` on `insn` (`CONFIG_RISCV_ISA_C` as `isa_c`).
pub fn decode_word(insn: u32, isa_c: bool) -> Verdict {
    let mut h = 0;
    // SAFETY: pure functions of their argument; `h` is a local.
    let r = unsafe {
        if isa_c {
            c::rk_decode_word(insn, &mut h)
        } else {
            c::rk_noc_decode_word(insn, &mut h)
        }
    };
    (r, h)
}

#[cfg(rkprobes_c_riscv)]
/// `riscv_probe_decode_insn()` at `kaddr`, a parcel of the installed image (the C reads 32
/// bits there; the image is padded).
pub fn decode_at(kaddr: u64) -> Verdict {
    assert_in_image(kaddr);
    let mut h = 0;
    // SAFETY: `kaddr` is a parcel of the installed image, whose buffer has 4 bytes of padding.
    let r = unsafe { c::rk_decode_at(kaddr, &mut h) };
    (r, h)
}

#[cfg(rkprobes_c_riscv)]
/// `arch_check_kprobe()` at `kaddr`, in the installed image.
pub fn check(kaddr: u64) -> bool {
    assert_in_image(kaddr);
    // SAFETY: `kaddr` is in the installed image; the walk reads from its symbol's start, in the
    // image, up to `kaddr`.
    unsafe { c::rk_check(kaddr) != 0 }
}

/// What the C's `arch_prepare_kprobe()` did; the slot is its 16 bytes ([`SLOT_FILL`] where
/// not written).
pub type CPrepared = rkprobes_difftest_common::shim::CPrepared<[u8; 16]>;

#[cfg(rkprobes_c_riscv)]
/// `arch_prepare_kprobe()` at `kaddr`, in the installed image.
pub fn prepare(kaddr: u64) -> CPrepared {
    assert_in_image(kaddr);
    CPrepared::from_c(|opcode, handler, has_slot, slot, restore| {
        // SAFETY: `kaddr` is in the installed image (padded for the reads at and after it); the
        // out-pointers are to live locals (`slot` has the 16 bytes the C writes).
        unsafe { c::rk_prepare(kaddr, opcode, handler, has_slot, slot.as_mut_ptr(), restore) }
    })
}

#[cfg(rkprobes_c_riscv)]
/// Runs the C simulator number `handler` (1..=9); returns the frame after and its result.
pub fn simulate(handler: i32, opcode: u32, addr: u64, regs: &PtRegs) -> (PtRegs, bool) {
    let mut c = *regs;
    // SAFETY: `c` is a local with `struct pt_regs`' layout (`PtRegs` is `repr(C)` as
    // csrc/rk_kernel.h declares it); the simulators only touch the frame.
    let r = unsafe { c::rk_simulate(handler, opcode, addr, &mut c) };
    assert!(r >= 0, "C simulator {handler} does not exist");
    (c, r != 0)
}

#[cfg(rkprobes_c_riscv)]
fn assert_in_image(kaddr: u64) {
    let ok = ENV.with(|e| {
        e.borrow()
            .as_deref()
            .is_some_and(|img| kaddr >= img.base && kaddr < img.end())
    });
    assert!(ok, "{kaddr:#x} is not in the installed image");
}
