// SPDX-License-Identifier: GPL-2.0

//! Kernel glue of the Rust kprobes core: the logic's platform traits implemented on the real
//! `struct kprobe`, kernel services and upstream's C arch code, and the C-linkage entry points.
//!
//! Constraints: all `unsafe` of the core lives here; the logic never sees a raw pointer. The
//! crate root (`kprobes_rust.rs`) mounts this directory as `glue` next to `pub mod` for each
//! logic file, which this code reaches as `crate::<file>`; `kprobes_helpers.o` (the C half) is
//! linked alongside.

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

#[cfg(not(CONFIG_KPROBES_RUST_ARCH))]
pub mod carch;
pub mod debugfs;
pub mod exports;
#[cfg(CONFIG_KPROBES_RUST_ARCH)]
#[macro_use]
pub(crate) mod hitcpu;
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
#[cfg(all(CONFIG_MODULES, CONFIG_KALLSYMS, not(CONFIG_HAVE_FUNCTION_DESCRIPTORS)))]
pub mod symbatch;
