// SPDX-License-Identifier: GPL-2.0

//! Builds upstream's own riscv kprobes decisions and simulators for the host, from the
//! pristine Linux tree.
//!
//! Nothing of upstream's code is copied into this repository: at build time
//! `arch/riscv/kernel/probes/decode-insn.c` and `simulate-insn.c` are compiled as they are
//! (included by `csrc/riscv_c_shim.c` from the tree), with the tree's own
//! `arch/riscv/include/asm/{insn,probes}.h` copied into `OUT_DIR`; the few kernel helpers they
//! call are cut by name out of the tree into `OUT_DIR`: `sign_extend32()`/`sign_extend64()`
//! (`include/linux/bitops.h`), `GET_INSN_LENGTH()`, `__INSN_LENGTH_*` and `__BUG_INSN_*`
//! (`arch/riscv/include/asm/bug.h`), `instruction_pointer()` and `instruction_pointer_set()`
//! (`asm/ptrace.h`), and `arch_prepare_ss_slot()`, `arch_prepare_simulate()`,
//! `arch_check_kprobe()` and `arch_prepare_kprobe()` (`arch/riscv/kernel/probes/kprobes.c`).
//! `decode-insn.c` is built a second time without `CONFIG_RISCV_ISA_C` (`csrc/riscv_c_noc.c`).
//! The empty headers of `csrc/include` and `csrc/rk_kernel.h` stand for the rest of the
//! kernel. `cfg(rkprobes_c_riscv)` is set when that worked; without the tree the differential
//! says why it cannot run.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../x86-insn/tests/common/c_build.rs"]
mod c_build;
use c_build::{extract, run};

const DEFAULT_LINUX_SRC: &str = "/root/.cache/rkprobes/linux-source-6.12";

/// Headers copied whole into `OUT_DIR/include/asm/`.
const HEADERS: &[&str] = &[
    "arch/riscv/include/asm/insn.h",
    "arch/riscv/include/asm/probes.h",
];

/// What is cut out of which file, by name and in this order, and into which output file.
const EXTRACT: &[(&str, &str, &[&str])] = &[
    (
        "rk_pre.c",
        "include/linux/bitops.h",
        &["sign_extend32(", "sign_extend64("],
    ),
    (
        "rk_pre.c",
        "arch/riscv/include/asm/bug.h",
        &[
            "#define __INSN_LENGTH_MASK",
            "#define __INSN_LENGTH_32",
            "#define __BUG_INSN_32",
            "#define __BUG_INSN_16",
            "#define GET_INSN_LENGTH(",
        ],
    ),
    (
        "rk_pre.c",
        "arch/riscv/include/asm/ptrace.h",
        &["instruction_pointer(", "instruction_pointer_set("],
    ),
    (
        "rk_kprobes.c",
        "arch/riscv/kernel/probes/kprobes.c",
        &[
            "arch_prepare_ss_slot(",
            "arch_prepare_simulate(",
            "arch_check_kprobe(",
            "arch_prepare_kprobe(",
        ],
    ),
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rkprobes_c_riscv)");
    println!("cargo::rerun-if-env-changed=RKPROBES_LINUX_SRC");
    println!("cargo::rerun-if-env-changed=CC");
    println!("cargo::rerun-if-changed=csrc");
    println!("cargo::rerun-if-changed=build.rs");

    let src = std::env::var_os("RKPROBES_LINUX_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LINUX_SRC));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build(&src, &out) {
        Ok(()) => {
            println!("cargo::rustc-link-search=native={}", out.display());
            println!("cargo::rustc-link-lib=static=rkprobes_riscv_c");
            println!("cargo::rustc-cfg=rkprobes_c_riscv");
        }
        Err(why) => println!(
            "cargo::warning=upstream riscv kprobes C not built ({why}); the differential cannot run"
        ),
    }
}

fn read(path: &Path) -> Result<String, String> {
    println!("cargo::rerun-if-changed={}", path.display());
    std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}; run `scripts/rkprobes setup`", path.display()))
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let probes = src.join("arch/riscv/kernel/probes");
    for f in [
        "decode-insn.c",
        "decode-insn.h",
        "simulate-insn.c",
        "simulate-insn.h",
    ] {
        read(&probes.join(f))?;
    }
    let inc = out.join("include/asm");
    std::fs::create_dir_all(&inc).map_err(|e| e.to_string())?;
    for h in HEADERS {
        let text = read(&src.join(h))?;
        let name = Path::new(h).file_name().unwrap_or_default();
        std::fs::write(inc.join(name), text).map_err(|e| e.to_string())?;
    }

    let mut files: Vec<(&str, String)> = Vec::new();
    for (dest, file, names) in EXTRACT {
        let path = src.join(file);
        let text = read(&path)?;
        let idx = match files.iter().position(|(d, _)| d == dest) {
            Some(i) => i,
            None => {
                files.push((
                    dest,
                    String::from("/* Cut out of the Linux tree by build.rs. */\n"),
                ));
                files.len() - 1
            }
        };
        for name in *names {
            let (line, piece) = extract(&text, name)
                .ok_or_else(|| format!("{name} not found in {}", path.display()))?;
            files[idx].1.push_str(&format!(
                "#line {} \"{}\"\n{piece}\n",
                line + 1,
                path.display()
            ));
        }
    }
    for (dest, text) in &files {
        std::fs::write(out.join(dest), text).map_err(|e| e.to_string())?;
    }

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut objs = Vec::new();
    for (file, extra) in [
        ("csrc/riscv_c_shim.c", &[][..]),
        ("csrc/riscv_c_noc.c", &["-DRK_NO_ISA_C"][..]),
    ] {
        let name = Path::new(file).with_extension("o");
        let obj = out.join(name.file_name().unwrap_or_default());
        run(Command::new(&cc)
            .args([
                "-O1",
                "-fPIC",
                "-fwrapv",
                "-fno-strict-aliasing",
                "-w",
                "-c",
            ])
            .args(extra)
            .args(["-include", "csrc/rk_kernel.h"])
            .arg("-I")
            .arg("csrc/include")
            .arg("-I")
            .arg(out.join("include"))
            .arg("-I")
            .arg(out)
            .arg("-I")
            .arg(&probes)
            .arg(file)
            .arg("-o")
            .arg(&obj))?;
        objs.push(obj);
    }
    let lib = out.join("librkprobes_riscv_c.a");
    let _ = std::fs::remove_file(&lib);
    run(Command::new("ar").arg("crs").arg(&lib).args(&objs))?;
    Ok(())
}
