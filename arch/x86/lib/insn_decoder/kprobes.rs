// SPDX-License-Identifier: GPL-2.0

//! What x86 kprobes need to know about a decoded instruction.
//!
//! Constraints: `core` only, no allocation, no panics; these are pure functions of the
//! instruction bytes, so the kernel glue keeps everything that reads kernel state (exception
//! tables, kgdb, CFI, ftrace, other probes).
//!
//! The rules are those of `arch/x86/kernel/kprobes/core.c` (`can_probe`, `can_boost`,
//! `__copy_instruction`, `prepare_emulation`) and `opt.c` (`insn_is_indirect_jump`,
//! `insn_jump_into_range`), keyed on the opcode *and its encoding space*: upstream looks at
//! `opcode.bytes[0]` alone, so for example the VEX-encoded `vcmpps` (`c5 f8 c2 ..`) would
//! reach its `ret` emulation. Here only legacy-encoded opcodes are special.

use super::insn::{copy_prefix, Error, Insn, Mode, OpcodeMap};

/// A relative branch kprobes must emulate or check for jumps into an optimized range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchKind {
    /// `jmp rel8`/`jmp rel16/32` (`eb`, `e9`).
    Jmp,
    /// `call rel16/32` (`e8`).
    Call,
    /// `jcc` (`70..7f`, `0f 80..8f`) with its condition code (0 to 15).
    Jcc(u8),
    /// `loopne` (0), `loope` (1), `loop` (2) or `jcxz`/`jecxz`/`jrcxz` (3) (`e0..e3`).
    Loop(u8),
}

/// A relative branch and its displacement from the end of the instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// Which branch it is.
    pub kind: BranchKind,
    /// The signed displacement, sign-extended from its encoded size.
    pub rel: i32,
}

/// How a kprobe runs the probed instruction (upstream's `prepare_emulation` choices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emulation {
    /// Single-step a copy out of line (boosted or trapped by a trailing `int3`).
    None,
    /// `cli`, `sti`, `pushf` or `popf`: emulate, so IF does not change during the step.
    IfModifier(u8),
    /// `ret`, `ret imm16`, `lret`, `lret imm16`.
    Ret,
    /// A relative call.
    Call {
        /// Displacement from the end of the instruction.
        rel: i32,
    },
    /// A relative unconditional jump.
    Jmp {
        /// Displacement from the end of the instruction.
        rel: i32,
    },
    /// A conditional jump.
    Jcc {
        /// The condition code (low nibble of the opcode).
        cond: u8,
        /// Displacement from the end of the instruction.
        rel: i32,
    },
    /// `loop*` or `j*cxz`.
    Loop {
        /// 0 `loopne`, 1 `loope`, 2 `loop`, 3 `jcxz`.
        kind: u8,
        /// Counter width in bits (the address size).
        address_bits: u8,
        /// Displacement from the end of the instruction.
        rel: i32,
    },
    /// `call *%reg`.
    CallIndirect {
        /// The register number (0 `ax` to 15 `r15`).
        reg: u8,
    },
    /// `jmp *%reg`.
    JmpIndirect {
        /// The register number (0 `ax` to 15 `r15`).
        reg: u8,
    },
}

/// Parses one row of [`TWOBYTE_BOOSTABLE`]: `b'1'` marks a boostable column.
const fn boost_row(row: &[u8; 16]) -> u16 {
    let mut bits = 0;
    let mut i = 0;
    while i < 16 {
        if row[i] == b'1' {
            bits |= 1 << i;
        }
        i += 1;
    }
    bits
}

/// kprobes policy: which `0f xx` opcodes may run boosted, by row (high nibble) and column.
///
/// Undefined opcodes, conditional jumps, groups and other special opcodes may not. This is the
/// policy of upstream's `twobyte_is_boostable`, not opcode data; a test compares it with the
/// bitmap in the kernel tree's `arch/x86/kernel/kprobes/core.c`.
pub const TWOBYTE_BOOSTABLE: [u16; 16] = [
    //          0123456789abcdef
    boost_row(b"0011001011000000"), // 00
    boost_row(b"0000000000000001"), // 10
    boost_row(b"1111000000000000"), // 20
    boost_row(b"0100000000000000"), // 30
    boost_row(b"1111111111111111"), // 40
    boost_row(b"0000000000000000"), // 50
    boost_row(b"1111111111110011"), // 60
    boost_row(b"0000111100000011"), // 70
    boost_row(b"0000000000000000"), // 80
    boost_row(b"1111111111111111"), // 90
    boost_row(b"1101110011011101"), // a0
    boost_row(b"1111111100011111"), // b0
    boost_row(b"1100000011111111"), // c0
    boost_row(b"0111010011011101"), // d0
    boost_row(b"0110010011011101"), // e0
    boost_row(b"0111010011101110"), // f0
];

impl Insn {
    fn legacy(&self, map: u8) -> Option<u8> {
        match self.opcode() {
            (OpcodeMap::Legacy(m), op) if m == map => Some(op),
            _ => None,
        }
    }

