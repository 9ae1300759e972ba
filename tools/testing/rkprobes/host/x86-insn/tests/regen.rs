// SPDX-License-Identifier: GPL-2.0

//! Regenerating the attribute tables from the kernel tree's opcode map changes nothing.

#[path = "../../../../../../arch/x86/tools/gen_insn_tables.rs"]
mod gen_insn_tables;

#[path = "../src/paths.rs"]
mod paths;

#[test]
fn tables_match_the_opcode_map() {
    let map_path = paths::opcode_map();
    let map = std::fs::read_to_string(&map_path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}\nThe Linux 6.12 tree is needed: run `scripts/rkprobes setup` \
             or point RKPROBES_LINUX_SRC at an unpacked linux-source-6.12",
            map_path.display()
        )
    });
    let generated = gen_insn_tables::generate(&map).expect("the opcode map parses");
    let checked_in = std::fs::read_to_string(paths::tables_rs()).expect("tables.rs is readable");
    assert!(
        generated == checked_in,
        "arch/x86/lib/insn_decoder/tables.rs is stale; regenerate it with \
         `cargo run -p rkprobes-x86-insn --bin gen-insn-tables -- --write`"
    );
}

#[test]
fn generator_rejects_malformed_maps() {
    let bad = [
        "# x\nTable: t\nReferrer:\nAVXcode:\n00: ADD Xq,Ib,Iw\nEndTable\n",
        "# x\nTable: t\nReferrer:\nAVXcode:\n00: ADD Eb Gb | SUB\nEndTable\n",
        "# x\nTable: t\nReferrer: nowhere\nEndTable\n",
        "# x\nGrpTable: Grp99\nEndTable\n",
        "# x\nTable: t\nReferrer:\nAVXcode:\n00: ADD Eb,Gb\n00: OR Eb,Gb\nEndTable\n",
        "# x\nTable: t\nReferrer:\nAVXcode:\n00: FOO (Prefix)\nEndTable\n",
        "# x\nTable: t\nReferrer:\nAVXcode:\n00: NOP\n",
    ];
    for map in bad {
        assert!(gen_insn_tables::generate(map).is_err(), "accepted:\n{map}");
    }
    let good = "# x\nTable: t\nReferrer:\nAVXcode:\n05: ADD rAX,Iz\nEndTable\n";
    let out = gen_insn_tables::generate(good).expect("a minimal map parses");
    assert!(out.contains("(0x05, imm(IMM_VWORD32)),"), "{out}");
}
