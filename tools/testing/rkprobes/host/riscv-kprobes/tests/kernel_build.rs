// SPDX-License-Identifier: GPL-2.0

//! The riscv kprobes sources build as the kernel builds them, use `core` only, and have no
//! panic path.
//!
//! `arch/riscv/kernel/probes/mod.rs` is compiled into a stand-alone `no_std` crate with
//! `rustc` (no `std`, no `alloc` in scope), with the kernel's lints, and again to LLVM IR at
//! the kernel's optimisation levels with every public entry point exercised, which must
//! declare no panic function (the checks the x86 and arm64 crates run, shared with them).

#[path = "../../x86-insn/tests/common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::{KernelText, ProbeInsn, PtRegs, Regs, Simulator};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Kernel text in a caller's buffer, and a symbol start from a caller-provided word.
pub struct Text<'a> {
    base: u64,
    parcels: &'a [u16],
    sym: u64,
}

impl KernelText for Text<'_> {
    fn read_u16(&self, addr: u64) -> Option<u16> {
        let off = addr.checked_sub(self.base)?;
        self.parcels.get(usize::try_from(off / 2).ok()?).copied()
    }
    fn lookup_offset(&self, addr: u64) -> Option<u64> {
        addr.checked_sub(self.sym)
    }
}

const SIMS: [Simulator; 9] = [
    Simulator::Jal,
    Simulator::Jalr,
    Simulator::Auipc,
    Simulator::Branch,
    Simulator::CJ,
    Simulator::CJr,
    Simulator::CJalr,
    Simulator::CBnez,
    Simulator::CBeqz,
];

/// Decides and prepares a probe, walks boundaries, and runs the simulators.
#[no_mangle]
pub extern "C" fn exercise(parcels: &[u16; 64], w: &[u64; 8], regs: &mut PtRegs) -> i64 {
    let n = (w[2] & 63) as usize;
    let text = Text { base: w[0], parcels: parcels.get(..n).unwrap_or(parcels), sym: w[1] };
    let mut r = 0i64;
    match kprobes::prepare_kprobe(&text, w[3], w[7] & 1 != 0) {
        Ok(p) => r = r.wrapping_add(p.slot_len() as i64),
        Err(e) => r = r.wrapping_add(e.into()),
    }
    r = r.wrapping_add(kprobes::check_kprobe(&text, w[4]) as i64);
    r = r.wrapping_add(kprobes::is_insn_boundary(&text, w[5], w[6]) as i64);
    let sim = SIMS[(w[2] >> 8) as usize % SIMS.len()];
    r = r.wrapping_add(kprobes::simulate(sim, w[7] as u32, w[3], regs) as i64);
    if let ProbeInsn::Simulate(s) = kprobes::probe_decode_insn(w[6] as u32, w[5] & 1 != 0) {
        let (after, ok) = regs.simulated(s, w[6] as u32, w[4]);
        if ok {
            *regs = after;
        }
    }
    r.wrapping_add(regs.x((w[7] >> 32) as u32) as i64)
        .wrapping_add(regs.reg((w[7] >> 40) as u32) as i64)
}
"#;

const CHECK: Check = Check {
    what: "the riscv kprobes decisions and simulators",
    modules: &[("kprobes", "arch/riscv/kernel/probes/mod.rs")],
    exercise: EXERCISE,
    must_contain: &["exercise", "prepare_kprobe"],
    crate_name: "rkprobes_riscv_kprobes_check",
};

no_std_check::kernel_build_tests!(CHECK);
