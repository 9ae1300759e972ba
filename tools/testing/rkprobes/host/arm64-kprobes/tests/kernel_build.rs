// SPDX-License-Identifier: GPL-2.0

//! The arm64 kprobes sources build as the kernel builds them, use `core` only, and have no
//! panic path.
//!
//! `arch/arm64/kernel/probes/mod.rs` is compiled into a stand-alone `no_std` crate with
//! `rustc` (no `std`, no `alloc` in scope), with the kernel's lints, and again to LLVM IR at
//! the kernel's optimisation levels with every public entry point exercised, which must
//! declare no panic function (the checks the x86 crates run, shared with them).

#[path = "../../x86-insn/tests/common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::{Fault, KernelText, Memory, ProbeInsn, PtRegs, Simulator, SymbolSpan};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Kernel text in a caller's buffer, and answers from a caller-provided word.
pub struct Text<'a> {
    base: u64,
    words: &'a [u32],
    answers: u64,
}

impl KernelText for Text<'_> {
    fn read_insn(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        self.words.get(usize::try_from(off / 4).ok()?).copied()
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan> {
        (self.answers & 1 != 0).then(|| SymbolSpan {
            size: self.answers >> 8,
            offset: addr.wrapping_sub(self.base),
        })
    }
    fn search_exception_tables(&self, addr: u64) -> bool {
        addr == self.answers >> 1
    }
}

/// Memory from a caller's buffer.
pub struct Mem<'a>(&'a [u64; 8], u64);

impl Memory for Mem<'_> {
    fn read_u32(&self, addr: u64) -> Result<u32, Fault> {
        self.read_u64(addr).map(|v| v as u32)
    }
    fn read_u64(&self, addr: u64) -> Result<u64, Fault> {
        let i = usize::try_from(addr.wrapping_sub(self.1) / 8).map_err(|_| Fault { addr })?;
        self.0.get(i).copied().ok_or(Fault { addr })
    }
}

const SIMS: [Simulator; 8] = [
    Simulator::AdrAdrp,
    Simulator::BBl,
    Simulator::BCond,
    Simulator::BrBlrRet,
    Simulator::CbzCbnz,
    Simulator::TbzTbnz,
    Simulator::LdrLiteral,
    Simulator::LdrswLiteral,
];

/// Decides and prepares a probe, and runs a simulator.
#[no_mangle]
pub extern "C" fn exercise(words: &[u32; 64], w: &[u64; 8], mem: &[u64; 8], regs: &mut PtRegs) -> i64 {
    let n = (w[2] & 63) as usize;
    let text = Text { base: w[0], words: words.get(..n).unwrap_or(words), answers: w[1] };
    let mut r = 0i64;
    match kprobes::prepare_kprobe(&text, w[3]) {
        Ok(p) => r = r.wrapping_add(if let kprobes::Prepared::Step { restore, .. } = p { restore as i64 } else { 1 }),
        Err(e) => r = r.wrapping_add(e.into()),
    }
    let d = kprobes::kprobe_decode_insn(&text, w[4]);
    r = r.wrapping_add(matches!(d, ProbeInsn::Step) as i64);
    r = r.wrapping_add(kprobes::is_probed_address_atomic(&text, w[5], w[6]) as i64);
    r = r.wrapping_add(kprobes::condition_holds(w[7] as u32, w[6]) as i64);
    let sim = SIMS[(w[2] >> 8) as usize % SIMS.len()];
    let m = Mem(mem, w[5]);
    if kprobes::simulate(sim, w[7] as u32, w[3], regs, &m).is_err() {
        r = r.wrapping_add(1);
    }
    if let ProbeInsn::Simulate(s) = kprobes::probe_decode_insn(w[6] as u32) {
        if let Ok(after) = regs.simulated(s, w[6] as u32, w[4], &m) {
            *regs = after;
        }
    }
    r
}
"#;

const CHECK: Check = Check {
    what: "the arm64 kprobes decisions and simulators",
    modules: &[("kprobes", "arch/arm64/kernel/probes/mod.rs")],
    exercise: EXERCISE,
    must_contain: &["exercise", "kprobe_decode_insn"],
    crate_name: "rkprobes_arm64_kprobes_check",
};

no_std_check::kernel_build_tests!(CHECK);
