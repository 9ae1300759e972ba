// SPDX-License-Identifier: GPL-2.0

//! Builds upstream's own s390 kprobes decisions for the host, from the pristine Linux tree.
//!
//! Nothing of upstream's code is copied into this repository: at build time what the
//! decisions are made of is cut by name out of the tree into `OUT_DIR`: `insn_length()`
//! (`asm/dis.h`), `BREAKPOINT_INSTRUCTION`, the `FIXUP_*` flags and `MAX_INSN_SIZE`
//! (`asm/kprobes.h`), `probe_is_prohibited_opcode()`, `probe_get_fixup_type()` and
//! `probe_is_insn_relative_long()` (`lib/probes.c`), `copy_instruction()`, `can_probe()`,
//! `arch_prepare_kprobe()`, `enable_singlestep()`, `disable_singlestep()`, `push_kprobe()`,
//! `pop_kprobe()`, `kprobe_reenter_check()`, `kprobe_handler()`, `resume_execution()`,
//! `post_kprobe_handler()` and `kprobe_trap_handler()` (`kernel/kprobes.c`), the `KPROBE_*`
//! states (`linux/kprobes.h`), `PER_EVENT_IFETCH` (`asm/ptrace.h`), `MCOUNT_INSN_SIZE`
//! (`asm/ftrace.h`). One adaptation is made to the cut-out text, because the host is
//! little-endian: `copy_instruction()` reads and writes the 32-bit displacement as
//! `*(s32 *)&insn[1]`, two big-endian halfwords on s390; build.rs replaces those two
//! accesses by `RK_S32_GET()`/`RK_S32_SET()` (`csrc/rk_kernel.h`), which join the two
//! halfwords as s390 does. `csrc/rk_kernel.h` and `csrc/s390_c_shim.c` stand for the rest of
//! the kernel. The disassembler's tables (`dis-defs.h`) are made as the kernel build makes
//! them: the tree's own `arch/s390/tools/gen_opcode_table.c`, built for the host, run on the
//! tree's `opcodes.txt`. `cfg(rkprobes_c_s390)` is set when that worked; without the tree the
//! differential says why it cannot run.

use rkprobes_difftest_common::build::{compile_shim, cut_out, read, Extract};
use rkprobes_difftest_common::c_build::{archive, cc, run};
use std::path::Path;
use std::process::{Command, Stdio};

/// Functions and macros cut out by name, in this order, and into which output file.
const EXTRACT: Extract<'static> = &[
    ("rk_pre.c", "arch/s390/include/asm/dis.h", &["insn_length("]),
    (
        "rk_pre.c",
        "arch/s390/include/asm/ptrace.h",
        &["#define PER_EVENT_IFETCH"],
    ),
    (
        "rk_pre.c",
        "arch/s390/include/asm/ftrace.h",
        &["#define MCOUNT_INSN_SIZE"],
    ),
    (
        "rk_pre.c",
        "include/linux/kprobes.h",
        &[
            "#define KPROBE_HIT_ACTIVE",
            "#define KPROBE_HIT_SS",
            "#define KPROBE_REENTER",
            "#define KPROBE_HIT_SSDONE",
        ],
    ),
    (
        "rk_pre.c",
        "arch/s390/include/asm/kprobes.h",
        &[
            "#define BREAKPOINT_INSTRUCTION",
            "#define FIXUP_PSW_NORMAL",
            "#define FIXUP_BRANCH_NOT_TAKEN",
            "#define FIXUP_RETURN_REGISTER",
            "#define FIXUP_NOT_REQUIRED",
            "#define MAX_INSN_SIZE",
        ],
    ),
    ("rk_dis.c", "arch/s390/kernel/dis.c", &["find_insn("]),
    (
        "rk_dis.c",
        "arch/s390/include/asm/dis.h",
        &["is_known_insn("],
    ),
    (
        "rk_probes.c",
        "arch/s390/lib/probes.c",
        &[
            "probe_is_prohibited_opcode(",
            "probe_get_fixup_type(",
            "probe_is_insn_relative_long(",
        ],
    ),
    (
        "rk_kprobes.c",
        "arch/s390/kernel/kprobes.c",
        &[
            "copy_instruction(",
            "can_probe(",
            "arch_prepare_kprobe(",
            "enable_singlestep(",
            "disable_singlestep(",
            "push_kprobe(",
            "pop_kprobe(",
            "kprobe_reenter_check(",
            "kprobe_handler(",
            "resume_execution(",
            "post_kprobe_handler(",
            "kprobe_trap_handler(",
        ],
    ),
];

