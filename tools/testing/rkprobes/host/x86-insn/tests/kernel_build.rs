// SPDX-License-Identifier: GPL-2.0

//! The decoder sources build the way the kernel builds them, and cannot panic.
//!
//! Both checks compile `arch/x86/lib/insn_decoder/mod.rs` into a stand-alone `no_std` crate
//! with `rustc`, as the kernel's kprobes crate will include it (`pub mod insn_decoder`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The lint flags of the kernel's `rust_common_flags` (top-level Makefile) that apply to
/// plain rustc, made fatal as `CONFIG_WERROR` does.
const KERNEL_LINTS: &[&str] = &[
    "-Dnon_ascii_idents",
    "-Dunsafe_op_in_unsafe_fn",
    "-Wmissing_docs",
    "-Wrust_2018_idioms",
    "-Wunreachable_pub",
    "-Dwarnings",
];

fn decoder_mod_rs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../../arch/x86/lib/insn_decoder/mod.rs")
        .canonicalize()
        .expect("the decoder sources exist")
}

fn rustc() -> Command {
    Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
}

/// Writes a crate root named `name` that includes the decoder, followed by `body`.
fn crate_root(name: &str, body: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let root = dir.join("lib.rs");
    let text = format!(
        "//! Stand-in for the kernel crate that includes the x86 decoder.\n\
         #![no_std]\n\
         #[path = {:?}]\n\
         pub mod insn_decoder;\n{body}",
        decoder_mod_rs()
    );
    std::fs::write(&root, text).expect("the crate root is written");
    (dir, root)
}

#[test]
fn builds_with_kernel_lints() {
    let (dir, root) = crate_root("kernel-lints", "");
    let out = rustc()
        .args([
            "--edition=2021",
            "--crate-type=lib",
            "-Cpanic=abort",
            "--emit=metadata",
        ])
        .args(KERNEL_LINTS)
        .arg("--out-dir")
        .arg(&dir)
        .arg(&root)
        .output()
        .expect("rustc runs");
    assert!(
        out.status.success(),
        "the decoder does not build with the kernel's lints:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

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

#[test]
fn no_panic_path_when_optimised() {
    let (dir, root) = crate_root("no-panic", EXERCISE);
    // The kernel builds with -O2 (CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE) or -Os (..._FOR_SIZE),
    // and with overflow checks unless CONFIG_RUST_OVERFLOW_CHECKS is off.
    for (opt, overflow) in [("2", "on"), ("s", "on"), ("2", "off")] {
        let ir = dir.join(format!("exercise-O{opt}-overflow-{overflow}.ll"));
        let out = rustc()
            .args([
                "--edition=2021",
                "--crate-type=lib",
                "-Cpanic=abort",
                "--emit=llvm-ir",
            ])
            .arg(format!("-Copt-level={opt}"))
            .arg(format!("-Coverflow-checks={overflow}"))
            .arg("-o")
            .arg(&ir)
            .arg(&root)
            .output()
            .expect("rustc runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_no_panic_path(
            &ir,
            &format!("-Copt-level={opt} -Coverflow-checks={overflow}"),
        );
    }
}

/// Asserts that the LLVM IR file `ir` of the [`EXERCISE`] crate declares no panic function.
fn assert_no_panic_path(ir: &Path, how: &str) {
    let ir = std::fs::read_to_string(ir).expect("LLVM IR was written");
    let panics: Vec<&str> = ir
        .lines()
        .filter(|l| l.starts_with("declare") && (l.contains("panic") || l.contains("_fail")))
        .collect();
    assert!(
        panics.is_empty(),
        "built with {how}, the decoder can reach:\n{}",
        panics.join("\n")
    );
    // The check must see the code it vets.
    assert!(ir.contains("exercise") && ir.contains("check_line"));
}

/// The kernel build tree whose Rust flags to use: `$RKPROBES_KERNEL_BUILD`, default the
/// pipeline's KUnit build.
fn kernel_build_dir() -> PathBuf {
    std::env::var_os("RKPROBES_KERNEL_BUILD")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/root/.cache/rkprobes/build/x86_64-c-kunit".into())
}

/// The rustc and flags Kbuild used for `rust/build_error.o`, from its `.cmd` file.
fn kernel_rustc_command(build: &Path) -> Option<(String, Vec<String>)> {
    let cmd = std::fs::read_to_string(build.join("rust/.build_error.o.cmd")).ok()?;
    let line = cmd.lines().find(|l| l.starts_with("savedcmd_"))?;
    let mut words = line
        .split_whitespace()
        .skip_while(|w| !w.ends_with("rustc"));
    let rustc = words.next()?.to_string();
    let flags = words
        .take_while(|w| !w.starts_with("--emit="))
        .map(String::from)
        .collect();
    Some((rustc, flags))
}

#[test]
fn no_panic_path_with_the_kernel_toolchain() {
    let build = kernel_build_dir();
    let Some((kernel_rustc, flags)) = kernel_rustc_command(&build) else {
        eprintln!(
            "SKIP: no Rust-enabled kernel build at {} (set RKPROBES_KERNEL_BUILD); \
             the host-toolchain check above still ran",
            build.display()
        );
        return;
    };
    let (dir, root) = crate_root("kernel-toolchain", EXERCISE);
    let ir = dir.join("exercise-kernel.ll");
    // Kbuild's own flags (target, code model, opt level, overflow checks, lints), plus
    // -Dwarnings as CONFIG_WERROR adds; `core` is the one the kernel build compiled.
    let out = Command::new(&kernel_rustc)
        .current_dir(&build)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(&flags)
        .args([
            "-Dwarnings",
            "--crate-type=rlib",
            "--crate-name=rkprobes_insn_check",
        ])
        .arg("--emit=llvm-ir")
        .arg("-o")
        .arg(&ir)
        .args(["-L", "./rust", "--sysroot=/dev/null", "-Zunstable-options"])
        .arg(&root)
        .output()
        .expect("the kernel's rustc runs");
    assert!(
        out.status.success(),
        "the decoder does not build with the kernel's rustc and flags ({kernel_rustc}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_panic_path(&ir, "the kernel's flags");
    println!(
        "built with {kernel_rustc} and Kbuild's {} flags: no panic path",
        flags.len()
    );
}
