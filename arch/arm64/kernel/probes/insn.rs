// SPDX-License-Identifier: GPL-2.0

//! The A64 encoding predicates the kprobes decisions use.
//!
//! Each `is_*` function stands for the `aarch64_insn_is_*()` of
//! `arch/arm64/include/asm/insn.h` of the same name (generated there by
//! `__AARCH64_INSN_FUNCS(abbr, mask, val)`): the word with `mask` applied equals `val`. The
//! masks and values are the encodings of the Arm Architecture Reference Manual's A64
//! instruction index, as upstream spells them.

/// Defines `pub const fn $name(code: u32) -> bool` as `(code & $mask) == $val`.
macro_rules! insn_funcs {
    ($($name:ident, $c:literal, $mask:literal, $val:literal;)*) => {$(
        #[doc = concat!("`aarch64_insn_is_", $c, "()`: `(code & ", stringify!($mask),
                        ") == ", stringify!($val), "`.")]
        #[inline]
        pub const fn $name(code: u32) -> bool {
            code & $mask == $val
        }
    )*};
}

insn_funcs! {
    is_class_branch_sys, "class_branch_sys", 0x1c00_0000, 0x1400_0000;
    is_adr, "adr", 0x9f00_0000, 0x1000_0000;
    is_adrp, "adrp", 0x9f00_0000, 0x9000_0000;
    is_prfm_lit, "prfm_lit", 0xff00_0000, 0xd800_0000;
    is_ldr_lit, "ldr_lit", 0xbf00_0000, 0x1800_0000;
    is_ldrsw_lit, "ldrsw_lit", 0xff00_0000, 0x9800_0000;
    is_exclusive, "exclusive", 0x3f80_0000, 0x0800_0000;
    is_load_ex, "load_ex", 0x3f40_0000, 0x0840_0000;
    is_store_ex, "store_ex", 0x3f40_0000, 0x0800_0000;
    is_mops, "mops", 0x3b20_0c00, 0x1900_0400;
    is_b, "b", 0xfc00_0000, 0x1400_0000;
    is_bl, "bl", 0xfc00_0000, 0x9400_0000;
    is_cbz, "cbz", 0x7f00_0000, 0x3400_0000;
    is_cbnz, "cbnz", 0x7f00_0000, 0x3500_0000;
    is_tbz, "tbz", 0x7f00_0000, 0x3600_0000;
    is_tbnz, "tbnz", 0x7f00_0000, 0x3700_0000;
    is_bcond, "bcond", 0xff00_0000, 0x5400_0000;
    is_exception, "exception", 0xff00_0000, 0xd400_0000;
    is_hint, "hint", 0xffff_f01f, 0xd503_201f;
    is_br, "br", 0xffff_fc1f, 0xd61f_0000;
    is_br_auth, "br_auth", 0xfeff_f800, 0xd61f_0800;
    is_blr, "blr", 0xffff_fc1f, 0xd63f_0000;
    is_blr_auth, "blr_auth", 0xfeff_f800, 0xd63f_0800;
    is_ret, "ret", 0xffff_fc1f, 0xd65f_0000;
    is_ret_auth, "ret_auth", 0xffff_fbff, 0xd65f_0bff;
    is_eret, "eret", 0xffff_ffff, 0xd69f_03e0;
    is_eret_auth, "eret_auth", 0xffff_fbff, 0xd69f_0bff;
    is_mrs, "mrs", 0xfff0_0000, 0xd530_0000;
    is_msr_imm, "msr_imm", 0xfff8_f01f, 0xd500_401f;
    is_msr_reg, "msr_reg", 0xfff0_0000, 0xd510_0000;
}

/// `AARCH64_INSN_SPCLREG_DAIF`: the Op/CR field of `mrs xN, daif`.
pub const AARCH64_INSN_SPCLREG_DAIF: u32 = 0xda11;

/// The CRm:op2 fields (bits 11:5) of the hints [`is_steppable_hint`] accepts
/// (`enum aarch64_insn_hint_cr_op`): NOP, XPACLRI, PACIA1716, PACIB1716, PACIAZ, PACIASP,
/// PACIBZ, PACIBSP, BTI, BTI C, BTI J, BTI JC.
const STEPPABLE_HINTS: [u32; 12] = [
    0x00 << 5, // AARCH64_INSN_HINT_NOP
    0x07 << 5, // AARCH64_INSN_HINT_XPACLRI
    0x08 << 5, // AARCH64_INSN_HINT_PACIA_1716
    0x0a << 5, // AARCH64_INSN_HINT_PACIB_1716
    0x18 << 5, // AARCH64_INSN_HINT_PACIAZ
    0x19 << 5, // AARCH64_INSN_HINT_PACIASP
    0x1a << 5, // AARCH64_INSN_HINT_PACIBZ
    0x1b << 5, // AARCH64_INSN_HINT_PACIBSP
    0x20 << 5, // AARCH64_INSN_HINT_BTI
    0x22 << 5, // AARCH64_INSN_HINT_BTIC
    0x24 << 5, // AARCH64_INSN_HINT_BTIJ
    0x26 << 5, // AARCH64_INSN_HINT_BTIJC
];

/// `aarch64_insn_is_steppable_hint()`: a HINT that is safe to single-step out of line (NOP,
/// the PAC hints that sign or strip, and the BTI landing pads; not the AUT* hints, which can
/// fault, nor WFE/WFI/YIELD/SEV/ESB/PSB/TSB/CSDB/CLEARBHB).
#[inline]
pub fn is_steppable_hint(insn: u32) -> bool {
    if !is_hint(insn) {
        return false;
    }
    let op = insn & 0xfe0;
    STEPPABLE_HINTS.contains(&op)
}

/// `aarch64_insn_is_branch()`: b, bl, cbz/cbnz, tbz/tbnz, ret and its PAC forms, br, blr and
/// their PAC forms, b.cond.
#[inline]
pub const fn is_branch(insn: u32) -> bool {
    is_b(insn)
        || is_bl(insn)
        || is_cbz(insn)
        || is_cbnz(insn)
        || is_tbz(insn)
        || is_tbnz(insn)
        || is_ret(insn)
        || is_ret_auth(insn)
        || is_br(insn)
        || is_br_auth(insn)
        || is_blr(insn)
        || is_blr_auth(insn)
        || is_bcond(insn)
}

/// `aarch64_insn_is_adr_adrp()`.
#[inline]
pub const fn is_adr_adrp(insn: u32) -> bool {
    is_adr(insn) || is_adrp(insn)
}

/// `aarch64_insn_uses_literal()`: a PC-relative load or address (ldr/ldrsw literal, adr,
/// adrp, prfm literal).
#[inline]
pub const fn uses_literal(insn: u32) -> bool {
    is_ldr_lit(insn) || is_ldrsw_lit(insn) || is_adr_adrp(insn) || is_prfm_lit(insn)
}

/// `aarch64_insn_extract_system_reg()` (`arch/arm64/lib/insn.c`): the Op/CR fields (bits
/// 20:5) of an MRS or MSR.
#[inline]
pub const fn extract_system_reg(insn: u32) -> u32 {
    (insn & 0x1f_ffe0) >> 5
}
