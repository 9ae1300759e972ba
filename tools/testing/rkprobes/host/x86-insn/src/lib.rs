// SPDX-License-Identifier: GPL-2.0

//! Host build of the kprobes x86 instruction decoder.
//!
//! The decoder sources live at `arch/x86/lib/insn_decoder/`, where the kernel's kprobes crate
//! includes them; this crate compiles the very same files as `no_std` so they can be tested,
//! fuzzed and benchmarked on the host.

#![no_std]

#[path = "../../../../../../arch/x86/lib/insn_decoder/mod.rs"]
mod insn_decoder;

pub use insn_decoder::*;

/// The x86 kprobes decisions and emulators (`arch/x86/kernel/kprobes/`), built here as
/// `no_std` next to the decoder they use, as the kernel includes them.
#[path = "../../../../../../arch/x86/kernel/kprobes/mod.rs"]
pub mod kprobes;
