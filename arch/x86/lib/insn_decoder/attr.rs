// SPDX-License-Identifier: GPL-2.0

//! Instruction attribute words: the bit layout of the generated tables and their lookups.
//!
//! Constraints: `core` only, no allocation, no panics; every lookup is total over its input.
//!
//! An attribute is a `u32` laid out as the C decoder's `insn_attr_t` (see
//! `arch/x86/include/asm/inat.h`), so the generated tables can be compared entry by entry with
//! the C tables: prefix id (5 bits), escape id (2 bits), group id (5 bits), immediate kind
//! (3 bits), then one bit per flag.

use super::tables;

/// One attribute word.
pub type Attr = u32;

/// A 256-entry attribute table indexed by an opcode byte.
pub type OpcodeTable = [Attr; 256];

/// An 8-entry attribute table indexed by the `reg` field of ModRM.
pub type GroupTable = [Attr; 8];

/// Last-prefix id of the operand-size prefix `0x66`.
pub const PFX_OPNDSZ: u32 = 1;
/// Last-prefix id of `0xf3` (REP/REPE, XRELEASE).
pub const PFX_REPE: u32 = 2;
/// Last-prefix id of `0xf2` (REPNE, XACQUIRE).
pub const PFX_REPNE: u32 = 3;
/// Prefix id of `0xf0`.
pub const PFX_LOCK: u32 = 4;
/// Prefix id of the CS segment override `0x2e`.
pub const PFX_CS: u32 = 5;
/// Prefix id of the DS segment override `0x3e`.
pub const PFX_DS: u32 = 6;
/// Prefix id of the ES segment override `0x26`.
pub const PFX_ES: u32 = 7;
/// Prefix id of the FS segment override `0x64`.
pub const PFX_FS: u32 = 8;
/// Prefix id of the GS segment override `0x65`.
pub const PFX_GS: u32 = 9;
/// Prefix id of the SS segment override `0x36`.
pub const PFX_SS: u32 = 10;
/// Prefix id of the address-size prefix `0x67`.
pub const PFX_ADDRSZ: u32 = 11;
/// Prefix id of a REX prefix `0x40..=0x4f`.
pub const PFX_REX: u32 = 12;
/// Prefix id of the two-byte VEX prefix `0xc5`.
pub const PFX_VEX2: u32 = 13;
/// Prefix id of the three-byte VEX prefix `0xc4`.
pub const PFX_VEX3: u32 = 14;
/// Prefix id of the EVEX prefix `0x62`.
pub const PFX_EVEX: u32 = 15;
/// Prefix id of the REX2 prefix `0xd5`.
pub const PFX_REX2: u32 = 16;

/// Highest last-prefix id (`66`, `f3`, `f2` select table variants 1, 2 and 3).
pub const LSTPFX_MAX: u32 = 3;
/// Highest legacy prefix id.
pub const LGCPFX_MAX: u32 = 11;

/// Immediate kind: one byte.
pub const IMM_BYTE: u32 = 1;
/// Immediate kind: two bytes.
pub const IMM_WORD: u32 = 2;
/// Immediate kind: four bytes.
pub const IMM_DWORD: u32 = 3;
/// Immediate kind: eight bytes.
pub const IMM_QWORD: u32 = 4;
/// Immediate kind: a far pointer, `ptr16:16` or `ptr16:32`.
pub const IMM_PTR: u32 = 5;
/// Immediate kind: operand-sized, at most four bytes (`Iz`, `Jz`).
pub const IMM_VWORD32: u32 = 6;
/// Immediate kind: operand-sized, up to eight bytes (`Iv`).
pub const IMM_VWORD: u32 = 7;