/// The big-endian accesses of `copy_instruction()` and what replaces them on the host.
const ADAPT: &[(&str, &str)] = &[
    ("disp = *(s32 *)&insn[1];", "disp = RK_S32_GET(&insn[1]);"),
    (
        "*(s32 *)&insn[1] = new_disp;",
        "RK_S32_SET(&insn[1], new_disp);",
    ),
];

fn main() {
    rkprobes_difftest_common::build::main(
        "rkprobes_c_s390",
        "rkprobes_s390_c",
        "upstream s390 kprobes C",
        &["csrc", "build.rs"],
        build,
    );
}

/// The structures of `dis.c` that `find_insn()` reads, cut from `struct NAME {` to the line
/// that closes it.
const STRUCTS: &[&str] = &["struct s390_insn {", "struct s390_opcode_offset {"];

/// Builds the tree's `gen_opcode_table.c` and writes what it makes of `opcodes.txt` into
/// `out/dis-defs.h`.
fn dis_defs(src: &Path, out: &Path) -> Result<(), String> {
    let tools = src.join("arch/s390/tools");
    let opcodes = tools.join("opcodes.txt");
    read(&opcodes)?;
    read(&tools.join("gen_opcode_table.c"))?;
    let gen = out.join("gen_opcode_table");
    run(Command::new(cc())
        .arg("-O1")
        .arg(tools.join("gen_opcode_table.c"))
        .arg("-o")
        .arg(&gen))?;
    let input = std::fs::File::open(&opcodes).map_err(|e| e.to_string())?;
    let defs = run(Command::new(&gen).stdin(Stdio::from(input)))?;
    std::fs::write(out.join("dis-defs.h"), defs).map_err(|e| e.to_string())
}

/// Cuts [`STRUCTS`] out of `dis.c` into `out/rk_dis_structs.c`.
fn dis_structs(src: &Path, out: &Path) -> Result<(), String> {
    let path = src.join("arch/s390/kernel/dis.c");
    let text = read(&path)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut piece = String::from("/* Cut out of the Linux tree by build.rs. */\n");
    for name in STRUCTS {
        let start = lines
            .iter()
            .position(|l| l.starts_with(name))
            .ok_or_else(|| format!("{name} not in {}", path.display()))?;
        let len = lines[start..]
            .iter()
            .position(|l| l.starts_with('}'))
            .ok_or_else(|| format!("{name} does not end in {}", path.display()))?;
        piece += &format!("#line {} \"{}\"\n", start + 1, path.display());
        piece += &lines[start..=start + len].join("\n");
        piece += "\n";
    }
    std::fs::write(out.join("rk_dis_structs.c"), piece).map_err(|e| e.to_string())
}

fn build(src: &Path, out: &Path) -> Result<(), String> {
    let kernel = src.join("arch/s390/kernel");
    read(&kernel.join("kprobes.c"))?;
    dis_defs(src, out)?;
    dis_structs(src, out)?;
    cut_out(src, out, EXTRACT)?;
    let path = out.join("rk_kprobes.c");
    let mut text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    for (from, to) in ADAPT {
        if text.matches(from).count() != 1 {
            return Err(format!("`{from}` is not in copy_instruction() once"));
        }
        text = text.replace(from, to);
    }
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    let obj = compile_shim(out, &kernel, "csrc/s390_c_shim.c", &[])?;
    archive(out, "rkprobes_s390_c", &[obj])
}
