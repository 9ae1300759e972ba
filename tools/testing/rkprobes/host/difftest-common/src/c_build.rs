// SPDX-License-Identifier: GPL-2.0

//! What the build scripts of the host crates share: cutting a C definition out of a file of
//! the pristine tree by name, running a tool, making the x86 attribute tables, compiling
//! against the tree's x86 decoder and archiving objects. Used by the kprobes crates' build scripts
//! through this crate and mounted with `#[path]` by x86-insn's build.rs; nothing here is upstream
//! code.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Returns the line number and text of `name` in `text`.
///
/// `name` is `#define X` / `#undef X` for a macro (with its continuation lines), `x[` for an
/// array definition or `x(` for a function definition (its leading type and storage lines
/// included, up to the closing brace).
pub fn extract(text: &str, name: &str) -> Option<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    if name.starts_with('#') {
        let start = lines.iter().position(|l| l.starts_with(name))?;
        let mut end = start;
        while lines.get(end)?.ends_with('\\') {
            end += 1;
        }
        return Some((start, lines[start..=end].join("\n")));
    }
    let is_def = |i: usize| -> bool {
        let l = lines[i];
        if l.starts_with([' ', '\t', '#', '/', '*']) {
            return false;
        }
        let Some(at) = l.find(name) else { return false };
        let before = l[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return false;
        }
        // A definition reaches `{` before any `;`.
        let rest: String = lines[i..].join("\n");
        let rest = &rest[at..];
        matches!((rest.find('{'), rest.find(';')), (Some(b), Some(s)) if b < s)
    };
    let found = (0..lines.len()).find(|&i| is_def(i))?;
    let mut start = found;
    while start > 0 {
        let prev = lines[start - 1].trim_end();
        if prev.is_empty()
            || prev.starts_with([' ', '\t', '#', '/', '*', '}'])
            || prev.ends_with([';', '}', '/'])
        {
            break;
        }
        start -= 1;
    }
    let body = lines[start..].join("\n");
    let mut depth = 0usize;
    let mut opened = false;
    let mut end = None;
    for (i, c) in body.char_indices() {
        match c {
            '{' => {
                depth += 1;
                opened = true;
            }
            '}' => {
                depth = depth.checked_sub(1)?;
                if opened && depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let mut end = end?;
    // An array definition ends with `};`.
    if body[end..].starts_with(';') {
        end += 1;
    }
    Some((start, body[..end].to_string()))
}

/// Runs `cmd`; its standard output, or why it failed (with its standard error).
pub fn run(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let name = format!("{:?}", cmd.get_program());
    let output = cmd.output().map_err(|e| format!("{name}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(output.stdout)
}

/// The C compiler: `$CC`, else `cc`.
pub fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Writes `out/inat-tables.c`, made from the tree's `arch/x86/lib/x86-opcode-map.txt` by its
/// own `arch/x86/tools/gen-insn-attr-x86.awk`.
pub fn inat_tables(src: &Path, out: &Path) -> Result<(), String> {
    let map = src.join("arch/x86/lib/x86-opcode-map.txt");
    let awk_script = src.join("arch/x86/tools/gen-insn-attr-x86.awk");
    let tables = run(Command::new("awk").arg("-f").arg(&awk_script).arg(&map))?;
    std::fs::write(out.join("inat-tables.c"), tables).map_err(|e| e.to_string())
}

/// Compiles `file` with `flags` into `obj` against the tree's `tools/` copy of the x86
/// instruction decoder, with `out` (for `inat-tables.c` and what was cut out) first on the
/// include path.
pub fn compile_with_x86_decoder(
    src: &Path,
    out: &Path,
    flags: &[&str],
    file: &str,
    obj: &Path,
) -> Result<(), String> {
    run(Command::new(cc())
        .args(flags)
        .arg("-I")
        .arg(out)
        .arg("-I")
        .arg(src.join("tools/arch/x86/lib"))
        .arg("-I")
        .arg(src.join("tools/arch/x86/include"))
        .arg("-I")
        .arg(src.join("tools/include"))
        .arg(file)
        .arg("-o")
        .arg(obj))?;
    Ok(())
}

/// Archives `objs` into the static library `out/lib{lib}.a`, made anew.
pub fn archive(out: &Path, lib: &str, objs: &[PathBuf]) -> Result<(), String> {
    let lib = out.join(format!("lib{lib}.a"));
    let _ = std::fs::remove_file(&lib);
    run(Command::new("ar").arg("crs").arg(&lib).args(objs))?;
    Ok(())
}
