// SPDX-License-Identifier: GPL-2.0

//! The decoder sources build the way the kernel builds them, and cannot panic.
//!
//! The checks compile `arch/x86/lib/insn_decoder/mod.rs` into a stand-alone `no_std` crate
//! with `rustc`, as the kernel's kprobes crate includes it (`pub mod insn_decoder`).

#[path = "common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point, so their code is in the optimised output.
const EXERCISE: &str = r#"
use insn_decoder::{Insn, Mode};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Decodes and analyses one instruction.
#[no_mangle]
pub extern "C" fn exercise(buf: &[u8; 16], n: usize, out: &mut [u8; 16], long: bool, a: u64, b: u64) -> i64 {
    let input = buf.get(..n).unwrap_or(buf);
    let mode = if long { Mode::Bits64 } else { Mode::Bits32 };
    match Insn::decode(input, mode) {
        Ok(i) => {
            let parts = [
                i.len() as i64,
                i64::from(i.can_boost()),
                i64::from(i.emulation().is_ok()),
                i.branch_target(a).unwrap_or(0) as i64,
                i.jump_target(a).unwrap_or(0) as i64,
                i.rip_relative_target(a).unwrap_or(0) as i64,
                i64::from(i.is_exception()),
                i64::from(i.masks_exception()),
                i64::from(i.is_indirect_jump()),
                i64::from(i.is_ret()),
                i64::from(i.is_iret()),
                i.copy_out_of_line(a, b, out).unwrap_or(0) as i64,
                i64::from(i.opcode().1),
                i.legacy_prefixes().fold(0i64, |n, _| n.wrapping_add(1)),
                i.displacement_offset() as i64,
                i.immediate_offset() as i64,
                i.rex().len() as i64,
                i.vex().len() as i64,
                insn_decoder::group_name(b as usize).len() as i64,
            ];
            // Wrapping, so the only overflow checks left are the decoder's own.
            parts.iter().fold(0i64, |r, p| r.wrapping_add(*p))
        }
        Err(e) => i64::from(e.to_errno()),
    }
}

/// Runs the golden-vector checker on one line.
#[no_mangle]
pub extern "C" fn golden(line: &[u8; 64], n: usize) -> bool {
    let text = core::str::from_utf8(line.get(..n).unwrap_or(line)).unwrap_or("");
    insn_decoder::golden::check_line(text).is_ok()
}
"#;

const CHECK: Check = Check {
    what: "the decoder",
    modules: &[("insn_decoder", "arch/x86/lib/insn_decoder/mod.rs")],
    exercise: EXERCISE,
    must_contain: &["exercise", "check_line"],
    crate_name: "rkprobes_insn_check",
};

no_std_check::kernel_build_tests!(CHECK);
