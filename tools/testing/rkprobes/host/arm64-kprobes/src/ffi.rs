// SPDX-License-Identifier: GPL-2.0

//! Calls into upstream's C (built by `build.rs`) and the callbacks it makes back.
//!
//! The C reads the image's words through a pointer to the image's buffer, and asks for
//! kallsyms, the exception table and literal-pool memory through the `rk_env_*()` callbacks,
//! which answer from the thread's current [`Env`].

use crate::image::Image;
use crate::kprobes::{Fault, KernelText, Memory, PtRegs};
use std::cell::RefCell;
use std::sync::Arc;

/// The memory the literal loads read: a pure function of the address and a seed; one page in
/// `1 / fault_one_in` faults.
#[derive(Clone, Copy, Debug)]
pub struct MemModel {
    /// Mixed into every value.
    pub seed: u64,
    /// One page in this many faults (0: none).
    pub fault_one_in: u64,
}

impl MemModel {
    /// Reads `size` (4 or 8) bytes at `addr`.
    pub fn read(&self, addr: u64, size: u32) -> Result<u64, Fault> {
        let page = crate::rng::splitmix((addr >> 12) ^ self.seed);
        if self.fault_one_in != 0 && page.is_multiple_of(self.fault_one_in) {
            return Err(Fault { addr });
        }
        let v = crate::rng::splitmix(addr ^ self.seed.rotate_left(17));
        Ok(if size == 4 { v & 0xffff_ffff } else { v })
    }
}

impl Memory for MemModel {
    fn read_u32(&self, addr: u64) -> Result<u32, Fault> {
        self.read(addr, 4).map(|v| v as u32)
    }
    fn read_u64(&self, addr: u64) -> Result<u64, Fault> {
        self.read(addr, 8)
    }
}

/// What the C's callbacks answer from.
pub struct Env {
    /// The image (its buffer is what the C dereferences).
    pub image: Arc<Image>,
    /// The literal-pool memory.
    pub mem: MemModel,
}

thread_local! {
    static ENV: RefCell<Option<Arc<Env>>> = const { RefCell::new(None) };
}

#[cfg(rkprobes_c_arm64)]
mod c {
    use super::CRegs;
    extern "C" {
        pub fn rk_set_text(host: *const u8, base: u64);
        pub fn rk_is_steppable(insn: u32) -> i32;
        pub fn rk_probe_decode(insn: u32, handler: *mut i32) -> i32;
        pub fn rk_kprobe_decode(kaddr: u64, handler: *mut i32) -> i32;
        pub fn rk_prepare(
            kaddr: u64,
            opcode: *mut u32,
            handler: *mut i32,
            has_slot: *mut i32,
            slot: *mut u32,
            restore: *mut u64,
        ) -> i32;
        pub fn rk_simulate(
            handler: i32,
            opcode: u32,
            addr: u64,
            regs: *mut CRegs,
            faulted: *mut i32,
        ) -> i32;
        pub fn rk_cond(cond: u32, pstate: u64) -> i32;
    }
}

/// `struct pt_regs` as `csrc/rk_kernel.h` declares it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CRegs {
    regs: [u64; 31],
    sp: u64,
    pc: u64,
    pstate: u64,
}

/// Whether upstream's C was built.
pub const AVAILABLE: bool = cfg!(rkprobes_c_arm64);

/// Makes `env` the one the C reads on this thread.
pub fn install(env: Arc<Env>) {
    #[cfg(rkprobes_c_arm64)]
    // SAFETY: the buffer lives as long as `env`, which the thread-local keeps until the next
    // `install`; the C only reads it, through `rk_*()` calls made while it is installed.
    unsafe {
        c::rk_set_text(env.image.words.as_ptr().cast(), env.image.base)
    };
    ENV.with(|e| *e.borrow_mut() = Some(env));
}

fn with_env<T>(f: impl FnOnce(&Env) -> T, default: T) -> T {
    ENV.with(|e| e.borrow().as_deref().map(f).unwrap_or(default))
}

/// `kallsyms_lookup_size_offset()` for the C.
///
/// # Safety
///
/// `size` and `offset` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn rk_env_lookup(addr: u64, size: *mut u64, offset: *mut u64) -> i32 {
    match with_env(|e| e.image.lookup_size_offset(addr), None) {
        Some(s) => {
            // SAFETY: the caller passes pointers to its locals.
            unsafe {
                *size = s.size;
                *offset = s.offset;
            }
            1
        }
        None => 0,
    }
}

