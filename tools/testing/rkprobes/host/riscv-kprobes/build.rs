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

use rkprobes_difftest_common::build::{compile_shim, copy_headers, cut_out, probes_dir, Extract};
use rkprobes_difftest_common::c_build::archive;
use std::path::Path;

/// Headers copied whole into `OUT_DIR/include/asm/`.
const HEADERS: &[&str] = &[
    "arch/riscv/include/asm/insn.h",
    "arch/riscv/include/asm/probes.h",
];

/// What is cut out of which file, by name and in this order, and into which output file.
const EXTRACT: Extract<'static> = &[
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
    rkprobes_difftest_common::build::main(
        "rkprobes_c_riscv",
        "rkprobes_riscv_c",
        "upstream riscv kprobes C",
        &["csrc", "build.rs"],
        build,
    );
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let probes = probes_dir(src, "riscv")?;
    copy_headers(src, out, HEADERS)?;
    cut_out(src, out, EXTRACT)?;
    let objs = [
        compile_shim(out, &probes, "csrc/riscv_c_shim.c", &[])?,
        compile_shim(out, &probes, "csrc/riscv_c_noc.c", &["-DRK_NO_ISA_C"])?,
    ];
    archive(out, "rkprobes_riscv_c", &objs)
}
