// SPDX-License-Identifier: GPL-2.0

//! Generator of the Rust s390 opcode groups (`arch/s390/kernel/probes/opcodes.rs`) from
//! `arch/s390/tools/opcodes.txt`.
//!
//! Constraints: a host tool (it uses `std`); its output must be byte-for-byte stable, because a
//! test regenerates the groups from the kernel tree's `opcodes.txt` and compares them with the
//! checked-in file.
//!
//! It plays the role of `arch/s390/tools/gen_opcode_table.c` for what `find_insn()` of the
//! kernel's disassembler (`arch/s390/kernel/dis.c`) looks at: the opcode groups of
//! `opcode_offset[]` and the opcode fragments of `opcode[]` each group covers. It follows the
//! same rules: each line is `opcode name format`; the format's base (before `_`) says where the
//! rest of a multi-byte opcode is (byte 1, low four bits, for RI, RIL, SSF; byte 1 for E, IE,
//! RRE, RRF, RRR, S, SIL, SSE; byte 5 for the RIE, RIS, RRS, RSE, RSL, RSY, RXE, RXF, RXY,
//! SIY and vector forms; the first byte itself for the one-byte opcodes); the multi-byte
//! opcodes, sorted, form one group per first byte, with the position of the first of them;
//! the one-byte opcodes form the last group, which `find_insn()` falls back to. Names and
//! operand formats, which only the disassembler's printing uses, are left out.

use std::fmt::Write as _;

/// Where the rest of the opcode of each instruction format is: `(formats, byte, mask)`.
const TYPES: &[(&[&str], u8, u8)] = &[
    (
        &["MII", "RR", "RS", "RSI", "RX", "SI", "SMI", "SS"],
        0,
        0xff,
    ),
    (&["RI", "RIL", "SSF"], 1, 0x0f),
    (
        &["E", "IE", "RRE", "RRF", "RRR", "S", "SIL", "SSE"],
        1,
        0xff,
    ),
    (
        &[
            "RIE", "RIS", "RRS", "RSE", "RSL", "RSY", "RXE", "RXF", "RXY", "SIY", "VRI", "VRR",
            "VRS", "VRV", "VRX", "VSI",
        ],
        5,
        0xff,
    ),
];

/// One opcode group: what the generated file holds of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The first byte it matches.
    pub opcode: u8,
    /// The byte of the instruction that holds the rest of the opcode.
    pub byte: u8,
    /// The mask applied to that byte.
    pub mask: u8,
    /// The opcode fragments it knows, in table order.
    pub opfrags: Vec<u8>,
}

/// The groups of `opcodes_txt`, in `opcode_offset[]`'s order.
pub fn groups(opcodes_txt: &str) -> Result<Vec<Group>, String> {
    // (opcode text, byte, mask)
    let mut insns: Vec<(String, u8, u8)> = Vec::new();
    for (n, line) in opcodes_txt.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let [opcode, _name, format] = fields[..] else {
            return Err(format!("line {}: not `opcode name format`", n + 1));
        };
        let base = format.split('_').next().unwrap_or(format);
        let &(_, byte, mask) = TYPES
            .iter()
            .find(|(formats, _, _)| formats.contains(&base))
            .ok_or_else(|| format!("line {}: unknown format {format}", n + 1))?;
        if opcode.len() < 2 || !opcode.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("line {}: bad opcode {opcode}", n + 1));
        }
        insns.push((opcode.to_string(), byte, mask));
    }
    insns.sort_by(|a, b| a.0.cmp(&b.0));
    let hex = |s: &str| u8::from_str_radix(s, 16).map_err(|e| format!("{s}: {e}"));
    let mut groups: Vec<Group> = Vec::new();
    // The multi-byte opcodes, then the one-byte ones, as upstream adds them to groups.
    for one_byte in [false, true] {
        for (opcode, byte, mask) in insns.iter().filter(|i| (i.1 == 0) == one_byte) {
            let first = hex(&opcode[..2])?;
            let frag = if *byte == 0 {
                hex(opcode)?
            } else {
                hex(&opcode[2..])?
            };
            match groups.last_mut() {
                Some(g) if g.opcode == first || g.byte == 0 => g.opfrags.push(frag),
                _ => groups.push(Group {
                    opcode: first,
                    byte: *byte,
                    mask: *mask,
                    opfrags: vec![frag],
                }),
            }
        }
    }
    // What `is_known_insn()` of the Rust side relies on: the byte a group looks at is within
    // every instruction of that first byte.
    for g in &groups {
        let len = ((((g.opcode as u32) + 64) >> 7) + 1) << 1;
        if g.byte != 0 && u32::from(g.byte) >= len {
            return Err(format!(
                "group {:#04x} looks at byte {} of a {len}-byte instruction",
                g.opcode, g.byte
            ));
        }
    }
    Ok(groups)
}

/// The generated `opcodes.rs` for `opcodes_txt`.
pub fn generate(opcodes_txt: &str) -> Result<String, String> {
    let groups = groups(opcodes_txt)?;
    let mut out = String::new();
    out += "// SPDX-License-Identifier: GPL-2.0\n\n";
    out += "//! The opcode groups of the kernel's s390 disassembler, for `is_known_insn()`.\n";
    out += "//!\n";
    out += "//! Generated from `arch/s390/tools/opcodes.txt` by `arch/s390/tools/gen_opcode_table.rs`;\n";
    out += "//! do not edit. Regenerate with\n";
    out += "//! `cargo run -p rkprobes-s390-kprobes --bin gen-opcode-table -- --write`.\n\n";
    out += "use super::insn::OpcodeGroup;\n\n";
    out +=
        "/// The groups of `opcode_offset[]`, in its order: a first byte, the byte and mask that\n";
    out += "/// give the rest of the opcode, the fragments known. The last is the group of the one-byte\n";
    out += "/// opcodes, which `find_insn()` falls back to.\n";
    out += "#[rustfmt::skip]\n";
    let _ = writeln!(
        out,
        "pub static OPCODE_GROUPS: [OpcodeGroup; {}] = [",
        groups.len()
    );
    for g in &groups {
        let _ = writeln!(
            out,
            "    OpcodeGroup {{ opcode: {:#04x}, byte: {}, mask: {:#04x}, opfrags: &[",
            g.opcode, g.byte, g.mask
        );
        for chunk in g.opfrags.chunks(12) {
            let line: Vec<String> = chunk.iter().map(|f| format!("{f:#04x},")).collect();
            let _ = writeln!(out, "        {}", line.join(" "));
        }
        out += "    ] },\n";
    }
    out += "];\n";
    Ok(out)
}
