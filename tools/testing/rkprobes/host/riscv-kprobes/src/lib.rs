// SPDX-License-Identifier: GPL-2.0

//! Host tests of the Rust riscv kprobes decisions and simulators.
//!
//! The Rust side is `arch/riscv/kernel/probes/` of the repository, built here as
//! [`kprobes`] from the very files the kernel builds; the C side is upstream's own
//! `decode-insn.c`, `simulate-insn.c` and the preparation of `kprobes.c`, compiled from the
//! pristine tree by `build.rs`. Both read the same kernel model, an [`Image`]: the text of a
//! vmlinux (or of a synthetic [`image::random_image`]) with its symbols. [`diff::run`] walks
//! every function from its start by instruction length, decides every instruction with both,
//! checks the boundary walk and prepares a probe there with both, and runs both simulators
//! from the same random register states; [`diff::run_words`] compares the decision on loose
//! words.

#[path = "../../../../../../arch/riscv/kernel/probes/mod.rs"]
pub mod kprobes;

pub mod diff;
mod ffi;
pub mod image;
/// The random generator of the differentials (shared with the arm64 crate).
pub use rkprobes_difftest_common::rng;

pub use image::Image;