const PFX_OFFS: u32 = 0;
const PFX_BITS: u32 = 5;
const PFX_MASK: u32 = ((1 << PFX_BITS) - 1) << PFX_OFFS;
const ESC_OFFS: u32 = PFX_OFFS + PFX_BITS;
const ESC_BITS: u32 = 2;
const ESC_MASK: u32 = ((1 << ESC_BITS) - 1) << ESC_OFFS;
const GRP_OFFS: u32 = ESC_OFFS + ESC_BITS;
const GRP_BITS: u32 = 5;
const GRP_MASK: u32 = ((1 << GRP_BITS) - 1) << GRP_OFFS;
const IMM_OFFS: u32 = GRP_OFFS + GRP_BITS;
const IMM_BITS: u32 = 3;
const IMM_MASK: u32 = ((1 << IMM_BITS) - 1) << IMM_OFFS;
const FLAG_OFFS: u32 = IMM_OFFS + IMM_BITS;

/// Number of escape ids (the id is 2 bits wide).
pub const ESC_COUNT: usize = 1 << ESC_BITS;
/// Number of group ids (the id is 5 bits wide).
pub const GRP_COUNT: usize = 1 << GRP_BITS;
/// Number of VEX/EVEX opcode maps the `m` field can name.
pub const AVX_MAP_COUNT: usize = 32;
/// Number of last-prefix variants of a table (none, `66`, `f3`, `f2`).
pub const VARIANT_COUNT: usize = LSTPFX_MAX as usize + 1;

/// The opcode takes a ModRM byte.
pub const MODRM: Attr = 1 << FLAG_OFFS;
/// The operand size is 64 bits in 64-bit mode (`d64`, `f64`).
pub const FORCE64: Attr = 1 << (FLAG_OFFS + 1);
/// A second one-byte immediate follows the first.
pub const SCNDIMM: Attr = 1 << (FLAG_OFFS + 2);
/// The operand is a memory offset of address size (`Ob`, `Ov`).
pub const MOFFSET: Attr = 1 << (FLAG_OFFS + 3);
/// The attribute depends on the last legacy prefix: look in a variant table.
pub const VARIANT: Attr = 1 << (FLAG_OFFS + 4);
/// The opcode accepts a VEX or EVEX prefix.
pub const VEXOK: Attr = 1 << (FLAG_OFFS + 5);
/// The opcode exists only with a VEX prefix.
pub const VEXONLY: Attr = 1 << (FLAG_OFFS + 6);
/// The opcode exists only with an EVEX prefix.
pub const EVEXONLY: Attr = 1 << (FLAG_OFFS + 7);
/// The opcode does not accept a REX2 prefix.
pub const NO_REX2: Attr = 1 << (FLAG_OFFS + 8);
/// The opcode has a REX2 variant (e.g. JMPABS).
pub const REX2_VARIANT: Attr = 1 << (FLAG_OFFS + 9);
/// EVEX.W and EVEX.pp select the operand size.
pub const EVEX_SCALABLE: Attr = 1 << (FLAG_OFFS + 10);

/// Builds the prefix-id field of an attribute.
pub const fn pfx(id: u32) -> Attr {
    (id << PFX_OFFS) & PFX_MASK
}

/// Builds the escape-id field of an attribute.
pub const fn esc(id: u32) -> Attr {
    (id << ESC_OFFS) & ESC_MASK
}

/// Builds the group-id field of an attribute; a group always has a ModRM byte.
pub const fn grp(id: u32) -> Attr {
    ((id << GRP_OFFS) & GRP_MASK) | MODRM
}

/// Builds the immediate-kind field of an attribute.
pub const fn imm(kind: u32) -> Attr {
    (kind << IMM_OFFS) & IMM_MASK
}

/// Expands a sparse `(opcode, attribute)` list into a full opcode table at compile time.
pub const fn opcode_table(entries: &[(u8, Attr)]) -> OpcodeTable {
    let mut table = [0; 256];
    let mut i = 0;
    while i < entries.len() {
        table[entries[i].0 as usize] = entries[i].1;
        i += 1;
    }
    table
}

