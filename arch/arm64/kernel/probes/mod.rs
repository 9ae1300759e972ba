// SPDX-License-Identifier: GPL-2.0

//! arm64 kprobes decisions and simulators, as pure functions.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate attributes and
//! no use of the `kernel` crate, so the same files build inside the kernel's kprobes crate and
//! in the host test crate (`tools/testing/rkprobes/host/arm64-kprobes`). No allocation and no
//! panic path on any input; arithmetic on addresses wraps as the C's `unsigned long` and
//! `long` arithmetic does in the kernel (which builds with `-fno-strict-overflow`).
//!
//! Design: upstream's `arch/arm64/kernel/probes/decode-insn.c` and `simulate-insn.c` read
//! kernel state directly (the probed text, kallsyms, the exception tables, `struct pt_regs`,
//! the literal pool). Here that state is explicit input: the [`KernelText`] trait answers what
//! upstream asks of the text, kallsyms and the exception tables; the [`Regs`] trait is the trap
//! frame and [`Memory`] the (fallible) literal read. Every public item names its upstream
//! counterpart so the two can be read side by side: `insn.rs` holds the `aarch64_insn_*`
//! encoding predicates of `arch/arm64/include/asm/insn.h` and `arch/arm64/lib/insn.c` that
//! the decisions use, `decode.rs` the decisions of `decode-insn.c` and the preparation of
//! `arch_prepare_kprobe()` (`kprobes.c`), `simulate.rs` the simulators of `simulate-insn.c`
//! and the condition checks of `arch/arm64/kernel/traps.c`.
//!
//! Version: Linux 6.12 (Debian's 6.12.117, which carries the stable backports "Fix
//! simulate_ldr*_literal()", "Remove broken LDR (literal) uprobe support", "Fix uprobes for
//! big-endian kernels" and "Disable kprobes/uprobes on MOPS instructions"), followed exactly.

mod decode;
pub mod insn;
mod simulate;

pub use decode::{
    is_probed_address_atomic, is_steppable, kprobe_decode_insn, prepare_kprobe, probe_decode_insn,
    Prepared, ProbeInsn, Simulator, MAX_ATOMIC_CONTEXT_SIZE,
};
pub use simulate::{
    condition_holds, simulate, simulate_adr_adrp, simulate_b_bl, simulate_b_cond,
    simulate_br_blr_ret, simulate_cbz_cbnz, simulate_ldr_literal, simulate_ldrsw_literal,
    simulate_tbz_tbnz, Fault, Memory, PtRegs, Regs, PSR_C_BIT, PSR_N_BIT, PSR_V_BIT, PSR_Z_BIT,
};

/// The size of an A64 instruction (`AARCH64_INSN_SIZE`, also `sizeof(kprobe_opcode_t)`).
pub const AARCH64_INSN_SIZE: u64 = 4;

/// `BRK #imm16` with a zero immediate (`AARCH64_BREAK_MON`).
pub const AARCH64_BREAK_MON: u32 = 0xd420_0000;
/// The BRK immediate of a kprobe (`KPROBES_BRK_IMM`).
pub const KPROBES_BRK_IMM: u32 = 0x004;
/// The BRK immediate that ends a single-step slot (`KPROBES_BRK_SS_IMM`).
pub const KPROBES_BRK_SS_IMM: u32 = 0x006;
/// The breakpoint written over a probed instruction (`BRK64_OPCODE_KPROBES`).
pub const BRK64_OPCODE_KPROBES: u32 = AARCH64_BREAK_MON | (KPROBES_BRK_IMM << 5);
/// The breakpoint after the instruction in its slot (`BRK64_OPCODE_KPROBES_SS`).
pub const BRK64_OPCODE_KPROBES_SS: u32 = AARCH64_BREAK_MON | (KPROBES_BRK_SS_IMM << 5);

/// Kernel errnos the decisions return, negated as the C functions return them.
pub mod errno {
    /// `-EINVAL`.
    pub const EINVAL: i32 = -22;
}

/// Where an address lies in its symbol, as `kallsyms_lookup_size_offset()` reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SymbolSpan {
    /// The symbol's size (`*symbolsize`).
    pub size: u64,
    /// The address's offset from the symbol's start (`*offset`).
    pub offset: u64,
}

/// The kernel state the decisions read: the text, kallsyms and the exception tables.
///
/// The kernel glue answers these from the running kernel; the host differential from a
/// vmlinux image.
pub trait KernelText {
    /// The instruction word at `addr`, in CPU order: `le32_to_cpu(*addr)` for a
    /// `kprobe_opcode_t *addr`. `None` when `addr` is not readable text (upstream dereferences
    /// the pointer; the core only asks about kernel text).
    fn read_insn(&self, addr: u64) -> Option<u32>;

    /// `kallsyms_lookup_size_offset(addr, &size, &offset)`: the symbol containing `addr`.
    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan>;

    /// `search_exception_tables(addr) != NULL`: `addr` has an exception-table entry.
    fn search_exception_tables(&self, addr: u64) -> bool;
}
