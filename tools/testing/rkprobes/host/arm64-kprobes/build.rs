// SPDX-License-Identifier: GPL-2.0

//! Builds upstream's own arm64 kprobes decisions and simulators for the host, from the
//! pristine Linux tree.
//!
//! Nothing of upstream's code is copied into this repository: at build time
//! `arch/arm64/kernel/probes/decode-insn.c` and `simulate-insn.c` are compiled as they are
//! (included by `csrc/arm64_c_shim.c` from the tree), with the tree's own
//! `arch/arm64/include/asm/{insn,insn-def,brk-imm,probes}.h` copied into `OUT_DIR`; the few
//! kernel helpers they call are cut by name out of the tree into `OUT_DIR`:
//! `aarch64_insn_extract_system_reg()` (`arch/arm64/lib/insn.c`), the `__check_*()` condition
//! checks and `aarch32_opcode_cond_checks[]` (`arch/arm64/kernel/traps.c`),
//! `pt_regs_read_reg()`, `pt_regs_write_reg()`, `instruction_pointer()` and
//! `instruction_pointer_set()` (`asm/ptrace.h`), the `PSR_*_BIT` flags (`uapi/asm/ptrace.h`),
//! `BRK64_OPCODE_KPROBES*` (`asm/debug-monitors.h`), `sign_extend32()`/`sign_extend64()`
//! (`include/linux/bitops.h`), `lower_32_bits()` (`include/linux/wordpart.h`), and
//! `arch_prepare_ss_slot()`, `arch_prepare_simulate()` and `arch_prepare_kprobe()`
//! (`arch/arm64/kernel/probes/kprobes.c`). The empty headers of `csrc/include` and
//! `csrc/rk_kernel.h` stand for the rest of the kernel. `cfg(rkprobes_c_arm64)` is set when
//! that worked; without the tree the differential says why it cannot run.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../x86-insn/tests/common/c_build.rs"]
mod c_build;
use c_build::{extract, run};

const DEFAULT_LINUX_SRC: &str = "/root/.cache/rkprobes/linux-source-6.12";

/// Headers copied whole into `OUT_DIR/include/asm/`.
const HEADERS: &[&str] = &[
    "arch/arm64/include/asm/insn.h",
    "arch/arm64/include/asm/insn-def.h",
    "arch/arm64/include/asm/brk-imm.h",
    "arch/arm64/include/asm/probes.h",
];

/// What is cut out of which file, by name and in this order, and into which output file.
const EXTRACT: &[(&str, &str, &[&str])] = &[
    (
        "rk_pre.c",
        "include/linux/wordpart.h",
        &["#define lower_32_bits("],
    ),
    (
        "rk_pre.c",
        "include/linux/bitops.h",
        &["sign_extend32(", "sign_extend64("],
    ),
    (
        "rk_pre.c",
        "arch/arm64/include/uapi/asm/ptrace.h",
        &[
            "#define PSR_V_BIT",
            "#define PSR_C_BIT",
            "#define PSR_Z_BIT",
            "#define PSR_N_BIT",
        ],
    ),
    (
        "rk_pre.c",
        "arch/arm64/include/asm/ptrace.h",
        &[
            "pt_regs_read_reg(",
            "pt_regs_write_reg(",
            "instruction_pointer(",
            "instruction_pointer_set(",
        ],
    ),
    (
        "rk_pre.c",
        "arch/arm64/include/asm/debug-monitors.h",
        &[
            "#define BRK64_OPCODE_KPROBES\t",
            "#define BRK64_OPCODE_KPROBES_SS",
        ],
    ),
    (
        "rk_pre.c",
        "arch/arm64/lib/insn.c",
        &["aarch64_insn_extract_system_reg("],
    ),
    (
        "rk_traps.c",
        "arch/arm64/kernel/traps.c",
        &[
            "__check_eq(",
            "__check_ne(",
            "__check_cs(",
            "__check_cc(",
            "__check_mi(",
            "__check_pl(",
            "__check_vs(",
            "__check_vc(",
            "__check_hi(",
            "__check_ls(",
            "__check_ge(",
            "__check_lt(",
            "__check_gt(",
            "__check_le(",
            "__check_al(",
            "aarch32_opcode_cond_checks[",
        ],
    ),
    (
        "rk_kprobes.c",
        "arch/arm64/kernel/probes/kprobes.c",
        &[
            "arch_prepare_ss_slot(",
            "arch_prepare_simulate(",
            "arch_prepare_kprobe(",
        ],
    ),
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rkprobes_c_arm64)");
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
            println!("cargo::rustc-link-lib=static=rkprobes_arm64_c");
            println!("cargo::rustc-cfg=rkprobes_c_arm64");
        }
        Err(why) => println!(
            "cargo::warning=upstream arm64 kprobes C not built ({why}); the differential cannot run"
        ),
    }
}

fn read(path: &Path) -> Result<String, String> {
    println!("cargo::rerun-if-changed={}", path.display());
    std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}; run `scripts/rkprobes setup`", path.display()))
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let probes = src.join("arch/arm64/kernel/probes");
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
    let obj = out.join("arm64_c_shim.o");
    run(Command::new(&cc)
        .args([
            "-O1",
            "-fPIC",
            "-fwrapv",
            "-fno-strict-aliasing",
            "-w",
            "-c",
        ])
        .args(["-include", "csrc/rk_kernel.h"])
        .arg("-I")
        .arg("csrc/include")
        .arg("-I")
        .arg(out.join("include"))
        .arg("-I")
        .arg(out)
        .arg("-I")
        .arg(&probes)
        .arg("csrc/arm64_c_shim.c")
        .arg("-o")
        .arg(&obj))?;
    let lib = out.join("librkprobes_arm64_c.a");
    let _ = std::fs::remove_file(&lib);
    run(Command::new("ar").arg("crs").arg(&lib).arg(&obj))?;
    Ok(())
}
