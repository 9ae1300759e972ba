// SPDX-License-Identifier: GPL-2.0

//! What the host differentials of the kprobes crates (arm64-kprobes, riscv-kprobes,
//! x86-kprobes) share; nothing here is upstream code or kernel code.
//!
//! - [`elf`]: just enough of a little-endian ELF64 reader for a vmlinux: sections, symbols,
//!   the text symbols as kallsyms sees them, self-relative tables such as `__ex_table`;
//! - [`rng`]: the small deterministic random generator the differentials draw from;
//! - [`report`]: what a differential run found, and the totals a difftest binary prints (the
//!   `N sites, M mismatches` line);
//! - [`cli`]: the difftest binaries' command-line numbers and their exits;
//! - [`shim`]: the shape of the answers of upstream's C shims;
//! - [`upstream`]: where the pristine Linux tree is, and skipping without it;
//! - [`build`] and [`c_build`]: what the build scripts use to cut upstream's C out of the
//!   tree and compile it (the build scripts depend on this crate as a build-dependency;
//!   x86-insn's build.rs mounts [`c_build`] with `#[path]`).

pub mod build;
pub mod c_build;
pub mod cli;
pub mod elf;
pub mod report;
pub mod rng;
pub mod shim;
pub mod upstream;
