// SPDX-License-Identifier: GPL-2.0

//! Host tests of the Rust arm64 kprobes decisions and simulators.
//!
//! The Rust side is `arch/arm64/kernel/probes/` of the repository, built here as
//! [`kprobes`] from the very files the kernel builds; the C side is upstream's own
//! `decode-insn.c` and `simulate-insn.c`, compiled from the pristine tree by `build.rs`. Both
//! read the same kernel model, an [`Image`]: the text of a vmlinux (or of a synthetic
//! [`image::random_image`]) with its symbols and exception table. [`diff::run`] decides every
//! site with both, prepares a probe there with both, and runs both simulators from the same
//! random register states.

#[path = "../../../../../../arch/arm64/kernel/probes/mod.rs"]
pub mod kprobes;

pub mod diff;
mod ffi;
pub mod image;
/// The random generator of the differentials (shared with the riscv crate).
pub use rkprobes_difftest_common::rng;

pub use image::Image;
