// SPDX-License-Identifier: GPL-2.0

//! The LoongArch encodings the kprobes decisions and simulators use.
//!
//! `arch/loongarch/include/asm/inst.h`: the opcodes of its `enum reg*_op` (as `*_OP`
//! constants of the same name), the fields of the instruction formats of `union
//! loongarch_instruction` (one module per `struct reg*_format`, one function per bit field,
//! with the layout of the little-endian bit fields: the first field is the lowest), and the
//! predicates `is_pc_ins()`, `is_branch_ins()` and `is_break_ins()`. The values are those of
//! the LoongArch Reference Manual, volume 1, as upstream spells them. Every function is
//! `#[inline(always)]`: the simulators use them in the probe-hit path.

/// `break_op` (`enum reg0i15_op`).
pub const BREAK_OP: u32 = 0x54;

/// `b_op` (`enum reg0i26_op`).
pub const B_OP: u32 = 0x14;
/// `bl_op` (`enum reg0i26_op`).
pub const BL_OP: u32 = 0x15;

/// `pcaddi_op` (`enum reg1i20_op`).
pub const PCADDI_OP: u32 = 0x0c;
/// `pcalau12i_op` (`enum reg1i20_op`).
pub const PCALAU12I_OP: u32 = 0x0d;
/// `pcaddu12i_op` (`enum reg1i20_op`).
pub const PCADDU12I_OP: u32 = 0x0e;
/// `pcaddu18i_op` (`enum reg1i20_op`).
pub const PCADDU18I_OP: u32 = 0x0f;

/// `beqz_op` (`enum reg1i21_op`).
pub const BEQZ_OP: u32 = 0x10;
/// `bnez_op` (`enum reg1i21_op`).
pub const BNEZ_OP: u32 = 0x11;
/// `bceqz_op` (`enum reg1i21_op`; `bcnez_op` has the same value, bits 9:8 tell them apart).
pub const BCEQZ_OP: u32 = 0x12;

/// `llacqw_op` (`enum reg2_op`).
pub const LLACQW_OP: u32 = 0xe15e0;
/// `screlw_op` (`enum reg2_op`).
pub const SCRELW_OP: u32 = 0xe15e1;
/// `llacqd_op` (`enum reg2_op`).
pub const LLACQD_OP: u32 = 0xe15e2;
/// `screld_op` (`enum reg2_op`).
pub const SCRELD_OP: u32 = 0xe15e3;

/// `llw_op` (`enum reg2i14_op`).
pub const LLW_OP: u32 = 0x20;
/// `scw_op` (`enum reg2i14_op`).
pub const SCW_OP: u32 = 0x21;
/// `lld_op` (`enum reg2i14_op`).
pub const LLD_OP: u32 = 0x22;
/// `scd_op` (`enum reg2i14_op`).
pub const SCD_OP: u32 = 0x23;

/// `jirl_op` (`enum reg2i16_op`).
pub const JIRL_OP: u32 = 0x13;
/// `beq_op` (`enum reg2i16_op`).
pub const BEQ_OP: u32 = 0x16;
/// `bne_op` (`enum reg2i16_op`).
pub const BNE_OP: u32 = 0x17;
/// `blt_op` (`enum reg2i16_op`).
pub const BLT_OP: u32 = 0x18;
/// `bge_op` (`enum reg2i16_op`).
pub const BGE_OP: u32 = 0x19;
/// `bltu_op` (`enum reg2i16_op`).
pub const BLTU_OP: u32 = 0x1a;
/// `bgeu_op` (`enum reg2i16_op`).
pub const BGEU_OP: u32 = 0x1b;

/// `scq_op` (`enum reg3_op`).
pub const SCQ_OP: u32 = 0x70ae;
/// `amswapw_op` (`enum reg3_op`): the first of the atomic memory access opcodes.
pub const AMSWAPW_OP: u32 = 0x70c0;
/// `ammindbdu_op` (`enum reg3_op`): the last of the atomic memory access opcodes.
pub const AMMINDBDU_OP: u32 = 0x70e3;

/// Bits `shift..shift + width` of `word` (`width` below 32).
#[inline(always)]
const fn field(word: u32, shift: u32, width: u32) -> u32 {
    (word >> (shift & 31)) & ((1 << (width & 31)) - 1)
}

