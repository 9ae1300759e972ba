// SPDX-License-Identifier: GPL-2.0

//! Generator of the Rust x86 instruction attribute tables from `x86-opcode-map.txt`.
//!
//! Constraints: a host tool (it uses `std`); its output must be byte-for-byte stable, because a
//! test regenerates the tables from the kernel tree's map and compares them with the checked-in
//! `arch/x86/lib/insn_decoder/tables.rs`.
//!
//! It plays the role of `arch/x86/tools/gen-insn-attr-x86.awk` and reads the map with the same
//! rules, so each entry gets the same attribute word the C tables hold (a test compares the
//! two). The output is Rust: sparse `(opcode, attribute)` lists expanded into full `static`
//! arrays at compile time, and the three index arrays (escape, group and AVX tables by last
//! prefix) that the lookups in `attr.rs` walk.

use std::collections::BTreeMap;
use std::fmt::Write as _;

const PFX_OFFS: u32 = 0;
const ESC_OFFS: u32 = 5;
const GRP_OFFS: u32 = 7;
const IMM_OFFS: u32 = 12;
const FLAG_OFFS: u32 = 15;

const MODRM: u32 = 1 << FLAG_OFFS;
const FORCE64: u32 = 1 << (FLAG_OFFS + 1);
const SCNDIMM: u32 = 1 << (FLAG_OFFS + 2);
const MOFFSET: u32 = 1 << (FLAG_OFFS + 3);
const VARIANT: u32 = 1 << (FLAG_OFFS + 4);
const VEXOK: u32 = 1 << (FLAG_OFFS + 5);
const VEXONLY: u32 = 1 << (FLAG_OFFS + 6);
const EVEXONLY: u32 = 1 << (FLAG_OFFS + 7);
const NO_REX2: u32 = 1 << (FLAG_OFFS + 8);
const REX2_VARIANT: u32 = 1 << (FLAG_OFFS + 9);
const EVEX_SCALABLE: u32 = 1 << (FLAG_OFFS + 10);

const FLAG_NAMES: [(u32, &str); 10] = [
    (FORCE64, "FORCE64"),
    (SCNDIMM, "SCNDIMM"),
    (MOFFSET, "MOFFSET"),
    (VARIANT, "VARIANT"),
    (VEXOK, "VEXOK"),
    (VEXONLY, "VEXONLY"),
    (EVEXONLY, "EVEXONLY"),
    (NO_REX2, "NO_REX2"),
    (REX2_VARIANT, "REX2_VARIANT"),
    (EVEX_SCALABLE, "EVEX_SCALABLE"),
];

const PREFIX_NAMES: [&str; 17] = [
    "",
    "PFX_OPNDSZ",
    "PFX_REPE",
    "PFX_REPNE",
    "PFX_LOCK",
    "PFX_CS",
    "PFX_DS",
    "PFX_ES",
    "PFX_FS",
    "PFX_GS",
    "PFX_SS",
    "PFX_ADDRSZ",
    "PFX_REX",
    "PFX_VEX2",
    "PFX_VEX3",
    "PFX_EVEX",
    "PFX_REX2",
];

const IMM_NAMES: [&str; 8] = [
    "",
    "IMM_BYTE",
    "IMM_WORD",
    "IMM_DWORD",
    "IMM_QWORD",
    "IMM_PTR",
    "IMM_VWORD32",
    "IMM_VWORD",
];

const ESC_COUNT: u32 = 4;
const GRP_COUNT: u32 = 32;
const AVX_MAP_COUNT: u32 = 32;
const VARIANTS: usize = 4;

fn imm_attr(kind: u32) -> u32 {
    kind << IMM_OFFS
}

/// The attribute an operand code such as `Ib` or `Ov` stands for, if it is an immediate.
fn immediate_operand(operand: &str) -> Option<u32> {
    Some(match operand {
        "Ib" | "Jb" | "Lx" => imm_attr(1),
        "Iw" => imm_attr(2),
        "Id" => imm_attr(3),
        "Iq" => imm_attr(4),
        "Ap" => imm_attr(5),
        "Iz" | "Jz" => imm_attr(6),
        "Iv" => imm_attr(7),
        "Ob" | "Ov" => MOFFSET,
        _ => return None,
    })
}

