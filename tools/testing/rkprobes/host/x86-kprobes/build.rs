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

use rkprobes_difftest_common::build::{cut_out, Extract};
use rkprobes_difftest_common::c_build::{archive, compile_with_x86_decoder, inat_tables};
use std::path::Path;

/// What is cut out of which file: functions, arrays and macros, by name, in this order, into
/// `rk_{its stem}.c`.
const EXTRACT: Extract<'static> = &[
    (
        "rk_ibt.c",
        "arch/x86/include/asm/ibt.h",
        &["gen_endbr(", "gen_endbr_poison(", "is_endbr("],
    ),
    (
        "rk_text-patching.c",
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
        "rk_core.c",
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
        "rk_opt.c",
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
    rkprobes_difftest_common::build::main(
        "rkprobes_c_kprobes",
        "rkprobes_kprobes_c",
        "upstream x86 kprobes C",
        &["csrc/kprobes_c_shim.c", "csrc/kprobes_env.h", "build.rs"],
        build,
    );
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    cut_out(src, out, EXTRACT)?;

    inat_tables(src, out)?;

    let obj = out.join("kprobes_c_shim.o");
    compile_with_x86_decoder(
        src,
        out,
        &["-O1", "-fPIC", "-fno-strict-aliasing", "-w", "-c"],
        "csrc/kprobes_c_shim.c",
        &obj,
    )?;
    archive(out, "rkprobes_kprobes_c", &[obj])
}
