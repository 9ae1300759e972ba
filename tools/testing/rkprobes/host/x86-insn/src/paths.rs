// SPDX-License-Identifier: GPL-2.0

//! Where the host tools find the Linux tree and this repository's files.

use std::path::PathBuf;

/// Default location of the unpacked Linux 6.12 tree (what `scripts/rkprobes setup` makes).
pub const DEFAULT_LINUX_SRC: &str = "/root/.cache/rkprobes/linux-source-6.12";

/// Returns the Linux tree: `$RKPROBES_LINUX_SRC` or [`DEFAULT_LINUX_SRC`].
pub fn linux_src() -> PathBuf {
    std::env::var_os("RKPROBES_LINUX_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LINUX_SRC))
}

/// Returns the tree's `arch/x86/lib/x86-opcode-map.txt`.
pub fn opcode_map() -> PathBuf {
    linux_src().join("arch/x86/lib/x86-opcode-map.txt")
}

/// Returns the repository root (the workspace containing this package).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../..")
}

/// Returns the checked-in generated tables file.
pub fn tables_rs() -> PathBuf {
    repo_root().join("arch/x86/lib/insn_decoder/tables.rs")
}
