// SPDX-License-Identifier: GPL-2.0

//! Builds upstream's own ppc64 kprobes decisions for the host, from the pristine Linux tree.
//!
//! Nothing of upstream's code is copied into this repository: at build time what the
//! decisions are made of is cut by name out of the tree into `OUT_DIR`: the opcode numbers and
//! instruction encoders of `asm/ppc-opcode.h`, `get_op()`/`get_xop()` (`asm/disassemble.h`),
//! the `ppc_inst_t` helpers of `asm/inst.h`, the trap predicates, `BREAKPOINT_INSTRUCTION`
//! and `can_single_step()` (`asm/probes.h`), the branch helpers and `ppc_function_entry()`
//! (`asm/code-patching.h`), `patch_branch()` and `is_conditional_branch()`
//! (`lib/code-patching.c`), `arch_prepare_kprobe()`, `try_to_emulate()`,
//! `arch_kprobe_on_func_entry()`, `arch_adjust_kprobe_addr()`, the control-block helpers,
//! `kprobe_handler()`, `kprobe_post_handler()` and `kprobe_fault_handler()`
//! (`kernel/kprobes.c`), `enable_single_step()` (`asm/probes.h`), `regs_set_return_ip()` and
//! `regs_set_return_msr()` (`asm/ptrace.h`), the `KPROBE_*` states (`linux/kprobes.h`), the `TMPL_*_IDX` macros, `can_optimize()`,
//! the immediate-load patchers, `arch_prepare_optimized_kprobe()` and
//! `arch_within_optimized_kprobe()` (`kernel/optprobes.c`). `csrc/rk_kernel.h` stands for
//! the rest of the kernel; `csrc/ppc64_c_shim.c` includes the pieces and holds the entry
//! points the harness calls. `cfg(rkprobes_c_ppc64)` is set when that worked; without the
//! tree the differential says why it cannot run.

use rkprobes_difftest_common::build::{compile_shim, cut_out, read, Extract};
use rkprobes_difftest_common::c_build::archive;
use std::path::Path;

/// Macros cut out by name (`#define NAME`, with continuation lines), from which header.
const MACROS: &[(&str, &[&str])] = &[
    (
        "arch/powerpc/include/asm/ppc-opcode.h",
        &[
            "_R2",
            "_R12",
            "OP_PREFIX",
            "OP_TRAP_64",
            "OP_TRAP",
            "OP_SC",
            "OP_19",
            "OP_31",
            "OP_19_XOP_RFID",
            "OP_19_XOP_RFMCI",
            "OP_19_XOP_RFDI",
            "OP_19_XOP_RFI",
            "OP_19_XOP_RFCI",
            "OP_19_XOP_RFSCV",
            "OP_19_XOP_HRFID",
            "OP_19_XOP_URFID",
            "OP_19_XOP_STOP",
            "OP_19_XOP_DOZE",
            "OP_19_XOP_NAP",
            "OP_19_XOP_SLEEP",
            "OP_19_XOP_RVWINKLE",
            "OP_31_XOP_TRAP",
            "OP_31_XOP_TRAP_64",
            "OP_31_XOP_MTMSR",
            "OP_31_XOP_MTMSRD",
            "IMM_L",
            "___PPC_RA",
            "___PPC_RB",
            "___PPC_RC",
            "___PPC_RS",
            "___PPC_RT",
            "__PPC_WS",
            "__PPC_SH",
            "__PPC_SH64",
            "__PPC_MB",
            "__PPC_MB64",
            "__PPC_ME64",
            "PPC_LO",
            "PPC_HI",
            "PPC_HIGHER",
            "PPC_HIGHEST",
            "PPC_RAW_ADDI",
            "PPC_RAW_ADDIS",
            "PPC_RAW_LIS",
            "PPC_RAW_ORI",
            "PPC_RAW_ORIS",
            "PPC_RAW_RLDICR",
            "PPC_RAW_SLDI",
            "PPC_RAW_TW",
            "PPC_RAW_TRAP",
        ],
    ),
    (
        "arch/powerpc/include/asm/probes.h",
        &[
            "BREAKPOINT_INSTRUCTION",
            "IS_TW",
            "IS_TD",
            "IS_TDI",
            "IS_TWI",
            "is_trap",
        ],
    ),
    (
        "arch/powerpc/include/asm/inst.h",
        &["ppc_inst", "ppc_inst_prefix"],
    ),
    (
        "arch/powerpc/include/asm/code-patching.h",
        &[
            "BRANCH_SET_LINK",
            "BRANCH_ABSOLUTE",
            "OP_RT_RA_MASK",
            "LIS_R2",
            "ADDIS_R2_R12",
            "ADDI_R2_R2",
        ],
    ),
    ("arch/powerpc/include/asm/kprobes.h", &["RELATIVEJUMP_SIZE"]),
    ("arch/powerpc/include/asm/ftrace.h", &["MCOUNT_INSN_SIZE"]),
    (
        "include/linux/kprobes.h",
        &[
            "KPROBE_HIT_ACTIVE",
            "KPROBE_HIT_SS",
            "KPROBE_REENTER",
            "KPROBE_HIT_SSDONE",
        ],
    ),
    (
        "arch/powerpc/kernel/optprobes.c",
        &[
            "TMPL_CALL_HDLR_IDX",
            "TMPL_EMULATE_IDX",
            "TMPL_RET_IDX",
            "TMPL_OP_IDX",
            "TMPL_INSN_IDX",
            "TMPL_END_IDX",
        ],
    ),
];

