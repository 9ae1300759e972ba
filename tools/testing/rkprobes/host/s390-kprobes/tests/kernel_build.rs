// SPDX-License-Identifier: GPL-2.0

//! The s390 kprobes sources build as the kernel builds them, use `core` only, and have no
//! panic path.
//!
//! `arch/s390/kernel/probes/mod.rs` is compiled into a stand-alone `no_std` crate with `rustc`
//! (no `std`, no `alloc` in scope), with the kernel's lints, and again to LLVM IR at the
//! kernel's optimisation levels with every public entry point exercised, which must declare no
//! panic function (the checks the x86 crates run, shared with them).

#[path = "../../x86-insn/tests/common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::KernelText;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Kernel text in a caller's buffer.
pub struct Text<'a> {
    base: u64,
    halfwords: &'a [u16],
}

impl KernelText for Text<'_> {
    fn read_halfword(&self, addr: u64) -> Option<u16> {
        let off = addr.checked_sub(self.base)?;
        self.halfwords.get(usize::try_from(off / 2).ok()?).copied()
    }
}

/// Decides and prepares a probe, and resumes after its step.
#[no_mangle]
pub extern "C" fn exercise(halfwords: &[u16; 64], w: &[u64; 8], gprs: &mut [u64; 16]) -> i64 {
    let n = (w[2] & 63) as usize;
    let text = Text { base: w[0], halfwords: halfwords.get(..n).unwrap_or(halfwords) };
    let mut r = 0i64;
    let probe = |a: u64| if a == w[5] { Some(w[6] as u16) } else { None };
    match kprobes::prepare_kprobe(&text, w[1], Some(w[3]), probe, Some(w[4])) {
        Ok(p) => {
            let res = kprobes::resume_execution(&p.slot_insn, w[1], w[4], w[7]);
            if let Some((reg, delta)) = res.gpr_fix {
                if let Some(g) = gprs.get_mut(reg) {
                    *g = g.wrapping_add(delta);
                }
            }
            r = r.wrapping_add(res.ip as i64).wrapping_add(p.len as i64);
        }
        Err(e) => r = r.wrapping_add(e.into()),
    }
    let insn = [w[5] as u16, w[6] as u16, w[7] as u16];
    r = r.wrapping_add(kprobes::probe_get_fixup_type(&insn) as i64);
    r = r.wrapping_add(kprobes::probe_is_prohibited_opcode(&insn) as i64);
    r = r.wrapping_add(kprobes::is_known_insn(&insn) as i64);
    r = r.wrapping_add(kprobes::copy_instruction(insn, w[1], w[2])[2] as i64);
    r = r.wrapping_add(kprobes::can_probe(&text, w[3], None, probe) as i64);
    r = r.wrapping_add(kprobes::enable_singlestep_mask(w[6]).0 as i64);
    r = r.wrapping_add(kprobes::reenter_allowed(w[7]) as i64);
    r.wrapping_add(kprobes::disable_singlestep_mask(w[4], w[5]) as i64)
}
"#;

const CHECK: Check = Check {
    what: "the s390 kprobes decisions",
    modules: &[("kprobes", "arch/s390/kernel/probes/mod.rs")],
    exercise: EXERCISE,
    must_contain: &["exercise"],
    crate_name: "rkprobes_s390_kprobes_check",
};

no_std_check::kernel_build_tests!(CHECK);
