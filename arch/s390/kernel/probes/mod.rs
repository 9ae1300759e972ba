// SPDX-License-Identifier: GPL-2.0

//! s390 kprobes decisions, as pure functions.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate attributes and
//! no use of the `kernel` crate, so the same files build inside the kernel's kprobes crate and
//! in the host test crate (`tools/testing/rkprobes/host/s390-kprobes`). No allocation and no
//! panic path on any input; address arithmetic wraps as the C's `unsigned long` arithmetic
//! does in the kernel (built with `-fno-strict-overflow`).
//!
//! Design: upstream's `arch/s390/kernel/kprobes.c` and the helpers it shares with uprobes in
//! `arch/s390/lib/probes.c` read kernel state directly (the probed text, the probes already
//! registered, the symbol table, the slot). Here that state is explicit input: [`KernelText`]
//! answers what upstream reads of the text (big-endian halfwords, `kprobe_opcode_t`), and
//! what `kallsyms_lookup_size_offset()`, `get_kprobe()` and the slot allocation answer is
//! passed in. `insn.rs` holds the instruction helpers: `insn_length()` and `is_known_insn()`
//! (`asm/dis.h`, with `find_insn()` of `kernel/dis.c` over the opcode groups of `opcodes.rs`,
//! generated from `arch/s390/tools/opcodes.txt` by `arch/s390/tools/gen_opcode_table.rs` as
//! the kernel's `dis-defs.h` is by `gen_opcode_table.c`), `probe_is_prohibited_opcode()`,
//! `probe_get_fixup_type()` and `probe_is_insn_relative_long()` (`lib/probes.c`); `decode.rs`
//! the decisions of `kprobes.c`: `can_probe()`, `arch_prepare_kprobe()` with
//! `copy_instruction()` (the relative-long displacement fix-up for the slot), the PSW masks of
//! `enable_singlestep()` and `disable_singlestep()`, `kprobe_reenter_check()`, and what
//! `resume_execution()` computes after the step.
//!
//! Version: Linux 6.12 (Debian's 6.12.117), followed exactly, including
//! `copy_instruction()`'s arithmetic: the new displacement is computed in `u64` and halved
//! unsigned before it is truncated to 32 bits (the same as a signed halving for the even
//! addresses s390 text has), and whether it fits is not checked (upstream relies on the slot
//! being within the same 4 GiB as the probe, see [`copy_instruction`]).
//!
//! Not here, as it is glue: the program-check and PER handlers, arming and disarming (a
//! halfword write under `stop_machine()` or with `MACHINE_HAS_SEQ_INSN`), the control
//! registers of the single step, the slot allocation (`get_insn_slot()`, `-ENOMEM`).

mod decode;
pub mod insn;
pub mod opcodes;

pub use decode::{
    can_probe, copy_instruction, disable_singlestep_mask, enable_singlestep_mask, prepare_kprobe,
    reenter_allowed, resume_execution, Prepared, Resumed, KPROBE_HIT_ACTIVE, KPROBE_HIT_SS,
    KPROBE_HIT_SSDONE, KPROBE_REENTER, PSW_MASK_EXT, PSW_MASK_IO, PSW_MASK_PER,
};
pub use insn::{
    insn_length, is_known_insn, probe_get_fixup_type, probe_is_insn_relative_long,
    probe_is_prohibited_opcode, OpcodeGroup, FIXUP_BRANCH_NOT_TAKEN, FIXUP_NOT_REQUIRED,
    FIXUP_PSW_NORMAL, FIXUP_RETURN_REGISTER,
};

/// The halfwords of the longest instruction, and of a slot (`MAX_INSN_SIZE`).
pub const MAX_INSN_SIZE: usize = 3;

/// The breakpoint written over the first halfword of a probed instruction
/// (`BREAKPOINT_INSTRUCTION`, an invalid opcode that raises a program check).
pub const BREAKPOINT_INSTRUCTION: u16 = 0x0002;

/// `MCOUNT_INSN_SIZE`: the ftrace call (`brasl`) of a function's entry.
/// `kprobe_ftrace_handler()` sets the PSW address to the call for the pre handler and past it
/// for the post handler, as if it had been stepped.
pub const MCOUNT_INSN_SIZE: u64 = 6;

/// Kernel errnos the decisions return, negated as the C functions return them.
pub mod errno {
    /// `-EINVAL`: an address or instruction `arch_prepare_kprobe()` refuses.
    pub const EINVAL: i32 = -22;
    /// `-ENOMEM`: no slot (the glue allocates it).
    pub const ENOMEM: i32 = -12;
}

/// The kernel state the decisions read: the text, in halfwords.
///
/// The kernel glue answers this from the running kernel; the host differential from a vmlinux
/// image or a synthetic one.
pub trait KernelText {
    /// The halfword at `addr` (2-byte aligned) as the CPU reads it (big-endian in memory):
    /// `*(kprobe_opcode_t *)addr`. `None` when `addr` cannot be read
    /// (`copy_from_kernel_nofault()` fails).
    fn read_halfword(&self, addr: u64) -> Option<u16>;

    /// The instruction at `addr`: its halfwords (up to [`MAX_INSN_SIZE`], the rest 0) and its
    /// length in bytes from the first byte ([`insn_length`]); `None` when a halfword of it
    /// cannot be read.
    fn read_insn(&self, addr: u64) -> Option<([u16; MAX_INSN_SIZE], u64)> {
        let first = self.read_halfword(addr)?;
        let len = insn_length((first >> 8) as u8);
        let mut insn = [first, 0, 0];
        let mut i = 1;
        while (i as u64) * 2 < len {
            insn[i] = self.read_halfword(addr.wrapping_add(2 * i as u64))?;
            i += 1;
        }
        Some((insn, len))
    }
}