/// Expands a sparse `(reg, attribute)` list into a full group table at compile time.
pub const fn group_table(entries: &[(u8, Attr)]) -> GroupTable {
    let mut table = [0; 8];
    let mut i = 0;
    while i < entries.len() {
        table[(entries[i].0 & 7) as usize] = entries[i].1;
        i += 1;
    }
    table
}

/// Returns the prefix id of `attr`.
pub const fn prefix_id(attr: Attr) -> u32 {
    (attr & PFX_MASK) >> PFX_OFFS
}

/// Tells whether `attr` belongs to a legacy prefix byte.
pub const fn is_legacy_prefix(attr: Attr) -> bool {
    let id = prefix_id(attr);
    id != 0 && id <= LGCPFX_MAX
}

/// Returns the last-prefix id (0 to 3) that a prefix byte with `attr` selects.
pub const fn last_prefix_id(attr: Attr) -> u32 {
    let id = prefix_id(attr);
    if id > LSTPFX_MAX {
        0
    } else {
        id
    }
}

/// Returns the escape id of `attr`, 0 if the opcode is not an escape.
pub const fn escape_id(attr: Attr) -> usize {
    ((attr & ESC_MASK) >> ESC_OFFS) as usize
}

/// Returns the group id of `attr`, 0 if the opcode is not a group.
pub const fn group_id(attr: Attr) -> usize {
    ((attr & GRP_MASK) >> GRP_OFFS) as usize
}

/// Returns the immediate kind of `attr`, 0 if it has none.
pub const fn immediate_kind(attr: Attr) -> u32 {
    (attr & IMM_MASK) >> IMM_OFFS
}

/// Tells whether `attr` has every bit of `flags`.
pub const fn has(attr: Attr, flags: Attr) -> bool {
    attr & flags == flags
}

/// Returns the attribute of a one-byte opcode (or of a prefix byte).
pub fn primary(opcode: u8) -> Attr {
    tables::PRIMARY_TABLE[usize::from(opcode)]
}

/// Returns the attribute of `opcode` in the escape table named by `esc_attr`.
///
/// `lpfx` is the last-prefix id (0 to 3) choosing the table variant, as upstream's
/// `inat_get_escape_attribute` does.
pub fn escaped(opcode: u8, lpfx: u32, esc_attr: Attr) -> Attr {
    let variants = &tables::ESCAPE_TABLES[escape_id(esc_attr)];
    let Some(base) = variants[0] else {
        return 0;
    };
    let attr = base[usize::from(opcode)];
    if has(attr, VARIANT) && lpfx != 0 {
        return match variants.get(lpfx as usize).copied().flatten() {
            Some(table) => table[usize::from(opcode)],
            None => 0,
        };
    }
    attr
}

/// Returns the attribute of a group member selected by `modrm`, merged with the group's own.
pub fn grouped(modrm: u8, lpfx: u32, grp_attr: Attr) -> Attr {
    let common = grp_attr & !GRP_MASK;
    let variants = &tables::GROUP_TABLES[group_id(grp_attr)];
    let Some(base) = variants[0] else {
        return common;
    };
    let reg = usize::from((modrm >> 3) & 7);
    let attr = base[reg];
    if has(attr, VARIANT) && lpfx != 0 {
        return match variants.get(lpfx as usize).copied().flatten() {
            Some(table) => table[reg] | common,
            None => common,
        };
    }
    attr | common
}

/// Returns the attribute of `opcode` in VEX/EVEX map `map` with SIMD prefix `pp`.
pub fn avx(opcode: u8, map: u8, pp: u8) -> Attr {
    let Some(variants) = tables::AVX_TABLES.get(usize::from(map)) else {
        return 0;
    };
    let Some(base) = variants[0] else {
        return 0;
    };
    let attr = base[usize::from(opcode)];
    if group_id(attr) == 0 && pp != 0 {
        return match variants.get(usize::from(pp)).copied().flatten() {
            Some(table) => table[usize::from(opcode)],
            None => 0,
        };
    }
    attr
}
