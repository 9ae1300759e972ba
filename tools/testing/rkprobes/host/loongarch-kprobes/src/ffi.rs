// SPDX-License-Identifier: GPL-2.0

//! Calls into upstream's C (built by `build.rs`).
//!
//! The C reads the image's words through a pointer to the image's buffer; what it logs
//! (`pr_notice()`, `pr_warn()`, `pr_info()`) is recorded by the shim and read back here as the
//! format string.

use crate::image::Image;
use crate::kprobes::PtRegs;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static IMAGE: RefCell<Option<Arc<Image>>> = const { RefCell::new(None) };
}

#[cfg(rkprobes_c_loongarch)]
mod c {
    use super::CRegs;
    use std::ffi::c_char;
    extern "C" {
        pub fn rk_set_text(host: *const u8, base: u64);
        pub fn rk_take_note() -> *const c_char;
        pub fn rk_not_supported(word: u32) -> i32;
        pub fn rk_need_simulation(word: u32) -> i32;
        pub fn rk_predicates(word: u32) -> i32;
        pub fn rk_prepare(
            kaddr: u64,
            opcode: *mut u32,
            handler: *mut i32,
            has_slot: *mut i32,
            slot: *mut u32,
            restore: *mut u64,
        ) -> i32;
        pub fn rk_simulate(which: i32, word: u32, regs: *mut CRegs) -> i32;
        pub fn rk_bp_insn() -> u32;
        pub fn rk_sstepbp_insn() -> u32;
    }
}

/// `struct pt_regs` as `csrc/rk_kernel.h` declares it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CRegs {
    regs: [u64; 32],
    orig_a0: u64,
    csr_era: u64,
    csr_badvaddr: u64,
    csr_crmd: u64,
    csr_prmd: u64,
    csr_euen: u64,
    csr_ecfg: u64,
    csr_estat: u64,
}

impl From<&PtRegs> for CRegs {
    fn from(r: &PtRegs) -> Self {
        CRegs {
            regs: r.regs,
            orig_a0: r.orig_a0,
            csr_era: r.csr_era,
            csr_badvaddr: r.csr_badvaddr,
            csr_crmd: r.csr_crmd,
            csr_prmd: r.csr_prmd,
            csr_euen: r.csr_euen,
            csr_ecfg: r.csr_ecfg,
            csr_estat: r.csr_estat,
        }
    }
}

impl From<CRegs> for PtRegs {
    fn from(c: CRegs) -> Self {
        PtRegs {
            regs: c.regs,
            orig_a0: c.orig_a0,
            csr_era: c.csr_era,
            csr_badvaddr: c.csr_badvaddr,
            csr_crmd: c.csr_crmd,
            csr_prmd: c.csr_prmd,
            csr_euen: c.csr_euen,
            csr_ecfg: c.csr_ecfg,
            csr_estat: c.csr_estat,
        }
    }
}

/// Whether upstream's C was built.
pub const AVAILABLE: bool = cfg!(rkprobes_c_loongarch);

/// Makes `image` the text the C reads on this thread.
pub fn install(image: Arc<Image>) {
    #[cfg(rkprobes_c_loongarch)]
    // SAFETY: the buffer lives as long as `image`, which the thread-local keeps until the
    // next `install`; the C only reads it, through `rk_prepare()` calls made while it is
    // installed.
    unsafe {
        c::rk_set_text(image.words.as_ptr().cast(), image.base)
    };
    IMAGE.with(|e| *e.borrow_mut() = Some(image));
}

#[cfg(rkprobes_c_loongarch)]
/// What upstream logged since the last call: its format string.
pub fn take_note() -> Option<String> {
    // SAFETY: the shim returns NULL or one of upstream's string literals.
    unsafe {
        let p = c::rk_take_note();
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

#[cfg(rkprobes_c_loongarch)]
/// `insns_not_supported()`, and what it logged.
pub fn not_supported(word: u32) -> (bool, Option<String>) {
    take_note();
    // SAFETY: a pure function of its argument (but for the note).
    let r = unsafe { c::rk_not_supported(word) } != 0;
    (r, take_note())
}

#[cfg(rkprobes_c_loongarch)]
/// `insns_need_simulation()`.
pub fn need_simulation(word: u32) -> bool {
    // SAFETY: a pure function of its argument.
    unsafe { c::rk_need_simulation(word) != 0 }
}

#[cfg(rkprobes_c_loongarch)]
/// `is_pc_ins()`, `is_branch_ins()` and `is_break_ins()`.
pub fn predicates(word: u32) -> [bool; 3] {
    // SAFETY: a pure function of its argument.
    let r = unsafe { c::rk_predicates(word) };
    [r & 1 != 0, r & 2 != 0, r & 4 != 0]
}

#[cfg(rkprobes_c_loongarch)]
/// What the C's `arch_prepare_kprobe()` did; the slot is its two words, the handler what
/// `arch_simulate_insn()` runs at a hit without a slot (0 none, 1 `simu_pc()`, 2
/// `simu_branch()`), `restore` is `u64::MAX` when `arch_prepare_kprobe()` did not write it.
pub type CPrepared = rkprobes_difftest_common::shim::CPrepared<[u32; 2]>;

#[cfg(rkprobes_c_loongarch)]
/// `arch_prepare_kprobe()` at `kaddr`, a word of the installed image or an unaligned address
/// inside one (refused before anything is read), and what it logged.
pub fn prepare(kaddr: u64) -> (CPrepared, Option<String>) {
    assert_in_image(kaddr & !3);
    take_note();
    let c = CPrepared::from_c(|opcode, handler, has_slot, slot, restore| {
        // SAFETY: `kaddr` is in the installed image (read only when aligned); the out-pointers
        // are to live locals (`slot` has the two words the C writes).
        unsafe { c::rk_prepare(kaddr, opcode, handler, has_slot, slot.as_mut_ptr(), restore) }
    });
    (c, take_note())
}

#[cfg(rkprobes_c_loongarch)]
/// Which C simulator [`simulate`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CSim {
    /// `arch_simulate_insn()`.
    ArchSimulateInsn = 0,
    /// `simu_pc()`.
    SimuPc = 1,
    /// `simu_branch()`.
    SimuBranch = 2,
}

#[cfg(rkprobes_c_loongarch)]
/// Runs the C simulator `which` on `word` from `regs`; the frame after and what it logged.
pub fn simulate(which: CSim, word: u32, regs: &PtRegs) -> (PtRegs, Option<String>) {
    let mut c = CRegs::from(regs);
    take_note();
    // SAFETY: `c` is a local; the simulators only touch the frame.
    let r = unsafe { c::rk_simulate(which as i32, word, &mut c) };
    assert_eq!(r, 0, "C simulator {which:?} does not exist");
    (PtRegs::from(c), take_note())
}

#[cfg(rkprobes_c_loongarch)]
fn assert_in_image(kaddr: u64) {
    let ok = IMAGE.with(|e| {
        e.borrow()
            .as_deref()
            .is_some_and(|img| kaddr.is_multiple_of(4) && kaddr >= img.base && kaddr < img.end())
    });
    assert!(ok, "{kaddr:#x} is not a word of the installed image");
}

#[cfg(rkprobes_c_loongarch)]
/// `KPROBE_BP_INSN` and `KPROBE_SSTEPBP_INSN`.
pub fn break_insns() -> (u32, u32) {
    // SAFETY: constants.
    unsafe { (c::rk_bp_insn(), c::rk_sstepbp_insn()) }
}