    fn modrm_reg(&self) -> u8 {
        (self.modrm().unwrap_or(0) >> 3) & 7
    }

    /// Returns whether a memory operand is addressed relative to RIP (`insn_rip_relative`).
    pub fn is_rip_relative(&self) -> bool {
        self.mode() == Mode::Bits64 && self.modrm().is_some_and(|m| m & 0xc7 == 0x05)
    }

    /// Returns the address a RIP-relative operand refers to when the instruction is at `addr`.
    pub fn rip_relative_target(&self, addr: u64) -> Option<u64> {
        self.is_rip_relative().then(|| {
            next_ip(addr, self.len()).wrapping_add_signed(i64::from(self.displacement().value))
        })
    }

    /// Returns the relative branch this instruction is, if any.
    pub fn branch(&self) -> Option<Branch> {
        let rel = self.immediate().value;
        let kind = match self.opcode() {
            (OpcodeMap::Legacy(0), op) => match op {
                0x70..=0x7f => BranchKind::Jcc(op & 0xf),
                0xe0..=0xe3 => BranchKind::Loop(op & 3),
                0xe8 => BranchKind::Call,
                0xe9 | 0xeb => BranchKind::Jmp,
                _ => return None,
            },
            (OpcodeMap::Legacy(1), op @ 0x80..=0x8f) => BranchKind::Jcc(op & 0xf),
            _ => return None,
        };
        Some(Branch { kind, rel })
    }

    /// Returns where a relative branch at `addr` goes, if the instruction is one.
    pub fn branch_target(&self, addr: u64) -> Option<u64> {
        let branch = self.branch()?;
        Some(next_ip(addr, self.len()).wrapping_add_signed(i64::from(branch.rel)))
    }

    /// Returns where a relative jump (not a call) at `addr` goes: what an optimized probe
    /// must check for jumps into its range (`insn_jump_into_range`).
    pub fn jump_target(&self, addr: u64) -> Option<u64> {
        match self.branch()?.kind {
            BranchKind::Call => None,
            _ => self.branch_target(addr),
        }
    }

    /// Returns whether this is an indirect or far jump (`insn_is_indirect_jump`).
    pub fn is_indirect_jump(&self) -> bool {
        match self.legacy(0) {
            Some(0xff) => self.modrm_reg() & 6 == 4,
            Some(0xea) => true,
            _ => false,
        }
    }

    /// Returns whether this is `int3`.
    pub fn is_int3(&self) -> bool {
        self.legacy(0) == Some(0xcc)
    }

    /// Returns whether this raises an exception by design: INT3, INT n, INTO, INT1, UD0, UD1
    /// or UD2, which must not be probed (`is_exception_insn`).
    pub fn is_exception(&self) -> bool {
        matches!(self.legacy(0), Some(0xcc | 0xcd | 0xce | 0xf1))
            || matches!(self.legacy(1), Some(0xff | 0xb9 | 0x0b))
    }

    /// Returns whether this is `ret`, `ret imm16`, `lret` or `lret imm16`.
    pub fn is_ret(&self) -> bool {
        matches!(self.legacy(0), Some(0xc2 | 0xc3 | 0xca | 0xcb))
    }

    /// Returns whether this is `iret`.
    pub fn is_iret(&self) -> bool {
        self.legacy(0) == Some(0xcf)
    }

    /// Returns whether this suppresses a single-step trap after it: MOV to SS or POP SS
    /// (`insn_masking_exception`).
    ///
    /// `0x1f` (POP DS) is included because upstream's check names it; `0x17` is POP SS.
    pub fn masks_exception(&self) -> bool {
        match self.legacy(0) {
            Some(0x17 | 0x1f) => true,
            Some(0x8e) => self.modrm_reg() == 2,
            _ => false,
        }
    }

    /// Returns whether kprobes may run a copy of this instruction with a jump back instead of
    /// a trap (`can_boost`, without its exception-table check, which the caller makes).
    pub fn can_boost(&self) -> bool {
        let (map, op) = self.opcode();
        match map {
            OpcodeMap::Legacy(1) => {
                TWOBYTE_BOOSTABLE[usize::from(op >> 4)] & (1 << (op & 0xf)) != 0
            }
            OpcodeMap::Legacy(0) => self.can_boost_onebyte(op),
            // Three-byte legacy opcodes are never boosted; VEX, EVEX and XOP instructions do
            // not touch RIP or IF, so a copy runs the same as the original.
            OpcodeMap::Legacy(_) => false,
            OpcodeMap::Vex(_) | OpcodeMap::Evex(_) | OpcodeMap::Xop(_) => true,
        }
    }

