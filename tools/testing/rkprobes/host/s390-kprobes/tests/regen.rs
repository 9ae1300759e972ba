// SPDX-License-Identifier: GPL-2.0

//! The checked-in opcode groups (`arch/s390/kernel/probes/opcodes.rs`) are what the generator
//! makes of the Linux tree's `arch/s390/tools/opcodes.txt`, and the groups are upstream's:
//! `gen_opcode_table.c` of the tree, built and run by build.rs, made the same
//! `opcode_offset[]`.

#[path = "../../../../../../arch/s390/tools/gen_opcode_table.rs"]
mod gen_opcode_table;

use rkprobes_difftest_common::upstream::{linux_src, tree_has};

const OPCODES_TXT: &str = "arch/s390/tools/opcodes.txt";

#[test]
fn regeneration_is_a_no_op() {
    if !tree_has(OPCODES_TXT) {
        println!("SKIP: no {OPCODES_TXT} in the Linux tree");
        return;
    }
    let text = std::fs::read_to_string(linux_src().join(OPCODES_TXT)).expect("opcodes.txt");
    let generated = gen_opcode_table::generate(&text).expect("generates");
    let checked_in = include_str!("../../../../../../arch/s390/kernel/probes/opcodes.rs");
    assert!(
        generated == checked_in,
        "arch/s390/kernel/probes/opcodes.rs is stale: run `cargo run -p rkprobes-s390-kprobes --bin gen-opcode-table -- --write`"
    );
}

#[test]
fn groups_are_upstreams() {
    let Some(upstream) = rkprobes_s390_kprobes::diff::c_opcode_offsets() else {
        assert!(
            !tree_has(OPCODES_TXT),
            "the Linux tree is present but the C was not built"
        );
        println!("SKIP: upstream's C was not built");
        return;
    };
    let text = std::fs::read_to_string(linux_src().join(OPCODES_TXT)).expect("opcodes.txt");
    let ours: Vec<(u8, u8, u8, usize)> = gen_opcode_table::groups(&text)
        .expect("generates")
        .iter()
        .map(|g| (g.opcode, g.mask, g.byte, g.opfrags.len()))
        .collect();
    assert_eq!(ours, upstream);
}