fn prefix_attr(mnemonic: &str) -> Option<u32> {
    let id = match mnemonic {
        "Operand-Size" => 1,
        "REP/REPE" | "XRELEASE" => 2,
        "REPNE" | "XACQUIRE" => 3,
        "LOCK" => 4,
        "SEG=CS" => 5,
        "SEG=DS" => 6,
        "SEG=ES" => 7,
        "SEG=FS" => 8,
        "SEG=GS" => 9,
        "SEG=SS" => 10,
        "Address-Size" => 11,
        "VEX+1byte" => 13,
        "VEX+2byte" => 14,
        "EVEX" => 15,
        "REX2" => 16,
        _ => return None,
    };
    Some(id << PFX_OFFS)
}

/// `^[IJAOL][a-z]`: the operand codes that denote immediates.
fn looks_immediate(operand: &str) -> bool {
    let b = operand.as_bytes();
    b.len() >= 2 && b"IJAOL".contains(&b[0]) && b[1].is_ascii_lowercase()
}

/// `^([CDEGMNPQRSUVW/][a-z]+|NTA|T[012])`: the operand codes that imply a ModRM byte.
fn looks_modrm(operand: &str) -> bool {
    let b = operand.as_bytes();
    if b.len() >= 2 && b"CDEGMNPQRSUVW/".contains(&b[0]) && b[1].is_ascii_lowercase() {
        return true;
    }
    operand.starts_with("NTA")
        || (b.len() >= 2 && b[0] == b'T' && matches!(b[1], b'0' | b'1' | b'2'))
}

/// `^((REX(\.[XRWB]+)+)|(REX$))`: the REX prefix mnemonics of the one-byte table.
fn is_rex_mnemonic(mnemonic: &str) -> bool {
    let Some(rest) = mnemonic.strip_prefix("REX") else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let b = rest.as_bytes();
    if b[0] != b'.' {
        return false;
    }
    let mut i = 0;
    let mut groups = 0;
    while i < b.len() && b[i] == b'.' {
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b"XRWB".contains(&b[j]) {
            j += 1;
        }
        if j == start {
            break;
        }
        groups += 1;
        i = j;
    }
    groups > 0
}

/// `^Grp[0-9A-Za-z]+`.
fn group_name(mnemonic: &str) -> Option<&str> {
    let rest = mnemonic.strip_prefix("Grp")?;
    let n = rest
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    (n > 0).then_some(mnemonic)
}

/// Which kind of table is being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An opcode table with a `Referrer` (escape id) and/or an `AVXcode` (map number).
    Opcode {
        escape: Option<u32>,
        avx: Option<u32>,
    },
    /// A ModRM.reg group table.
    Group(u32),
}

/// One table as the map describes it, with its last-prefix variants.
struct Table {
    title: String,
    name: String,
    kind: Kind,
    variants: [BTreeMap<u32, u32>; VARIANTS],
}

struct Parser {
    escapes: BTreeMap<String, u32>,
    groups: BTreeMap<String, u32>,
    group_order: Vec<String>,
    tables: Vec<Table>,
    current: Option<Table>,
    title: String,
    escape: Option<u32>,
    avx: Option<u32>,
    group: Option<u32>,
}

impl Parser {
    fn new() -> Self {
        Parser {
            escapes: BTreeMap::new(),
            groups: BTreeMap::new(),
            group_order: Vec::new(),
            tables: Vec::new(),
            current: None,
            title: String::new(),
            escape: None,
            avx: None,
            group: None,
        }
    }

    fn start(&mut self, name: String, kind: Kind) {
        self.current = Some(Table {
            title: self.title.clone(),
            name,
            kind,
            variants: Default::default(),
        });
    }

