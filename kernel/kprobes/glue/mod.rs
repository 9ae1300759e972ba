// SPDX-License-Identifier: GPL-2.0

//! Kernel glue of the Rust kprobes core: the logic's platform traits implemented on the real
//! `struct kprobe`, kernel services and upstream's C arch code, and the C-linkage entry points.
//!
//! Constraints: all `unsafe` of the core lives here; the logic never sees a raw pointer. The
//! crate root (`kprobes_rust.rs`) mounts this directory as `glue` next to `pub mod` for each
//! logic file, which this code reaches as `crate::<file>`; `kprobes_helpers.o` (the C half) is
//! linked alongside.

pub mod debugfs;
pub mod exports;
mod helpers;
pub mod init;
pub mod insn_slot;
#[cfg(CONFIG_KRETPROBES)]
pub mod kretprobe;
mod list;
#[cfg(all(CONFIG_KRETPROBES, not(CONFIG_KRETPROBE_ON_RETHOOK)))]
pub mod objpool;
#[cfg(CONFIG_KRETPROBES)]
mod percpu;
pub mod platform;
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
pub mod rethook;
