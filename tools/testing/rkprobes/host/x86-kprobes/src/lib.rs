// SPDX-License-Identifier: GPL-2.0

//! Host differential of the Rust x86 kprobes decisions against upstream's C.
//!
//! The Rust side is `arch/x86/kernel/kprobes/` (built `no_std` by the x86-insn crate as
//! `rkprobes_x86_insn::kprobes`); the C side is upstream's own functions, cut out of the
//! pristine tree and compiled by `build.rs`. Both read the same kernel model, an [`Image`]:
//! the text of a vmlinux (or of the built-in [`corpus`]) with its symbols, exception table,
//! ftrace sites and kCFI traps. [`diff::run`] prepares a probe with both at every instruction
//! boundary and compares everything they decide.

pub mod corpus;
pub mod diff;
mod ffi;
pub mod image;

pub use image::Image;
