// SPDX-License-Identifier: GPL-2.0

//! The Rust x86 instruction decoder as a stand-alone object, for its KUnit test in kernels
//! built with upstream's C kprobes core (`CONFIG_KPROBES_RUST=n`).
//!
//! With `CONFIG_KPROBES_RUST=y` this file is not built: the decoder is part of the kprobes
//! crate (`kernel/kprobes/kprobes_rust.rs` includes the same two modules), so that there is one
//! copy of it in the kernel. The decoder's sources are the very files the host workspace tests;
//! they are included here as modules because 6.12's Kbuild cannot link one in-tree Rust crate
//! into another.

#[path = "insn_decoder/mod.rs"]
pub mod insn_decoder;

pub mod insn_decoder_abi;