/// Functions cut out by name, in this order, and into which output file.
const EXTRACT: Extract<'static> = &[
    (
        "rk_pre.c",
        "arch/powerpc/include/asm/disassemble.h",
        &["get_op(", "get_xop("],
    ),
    (
        "rk_pre.c",
        "arch/powerpc/include/asm/inst.h",
        &[
            "ppc_inst_val(",
            "ppc_inst_primary_opcode(",
            "ppc_inst_suffix(",
            "ppc_inst_read(",
            "ppc_inst_prefixed(",
            "ppc_inst_len(",
            "ppc_inst_as_ulong(",
            "ppc_inst_write(",
        ],
    ),
    (
        "rk_pre.c",
        "arch/powerpc/include/asm/ptrace.h",
        &["regs_set_return_ip(", "regs_set_return_msr("],
    ),
    (
        "rk_pre.c",
        "arch/powerpc/include/asm/probes.h",
        &["can_single_step(", "enable_single_step("],
    ),
    (
        "rk_pre.c",
        "arch/powerpc/include/asm/code-patching.h",
        &[
            "is_offset_in_branch_range(",
            "create_branch(",
            "ppc_function_entry(",
        ],
    ),
    (
        "rk_pre.c",
        "arch/powerpc/lib/code-patching.c",
        &["patch_branch(", "is_conditional_branch("],
    ),
    (
        "rk_kprobes.c",
        "arch/powerpc/kernel/kprobes.c",
        &[
            "arch_kprobe_on_func_entry(",
            "arch_adjust_kprobe_addr(",
            "arch_prepare_kprobe(",
            "prepare_singlestep(",
            "save_previous_kprobe(",
            "restore_previous_kprobe(",
            "set_current_kprobe(",
            "try_to_emulate(",
            "kprobe_handler(",
            "kprobe_post_handler(",
            "kprobe_fault_handler(",
        ],
    ),
    (
        "rk_optprobes.c",
        "arch/powerpc/kernel/optprobes.c",
        &[
            "can_optimize(",
            "patch_imm32_load_insns(",
            "patch_imm64_load_insns(",
            "patch_imm_load_insns(",
            "arch_prepare_optimized_kprobe(",
            "arch_within_optimized_kprobe(",
        ],
    ),
];

fn main() {
    rkprobes_difftest_common::build::main(
        "rkprobes_c_ppc64",
        "rkprobes_ppc64_c",
        "upstream ppc64 kprobes C",
        &["csrc", "build.rs"],
        build,
    );
}

/// The `#define NAME` line of `text` (the first whose macro is exactly `name`), with its
/// continuation lines.
fn define(text: &str, name: &str) -> Option<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| {
        let Some(rest) = l.strip_prefix("#define") else {
            return false;
        };
        let rest = rest.trim_start();
        rest.strip_prefix(name)
            .is_some_and(|after| after.starts_with(['(', ' ', '\t']) || after.is_empty())
            && rest.len() < l.len() - "#define".len()
    })?;
    let mut end = start;
    while lines.get(end)?.ends_with('\\') {
        end += 1;
    }
    Some((start, lines[start..=end].join("\n")))
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let kernel = src.join("arch/powerpc/kernel");
    let mut macros = String::from("/* Cut out of the Linux tree by build.rs. */\n");
    for (file, names) in MACROS {
        let path = src.join(file);
        let text = read(&path)?;
        for name in *names {
            let (line, piece) = define(&text, name)
                .ok_or_else(|| format!("#define {name} not found in {}", path.display()))?;
            macros.push_str(&format!(
                "#line {} \"{}\"\n{piece}\n",
                line + 1,
                path.display()
            ));
        }
    }
    std::fs::write(out.join("rk_macros.h"), macros).map_err(|e| e.to_string())?;
    cut_out(src, out, EXTRACT)?;
    let obj = compile_shim(out, &kernel, "csrc/ppc64_c_shim.c", &[])?;
    archive(out, "rkprobes_ppc64_c", &[obj])
}