/// `search_exception_tables()` for the C.
#[no_mangle]
pub extern "C" fn rk_env_extable(addr: u64) -> i32 {
    i32::from(with_env(|e| e.image.search_exception_tables(addr), false))
}

/// The literal-pool read for the C.
///
/// # Safety
///
/// `fault` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn rk_env_mem_read(addr: u64, size: i32, fault: *mut i32) -> u64 {
    match with_env(|e| e.mem.read(addr, size as u32), Err(Fault { addr })) {
        Ok(v) => v,
        Err(_) => {
            // SAFETY: the caller passes a pointer to its local.
            unsafe { *fault = 1 };
            0
        }
    }
}

/// The C's `enum probe_insn` and handler number (0 none, 1..=8 as in `simulate-insn.h`).
pub use rkprobes_difftest_common::shim::Verdict;

#[cfg(rkprobes_c_arm64)]
/// `aarch64_insn_is_steppable()`.
pub fn is_steppable(insn: u32) -> bool {
    // SAFETY: a pure function of its argument.
    unsafe { c::rk_is_steppable(insn) != 0 }
}

#[cfg(rkprobes_c_arm64)]
/// `arm_probe_decode_insn()`.
pub fn probe_decode(insn: u32) -> Verdict {
    let mut h = 0;
    // SAFETY: `h` is a local.
    let r = unsafe { c::rk_probe_decode(insn, &mut h) };
    (r, h)
}

#[cfg(rkprobes_c_arm64)]
/// `arm_kprobe_decode_insn()` at `kaddr`, a word of the installed image.
pub fn kprobe_decode(kaddr: u64) -> Verdict {
    assert_in_image(kaddr);
    let mut h = 0;
    // SAFETY: `kaddr` is a word of the installed image, and the scan stays inside its symbol.
    let r = unsafe { c::rk_kprobe_decode(kaddr, &mut h) };
    (r, h)
}

/// What the C's `arch_prepare_kprobe()` did; the slot is its two words.
pub type CPrepared = rkprobes_difftest_common::shim::CPrepared<[u32; 2]>;

#[cfg(rkprobes_c_arm64)]
/// `arch_prepare_kprobe()` at `kaddr`, a word of the installed image or an unaligned address
/// inside one (refused before anything is read).
pub fn prepare(kaddr: u64) -> CPrepared {
    assert_in_image(kaddr & !3);
    CPrepared::from_c(|opcode, handler, has_slot, slot, restore| {
        // SAFETY: `kaddr` is in the installed image (read only when aligned); the out-pointers
        // are to live locals (`slot` has the two words the C writes).
        unsafe { c::rk_prepare(kaddr, opcode, handler, has_slot, slot.as_mut_ptr(), restore) }
    })
}

#[cfg(rkprobes_c_arm64)]
/// Runs the C simulator number `handler` (1..=8); returns the frame after and whether the
/// literal read faulted.
pub fn simulate(handler: i32, opcode: u32, addr: u64, regs: &PtRegs) -> (PtRegs, bool) {
    let mut c = CRegs {
        regs: regs.regs,
        sp: regs.sp,
        pc: regs.pc,
        pstate: regs.pstate,
    };
    let mut faulted = 0;
    // SAFETY: `c` and `faulted` are locals; the simulators only touch the frame and read
    // memory through rk_mem_read().
    let r = unsafe { c::rk_simulate(handler, opcode, addr, &mut c, &mut faulted) };
    assert_eq!(r, 0, "C simulator {handler} does not exist");
    (
        PtRegs {
            regs: c.regs,
            sp: c.sp,
            pc: c.pc,
            pstate: c.pstate,
        },
        faulted != 0,
    )
}

#[cfg(rkprobes_c_arm64)]
/// `aarch32_opcode_cond_checks[cond](pstate)`.
pub fn cond(cond: u32, pstate: u64) -> bool {
    // SAFETY: a pure function of its arguments.
    unsafe { c::rk_cond(cond, pstate) != 0 }
}

#[cfg(rkprobes_c_arm64)]
fn assert_in_image(kaddr: u64) {
    let ok = with_env(
        |e| kaddr.is_multiple_of(4) && kaddr >= e.image.base && kaddr < e.image.end(),
        false,
    );
    assert!(ok, "{kaddr:#x} is not a word of the installed image");
}
