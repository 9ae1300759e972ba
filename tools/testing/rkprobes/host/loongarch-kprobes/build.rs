// SPDX-License-Identifier: GPL-2.0

//! Builds upstream's own loongarch kprobes decisions and simulators for the host, from the
//! pristine Linux tree.
//!
//! Nothing of upstream's code is copied into this repository: at build time the tree's
//! `arch/loongarch/include/asm/inst.h` (opcodes, `union loongarch_instruction`, the `is_*_ins()`
//! predicates) and `asm/kprobes.h` (`kprobe_opcode_t`, `struct arch_specific_insn`,
//! `MAX_INSN_SIZE`) are copied into `OUT_DIR`, and what the decisions are made of is cut by
//! name out of the tree into `OUT_DIR`: `sign_extend64()` (`include/linux/bitops.h`),
//! `BRK_KPROBE_BP` and `BRK_KPROBE_SSTEPBP` (`uapi/asm/break.h`); `simu_pc()`,
//! `simu_branch()`, `insns_not_supported()`, `insns_need_simulation()` and
//! `arch_simulate_insn()` (`arch/loongarch/kernel/inst.c`); `KPROBE_BP_INSN`,
//! `KPROBE_SSTEPBP_INSN`, `arch_prepare_ss_slot()`, `arch_prepare_simulate()` and
//! `arch_prepare_kprobe()` (`arch/loongarch/kernel/kprobes.c`). The empty headers of
//! `csrc/include` and `csrc/rk_kernel.h` stand for the rest of the kernel;
//! `csrc/loongarch_c_shim.c` includes the pieces and holds the entry points the harness calls.
//! `cfg(rkprobes_c_loongarch)` is set when that worked; without the tree the differential says
//! why it cannot run.

use rkprobes_difftest_common::build::{compile_shim, copy_headers, cut_out, read, Extract};
use rkprobes_difftest_common::c_build::archive;
use std::path::Path;

/// Headers copied whole into `OUT_DIR/include/asm/`.
const HEADERS: &[&str] = &[
    "arch/loongarch/include/asm/inst.h",
    "arch/loongarch/include/asm/kprobes.h",
];

/// What is cut out of which file, by name and in this order, and into which output file.
const EXTRACT: Extract<'static> = &[
    ("rk_pre.c", "include/linux/bitops.h", &["sign_extend64("]),
    (
        "rk_pre.c",
        "arch/loongarch/include/uapi/asm/break.h",
        &["#define BRK_KPROBE_BP", "#define BRK_KPROBE_SSTEPBP"],
    ),
    (
        "rk_inst.c",
        "arch/loongarch/kernel/inst.c",
        &[
            "simu_pc(",
            "simu_branch(",
            "insns_not_supported(",
            "insns_need_simulation(",
            "arch_simulate_insn(",
        ],
    ),
    (
        "rk_kprobes.c",
        "arch/loongarch/kernel/kprobes.c",
        &[
            "#define KPROBE_BP_INSN",
            "#define KPROBE_SSTEPBP_INSN",
            "arch_prepare_ss_slot(",
            "arch_prepare_simulate(",
            "arch_prepare_kprobe(",
        ],
    ),
];

fn main() {
    rkprobes_difftest_common::build::main(
        "rkprobes_c_loongarch",
        "rkprobes_loongarch_c",
        "upstream loongarch kprobes C",
        &["csrc", "build.rs"],
        build,
    );
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let kernel = src.join("arch/loongarch/kernel");
    read(&kernel.join("kprobes.c"))?;
    copy_headers(src, out, HEADERS)?;
    cut_out(src, out, EXTRACT)?;
    let obj = compile_shim(out, &kernel, "csrc/loongarch_c_shim.c", &[])?;
    archive(out, "rkprobes_loongarch_c", &[obj])
}