    fn can_boost_onebyte(&self, op: u8) -> bool {
        // Address-size and CS prefixes change what a copy would do.
        if self.legacy_prefixes().any(|p| p == 0x2e || p == 0x67) {
            return false;
        }
        let reg = self.modrm_reg();
        match op {
            0x62
            | 0x70..=0x7f
            | 0x9a
            | 0xcc..=0xce
            | 0xd6
            | 0xd8..=0xdf
            | 0xe0..=0xe3
            | 0xe8
            | 0xe9
            | 0xeb
            | 0xf0..=0xf4 => false,
            // Grp2 /6 is SHL on AMD but reserved on Intel.
            0xc0 | 0xc1 | 0xd0..=0xd3 => reg != 0b110,
            // Grp3 /1 is TEST on AMD but reserved on Intel.
            0xf6 | 0xf7 => reg != 0b001,
            // Grp4: only INC and DEC.
            0xfe => reg <= 0b001,
            // Grp5: only INC, DEC and indirect JMP.
            0xff => matches!(reg, 0b000 | 0b001 | 0b100),
            _ => true,
        }
    }

    /// Chooses how a kprobe runs this instruction (`prepare_emulation`).
    ///
    /// [`Error::NotSupported`] for far absolute calls and jumps, `int3`, `iret`, the VMX
    /// `0f 01 /0` register forms, and indirect calls/jumps through memory or with a non-native
    /// address size.
    pub fn emulation(&self) -> Result<Emulation, Error> {
        let rel = self.immediate().value;
        let (map, op) = self.opcode();
        let modrm = self.modrm().unwrap_or(0);
        Ok(match map {
            OpcodeMap::Legacy(0) => match op {
                0xfa | 0xfb | 0x9c | 0x9d => Emulation::IfModifier(op),
                0xc2 | 0xc3 | 0xca | 0xcb => Emulation::Ret,
                0x9a | 0xea | 0xcc | 0xcf => return Err(Error::NotSupported),
                0xe8 => Emulation::Call { rel },
                0xe9 | 0xeb => Emulation::Jmp { rel },
                0x70..=0x7f => Emulation::Jcc {
                    cond: op & 0xf,
                    rel,
                },
                0xe0..=0xe3 => Emulation::Loop {
                    kind: op & 3,
                    address_bits: self.address_bytes().saturating_mul(8),
                    rel,
                },
                0xff => {
                    let call = match self.modrm_reg() {
                        0b010 => true,
                        0b100 => false,
                        0b011 | 0b101 => return Err(Error::NotSupported),
                        _ => return Ok(Emulation::None),
                    };
                    if self.address_bytes() != self.mode().native_bytes() || modrm >> 6 != 3 {
                        return Err(Error::NotSupported);
                    }
                    let rex = self.rex();
                    let high = match rex {
                        [_] => (self.rex_wrxb() & 1) << 3,
                        [_, payload] => ((payload & 1) << 3) | (((payload >> 4) & 1) << 4),
                        _ => 0,
                    };
                    let reg = (modrm & 7) | high;
                    // pt_regs has no slots for the APX registers r16..r31.
                    if reg >= 16 {
                        return Err(Error::NotSupported);
                    }
                    if call {
                        Emulation::CallIndirect { reg }
                    } else {
                        Emulation::JmpIndirect { reg }
                    }
                }
                _ => Emulation::None,
            },
            OpcodeMap::Legacy(1) => match op {
                0x80..=0x8f => Emulation::Jcc {
                    cond: op & 0xf,
                    rel,
                },
                0x01 if modrm >> 6 == 3 && self.modrm_reg() == 0 => {
                    return Err(Error::NotSupported)
                }
                _ => Emulation::None,
            },
            _ => Emulation::None,
        })
    }

    /// The RIP-relative displacement of a copy run at `real` of this instruction at `src`
    /// (`newdisp` of `__copy_instruction()`), or `None` if the instruction is not RIP-relative.
    pub fn relocated_displacement(&self, src: u64, real: u64) -> Option<i64> {
        self.is_rip_relative().then(|| {
            i64::from(self.displacement().value).wrapping_add(src.wrapping_sub(real) as i64)
        })
    }

    /// Copies the instruction into `dest` for out-of-line execution at address `real`, the
    /// original being at `src` (`__copy_instruction` after recovery).
    ///
    /// A RIP-relative displacement is rewritten so the copy addresses the same memory.
    /// Returns the length. [`Error::Invalid`] for a Xen/KVM emulate prefix, `int3`, MOV SS or
    /// POP SS, a displacement that no longer fits in 32 bits, or a `dest` too short.
    pub fn copy_out_of_line(&self, src: u64, real: u64, dest: &mut [u8]) -> Result<usize, Error> {
        if self.emulate_prefix_size() != 0 || self.is_int3() || self.masks_exception() {
            return Err(Error::Invalid);
        }
        let len = self.len();
        let out = dest.get_mut(..len).ok_or(Error::Invalid)?;
        copy_prefix(out, self.bytes());
        if let Some(new) = self.relocated_displacement(src, real) {
            let new = i32::try_from(new).map_err(|_| Error::Invalid)?;
            let at = self.displacement_offset();
            let field = out.get_mut(at..at + 4).ok_or(Error::Invalid)?;
            copy_prefix(field, &new.to_le_bytes());
        }
        Ok(len)
    }
}

fn next_ip(addr: u64, len: usize) -> u64 {
    addr.wrapping_add(len as u64)
}
