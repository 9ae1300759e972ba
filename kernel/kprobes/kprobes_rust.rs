// SPDX-License-Identifier: GPL-2.0

//! The Rust kprobes core: what `kernel/kprobes.c` provides, built when `CONFIG_KPROBES_RUST=y`.
//!
//! Constraints: this is the crate root of one built-in object (6.12 Kbuild cannot link one
//! in-tree Rust crate to another, so core and arch code form a single crate). Everything
//! reachable from a probe hit is unprobeable (`.kprobes.text`), never allocates and never
//! sleeps. `include/linux/kprobes.h` stays the contract: the C-linkage symbols, their errno
//! values and the struct layouts (from bindgen) are those of the C core.
//!
//! Design: the logic modules below are `no_std` code that never names the `kernel` crate, so
//! the host workspace (`tools/testing/rkprobes/host/core`) compiles and tests the very same
//! files against a simulated architecture. [`glue`] implements their traits on the real
//! `struct kprobe` and kernel services, and holds the C-linkage entry points; the C half
//! (`kprobes_helpers.c`) holds the `__weak` defaults, wrappers for C macros and static inlines,
//! and the `EXPORT_SYMBOL_GPL`s.

pub mod aggr;
pub mod arch;
pub mod batch;
pub mod blacklist;
pub mod debugfs;
pub mod errno;
pub mod ftrace;
pub mod hit;
pub mod insn_slot;
pub mod kretprobe;
pub mod kretprobe_grow;
pub mod missed;
pub mod optimizer;
pub mod register;
pub mod report;
pub mod store;
pub mod symindex;
pub mod table;
pub mod text;

#[macro_use]
pub mod glue;

/// The x86 instruction decoder (`arch/x86/lib/insn_decoder/`), the one copy in the kernel when
/// the Rust core is built; the host workspace tests the same files.
#[cfg(CONFIG_X86_64)]
#[path = "../../arch/x86/lib/insn_decoder/mod.rs"]
pub mod insn_decoder;

/// The decoder's C ABI for the KUnit suite `rust_insn_decoder`.
#[cfg(all(CONFIG_X86_64, CONFIG_KPROBES_RUST_INSN_KUNIT))]
#[path = "../../arch/x86/lib/insn_decoder_abi.rs"]
pub mod insn_decoder_abi;

/// The x86 kprobes decisions and emulators (`arch/x86/kernel/kprobes/`), pure functions the
/// host workspace tests against upstream's C.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_X86_64))]
#[path = "../../arch/x86/kernel/kprobes/mod.rs"]
pub mod x86;

/// The native x86_64 arch layer on those decisions (`CONFIG_KPROBES_RUST_ARCH`).
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_X86_64))]
#[path = "../../arch/x86/kernel/kprobes/native.rs"]
pub mod x86_native;

/// The arm64 kprobes decisions and simulators (`arch/arm64/kernel/probes/`), pure functions the
/// host workspace tests against upstream's C.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_ARM64))]
#[path = "../../arch/arm64/kernel/probes/mod.rs"]
pub mod arm64;

/// The native arm64 arch layer on those decisions (`CONFIG_KPROBES_RUST_ARCH`).
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_ARM64))]
#[path = "../../arch/arm64/kernel/probes/native.rs"]
pub mod arm64_native;

/// The riscv kprobes decisions and simulators (`arch/riscv/kernel/probes/`), pure functions the
/// host workspace tests against upstream's C.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_RISCV))]
#[path = "../../arch/riscv/kernel/probes/mod.rs"]
pub mod riscv;

/// The native riscv arch layer on those decisions (`CONFIG_KPROBES_RUST_ARCH`).
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_RISCV))]
#[path = "../../arch/riscv/kernel/probes/native.rs"]
pub mod riscv_native;

/// The loongarch kprobes decisions and simulators (`arch/loongarch/kernel/probes/`), pure
/// functions the host workspace tests against upstream's C.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_LOONGARCH))]
#[path = "../../arch/loongarch/kernel/probes/mod.rs"]
pub mod loongarch;

/// The native loongarch arch layer on those decisions (`CONFIG_KPROBES_RUST_ARCH`).
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_LOONGARCH))]
#[path = "../../arch/loongarch/kernel/probes/native.rs"]
pub mod loongarch_native;

/// The s390 kprobes decisions (`arch/s390/kernel/probes/`), pure functions the host workspace
/// tests against upstream's C.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_S390))]
#[path = "../../arch/s390/kernel/probes/mod.rs"]
pub mod s390;

/// The native s390 arch layer on those decisions (`CONFIG_KPROBES_RUST_ARCH`).
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_S390))]
#[path = "../../arch/s390/kernel/probes/native.rs"]
pub mod s390_native;

/// The ppc64 kprobes decisions (`arch/powerpc/kernel/probes/`), pure functions the host
/// workspace tests against upstream's C.
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_PPC64))]
#[path = "../../arch/powerpc/kernel/probes/mod.rs"]
pub mod powerpc;

/// The native ppc64 arch layer on those decisions (`CONFIG_KPROBES_RUST_ARCH`).
#[cfg(all(CONFIG_KPROBES_RUST_ARCH, CONFIG_PPC64))]
#[path = "../../arch/powerpc/kernel/probes/native.rs"]
pub mod powerpc_native;
