// SPDX-License-Identifier: GPL-2.0

//! Host build of the Rust kprobes core logic.
//!
//! The modules below are the very files the kernel compiles from `kernel/kprobes/` (pure,
//! `no_std`, never naming the `kernel` crate); this crate only gives them a host crate root so
//! `cargo test` can drive them against the simulated architecture and text memory in `tests/`.
//!
//! - `cargo test -p rkprobes-core`: unit and property tests (about half a minute in debug).
//! - `RKPROBES_PROPTEST_CASES=20000 cargo test --release -p rkprobes-core --test props`: a soak.
//! - `kernel-flags-check.sh <kernel build dir>`: the same files, and the kernel glue beside them,
//!   type-checked with the kernel's rustc, core, bindings and lints, plus an object-level check
//!   that the probe-hit entry points are unprobeable and panic-free.

#![no_std]

#[path = "../../../../../../kernel/kprobes/aggr.rs"]
pub mod aggr;
#[path = "../../../../../../kernel/kprobes/arch.rs"]
pub mod arch;
#[path = "../../../../../../kernel/kprobes/batch.rs"]
pub mod batch;
#[path = "../../../../../../kernel/kprobes/blacklist.rs"]
pub mod blacklist;
#[path = "../../../../../../kernel/kprobes/debugfs.rs"]
pub mod debugfs;
#[path = "../../../../../../kernel/kprobes/errno.rs"]
pub mod errno;
#[path = "../../../../../../kernel/kprobes/ftrace.rs"]
pub mod ftrace;
#[path = "../../../../../../kernel/kprobes/hit.rs"]
pub mod hit;
#[path = "../../../../../../kernel/kprobes/insn_slot.rs"]
pub mod insn_slot;
#[path = "../../../../../../kernel/kprobes/kretprobe.rs"]
pub mod kretprobe;
#[path = "../../../../../../kernel/kprobes/kretprobe_grow.rs"]
pub mod kretprobe_grow;
#[path = "../../../../../../kernel/kprobes/missed.rs"]
pub mod missed;
#[path = "../../../../../../kernel/kprobes/optimizer.rs"]
pub mod optimizer;
#[path = "../../../../../../kernel/kprobes/register.rs"]
pub mod register;
#[path = "../../../../../../kernel/kprobes/report.rs"]
pub mod report;
#[path = "../../../../../../kernel/kprobes/store.rs"]
pub mod store;
#[path = "../../../../../../kernel/kprobes/symindex.rs"]
pub mod symindex;
#[path = "../../../../../../kernel/kprobes/table.rs"]
pub mod table;
#[path = "../../../../../../kernel/kprobes/text.rs"]
pub mod text;
