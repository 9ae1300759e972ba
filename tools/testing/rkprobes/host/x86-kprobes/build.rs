// SPDX-License-Identifier: GPL-2.0

//! Builds upstream's own x86 kprobes decisions for the host, from the pristine Linux tree.
//!
//! Nothing of upstream's kprobes code is copied into this repository: at build time the
//! functions that decide (`recover_probed_instruction()`, `can_probe()`, `can_boost()`,
//! `__copy_instruction()`,
//! `prepare_singlestep()`, `prepare_emulation()`, the `kprobe_emulate_*()` emulators,
//! `arch_prepare_kprobe()`, `can_optimize()`, `arch_prepare_optimized_kprobe()` and what they
//! call) are cut by name out of `arch/x86/kernel/kprobes/{core,opt}.c`,
//! `arch/x86/include/asm/text-patching.h` and `asm/ibt.h` of `$RKPROBES_LINUX_SRC`, written to
//! `OUT_DIR`, and compiled with `csrc/kprobes_c_shim.c`, whose stubs stand for the kernel
//! state those functions read, and with the tree's C instruction decoder (as the x86-insn
//! crate builds it). `cfg(rkprobes_c_kprobes)` is set when that worked; without the tree the
//! differential says why it cannot run.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../x86-insn/tests/common/c_build.rs"]
mod c_build;
use c_build::{extract, run};

const DEFAULT_LINUX_SRC: &str = "/root/.cache/rkprobes/linux-source-6.12";

/// What is cut out of which file: functions, arrays and macros, by name, in this order.
const EXTRACT: &[(&str, &[&str])] = &[
    (
        "arch/x86/include/asm/ibt.h",
        &["gen_endbr(", "gen_endbr_poison(", "is_endbr("],
    ),
    (
        "arch/x86/include/asm/text-patching.h",
        &[
            "int3_emulate_jmp(",
            "int3_emulate_push(",
            "int3_emulate_pop(",
            "int3_emulate_call(",
            "int3_emulate_ret(",
            "int3_emulate_jcc(",
        ],
    ),
    (
        "arch/x86/kernel/kprobes/core.c",
        &[
            "#define W(",
            "twobyte_is_boostable[",
            "#undef W",
            "__synthesize_relative_insn(",
            "synthesize_reljump(",
            "synthesize_relcall(",
            "can_boost(",
            "is_exception_insn(",
            "__recover_probed_insn(",
            "recover_probed_instruction(",
            "can_probe(",
            "arch_adjust_kprobe_addr(",
            "__copy_instruction(",
            "prepare_singlestep(",
            "kprobe_emulate_ifmodifiers(",
            "kprobe_emulate_ret(",
            "kprobe_emulate_call(",
            "kprobe_emulate_jmp(",
            "kprobe_emulate_jcc(",
            "kprobe_emulate_loop(",
            "addrmode_regoffs[",
            "kprobe_emulate_call_indirect(",
            "kprobe_emulate_jmp_indirect(",
            "prepare_emulation(",
            "arch_copy_kprobe(",
            "arch_prepare_kprobe(",
        ],
    ),
    (
        "arch/x86/kernel/kprobes/opt.c",
        &[
            "__recover_optprobed_insn(",
            "synthesize_clac(",
            "synthesize_set_arg1(",
            "#define TMPL_CLAC_IDX",
            "#define TMPL_MOVE_IDX",
            "#define TMPL_CALL_IDX",
            "#define TMPL_END_IDX",
            "copy_optimized_instructions(",
            "insn_is_indirect_jump(",
            "insn_jump_into_range(",
            "can_optimize(",
            "arch_check_optimized_kprobe(",
            "__arch_remove_optimized_kprobe(",
            "arch_prepare_optimized_kprobe(",
        ],
    ),
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rkprobes_c_kprobes)");
    println!("cargo::rerun-if-env-changed=RKPROBES_LINUX_SRC");
    println!("cargo::rerun-if-env-changed=CC");
    println!("cargo::rerun-if-changed=csrc/kprobes_c_shim.c");
    println!("cargo::rerun-if-changed=csrc/kprobes_env.h");
    println!("cargo::rerun-if-changed=build.rs");

    let src = std::env::var_os("RKPROBES_LINUX_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LINUX_SRC));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build(&src, &out) {
        Ok(()) => {
            println!("cargo::rustc-link-search=native={}", out.display());
            println!("cargo::rustc-link-lib=static=rkprobes_kprobes_c");
            println!("cargo::rustc-cfg=rkprobes_c_kprobes");
        }
        Err(why) => println!(
            "cargo::warning=upstream x86 kprobes C not built ({why}); the differential cannot run"
        ),
    }
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    for (file, names) in EXTRACT {
        let path = src.join(file);
        println!("cargo::rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e}; run `scripts/rkprobes setup`", path.display()))?;
        let mut extracted = String::from("/* Cut out of the Linux tree by build.rs. */\n");
        for name in *names {
            let (line, piece) = extract(&text, name)
                .ok_or_else(|| format!("{name} not found in {}", path.display()))?;
            extracted.push_str(&format!(
                "#line {} \"{}\"\n{piece}\n",
                line + 1,
                path.display()
            ));
        }
        let stem = Path::new(file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        std::fs::write(out.join(format!("rk_{stem}.c")), extracted).map_err(|e| e.to_string())?;
    }

    let map = src.join("arch/x86/lib/x86-opcode-map.txt");
    let awk_script = src.join("arch/x86/tools/gen-insn-attr-x86.awk");
    let tables = run(Command::new("awk").arg("-f").arg(&awk_script).arg(&map))?;
    std::fs::write(out.join("inat-tables.c"), tables).map_err(|e| e.to_string())?;

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let obj = out.join("kprobes_c_shim.o");
    run(Command::new(&cc)
        .args(["-O1", "-fPIC", "-fno-strict-aliasing", "-w", "-c"])
        .arg("-I")
        .arg(out)
        .arg("-I")
        .arg(src.join("tools/arch/x86/lib"))
        .arg("-I")
        .arg(src.join("tools/arch/x86/include"))
        .arg("-I")
        .arg(src.join("tools/include"))
        .arg("csrc/kprobes_c_shim.c")
        .arg("-o")
        .arg(&obj))?;
    let lib = out.join("librkprobes_kprobes_c.a");
    let _ = std::fs::remove_file(&lib);
    run(Command::new("ar").arg("crs").arg(&lib).arg(&obj))?;
    Ok(())
}
