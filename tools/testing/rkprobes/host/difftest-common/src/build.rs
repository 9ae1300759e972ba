// SPDX-License-Identifier: GPL-2.0

//! What the kprobes crates' build scripts do alike to build upstream's C from the pristine
//! tree: the cargo directives, reading the tree, copying headers, cutting definitions out by
//! name (with [`crate::c_build::extract`]) and compiling a shim (to archive with
//! [`crate::c_build::archive`]).

use crate::c_build::{cc, extract, run};
use crate::upstream::linux_src;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What is cut out of which file of the tree, by name and in this order, and into which file
/// of `OUT_DIR`: `(output file, tree file, names)`, names as [`extract`] takes them.
pub type Extract<'a> = &'a [(&'a str, &'a str, &'a [&'a str])];

/// A build script's `main()`: declares `cfg` and what to rerun on (the tree and `CC`, and the
/// files `rerun`), runs `build(tree, OUT_DIR)`, and then links the static library `lib` and
/// sets `cfg`, or warns that `what` was not built and the differential cannot run.
pub fn main(
    cfg: &str,
    lib: &str,
    what: &str,
    rerun: &[&str],
    build: impl FnOnce(&Path, &Path) -> Result<(), String>,
) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    println!("cargo::rerun-if-env-changed=RKPROBES_LINUX_SRC");
    println!("cargo::rerun-if-env-changed=CC");
    for path in rerun {
        println!("cargo::rerun-if-changed={path}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build(&linux_src(), &out) {
        Ok(()) => {
            println!("cargo::rustc-link-search=native={}", out.display());
            println!("cargo::rustc-link-lib=static={lib}");
            println!("cargo::rustc-cfg={cfg}");
        }
        Err(why) => {
            println!("cargo::warning={what} not built ({why}); the differential cannot run")
        }
    }
}

/// Reads `path` of the tree (and reruns when it changes).
pub fn read(path: &Path) -> Result<String, String> {
    println!("cargo::rerun-if-changed={}", path.display());
    std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}; run `scripts/rkprobes setup`", path.display()))
}

/// The tree's `arch/{arch}/kernel/probes`, once its `decode-insn.[ch]` and
/// `simulate-insn.[ch]` are found to be there.
pub fn probes_dir(src: &Path, arch: &str) -> Result<PathBuf, String> {
    let probes = src.join(format!("arch/{arch}/kernel/probes"));
    for f in [
        "decode-insn.c",
        "decode-insn.h",
        "simulate-insn.c",
        "simulate-insn.h",
    ] {
        read(&probes.join(f))?;
    }
    Ok(probes)
}

/// Copies the `headers` of the tree, whole, into `out/include/asm/`.
pub fn copy_headers(src: &Path, out: &Path, headers: &[&str]) -> Result<(), String> {
    let inc = out.join("include/asm");
    std::fs::create_dir_all(&inc).map_err(|e| e.to_string())?;
    for h in headers {
        let text = read(&src.join(h))?;
        let name = Path::new(h).file_name().unwrap_or_default();
        std::fs::write(inc.join(name), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Cuts what `what` names out of the tree into `out`, each piece after a `#line` naming
/// where it came from.
pub fn cut_out(src: &Path, out: &Path, what: Extract<'_>) -> Result<(), String> {
    let mut files: Vec<(&str, String)> = Vec::new();
    for (dest, file, names) in what {
        let path = src.join(file);
        let text = read(&path)?;
        let idx = match files.iter().position(|(d, _)| d == dest) {
            Some(i) => i,
            None => {
                files.push((
                    dest,
                    String::from("/* Cut out of the Linux tree by build.rs. */\n"),
                ));
                files.len() - 1
            }
        };
        for name in *names {
            let (line, piece) = extract(&text, name)
                .ok_or_else(|| format!("{name} not found in {}", path.display()))?;
            files[idx].1.push_str(&format!(
                "#line {} \"{}\"\n{piece}\n",
                line + 1,
                path.display()
            ));
        }
    }
    for (dest, text) in &files {
        std::fs::write(out.join(dest), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The C headers the arm64 and riscv shims share (`rk_types.h`, `rk_text.h`).
const COMMON_CSRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/csrc");

/// Compiles the shim `file` (a path in the crate, with `extra` flags) as the kernel would
/// (`-fwrapv` for `-fno-strict-overflow`), after `csrc/rk_kernel.h`, with `csrc/include`,
/// `out/include`, `out`, the tree's `probes` directory and this crate's `csrc` on the
/// include path; the object, `out/{file stem}.o`.
pub fn compile_shim(
    out: &Path,
    probes: &Path,
    file: &str,
    extra: &[&str],
) -> Result<PathBuf, String> {
    println!("cargo::rerun-if-changed={COMMON_CSRC}");
    let name = Path::new(file).with_extension("o");
    let obj = out.join(name.file_name().unwrap_or_default());
    run(Command::new(cc())
        .args([
            "-O1",
            "-fPIC",
            "-fwrapv",
            "-fno-strict-aliasing",
            "-w",
            "-c",
        ])
        .args(extra)
        .args(["-include", "csrc/rk_kernel.h"])
        .arg("-I")
        .arg("csrc/include")
        .arg("-I")
        .arg(out.join("include"))
        .arg("-I")
        .arg(out)
        .arg("-I")
        .arg(probes)
        .arg("-I")
        .arg(COMMON_CSRC)
        .arg(file)
        .arg("-o")
        .arg(&obj))?;
    Ok(obj)
}
