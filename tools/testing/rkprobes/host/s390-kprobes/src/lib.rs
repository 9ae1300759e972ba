// SPDX-License-Identifier: GPL-2.0

//! Host tests of the Rust s390 kprobes decisions.
//!
//! The Rust side is `arch/s390/kernel/probes/` of the repository, built here as [`kprobes`]
//! from the very files the kernel builds; the C side is upstream's own
//! `probe_is_prohibited_opcode()`, `probe_get_fixup_type()`, `probe_is_insn_relative_long()`
//! (`lib/probes.c`), `can_probe()`, `arch_prepare_kprobe()` with `copy_instruction()`, and
//! `resume_execution()` (`kernel/kprobes.c`), compiled from the pristine tree by `build.rs`.
//! Both read the same kernel model, an [`Image`]: a synthetic text of random instructions
//! with its function symbols. [`diff::run`] decides every site with both.

#[path = "../../../../../../arch/s390/kernel/probes/mod.rs"]
pub mod kprobes;

pub mod diff;
mod ffi;
pub mod image;
/// The random generator of the differentials (shared with the other kprobes crates).
pub use rkprobes_difftest_common::rng;

pub use image::Image;
