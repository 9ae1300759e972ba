// SPDX-License-Identifier: GPL-2.0

//! The loongarch kprobes sources build as the kernel builds them, use `core` only, and have no
//! panic path.
//!
//! `arch/loongarch/kernel/probes/mod.rs` is compiled into a stand-alone `no_std` crate with
//! `rustc` (no `std`, no `alloc` in scope), with the kernel's lints, and again to LLVM IR at
//! the kernel's optimisation levels with every public entry point exercised, which must
//! declare no panic function (the checks the x86 crates run, shared with them).

#[path = "../../x86-insn/tests/common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::{KernelText, ProbeInsn, PtRegs, Regs};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Kernel text in a caller's buffer.
pub struct Text<'a> {
    base: u64,
    words: &'a [u32],
}

impl KernelText for Text<'_> {
    fn read_insn(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        self.words.get(usize::try_from(off / 4).ok()?).copied()
    }
}

/// Decides and prepares a probe, and runs the simulators.
#[no_mangle]
pub extern "C" fn exercise(words: &[u32; 64], w: &[u64; 8], regs: &mut PtRegs) -> i64 {
    let n = (w[2] & 63) as usize;
    let text = Text { base: w[0], words: words.get(..n).unwrap_or(words) };
    let mut r = 0i64;
    match kprobes::prepare_kprobe(&text, w[3]) {
        Ok(p) => r = r.wrapping_add(if let kprobes::Prepared::Step { restore, .. } = p { restore as i64 } else { 1 }),
        Err(e) => r = r.wrapping_add(e.into()),
    }
    let word = w[4] as u32;
    r = r.wrapping_add(matches!(kprobes::decode_insn(word), ProbeInsn::Step) as i64);
    r = r.wrapping_add(kprobes::insns_not_supported(word).is_some() as i64);
    r = r.wrapping_add(kprobes::insns_need_simulation(word) as i64);
    r = r.wrapping_add(kprobes::sign_extend64(w[5], w[6] as u32));
    if kprobes::simu_pc(regs, word).is_err() {
        r = r.wrapping_add(1);
    }
    if kprobes::simu_branch(regs, w[7] as u32).is_err() {
        r = r.wrapping_add(2);
    }
    if kprobes::simulate_insn(w[6] as u32, regs).is_err() {
        r = r.wrapping_add(3);
    }
    if let Ok(after) = regs.simulated(w[5] as u32) {
        *regs = after;
    }
    let (slot, restore) = kprobes::arch_prepare_ss_slot(word, w[1]);
    regs.set_reg(w[2] as u32, slot[0] as u64 ^ restore);
    r.wrapping_add(regs.reg(w[3] as u32) as i64)
}
"#;

const CHECK: Check = Check {
    what: "the loongarch kprobes decisions and simulators",
    modules: &[("kprobes", "arch/loongarch/kernel/probes/mod.rs")],
    exercise: EXERCISE,
    must_contain: &["exercise", "prepare_kprobe"],
    crate_name: "rkprobes_loongarch_kprobes_check",
};

no_std_check::kernel_build_tests!(CHECK);
