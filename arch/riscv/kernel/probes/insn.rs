// SPDX-License-Identifier: GPL-2.0

//! The RISC-V encoding predicates the kprobes decisions use, and the instruction length.
//!
//! Each `is_*` function stands for the `riscv_insn_is_*()` of `arch/riscv/include/asm/insn.h`
//! of the same name (generated there by `__RISCV_INSN_FUNCS(name, mask, val)`): the code with
//! `mask` applied equals `val`. The masks and values are those of the RISC-V unprivileged
//! specification's opcode map, as upstream spells them (`RVG_MASK_*`/`RVG_MATCH_*`,
//! `RVC_MASK_*`/`RVC_MATCH_*`). The compressed (RVC) predicates only look at bits 15:0, so a
//! 32-bit read at a 16-bit instruction (upstream reads `*(u32 *)addr` whatever the length)
//! decides as the 16-bit parcel alone.

/// Defines `pub const fn $name(code: u32) -> bool` as `(code & $mask) == $val`.
macro_rules! insn_funcs {
    ($($name:ident, $c:literal, $mask:literal, $val:literal;)*) => {$(
        #[doc = concat!("`riscv_insn_is_", $c, "()`: `(code & ", stringify!($mask),
                        ") == ", stringify!($val), "`.")]
        #[inline]
        pub const fn $name(code: u32) -> bool {
            code & $mask == $val
        }
    )*};
}

insn_funcs! {
    is_auipc, "auipc", 0x0000_007f, 0x0000_0017;
    is_jalr, "jalr", 0x0000_707f, 0x0000_0067;
    is_jal, "jal", 0x0000_007f, 0x0000_006f;
    is_c_j, "c_j", 0x0000_e003, 0x0000_a001;
    is_beq, "beq", 0x0000_707f, 0x0000_0063;
    is_bne, "bne", 0x0000_707f, 0x0000_1063;
    is_blt, "blt", 0x0000_707f, 0x0000_4063;
    is_bge, "bge", 0x0000_707f, 0x0000_5063;
    is_bltu, "bltu", 0x0000_707f, 0x0000_6063;
    is_bgeu, "bgeu", 0x0000_707f, 0x0000_7063;
    is_c_beqz, "c_beqz", 0x0000_e003, 0x0000_c001;
    is_c_bnez, "c_bnez", 0x0000_e003, 0x0000_e001;
    is_c_ebreak, "c_ebreak", 0x0000_ffff, 0x0000_9002;
    is_ebreak, "ebreak", 0xffff_ffff, 0x0010_0073;
    is_sret, "sret", 0xffff_ffff, 0x1020_0073;
    is_fence, "fence", 0x0000_007f, 0x0000_000f;
}

/// `riscv_insn_is_c_jal()` on RV64 (`__riscv_xlen == 64`): a macro for 0. C.JAL
/// (`funct3 = 001`, quadrant 1) is RV32C only; on RV64 the encoding is C.ADDIW.
#[inline]
pub const fn is_c_jal(_code: u32) -> bool {
    false
}

/// `riscv_insn_is_system()`: any instruction of the SYSTEM major opcode (`0x73`: ecall,
/// ebreak, the CSR instructions, sret, wfi, sfence.vma, ...).
#[inline]
pub const fn is_system(code: u32) -> bool {
    code & 0x7f == 0x73
}

/// `riscv_insn_is_branch()`: any instruction of the BRANCH major opcode (`0x63`), the
/// reserved `funct3` values 010 and 011 included.
#[inline]
pub const fn is_branch(code: u32) -> bool {
    code & 0x7f == 0x63
}

/// The rs1 field of a CR-format compressed instruction (`RVC_INSN_J_RS1_MASK`, bits 11:7).
const RVC_J_RS1_MASK: u32 = 0x0f80;

/// `riscv_insn_is_c_jr()`: C.JR (`1000 rs1 00000 10`) with rs1 != x0 (rs1 = x0 is reserved).
#[inline]
pub const fn is_c_jr(code: u32) -> bool {
    code & 0xf07f == 0x8002 && code & RVC_J_RS1_MASK != 0
}

/// `riscv_insn_is_c_jalr()`: C.JALR (`1001 rs1 00000 10`) with rs1 != x0 (rs1 = x0 is
/// C.EBREAK).
#[inline]
pub const fn is_c_jalr(code: u32) -> bool {
    code & 0xf07f == 0x9002 && code & RVC_J_RS1_MASK != 0
}

/// `GET_INSN_LENGTH(insn)` (`arch/riscv/include/asm/bug.h`): 4 when the low two bits are 11
/// (a 32-bit instruction), else 2 (compressed). Like upstream, the longer encodings (48-bit
/// and up, low bits 11111) are taken as 32-bit; the kernel has none.
#[inline]
pub const fn insn_length(insn: u32) -> u64 {
    if insn & 0x3 == 0x3 {
        4
    } else {
        2
    }
}
