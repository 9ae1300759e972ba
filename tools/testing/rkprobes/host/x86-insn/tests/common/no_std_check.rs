// SPDX-License-Identifier: GPL-2.0

//! Shared by the host crates' `kernel_build` tests: sources that the kernel will include build
//! as a stand-alone `no_std` crate with the kernel's lints, and cannot panic.
//!
//! A [`Check`] names the source files (as `#[path]` modules of a scratch crate root) and an
//! `EXERCISE` body that calls every public entry point on opaque inputs, so their code is in the
//! optimised output; the LLVM IR must then declare no panic function. Test files include this
//! file with `#[path]`.

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

/// What a `kernel_build` test checks.
pub struct Check {
    /// What the sources are, for messages ("the decoder").
    pub what: &'static str,
    /// `(module name, path from the repository root)` of each module of the crate.
    pub modules: &'static [(&'static str, &'static str)],
    /// Items appended to the crate root: a panic handler and `#[no_mangle]` entry points.
    pub exercise: &'static str,
    /// Names the optimised IR must contain, so that the check sees the code it vets.
    pub must_contain: &'static [&'static str],
    /// The crate name given to the kernel's rustc.
    pub crate_name: &'static str,
}

fn source(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../..")
        .join(rel)
        .canonicalize()
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn rustc() -> Command {
    Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
}

impl Check {
    /// Writes a crate root named `name` with the modules, followed by `body`.
    fn crate_root(&self, name: &str, body: &str) -> (PathBuf, PathBuf) {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let root = dir.join("lib.rs");
        let mut text = format!(
            "//! Stand-in for the kernel crate that includes {}.\n#![no_std]\n",
            self.what
        );
        for (module, path) in self.modules {
            text += &format!("#[path = {:?}]\npub mod {module};\n", source(path));
        }
        text += body;
        std::fs::write(&root, text).expect("the crate root is written");
        (dir, root)
    }

    /// Asserts that the LLVM IR file `ir` of the exercise crate declares no panic function.
    fn assert_no_panic_path(&self, ir: &Path, how: &str) {
        let ir = std::fs::read_to_string(ir).expect("LLVM IR was written");
        let panics: Vec<&str> = ir
            .lines()
            .filter(|l| l.starts_with("declare") && (l.contains("panic") || l.contains("_fail")))
            .collect();
        assert!(
            panics.is_empty(),
            "built with {how}, {} can reach:\n{}",
            self.what,
            panics.join("\n")
        );
        for name in self.must_contain {
            assert!(ir.contains(name), "the IR built with {how} lacks {name}");
        }
    }

    /// The sources build with the kernel's lints.
    pub fn builds_with_kernel_lints(&self) {
        let (dir, root) = self.crate_root(&format!("{}-lints", self.crate_name), "");
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
            "{} does not build with the kernel's lints:\n{}",
            self.what,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// No panic path at the kernel's optimisation levels, with and without overflow checks.
    pub fn no_panic_path_when_optimised(&self) {
        let (dir, root) = self.crate_root(&format!("{}-no-panic", self.crate_name), self.exercise);
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
            self.assert_no_panic_path(
                &ir,
                &format!("-Copt-level={opt} -Coverflow-checks={overflow}"),
            );
        }
    }

    /// No panic path with the kernel's own rustc and Kbuild's flags, taken from a kernel build
    /// (`$RKPROBES_KERNEL_BUILD`, default the pipeline's x86_64 KUnit build); said loudly and
    /// skipped when there is none.
    pub fn no_panic_path_with_the_kernel_toolchain(&self) {
        let build = std::env::var_os("RKPROBES_KERNEL_BUILD")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/root/.cache/rkprobes/build/x86_64-c-kunit".into());
        let Some((kernel_rustc, flags)) = kernel_rustc_command(&build) else {
            eprintln!(
                "SKIP: no Rust-enabled kernel build at {} (set RKPROBES_KERNEL_BUILD); \
                 the host-toolchain checks still ran",
                build.display()
            );
            return;
        };
        let (dir, root) = self.crate_root(
            &format!("{}-kernel-toolchain", self.crate_name),
            self.exercise,
        );
        let ir = dir.join("exercise-kernel.ll");
        // Kbuild's own flags (target, code model, opt level, overflow checks, lints), plus
        // -Dwarnings as CONFIG_WERROR adds; `core` is the one the kernel build compiled.
        let out = Command::new(&kernel_rustc)
            .current_dir(&build)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(&flags)
            .args(["-Dwarnings", "--crate-type=rlib"])
            .arg(format!("--crate-name={}", self.crate_name))
            .arg("--emit=llvm-ir")
            .arg("-o")
            .arg(&ir)
            .args(["-L", "./rust", "--sysroot=/dev/null", "-Zunstable-options"])
            .arg(&root)
            .output()
            .expect("the kernel's rustc runs");
        assert!(
            out.status.success(),
            "{} does not build with the kernel's rustc and flags ({kernel_rustc}):\n{}",
            self.what,
            String::from_utf8_lossy(&out.stderr)
        );
        self.assert_no_panic_path(&ir, "the kernel's flags");
        println!(
            "built with {kernel_rustc} and Kbuild's {} flags: no panic path",
            flags.len()
        );
    }
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

/// Declares the three tests of the [`Check`] `$check`.
macro_rules! kernel_build_tests {
    ($check:expr) => {
        #[test]
        fn builds_with_kernel_lints() {
            $check.builds_with_kernel_lints();
        }

        #[test]
        fn no_panic_path_when_optimised() {
            $check.no_panic_path_when_optimised();
        }

        #[test]
        fn no_panic_path_with_the_kernel_toolchain() {
            $check.no_panic_path_with_the_kernel_toolchain();
        }
    };
}
pub(crate) use kernel_build_tests;
