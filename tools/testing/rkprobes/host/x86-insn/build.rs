// SPDX-License-Identifier: GPL-2.0

//! Builds the kernel's C x86 decoder for the host when the Linux tree is present.
//!
//! The C decoder (`arch/x86/lib/insn.c` and `inat.c`, with `inat-tables.c` made by the tree's
//! own `gen-insn-attr-x86.awk`) is compiled like `arch/x86/tools/insn_sanity` into a static
//! library, and `cfg(rkprobes_c_decoder)` is set for the differential test and `insn-bench`.
//! Without the tree, an awk or a C compiler, nothing is built and the cfg stays unset: plain
//! `cargo test` and `cargo clippy` keep working, and the C-dependent parts say why they skip.

use std::path::{Path, PathBuf};

// `extract` is not used here: it serves the kprobes crates (through rkprobes-difftest-common).
#[allow(dead_code)]
#[path = "../difftest-common/src/c_build.rs"]
mod c_build;
use c_build::{archive, compile_with_x86_decoder, inat_tables};

const DEFAULT_LINUX_SRC: &str = "/root/.cache/rkprobes/linux-source-6.12";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rkprobes_c_decoder)");
    println!("cargo::rerun-if-env-changed=RKPROBES_LINUX_SRC");
    println!("cargo::rerun-if-env-changed=CC");
    println!("cargo::rerun-if-changed=csrc/insn_c_shim.c");
    println!("cargo::rerun-if-changed=build.rs");

    let src = std::env::var_os("RKPROBES_LINUX_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LINUX_SRC));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build_c_decoder(&src, &out) {
        Ok(()) => {
            println!("cargo::rustc-link-search=native={}", out.display());
            println!("cargo::rustc-cfg=rkprobes_c_decoder");
        }
        Err(why) => println!("cargo::warning=C x86 decoder not built ({why}); insn-bench and the C differential test will skip"),
    }
}

fn build_c_decoder(src: &Path, out: &Path) -> Result<(), String> {
    let insn_c = src.join("tools/arch/x86/lib/insn.c");
    let map = src.join("arch/x86/lib/x86-opcode-map.txt");
    let awk_script = src.join("arch/x86/tools/gen-insn-attr-x86.awk");
    for f in [&insn_c, &map, &awk_script] {
        if !f.exists() {
            return Err(format!(
                "{} missing; run `scripts/rkprobes setup`",
                f.display()
            ));
        }
        println!("cargo::rerun-if-changed={}", f.display());
    }

    inat_tables(src, out)?;

    let obj = out.join("insn_c_shim.o");
    compile_with_x86_decoder(
        src,
        out,
        &["-O2", "-fPIC", "-Wall", "-c"],
        "csrc/insn_c_shim.c",
        &obj,
    )?;
    archive(out, "rkprobes_insn_c", &[obj])
}
