// SPDX-License-Identifier: GPL-2.0

//! Power ISA instruction words as the kprobes decisions see them.
//!
//! `ppc_inst_t` and its helpers (`asm/inst.h`), `get_op()`/`get_xop()`
//! (`asm/disassemble.h`), the opcode numbers and the few instruction encoders the detour uses
//! (`asm/ppc-opcode.h`), the trap predicates and `can_single_step()` (`asm/probes.h`), the
//! branch helpers of `asm/code-patching.h` and `is_conditional_branch()`
//! (`lib/code-patching.c`). Encodings follow the Power ISA v3.1 instruction formats. What the
//! probe-hit path uses (`PpcInst`'s length, the trap predicates) is `#[inline(always)]`.

/// `ppc_inst_t` of ppc64: a word and, for a prefixed instruction, its suffix.
///
/// As upstream's, a word that is not a prefix has `suffix` 0 (`ppc_inst(x)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PpcInst {
    /// The first word (`ppc_inst_val()`): the prefix of a prefixed instruction.
    pub val: u32,
    /// The second word of a prefixed instruction (`ppc_inst_suffix()`), else 0.
    pub suffix: u32,
}

impl PpcInst {
    /// `ppc_inst(x)`: a one-word instruction.
    #[inline(always)]
    pub const fn word(val: u32) -> Self {
        PpcInst { val, suffix: 0 }
    }

    /// `ppc_inst_prefix(x, y)`.
    #[inline(always)]
    pub const fn prefix(val: u32, suffix: u32) -> Self {
        PpcInst { val, suffix }
    }

    /// `ppc_inst_primary_opcode()`.
    #[inline(always)]
    pub const fn primary_opcode(self) -> u32 {
        get_op(self.val)
    }

    /// `ppc_inst_prefixed()`: the primary opcode is `OP_PREFIX`.
    #[inline(always)]
    pub const fn prefixed(self) -> bool {
        self.primary_opcode() == OP_PREFIX
    }

    /// `ppc_inst_len()`: 8 bytes when prefixed, else 4.
    #[inline(always)]
    pub const fn inst_len(self) -> u64 {
        if self.prefixed() {
            8
        } else {
            4
        }
    }

    /// `ppc_inst_as_ulong()` on little-endian ppc64: the suffix in the high half.
    pub const fn as_ulong(self) -> u64 {
        ((self.suffix as u64) << 32) | self.val as u64
    }

    /// The words `patch_instruction()` (`ppc_inst_write()`) stores: one, or the prefix and
    /// then the suffix; the array and how many of its words are written.
    pub const fn words(self) -> ([u32; 2], usize) {
        if self.prefixed() {
            ([self.val, self.suffix], 2)
        } else {
            ([self.val, 0], 1)
        }
    }
}

/// `get_op()`: the primary opcode, bits 0:5 (the top six bits).
#[inline(always)]
pub const fn get_op(inst: u32) -> u32 {
    inst >> 26
}

/// `get_xop()`: the extended opcode of the X/XL forms, bits 21:30.
pub const fn get_xop(inst: u32) -> u32 {
    (inst >> 1) & 0x3ff
}

/// Primary opcode of a prefix (`OP_PREFIX`).
pub const OP_PREFIX: u32 = 1;
/// `tdi` (`OP_TRAP_64`).
pub const OP_TRAP_64: u32 = 2;
/// `twi` (`OP_TRAP`).
pub const OP_TRAP: u32 = 3;
/// `bc` and its forms.
pub const OP_BC: u32 = 16;
/// `sc`, `scv` (`OP_SC`).
pub const OP_SC: u32 = 17;
/// `b` and its forms.
pub const OP_B: u32 = 18;
/// The XL-form group (`OP_19`).
pub const OP_19: u32 = 19;
/// The X-form group (`OP_31`).
pub const OP_31: u32 = 31;

