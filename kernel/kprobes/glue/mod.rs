// SPDX-License-Identifier: GPL-2.0

//! Kernel glue of the Rust kprobes core: the logic's platform traits implemented on the real
//! `struct kprobe`, kernel services and upstream's C arch code, and the C-linkage entry points.
//!
//! Constraints: all `unsafe` of the core lives here; the logic never sees a raw pointer. The
//! crate root (`kprobes_rust.rs`) mounts this directory as `glue` next to `pub mod` for each
//! logic file, which this code reaches as `crate::<file>`; `kprobes_helpers.o` (the C half) is
//! linked alongside.
//!
//! Map (GLUE.md has the correspondence with `kernel/kprobes.c`): [`handle`] (the platform type
//! and the probe and module handles), `mutex` (`kprobe_mutex` and its state), `report` (C's WARNs
//! and messages), `store` (the hash table, lists and queues), [`text`] (kallsyms, modules,
//! ftrace), [`blacklist`], and the arch selection below.

use crate::arch::Arch;
use handle::Kernel;

/// Makes the functions it wraps unprobeable, as C's `__kprobes` does: each goes into section
/// `.kprobes.text`, whose symbols `init_kprobes()` puts on the kprobe blacklist one by one, so
/// `register_kprobe()` on any of them fails with -EINVAL.
///
/// Every function a probe hit reaches is either wrapped in it or inlined into one that is;
/// `tools/testing/rkprobes/host/core/hitpath-check.py` proves that on the built object (run by
/// `kernel-flags-check.sh` in `scripts/rkprobes test`), and the in-guest check
/// (`tools/testing/rkprobes/nokprobe/`) that the running kernel refuses each one.
macro_rules! nokprobe {
    ($($item:item)*) => {
        $(
            #[link_section = ".kprobes.text"]
            $item
        )*
    };
}

pub mod blacklist;
#[cfg(not(CONFIG_KPROBES_RUST_ARCH))]
pub mod carch;
pub mod debugfs;
pub mod exports;
#[cfg(CONFIG_KRETPROBES)]
pub mod grow;
#[cfg(CONFIG_KPROBES_RUST_ARCH)]
#[macro_use]
pub(crate) mod hitcpu;
pub mod handle;
mod helpers;
pub mod init;
pub mod insn_slot;
#[cfg(CONFIG_KRETPROBES)]
pub mod kretprobe;
mod list;
mod mutex;
mod nmissed;
#[cfg(all(CONFIG_KRETPROBES, not(CONFIG_KRETPROBE_ON_RETHOOK)))]
pub mod objpool;
#[cfg(CONFIG_KRETPROBES)]
mod percpu;
mod report;
#[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
pub mod rethook;
mod store;
#[cfg(all(CONFIG_MODULES, CONFIG_KALLSYMS, not(CONFIG_HAVE_FUNCTION_DESCRIPTORS)))]
pub mod symbatch;
#[cfg(not(all(CONFIG_MODULES, CONFIG_KALLSYMS, not(CONFIG_HAVE_FUNCTION_DESCRIPTORS))))]
#[path = "symbatch_none.rs"]
pub mod symbatch;
pub mod text;

/// The kernel is the core's [`Arch`] with the arch layer this build selects: upstream's C arch
/// code through the `CArch` bridge, or the native Rust arch layer of `--impl rust-arch`.
impl Arch for Kernel {
    type Hooks = SelectedArch;
}

/// The arch of this build: upstream's C arch code through the `CArch` bridge.
#[cfg(not(CONFIG_KPROBES_RUST_ARCH))]
pub type SelectedArch = carch::CArch;

/// The arch of this build: the native Rust x86_64 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_X86_64))]
pub type SelectedArch = crate::x86_native::X86;

/// The arch of this build: the native Rust arm64 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_ARM64))]
pub type SelectedArch = crate::arm64_native::Arm64;

/// The arch of this build: the native Rust riscv arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_RISCV))]
pub type SelectedArch = crate::riscv_native::Riscv;

/// The arch of this build: the native Rust loongarch arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_LOONGARCH))]
pub type SelectedArch = crate::loongarch_native::Loongarch;

/// The arch of this build: the native Rust s390 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_S390))]
pub type SelectedArch = crate::s390_native::S390;

/// The arch of this build: the native Rust ppc64 arch layer.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_PPC64))]
pub type SelectedArch = crate::powerpc_native::Ppc64;
