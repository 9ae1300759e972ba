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

use rkprobes_difftest_common::build::{compile_shim, copy_headers, cut_out, probes_dir, Extract};
use rkprobes_difftest_common::c_build::archive;
use std::path::Path;

/// Headers copied whole into `OUT_DIR/include/asm/`.
const HEADERS: &[&str] = &[
    "arch/arm64/include/asm/insn.h",
    "arch/arm64/include/asm/insn-def.h",
    "arch/arm64/include/asm/brk-imm.h",
    "arch/arm64/include/asm/probes.h",
];

/// What is cut out of which file, by name and in this order, and into which output file.
const EXTRACT: Extract<'static> = &[
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
    rkprobes_difftest_common::build::main(
        "rkprobes_c_arm64",
        "rkprobes_arm64_c",
        "upstream arm64 kprobes C",
        &["csrc", "build.rs"],
        build,
    );
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let probes = probes_dir(src, "arm64")?;
    copy_headers(src, out, HEADERS)?;
    cut_out(src, out, EXTRACT)?;
    let obj = compile_shim(out, &probes, "csrc/arm64_c_shim.c", &[])?;
    archive(out, "rkprobes_arm64_c", &[obj])
}
