// SPDX-License-Identifier: GPL-2.0

//! Where the pristine Linux tree upstream's C is compiled from is, and what the tests do
//! without it.

use std::path::PathBuf;

/// Default location of the unpacked Linux 6.12 tree (what `scripts/rkprobes setup` makes).
pub const DEFAULT_LINUX_SRC: &str = "/root/.cache/rkprobes/linux-source-6.12";

/// The reason a differential gives when upstream's C was not built.
pub const NOT_BUILT: &str = "upstream's C was not built (see the build warning)";

/// Returns the Linux tree: `$RKPROBES_LINUX_SRC` or [`DEFAULT_LINUX_SRC`].
pub fn linux_src() -> PathBuf {
    std::env::var_os("RKPROBES_LINUX_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LINUX_SRC))
}

/// Whether the Linux tree has `file` (a path inside it), i.e. whether the build script could
/// compile upstream's C from it.
pub fn tree_has(file: &str) -> bool {
    linux_src().join(file).exists()
}

/// The result of a differential run, or `None` with a `SKIP: {what}: {why}` line when there
/// is no upstream to compare with. With the tree present (`tree_file` in it), the C must have
/// been built: a failure then fails the test.
pub fn or_skip<T>(result: Result<T, String>, tree_file: &str, what: &str) -> Option<T> {
    match result {
        Ok(t) => Some(t),
        Err(why) => {
            assert!(!tree_has(tree_file), "the Linux tree is present but: {why}");
            println!("SKIP: {what}: {why}");
            None
        }
    }
}

/// The vmlinux `$var` names, else `default`.
pub fn vmlinux(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.into())
}

/// `path` if it exists, else `None` with a `SKIP: no {arch} vmlinux at {path} (set {var})`
/// line.
pub fn existing_vmlinux(path: String, arch: &str, var: &str) -> Option<String> {
    if std::path::Path::new(&path).exists() {
        Some(path)
    } else {
        println!("SKIP: no {arch} vmlinux at {path} (set {var})");
        None
    }
}