    fn line(&mut self, nr: usize, line: &str) -> Result<(), String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let err = |msg: String| Err(format!("x86-opcode-map.txt:{nr}: {msg}"));
        let Some(&first) = fields.first() else {
            return Ok(());
        };
        match first {
            "Table:" => {
                if self.current.is_some() {
                    return err("Table: before EndTable".into());
                }
                self.title = line.trim_end().to_string();
            }
            // An empty referrer: the primary table or an AVX-only map.
            "Referrer:" if fields.len() == 1 => {}
            "Referrer:" => {
                let reference: String = fields[1..].concat();
                let Some(&id) = self.escapes.get(&reference) else {
                    return err(format!("unknown referrer {reference}"));
                };
                self.escape = Some(id);
                self.start(
                    format!("ESCAPE_TABLE_{id}"),
                    Kind::Opcode {
                        escape: Some(id),
                        avx: None,
                    },
                );
            }
            "AVXcode:" => {
                if fields.len() > 1 {
                    let Ok(id) = fields[1].parse::<u32>() else {
                        return err(format!("bad AVXcode {}", fields[1]));
                    };
                    if id >= AVX_MAP_COUNT {
                        return err(format!("AVXcode {id} out of range"));
                    }
                    self.avx = Some(id);
                    match &mut self.current {
                        Some(table) => {
                            table.kind = Kind::Opcode {
                                escape: self.escape,
                                avx: Some(id),
                            }
                        }
                        None => self.start(
                            format!("AVX_TABLE_{id}"),
                            Kind::Opcode {
                                escape: None,
                                avx: Some(id),
                            },
                        ),
                    }
                }
                if self.avx.is_none() && self.escape.is_none() {
                    self.start(
                        "PRIMARY_TABLE".into(),
                        Kind::Opcode {
                            escape: None,
                            avx: None,
                        },
                    );
                }
            }
            "GrpTable:" => {
                let Some(name) = fields.get(1) else {
                    return err("GrpTable: without a name".into());
                };
                let Some(&id) = self.groups.get(*name) else {
                    return err(format!("no group {name}"));
                };
                self.title = line.trim_end().to_string();
                self.group = Some(id);
                self.start(format!("GROUP_TABLE_{id}"), Kind::Group(id));
            }
            "EndTable" => {
                if let Some(table) = self.current.take() {
                    self.tables.push(table);
                }
                self.escape = None;
                self.avx = None;
                self.group = None;
            }
            _ if is_opcode_line(first) => self
                .opcode_line(&fields)
                .map_err(|msg| format!("x86-opcode-map.txt:{nr}: {msg}"))?,
            _ => {}
        }
        Ok(())
    }

    fn opcode_line(&mut self, fields: &[&str]) -> Result<(), String> {
        let Some(table) = self.current.as_mut() else {
            return Err("opcode outside a table".into());
        };
        let index_text = &fields[0][..fields[0].len() - 1];
        let index =
            u32::from_str_radix(index_text, 16).map_err(|_| format!("bad index {index_text}"))?;
        let limit = if matches!(table.kind, Kind::Group(_)) {
            8
        } else {
            256
        };
        if index >= limit {
            return Err(format!("index {index_text} out of range"));
        }
        if table.variants[0].contains_key(&index) {
            return Err(format!("redefined {index_text} in {}", table.name));
        }

        if fields.get(1) == Some(&"escape") {
            if fields.get(2) != Some(&"#") {
                return Err("escape without a name".into());
            }
            let reference: String = fields[3..].concat();
            if self.escapes.contains_key(&reference) {
                return Err(format!("escape {reference} redefined"));
            }
            let id = self.escapes.len() as u32 + 1;
            if id >= ESC_COUNT {
                return Err("too many escapes".into());
            }
            self.escapes.insert(reference, id);
            table.variants[0].insert(index, id << ESC_OFFS);
            return Ok(());
        }

        let mut variant = false;
        let mut i = 1;
        while i < fields.len() {
            let mnemonic = fields[i];
            i += 1;
            let mut flags = 0u32;
            let mut ext = "";
            if let Some(operands) = fields.get(i).filter(|f| {
                f.as_bytes()
                    .first()
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'/')
            }) {
                i += 1;
                flags = convert_operands(operands)?;
            }
            if let Some(e) = fields.get(i).filter(|f| f.starts_with('(')) {
                ext = e;
                i += 1;
            }
            if fields.get(i) == Some(&"|") {
                i += 1;
            } else if i + 1 < fields.len() {
                return Err(format!("{} is not a separator", fields[i]));
            }

            if let Some(name) = group_name(mnemonic) {
                let id = match self.groups.get(name) {
                    Some(&id) => id,
                    None => {
                        let id = self.groups.len() as u32 + 1;
                        if id >= GRP_COUNT {
                            return Err("too many groups".into());
                        }
                        self.groups.insert(name.to_string(), id);
                        self.group_order.push(name.to_string());
                        id
                    }
                };
                flags |= (id << GRP_OFFS) | MODRM;
            }
            if ext.contains("(d64)") || ext.contains("(f64)") {
                flags |= FORCE64;
            }
            if ext.contains("(!REX2)") {
                flags |= NO_REX2;
            }
            if is_rex_mnemonic(mnemonic) {
                flags |= 12 << PFX_OFFS;
            }
            if mnemonic.starts_with("ESC") {
                flags |= MODRM;
            }
            if ext.contains("(ev)") {
                flags |= VEXOK | EVEXONLY;
            } else if ext.contains("(es)") {
                flags |= VEXOK | EVEXONLY | EVEX_SCALABLE;
            } else if ext.contains("(v)") {
                flags |= VEXOK | VEXONLY;
            } else if ext.contains("(v1)") || mnemonic.starts_with(['v', 'k']) {
                flags |= VEXOK;
            }
            if ext.contains("(Prefix)") {
                flags |= prefix_attr(mnemonic).ok_or(format!("unknown prefix {mnemonic}"))?;
            }
            if flags == 0 {
                continue;
            }
            let lp1 = ext.contains("(66)") || ext.contains("(!F3)");
            let lp2 = ext.contains("(F3)");
            let lp3 = ext.contains("(F2)") || ext.contains("(!F3)") || ext.contains("(66&F2)");
            for (n, hit) in [(1, lp1), (2, lp2), (3, lp3)] {
                if hit {
                    *table.variants[n].entry(index).or_insert(0) |= flags;
                    variant = true;
                }
            }
            if ext.contains("(REX2)") {
                *table.variants[0].entry(index).or_insert(0) |= REX2_VARIANT;
            }
            if !(ext.contains("(66)") || ext.contains("(F2)") || ext.contains("(F3)")) {
                *table.variants[0].entry(index).or_insert(0) |= flags;
            }
        }
        if variant {
            *table.variants[0].entry(index).or_insert(0) |= VARIANT;
        }
        Ok(())
    }
}

