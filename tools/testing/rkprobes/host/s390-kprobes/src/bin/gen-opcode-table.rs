// SPDX-License-Identifier: GPL-2.0

//! Regenerates `arch/s390/kernel/probes/opcodes.rs` from the Linux tree's
//! `arch/s390/tools/opcodes.txt`.
//!
//! ```text
//! gen-opcode-table [--write] [OPCODES_TXT]
//! ```
//!
//! Without `--write` it prints the generated file; with it, it writes it into the repository.

#[path = "../../../../../../../arch/s390/tools/gen_opcode_table.rs"]
mod gen_opcode_table;

use rkprobes_difftest_common::upstream::linux_src;
use std::path::Path;

/// The generated file, from the repository root.
const OUT: &str = "arch/s390/kernel/probes/opcodes.rs";

fn main() {
    let mut write = false;
    let mut input = linux_src().join("arch/s390/tools/opcodes.txt");
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--write" => write = true,
            _ if a.starts_with('-') => {
                eprintln!("usage: gen-opcode-table [--write] [OPCODES_TXT]");
                std::process::exit(2);
            }
            _ => input = a.into(),
        }
    }
    let text = std::fs::read_to_string(&input).unwrap_or_else(|e| {
        eprintln!("{}: {e}", input.display());
        std::process::exit(2)
    });
    let out = gen_opcode_table::generate(&text).unwrap_or_else(|e| {
        eprintln!("{}: {e}", input.display());
        std::process::exit(1)
    });
    if write {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../../..")
            .join(OUT);
        std::fs::write(&path, out).unwrap_or_else(|e| {
            eprintln!("{}: {e}", path.display());
            std::process::exit(1)
        });
        println!("wrote {OUT}");
    } else {
        print!("{out}");
    }
}