/// `bclr[l]`: extended opcode 16 of `OP_19`.
pub const OP_19_XOP_BCLR: u32 = 16;
/// `rfid`.
pub const OP_19_XOP_RFID: u32 = 18;
/// `rfmci`.
pub const OP_19_XOP_RFMCI: u32 = 38;
/// `rfdi`.
pub const OP_19_XOP_RFDI: u32 = 39;
/// `rfi`.
pub const OP_19_XOP_RFI: u32 = 50;
/// `rfci`.
pub const OP_19_XOP_RFCI: u32 = 51;
/// `rfscv`.
pub const OP_19_XOP_RFSCV: u32 = 82;
/// `hrfid`.
pub const OP_19_XOP_HRFID: u32 = 274;
/// `urfid`.
pub const OP_19_XOP_URFID: u32 = 306;
/// `stop`.
pub const OP_19_XOP_STOP: u32 = 370;
/// `doze`.
pub const OP_19_XOP_DOZE: u32 = 402;
/// `nap`.
pub const OP_19_XOP_NAP: u32 = 434;
/// `sleep`.
pub const OP_19_XOP_SLEEP: u32 = 466;
/// `rvwinkle`.
pub const OP_19_XOP_RVWINKLE: u32 = 498;
/// `bcctr[l]`.
pub const OP_19_XOP_BCCTR: u32 = 528;
/// `bctar[l]`.
pub const OP_19_XOP_BCTAR: u32 = 560;

/// `tw` (`OP_31_XOP_TRAP`).
pub const OP_31_XOP_TRAP: u32 = 4;
/// `td` (`OP_31_XOP_TRAP_64`).
pub const OP_31_XOP_TRAP_64: u32 = 68;
/// `mtmsr`.
pub const OP_31_XOP_MTMSR: u32 = 146;
/// `mtmsrd`.
pub const OP_31_XOP_MTMSRD: u32 = 178;

/// `IS_TW()`: `tw`, any TO, RA, RB.
#[inline(always)]
pub const fn is_tw(inst: u32) -> bool {
    inst & 0xfc00_07fe == 0x7c00_0008
}

/// `IS_TD()`: `td`.
#[inline(always)]
pub const fn is_td(inst: u32) -> bool {
    inst & 0xfc00_07fe == 0x7c00_0088
}

/// `IS_TDI()`: `tdi`.
#[inline(always)]
pub const fn is_tdi(inst: u32) -> bool {
    inst & 0xfc00_0000 == 0x0800_0000
}

/// `IS_TWI()`: `twi`.
#[inline(always)]
pub const fn is_twi(inst: u32) -> bool {
    inst & 0xfc00_0000 == 0x0c00_0000
}

/// `is_trap()` of ppc64: any of the four trap forms.
#[inline(always)]
pub const fn is_trap(inst: u32) -> bool {
    is_tw(inst) || is_td(inst) || is_twi(inst) || is_tdi(inst)
}

/// `can_single_step()`: whether a word can be single-stepped out of line.
///
/// Not the traps (`tdi`, `twi`, `tw`, `td`), not `sc`/`scv`, not the returns from interrupt
/// and the power-saving instructions of `OP_19`, not `mtmsr`/`mtmsrd`: each changes or
/// depends on the machine state the step runs in.
pub const fn can_single_step(inst: u32) -> bool {
    match get_op(inst) {
        OP_TRAP_64 | OP_TRAP | OP_SC => false,
        OP_19 => !matches!(
            get_xop(inst),
            OP_19_XOP_RFID
                | OP_19_XOP_RFMCI
                | OP_19_XOP_RFDI
                | OP_19_XOP_RFI
                | OP_19_XOP_RFCI
                | OP_19_XOP_RFSCV
                | OP_19_XOP_HRFID
                | OP_19_XOP_URFID
                | OP_19_XOP_STOP
                | OP_19_XOP_DOZE
                | OP_19_XOP_NAP
                | OP_19_XOP_SLEEP
                | OP_19_XOP_RVWINKLE
        ),
        OP_31 => !matches!(
            get_xop(inst),
            OP_31_XOP_TRAP | OP_31_XOP_TRAP_64 | OP_31_XOP_MTMSR | OP_31_XOP_MTMSRD
        ),
        _ => true,
    }
}

/// `is_conditional_branch()`: `bc` and its forms, `bclr`, `bcctr`, `bctar` (of the first
/// word only, as upstream).
pub const fn is_conditional_branch(inst: PpcInst) -> bool {
    match inst.primary_opcode() {
        OP_BC => true,
        OP_19 => matches!(
            get_xop(inst.val),
            OP_19_XOP_BCLR | OP_19_XOP_BCCTR | OP_19_XOP_BCTAR
        ),
        _ => false,
    }
}

/// `BRANCH_SET_LINK`: the LK bit, `bl`.
pub const BRANCH_SET_LINK: u32 = 0x1;
/// `BRANCH_ABSOLUTE`: the AA bit, `ba`.
pub const BRANCH_ABSOLUTE: u32 = 0x2;