/// `^[0-9a-f]+:`.
fn is_opcode_line(first: &str) -> bool {
    let hex = first
        .bytes()
        .take_while(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        .count();
    hex > 0 && first.as_bytes().get(hex) == Some(&b':') && hex + 1 == first.len()
}

fn convert_operands(operands: &str) -> Result<u32, String> {
    let mut immediate = 0u32;
    let mut modrm = 0u32;
    for operand in operands.split(',') {
        if looks_immediate(operand) {
            let attr = immediate_operand(operand).ok_or(format!("unknown immediate {operand}"))?;
            if immediate != 0 {
                if operand != "Ib" {
                    return Err("second immediate is not Ib".into());
                }
                immediate |= SCNDIMM;
            } else {
                immediate = attr;
            }
        } else if looks_modrm(operand) {
            modrm = MODRM;
        }
    }
    Ok(immediate | modrm)
}

/// Spells an attribute word with the constructors and flags of `attr.rs`.
fn spell(attr: u32) -> String {
    let mut terms: Vec<String> = Vec::new();
    let pfx = (attr >> PFX_OFFS) & 0x1f;
    if pfx != 0 {
        terms.push(format!("pfx({})", PREFIX_NAMES[pfx as usize]));
    }
    let esc = (attr >> ESC_OFFS) & 3;
    if esc != 0 {
        terms.push(format!("esc({esc})"));
    }
    let grp = (attr >> GRP_OFFS) & 0x1f;
    if grp != 0 {
        terms.push(format!("grp({grp})"));
    } else if attr & MODRM != 0 {
        terms.push("MODRM".into());
    }
    let imm = (attr >> IMM_OFFS) & 7;
    if imm != 0 {
        terms.push(format!("imm({})", IMM_NAMES[imm as usize]));
    }
    for (flag, name) in FLAG_NAMES {
        if attr & flag != 0 {
            terms.push(name.into());
        }
    }
    terms.join(" | ")
}

const VARIANT_SUFFIX: [&str; VARIANTS] = ["", "_1", "_2", "_3"];
const VARIANT_DOC: [&str; VARIANTS] = [
    "",
    ", last prefix 66",
    ", last prefix f3",
    ", last prefix f2",
];

/// Generates the Rust tables file from the text of `x86-opcode-map.txt`.
pub fn generate(map: &str) -> Result<String, String> {
    let mut parser = Parser::new();
    for (nr, line) in map.lines().enumerate() {
        if nr == 0 {
            continue;
        }
        parser.line(nr + 1, line)?;
    }
    if parser.current.is_some() {
        return Err("x86-opcode-map.txt: missing EndTable at the end".into());
    }

    let mut out = String::new();
    out.push_str(
        "// SPDX-License-Identifier: GPL-2.0\n\
         \n\
         //! x86 instruction attribute tables.\n\
         //!\n\
         //! Generated from `arch/x86/lib/x86-opcode-map.txt` by `arch/x86/tools/gen_insn_tables.rs`;\n\
         //! do not edit. Regenerate with\n\
         //! `cargo run -p rkprobes-x86-insn --bin gen-insn-tables -- --write`.\n\
         \n\
         use super::attr::*;\n",
    );

    let mut escape_index = vec![[None::<String>, None, None, None]; ESC_COUNT as usize];
    let mut group_index = vec![[None::<String>, None, None, None]; GRP_COUNT as usize];
    let mut avx_index = vec![[None::<String>, None, None, None]; AVX_MAP_COUNT as usize];

    for table in &parser.tables {
        let group = matches!(table.kind, Kind::Group(_));
        for (v, entries) in table.variants.iter().enumerate() {
            if entries.is_empty() {
                continue;
            }
            let name = format!("{}{}", table.name, VARIANT_SUFFIX[v]);
            let (ty, ctor) = if group {
                ("GroupTable", "group_table")
            } else {
                ("OpcodeTable", "opcode_table")
            };
            let title = table.title.trim_start_matches("Table: ");
            let title = title.trim_start_matches("GrpTable: ");
            let mut chars = title.chars();
            let title: String = chars
                .next()
                .map(|c| c.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
                .collect();
            let _ = write!(
                out,
                "\n/// {title}{}.\n#[rustfmt::skip]\npub(super) static {name}: {ty} = {ctor}(&[\n",
                VARIANT_DOC[v]
            );
            for (index, attr) in entries {
                let idx = if group {
                    format!("{index}")
                } else {
                    format!("0x{index:02x}")
                };
                let _ = writeln!(out, "    ({idx}, {}),", spell(*attr));
            }
            out.push_str("]);\n");
            match table.kind {
                Kind::Group(id) => group_index[id as usize][v] = Some(name),
                Kind::Opcode { escape, avx } => {
                    if let Some(e) = escape {
                        escape_index[e as usize][v] = Some(name.clone());
                    }
                    if let Some(a) = avx {
                        avx_index[a as usize][v] = Some(name);
                    }
                }
            }
        }
    }

    let index = |out: &mut String,
                 doc: &str,
                 name: &str,
                 ty: &str,
                 count: &str,
                 rows: &[[Option<String>; VARIANTS]]| {
        let _ = write!(
            out,
            "\n/// {doc}\n#[rustfmt::skip]\npub(super) static {name}: [[Option<&{ty}>; VARIANT_COUNT]; {count}] = [\n"
        );
        for row in rows {
            let cells: Vec<String> = row
                .iter()
                .map(|c| match c {
                    Some(n) => format!("Some(&{n})"),
                    None => "None".into(),
                })
                .collect();
            let _ = writeln!(out, "    [{}],", cells.join(", "));
        }
        out.push_str("];\n");
    };
    index(
        &mut out,
        "Escape tables by escape id and last prefix.",
        "ESCAPE_TABLES",
        "OpcodeTable",
        "ESC_COUNT",
        &escape_index,
    );
    index(
        &mut out,
        "Group tables by group id and last prefix.",
        "GROUP_TABLES",
        "GroupTable",
        "GRP_COUNT",
        &group_index,
    );
    index(
        &mut out,
        "VEX/EVEX opcode tables by map and SIMD prefix.",
        "AVX_TABLES",
        "OpcodeTable",
        "AVX_MAP_COUNT",
        &avx_index,
    );

    out.push_str("\n/// Group names by group id, for diagnostics.\n#[rustfmt::skip]\npub(super) static GROUP_NAMES: [&str; GRP_COUNT] = [\n    \"\",\n");
    for name in &parser.group_order {
        let _ = writeln!(out, "    \"{name}\",");
    }
    for _ in parser.group_order.len() + 1..GRP_COUNT as usize {
        out.push_str("    \"\",\n");
    }
    out.push_str("];\n");
    Ok(out)
}
