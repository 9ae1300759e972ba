// SPDX-License-Identifier: GPL-2.0

//! loongarch64 kprobes decisions and simulators, as pure functions.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate attributes and
//! no use of the `kernel` crate, so the same files build inside the kernel's kprobes crate and
//! in the host test crate (`tools/testing/rkprobes/host/loongarch-kprobes`). No allocation and
//! no panic path on any input; arithmetic on addresses wraps as the C's `unsigned long` and
//! `long` arithmetic does in the kernel (which builds with `-fno-strict-overflow`), and the
//! immediates are widened exactly as the C's `unsigned int` fields are (see `simulate.rs`).
//!
//! Design: upstream's `arch/loongarch/kernel/kprobes.c` and the instruction helpers of
//! `arch/loongarch/kernel/inst.c` read kernel state directly (the probed text, `struct
//! pt_regs`) and report what they refuse with `pr_notice()`/`pr_warn()`/`pr_info()`. Here that
//! state is explicit input: the [`KernelText`] trait answers what upstream reads of the text,
//! the [`Regs`] trait is the trap frame (`regs[]` and `csr_era`), and what upstream would log
//! is returned ([`Unsupported`], [`SimuError`]) for the glue to print. Every public item
//! names its upstream counterpart so the two can be read side by side: `insn.rs` holds the
//! opcodes, instruction formats (`union loongarch_instruction`) and `is_*_ins()` predicates
//! of `arch/loongarch/include/asm/inst.h` that the decisions use, `decode.rs` the decisions
//! `insns_not_supported()` and `insns_need_simulation()` of `inst.c` and the preparation of
//! `arch_prepare_kprobe()` (`kprobes.c`, with `arch_prepare_ss_slot()` and
//! `arch_prepare_simulate()`), `simulate.rs` the simulators `simu_pc()`, `simu_branch()` and
//! `arch_simulate_insn()` of `inst.c`.
//!
//! Version: Linux 6.12 (Debian's 6.12.117), followed exactly, including what 6.12 does that
//! the LoongArch manual would not: `simu_pc()` shifts the 20-bit immediate of `pcaddu18i` in
//! an `unsigned int`, so only its low 14 bits reach the result, zero-extended (see
//! [`simu_pc`]); `simu_pc()` and `simu_branch()` write `regs[0]` like any other register.
//!
//! Not here, as it is glue: the breakpoint and single-step handlers, the slot allocation
//! (`get_insn_slot()`, `-ENOMEM`), writing the breakpoint into the text, and the restore of
//! `csr_era` from `ainsn.restore` in `post_kprobe_handler()`.

mod decode;
pub mod insn;
mod simulate;

pub use decode::{
    arch_prepare_ss_slot, decode_insn, insns_need_simulation, insns_not_supported, prepare_kprobe,
    Prepared, ProbeInsn, Simulator, Unsupported,
};
pub use simulate::{sign_extend64, simu_branch, simu_pc, simulate_insn, PtRegs, Regs, SimuError};

/// The size of a LoongArch instruction (`LOONGARCH_INSN_SIZE`, also
/// `sizeof(kprobe_opcode_t)`).
pub const LOONGARCH_INSN_SIZE: u64 = 4;

/// The words of a single-step slot (`MAX_INSN_SIZE`): the probed instruction and
/// [`KPROBE_SSTEPBP_INSN`].
pub const MAX_INSN_SIZE: usize = 2;

/// The break code of a kprobe (`BRK_KPROBE_BP`, `uapi/asm/break.h`).
pub const BRK_KPROBE_BP: u32 = 10;
/// The break code that ends a single-step slot (`BRK_KPROBE_SSTEPBP`).
pub const BRK_KPROBE_SSTEPBP: u32 = 11;

/// `__emit_break(imm)`: the `break imm` instruction word.
pub const fn emit_break(imm: u32) -> u32 {
    imm | (insn::BREAK_OP << 15)
}

/// The breakpoint written over a probed instruction (`KPROBE_BP_INSN`).
pub const KPROBE_BP_INSN: u32 = emit_break(BRK_KPROBE_BP);
/// The breakpoint after the instruction in its slot (`KPROBE_SSTEPBP_INSN`).
pub const KPROBE_SSTEPBP_INSN: u32 = emit_break(BRK_KPROBE_SSTEPBP);

/// Kernel errnos the decisions return, negated as the C functions return them.
pub mod errno {
    /// `-EINVAL`: an instruction `insns_not_supported()` refuses.
    pub const EINVAL: i32 = -22;
    /// `-EILSEQ`: a probe at an address that is not 4-byte aligned.
    pub const EILSEQ: i32 = -84;
    /// `-ENOMEM`: no single-step slot (returned by the glue, which allocates the slot).
    pub const ENOMEM: i32 = -12;
}

/// The kernel state the decisions read: the text.
///
/// The kernel glue answers this from the running kernel; the host differential from a
/// vmlinux image.
pub trait KernelText {
    /// The instruction word at `addr` (4-byte aligned), in CPU order: `*p->addr` for a
    /// `kprobe_opcode_t *addr`. `None` when `addr` is not readable text (upstream dereferences
    /// the pointer; the core only asks about kernel text).
    fn read_insn(&self, addr: u64) -> Option<u32>;
}
