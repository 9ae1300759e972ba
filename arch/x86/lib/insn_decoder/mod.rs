// SPDX-License-Identifier: GPL-2.0

//! x86 instruction decoder for kprobes.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate dependencies
//! and no crate attributes, so the same files build inside the kernel's kprobes crate (include
//! them as `pub mod insn_decoder`, which keeps `-Wunreachable_pub` quiet) and in the host test
//! workspace. No allocation, no panic on any input (optimised builds contain no panic path; a
//! host test checks the LLVM IR), and no read past the input slice or past [`MAX_INSN_SIZE`]
//! bytes; a bad or short instruction is an [`Error`] carrying its errno.
//!
//! Design: like upstream's `arch/x86/lib/insn.c`, the decoder is data-driven. The attribute
//! of every opcode (prefix kind, escape, group, immediate size, ModRM, VEX/EVEX rules) comes
//! from `tables.rs`, which `arch/x86/tools/gen_insn_tables.rs` generates from the kernel's
//! `arch/x86/lib/x86-opcode-map.txt`; `attr.rs` holds the attribute layout and lookups,
//! `insn.rs` the decoding, and `kprobes.rs` the questions x86 kprobes ask (relative branches
//! and their targets, RIP-relative operands, boostable or emulated, which instructions may
//! not be probed or copied).
//!
//! ```
//! # use rkprobes_x86_insn::{Insn, Mode};
//! // call *%rax
//! let insn = Insn::decode(&[0xff, 0xd0, 0xcc], Mode::Bits64)?;
//! assert_eq!(insn.len(), 2);
//! # Ok::<(), rkprobes_x86_insn::Error>(())
//! ```

pub mod attr;
pub mod golden;
mod insn;
mod kprobes;
mod tables;

pub use insn::{copy_prefix, Error, Field, Insn, Mode, OpcodeMap, MAX_INSN_SIZE};
pub use kprobes::{Branch, BranchKind, Emulation, TWOBYTE_BOOSTABLE};

/// Returns the name the opcode map gives group `id` (as in [`attr::group_id`]), for
/// diagnostics; empty for an unused id.
pub fn group_name(id: usize) -> &'static str {
    tables::GROUP_NAMES.get(id).copied().unwrap_or("")
}
