// SPDX-License-Identifier: GPL-2.0

//! Regenerates `arch/x86/lib/insn_decoder/tables.rs` from the kernel's opcode map.
//!
//! Usage: `gen-insn-tables [--write | MAP [OUT]]`. With `--write`, the map is read from the
//! Linux tree (`$RKPROBES_LINUX_SRC`, default `/root/.cache/rkprobes/linux-source-6.12`) and
//! the tables file in this repository is rewritten; otherwise the output goes to `OUT` or
//! standard output.

use std::process::ExitCode;

#[path = "../../../../../../../arch/x86/tools/gen_insn_tables.rs"]
mod gen_insn_tables;

#[path = "../paths.rs"]
mod paths;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (map_path, out_path) = match args.as_slice() {
        [flag] if flag == "--write" => (paths::opcode_map(), Some(paths::tables_rs())),
        [map] => (map.into(), None),
        [map, out] => (map.into(), Some(out.into())),
        _ => {
            eprintln!("usage: gen-insn-tables [--write | MAP [OUT]]");
            return ExitCode::from(2);
        }
    };
    let map = match std::fs::read_to_string(&map_path) {
        Ok(map) => map,
        Err(e) => {
            eprintln!(
                "gen-insn-tables: cannot read {}: {e}; run `scripts/rkprobes setup` or set RKPROBES_LINUX_SRC",
                map_path.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let tables = match gen_insn_tables::generate(&map) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gen-insn-tables: {e}");
            return ExitCode::FAILURE;
        }
    };
    match out_path {
        Some(path) => {
            if let Err(e) = std::fs::write(&path, tables) {
                eprintln!("gen-insn-tables: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
        None => print!("{tables}"),
    }
    ExitCode::SUCCESS
}
