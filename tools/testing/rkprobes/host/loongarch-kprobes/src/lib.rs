// SPDX-License-Identifier: GPL-2.0

//! Host tests of the Rust loongarch64 kprobes decisions and simulators.
//!
//! The Rust side is `arch/loongarch/kernel/probes/` of the repository, built here as
//! [`kprobes`] from the very files the kernel builds; the C side is upstream's own
//! `insns_not_supported()`, `insns_need_simulation()`, `simu_pc()`, `simu_branch()`,
//! `arch_simulate_insn()` (`inst.c`) and `arch_prepare_kprobe()` (`kprobes.c`), compiled from
//! the pristine tree by `build.rs`. Both read the same kernel model, an [`Image`]: the text of
//! a vmlinux (or of a synthetic [`image::random_image`]) with its function symbols.
//! [`diff::run`] decides every site with both, prepares a probe there with both, and runs
//! both simulators from the same random register states.

#[path = "../../../../../../arch/loongarch/kernel/probes/mod.rs"]
pub mod kprobes;

pub mod diff;
mod ffi;
pub mod image;
/// The random generator of the differentials (shared with the other kprobes crates).
pub use rkprobes_difftest_common::rng;

pub use image::Image;
