// SPDX-License-Identifier: GPL-2.0

//! Host tests of the Rust ppc64 kprobes decisions.
//!
//! The Rust side is `arch/powerpc/kernel/probes/` of the repository, built here as
//! [`kprobes`] from the very files the kernel builds; the C side is upstream's own
//! `arch_prepare_kprobe()`, `try_to_emulate()`, `arch_kprobe_on_func_entry()`
//! (`kernel/kprobes.c`), `can_optimize()`, `arch_prepare_optimized_kprobe()`,
//! `arch_within_optimized_kprobe()` (`kernel/optprobes.c`) and the helpers they use,
//! compiled from the pristine tree by `build.rs`. Both read the same kernel model, an
//! [`Image`]: the text of a vmlinux (or of a synthetic [`image::random_image`]) with its
//! function symbols. [`diff::run`] decides every site with both.

#[path = "../../../../../../arch/powerpc/kernel/probes/mod.rs"]
pub mod kprobes;

pub mod diff;
mod ffi;
pub mod image;
/// The random generator of the differentials (shared with the other kprobes crates).
pub use rkprobes_difftest_common::rng;

pub use image::Image;
