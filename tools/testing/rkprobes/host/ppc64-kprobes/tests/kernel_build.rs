// SPDX-License-Identifier: GPL-2.0

//! The ppc64 kprobes sources build as the kernel builds them, use `core` only, and have no
//! panic path.
//!
//! `arch/powerpc/kernel/probes/mod.rs` is compiled into a stand-alone `no_std` crate with
//! `rustc` (no `std`, no `alloc` in scope), with the kernel's lints, and again to LLVM IR at
//! the kernel's optimisation levels with every public entry point exercised, which must
//! declare no panic function (the checks the x86 crates run, shared with them).

#[path = "../../x86-insn/tests/common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::{AnalyseInstr, KernelText, PpcInst};

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
    fn read_word(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        self.words.get(usize::try_from(off / 4).ok()?).copied()
    }
}

/// An analysis that answers from a table.
pub struct Table<'a>(&'a [u64; 8]);

impl AnalyseInstr for Table<'_> {
    fn emulated_nip(&self, insn: PpcInst, nip: u64) -> Option<u64> {
        let v = self.0[(insn.val & 7) as usize] ^ nip;
        (v & 1 == 0).then_some(v)
    }
}

/// Decides, prepares and optimizes a probe.
#[no_mangle]
pub extern "C" fn exercise(words: &[u32; 64], w: &[u64; 8], out: &mut [u32; 128]) -> i64 {
    let n = (w[2] & 63) as usize;
    let text = Text { base: w[0], words: words.get(..n).unwrap_or(words) };
    let mut r = 0i64;
    let prepared = kprobes::prepare_kprobe(&text, w[1], w[3], if w[4] & 1 != 0 { Some(w[4] as u32) } else { None });
    let insn = match prepared {
        Ok(p) => p.insn,
        Err(e) => {
            r = r.wrapping_add(e.errno().into());
            PpcInst::word(w[5] as u32)
        }
    };
    let (e, b) = kprobes::try_to_emulate(w[6] as i32, w[7] as i32);
    r = r.wrapping_add(b as i64).wrapping_add(e as i64);
    r = r.wrapping_add(kprobes::tries_emulation(w[6] as i32) as i64);
    r = r.wrapping_add(kprobes::stray_trap(text.read_word(w[1])) as i64);
    r = r.wrapping_add(kprobes::trap_may_be_kprobe(w[2]) as i64);
    r = r.wrapping_add(kprobes::msr_without_singlestep(w[2], w[3]) as i64);
    r = r.wrapping_add(kprobes::post_step_resume(insn, w[2], w[3], w[1]).unwrap_or(1) as i64);
    r = r.wrapping_add(kprobes::fault_resume(w[1], w[2], w[3]).1 as i64);
    r = r.wrapping_add(kprobes::arch_kprobe_on_func_entry(w[4], w[5] & 1 != 0) as i64);
    r = r.wrapping_add(kprobes::insn::ppc_function_entry(w[0], words[0], words[1]) as i64);
    let table = Table(w);
    if let Some(tmpl) = kprobes::Template::new((w[0] & 127) as usize, (w[1] & 127) as usize, (w[2] & 127) as usize, (w[3] & 127) as usize, (w[4] & 127) as usize, (w[5] & 127) as usize) {
        let p = kprobes::OptProbe { addr: w[1], insn, op: w[6] };
        match kprobes::prepare_optimized_kprobe(&p, &tmpl, w[7], &table, Some(w[2]), Some(w[3]), || Some(w[4])) {
            Ok(d) => {
                d.apply(&tmpl, out);
                r = r.wrapping_add(kprobes::optimize_branch(w[1], d.slot).unwrap_or(0) as i64);
            }
            Err(e) => r = r.wrapping_add(e.errno() as i64).wrapping_add(e.freed_slot().unwrap_or(0) as i64),
        }
    }
    r = r.wrapping_add(kprobes::within_optimized_kprobe(w[1], w[2]) as i64);
    r.wrapping_add(kprobes::can_optimize(w[1], insn, w[7], &table).map_or(0, |n| n.get() as i64))
}
"#;

const CHECK: Check = Check {
    what: "the ppc64 kprobes decisions",
    modules: &[("kprobes", "arch/powerpc/kernel/probes/mod.rs")],
    exercise: EXERCISE,
    must_contain: &["exercise", "prepare_kprobe"],
    crate_name: "rkprobes_ppc64_kprobes_check",
};

no_std_check::kernel_build_tests!(CHECK);
