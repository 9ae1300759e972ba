// SPDX-License-Identifier: GPL-2.0

//! riscv (64-bit) kprobes decisions and simulators, as pure functions.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate attributes and
//! no use of the `kernel` crate, so the same files build inside the kernel's kprobes crate and
//! in the host test crate (`tools/testing/rkprobes/host/riscv-kprobes`). No allocation and no
//! panic path on any input; arithmetic on addresses wraps as the C's `unsigned long` and
//! `long` arithmetic does in the kernel (which builds with `-fno-strict-overflow`), except
//! where noted (the boundary walk uses checked offsets).
//!
//! Design: upstream's `arch/riscv/kernel/probes/decode-insn.c`, `simulate-insn.c` and the
//! preparation in `kprobes.c` read kernel state directly (the probed text, kallsyms,
//! `struct pt_regs`). Here that state is explicit input: the [`KernelText`] trait answers what
//! upstream asks of the text and kallsyms, the [`Regs`] trait is the trap frame. Every public
//! item names its upstream counterpart so the two can be read side by side: `insn.rs` holds
//! the `riscv_insn_is_*()` encoding predicates of `arch/riscv/include/asm/insn.h` and the
//! instruction length of `asm/bug.h`, `decode.rs` the decision of `decode-insn.c` and the
//! preparation of `arch_prepare_kprobe()` with its instruction-boundary walk
//! `arch_check_kprobe()` (`kprobes.c`), `simulate.rs` the nine simulators of
//! `simulate-insn.c`.
//!
//! Version: Linux 6.12 (Debian's 6.12.117), followed exactly, RV64 (`__riscv_xlen == 64`:
//! `riscv_insn_is_c_jal()` is constant false, as C.JAL is RV32C only; the same encoding is
//! C.ADDIW on RV64). `CONFIG_RISCV_ISA_C` is a parameter (`isa_c`) of the decisions; the
//! kernel glue passes `cfg!(CONFIG_RISCV_ISA_C)`.
//!
//! Not here, as it is glue: the later upstream fix that refuses probes in riscv's own
//! breakpoint and trap handlers (they are marked `NOKPROBE_SYMBOL`/`__kprobes` so a probe
//! there cannot recurse through the ebreak path); the blacklist belongs to the kernel glue
//! and the core, not to these decisions.

mod decode;
pub mod insn;
mod simulate;

pub use decode::{
    check_kprobe, is_insn_boundary, prepare_kprobe, probe_decode_insn, Prepared, ProbeInsn,
    Simulator,
};
pub use simulate::{
    simulate, simulate_auipc, simulate_branch, simulate_c_beqz, simulate_c_bnez, simulate_c_j,
    simulate_c_jalr, simulate_c_jr, simulate_jal, simulate_jalr, PtRegs, Regs,
};

/// `ebreak`, written after the stepped instruction in its slot and over a probed 32-bit
/// instruction (`__BUG_INSN_32`, `arch/riscv/include/asm/bug.h`).
pub const BUG_INSN_32: u32 = 0x0010_0073;
/// `c.ebreak`, written over a probed 16-bit instruction (`__BUG_INSN_16`).
pub const BUG_INSN_16: u32 = 0x9002;

/// The largest instruction the slot holds, plus its trailing `ebreak`, in bytes
/// (`MAX_INSN_SIZE` is 2 `kprobe_opcode_t`s: the instruction and `__BUG_INSN_32`).
pub const SLOT_BYTES: usize = 8;

/// Kernel errnos the decisions return, negated as the C functions return them.
pub mod errno {
    /// `-EINVAL`.
    pub const EINVAL: i32 = -22;
    /// `-EILSEQ`: a probe at an odd address or not on an instruction boundary.
    pub const EILSEQ: i32 = -84;
}

/// The kernel state the decisions read: the text and kallsyms.
///
/// The kernel glue answers these from the running kernel; the host differential from a
/// vmlinux image.
pub trait KernelText {
    /// The 16-bit parcel at `addr` (2-byte aligned), in CPU order: `*(u16 *)addr`. `None` when
    /// `addr` is not readable text (upstream dereferences the pointer; the core only asks
    /// about kernel text).
    fn read_u16(&self, addr: u64) -> Option<u16>;

    /// `kallsyms_lookup_size_offset(addr, NULL, &offset)`: the offset of `addr` from the start
    /// of the symbol containing it, or `None` when kallsyms knows no symbol there.
    fn lookup_offset(&self, addr: u64) -> Option<u64>;
}
