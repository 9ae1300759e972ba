// SPDX-License-Identifier: GPL-2.0

//! The kprobes decision sources build as the kernel builds them, use `core` only, and have
//! no panic path.
//!
//! `arch/x86/kernel/kprobes/mod.rs` and the decoder it uses are compiled into a stand-alone
//! `no_std` crate with `rustc` (no `std`, no `alloc` in scope), with the kernel's lints, and
//! again to LLVM IR at the kernel's optimisation levels with every public entry point
//! exercised, which must declare no panic function.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The lint flags of the kernel's `rust_common_flags` that apply to plain rustc, made fatal
/// as `CONFIG_WERROR` does.
const KERNEL_LINTS: &[&str] = &[
    "-Dnon_ascii_idents",
    "-Dunsafe_op_in_unsafe_fn",
    "-Wmissing_docs",
    "-Wrust_2018_idioms",
    "-Wunreachable_pub",
    "-Dwarnings",
];

fn source(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../..")
        .join(rel)
        .canonicalize()
        .expect("the sources exist")
}

fn rustc() -> Command {
    Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
}

fn crate_root(name: &str, body: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let root = dir.join("lib.rs");
    let text = format!(
        "//! Stand-in for the kernel crate that includes the x86 kprobes decisions.\n\
         #![no_std]\n\
         #[path = {:?}]\n\
         pub mod insn_decoder;\n\
         #[path = {:?}]\n\
         pub mod kprobes;\n{body}",
        source("arch/x86/lib/insn_decoder/mod.rs"),
        source("arch/x86/kernel/kprobes/mod.rs"),
    );
    std::fs::write(&root, text).expect("the crate root is written");
    (dir, root)
}

#[test]
fn builds_with_kernel_lints() {
    let (dir, root) = crate_root("kprobes-kernel-lints", "");
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
        "the kprobes decisions do not build with the kernel's lints:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::{Config, KernelText, Regs, Stack, SymbolSpan, Template, MAX_INSN_SIZE};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Kernel text in a caller's buffer, and answers from caller-provided words.
pub struct Text<'a> {
    base: u64,
    text: &'a [u8],
    answers: u64,
}

impl KernelText for Text<'_> {
    fn recover(&self, addr: u64) -> Option<[u8; MAX_INSN_SIZE]> {
        let off = usize::try_from(addr.wrapping_sub(self.base)).ok()?;
        let bytes = self.text.get(off..)?;
        let mut out = [0u8; MAX_INSN_SIZE];
        let mut from = bytes.iter();
        for b in out.iter_mut() {
            *b = from.next().copied().unwrap_or(0);
        }
        Some(out)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan> {
        (self.answers & 1 != 0).then(|| SymbolSpan {
            size: self.text.len() as u64,
            offset: addr.wrapping_sub(self.base),
        })
    }
    fn search_exception_tables(&self, addr: u64) -> bool {
        self.answers & 2 != 0 && addr == self.answers
    }
    fn is_cfi_trap(&self, addr: u64) -> bool {
        addr == self.answers >> 1
    }
    fn kgdb_has_hit_break(&self, addr: u64) -> bool {
        addr == self.answers >> 2
    }
    fn alternatives_text_reserved(&self, start: u64, _end: u64) -> bool {
        start == self.answers >> 3
    }
    fn text_reserved(&self, start: u64, end: u64) -> bool {
        start <= self.answers && self.answers <= end
    }
    fn in_entry_text(&self, addr: u64) -> bool {
        addr == self.answers >> 4
    }
    fn armed_kprobe_at(&self, addr: u64) -> bool {
        addr == self.answers >> 5
    }
}

struct Words<'a>(&'a mut [u64; 8], u64);

impl Stack for Words<'_> {
    fn write(&mut self, addr: u64, val: u64) {
        if let Some(w) = self.0.get_mut((addr.wrapping_sub(self.1) / 8) as usize) {
            *w = val;
        }
    }
    fn read(&mut self, addr: u64) -> u64 {
        self.0.get((addr.wrapping_sub(self.1) / 8) as usize).copied().unwrap_or(0)
    }
}

fn config(bits: u64) -> Config {
    Config {
        preemption: bits & 1 != 0,
        cfi_clang: bits & 2 != 0,
        kgdb: bits & 4 != 0,
        no_jump_tables: bits & 8 != 0,
        ibt: bits & 16 != 0,
        smap: bits & 32 != 0,
    }
}

/// Prepares a kprobe and an optprobe and runs the emulation.
#[no_mangle]
pub extern "C" fn exercise(
    text: &[u8],
    w: &[u64; 8],
    out: &mut [u8; 256],
    tmpl: &[u8],
    stack: &mut [u64; 8],
    regs: &mut Regs,
) -> i64 {
    let k = Text { base: w[0], text, answers: w[1] };
    let cfg = config(w[2]);
    let mut r = 0i64;
    match kprobes::prepare_kprobe(&k, &cfg, w[3], w[4], w[5] & 1 != 0) {
        Ok(p) => {
            r = r.wrapping_add(p.len as i64).wrapping_add(i64::from(p.slot[3]));
            let mut s = Words(stack, w[6]);
            r = r.wrapping_add(i64::from(kprobes::emulate(p.emulation, p.size, regs, &mut s)));
        }
        Err(e) => r = r.wrapping_add(e.into()),
    }
    let t = Template {
        code: tmpl,
        clac: w[6] as usize,
        val: w[7] as usize,
        call: (w[7] >> 32) as usize,
        callback: w[5] ^ w[6],
    };
    match kprobes::prepare_optimized_kprobe(&k, &cfg, w[3], w[4], w[5], &t, out) {
        Ok(o) => r = r.wrapping_add(o.len as i64),
        Err(e) => r = r.wrapping_add(e.into()),
    }
    if let Err(e) = kprobes::check_optimized_kprobe(&k, w[3], w[7] as usize) {
        r = r.wrapping_add(e.into());
    }
    let mut word = [0u8; 4];
    for (d, s) in word.iter_mut().zip(text.iter()) {
        *d = *s;
    }
    if let Some((a, entry)) =
        kprobes::adjust_kprobe_addr(&cfg, w[3], w[4], Some(u32::from_le_bytes(word)))
    {
        r = r.wrapping_add(a as i64).wrapping_add(i64::from(entry));
    }
    r
}
"#;

#[test]
fn no_panic_path_when_optimised() {
    let (dir, root) = crate_root("kprobes-no-panic", EXERCISE);
    // The kernel builds with -O2 or -Os, and with overflow checks unless
    // CONFIG_RUST_OVERFLOW_CHECKS is off.
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
        let text = std::fs::read_to_string(&ir).expect("LLVM IR was written");
        let panics: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("declare") && (l.contains("panic") || l.contains("_fail")))
            .collect();
        assert!(
            panics.is_empty(),
            "built with -Copt-level={opt} -Coverflow-checks={overflow}, the kprobes decisions \
             can reach:\n{}",
            panics.join("\n")
        );
        // The check must see the code it vets.
        assert!(text.contains("exercise") && text.contains("can_optimize"));
    }
}