/// `struct reg0i15_format`: `immediate:15`, `opcode:17`.
pub mod reg0i15 {
    /// `reg0i15_format.immediate`.
    #[inline(always)]
    pub const fn immediate(word: u32) -> u32 {
        super::field(word, 0, 15)
    }
    /// `reg0i15_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 15
    }
}

/// `struct reg0i26_format`: `immediate_h:10`, `immediate_l:16`, `opcode:6`.
pub mod reg0i26 {
    /// `reg0i26_format.immediate_h`.
    #[inline(always)]
    pub const fn immediate_h(word: u32) -> u32 {
        super::field(word, 0, 10)
    }
    /// `reg0i26_format.immediate_l`.
    #[inline(always)]
    pub const fn immediate_l(word: u32) -> u32 {
        super::field(word, 10, 16)
    }
    /// `reg0i26_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 26
    }
}

/// `struct reg1i20_format`: `rd:5`, `immediate:20`, `opcode:7`.
pub mod reg1i20 {
    /// `reg1i20_format.rd`.
    #[inline(always)]
    pub const fn rd(word: u32) -> u32 {
        super::field(word, 0, 5)
    }
    /// `reg1i20_format.immediate`.
    #[inline(always)]
    pub const fn immediate(word: u32) -> u32 {
        super::field(word, 5, 20)
    }
    /// `reg1i20_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 25
    }
}

/// `struct reg1i21_format`: `immediate_h:5`, `rj:5`, `immediate_l:16`, `opcode:6`.
pub mod reg1i21 {
    /// `reg1i21_format.immediate_h`.
    #[inline(always)]
    pub const fn immediate_h(word: u32) -> u32 {
        super::field(word, 0, 5)
    }
    /// `reg1i21_format.rj`.
    #[inline(always)]
    pub const fn rj(word: u32) -> u32 {
        super::field(word, 5, 5)
    }
    /// `reg1i21_format.immediate_l`.
    #[inline(always)]
    pub const fn immediate_l(word: u32) -> u32 {
        super::field(word, 10, 16)
    }
    /// `reg1i21_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 26
    }
}

/// `struct reg2_format`: `rd:5`, `rj:5`, `opcode:22`.
pub mod reg2 {
    /// `reg2_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 10
    }
}

/// `struct reg2i14_format`: `rd:5`, `rj:5`, `immediate:14`, `opcode:8`.
pub mod reg2i14 {
    /// `reg2i14_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 24
    }
}

/// `struct reg2i16_format`: `rd:5`, `rj:5`, `immediate:16`, `opcode:6`.
pub mod reg2i16 {
    /// `reg2i16_format.rd`.
    #[inline(always)]
    pub const fn rd(word: u32) -> u32 {
        super::field(word, 0, 5)
    }
    /// `reg2i16_format.rj`.
    #[inline(always)]
    pub const fn rj(word: u32) -> u32 {
        super::field(word, 5, 5)
    }
    /// `reg2i16_format.immediate`.
    #[inline(always)]
    pub const fn immediate(word: u32) -> u32 {
        super::field(word, 10, 16)
    }
    /// `reg2i16_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 26
    }
}

/// `struct reg3_format`: `rd:5`, `rj:5`, `rk:5`, `opcode:17`.
pub mod reg3 {
    /// `reg3_format.opcode`.
    #[inline(always)]
    pub const fn opcode(word: u32) -> u32 {
        word >> 15
    }
}

/// `is_break_ins()`: a `break` instruction, whatever its code.
#[inline(always)]
pub const fn is_break_ins(word: u32) -> bool {
    reg0i15::opcode(word) == BREAK_OP
}

/// `is_pc_ins()`: a PC-relative address computation, `pcaddi`, `pcalau12i`, `pcaddu12i` or
/// `pcaddu18i` (a `reg1i20_format` opcode from `pcaddi_op` to `pcaddu18i_op`).
#[inline(always)]
pub const fn is_pc_ins(word: u32) -> bool {
    let op = reg1i20::opcode(word);
    op >= PCADDI_OP && op <= PCADDU18I_OP
}

/// `is_branch_ins()`: a branch, a `reg1i21_format` opcode from `beqz_op` to `bgeu_op`:
/// `beqz`, `bnez`, `bceqz`/`bcnez`, `jirl`, `b`, `bl`, `beq`, `bne`, `blt`, `bge`, `bltu`,
/// `bgeu`.
#[inline(always)]
pub const fn is_branch_ins(word: u32) -> bool {
    let op = reg1i21::opcode(word);
    op >= BEQZ_OP && op <= BGEU_OP
}