/// `is_offset_in_branch_range()`: whether an I-form branch reaches `offset` (24-bit LI
/// field, in words: -32 MiB to 32 MiB - 4, a multiple of 4).
pub const fn is_offset_in_branch_range(offset: i64) -> bool {
    offset >= -0x200_0000 && offset <= 0x1ff_fffc && offset & 0x3 == 0
}

/// `create_branch()`: the I-form branch at `addr` to `target` (`flags`: the AA and LK bits;
/// with `BRANCH_ABSOLUTE`, `target` is the offset), or `None` where upstream returns 1 (and
/// leaves `ppc_inst(0)`).
pub const fn create_branch(addr: u64, target: u64, flags: u32) -> Option<u32> {
    let offset = if flags & BRANCH_ABSOLUTE != 0 {
        target as i64
    } else {
        target.wrapping_sub(addr) as i64
    };
    if !is_offset_in_branch_range(offset) {
        return None;
    }
    Some(0x4800_0000 | (flags & 0x3) | (offset as u32 & 0x03ff_fffc))
}

const fn rt(r: u32) -> u32 {
    (r & 0x1f) << 21
}

const fn ra(r: u32) -> u32 {
    (r & 0x1f) << 16
}

const fn rb(r: u32) -> u32 {
    (r & 0x1f) << 11
}

/// `tw TO,RA,RB` (X-form, `PPC_RAW_TW()`).
pub const fn tw(to: u32, a: u32, b: u32) -> u32 {
    0x7c00_0008 | rt(to) | ra(a) | rb(b)
}

/// `addis RT,RA,SI` (D-form, primary opcode 15).
pub const fn addis(d: u32, a: u32, imm: u32) -> u32 {
    0x3c00_0000 | rt(d) | ra(a) | (imm & 0xffff)
}

/// `addi RT,RA,SI` (D-form, primary opcode 14).
pub const fn addi(d: u32, a: u32, imm: u32) -> u32 {
    0x3800_0000 | rt(d) | ra(a) | (imm & 0xffff)
}

/// `lis RT,SI`: `addis RT,0,SI`.
pub const fn lis(d: u32, imm: u32) -> u32 {
    addis(d, 0, imm)
}

/// `ori RA,RS,UI` (D-form, primary opcode 24; RA is the target).
pub const fn ori(d: u32, s: u32, imm: u32) -> u32 {
    0x6000_0000 | ra(d) | rt(s) | (imm & 0xffff)
}

/// `oris RA,RS,UI` (primary opcode 25).
pub const fn oris(d: u32, s: u32, imm: u32) -> u32 {
    0x6400_0000 | ra(d) | rt(s) | (imm & 0xffff)
}

/// `rldicr RA,RS,SH,ME` (MD-form: the sixth bit of SH in bit 30, ME as 6 bits split).
pub const fn rldicr(d: u32, s: u32, sh: u32, me: u32) -> u32 {
    let sh_field = ((sh & 0x1f) << 11) | ((sh & 0x20) >> 4);
    let me_field = ((me & 0x1f) << 6) | (me & 0x20);
    0x7800_0004 | ra(d) | rt(s) | sh_field | me_field
}

/// `sldi RA,RS,n`: `rldicr RA,RS,n,63-n`.
pub const fn sldi(d: u32, s: u32, n: u32) -> u32 {
    rldicr(d, s, n, 63u32.wrapping_sub(n))
}

/// The mask of a D-form word without its immediate (`OP_RT_RA_MASK`).
pub const OP_RT_RA_MASK: u32 = 0xffff_0000;
/// `addis r2,r12,0` (`ADDIS_R2_R12`): the first word of an ELFv2 global entry.
pub const ADDIS_R2_R12: u32 = addis(2, 12, 0);
/// `lis r2,0` (`LIS_R2`): the same, after the linker's optimisation.
pub const LIS_R2: u32 = lis(2, 0);
/// `addi r2,r2,0` (`ADDI_R2_R2`): the second word of an ELFv2 global entry.
pub const ADDI_R2_R2: u32 = addi(2, 2, 0);

/// `ppc_function_entry()` of ELFv2: the local entry point of the function whose global entry
/// begins with `first`, `second`: `func + 8` when those are the TOC setup (`addis r2,r12,X`
/// or `lis r2,X`, then `addi r2,r2,Y`), else `func`.
pub const fn ppc_function_entry(func: u64, first: u32, second: u32) -> u64 {
    let head = first & OP_RT_RA_MASK;
    if (head == ADDIS_R2_R12 || head == LIS_R2) && second & OP_RT_RA_MASK == ADDI_R2_R2 {
        func.wrapping_add(8)
    } else {
        func
    }
}
