// SPDX-License-Identifier: GPL-2.0

//! The instruction helpers of s390 kprobes: `insn_length()` of `asm/dis.h` and the checks
//! upstream's `arch/s390/lib/probes.c` shares between kprobes and uprobes.
//!
//! Opcodes follow the z/Architecture Principles of Operation: the first byte is the opcode,
//! or its first part; the two-byte opcodes of the RI, RIL and RXY/RSY/RIE forms continue in
//! the low four bits of the second byte or in the last byte of the instruction.

/// `insn_length()`: the length in bytes of the instruction whose first byte is `code`, from
/// its two top bits: 00 two bytes, 01 and 10 four, 11 six.
#[inline(always)]
pub const fn insn_length(code: u8) -> u64 {
    ((((code as u64) + 64) >> 7) + 1) << 1
}

/// An opcode group of the kernel's disassembler (`struct s390_opcode_offset` with the
/// `opcode[]` entries it covers): instructions whose first byte is `opcode` have the rest of
/// their opcode in byte `byte`, under `mask`, and are known when that is one of `opfrags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpcodeGroup {
    /// The first byte.
    pub opcode: u8,
    /// The byte holding the rest of the opcode (0 for the one-byte opcodes).
    pub byte: u8,
    /// The mask on that byte.
    pub mask: u8,
    /// The opcode fragments known.
    pub opfrags: &'static [u8],
}

/// Byte `i` (0 to 5) of the instruction `insn`, as s390 stores it (big-endian halfwords).
const fn insn_byte(insn: &[u16; 3], i: u8) -> u8 {
    let h = if i < 2 {
        insn[0]
    } else if i < 4 {
        insn[1]
    } else {
        insn[2]
    };
    if i & 1 == 0 {
        (h >> 8) as u8
    } else {
        h as u8
    }
}

/// `is_known_insn()` (`find_insn()` of `arch/s390/kernel/dis.c`): whether the disassembler
/// knows the instruction `insn` (its halfwords; bytes past its length are never looked at).
///
/// The group of its first byte, else the last group (the one-byte opcodes), says which byte
/// holds the rest of the opcode; the instruction is known when that fragment is in the group.
pub fn is_known_insn(insn: &[u16; 3]) -> bool {
    let groups = &super::opcodes::OPCODE_GROUPS;
    let first = insn_byte(insn, 0);
    let Some(group) = groups.iter().find(|g| g.opcode == first).or(groups.last()) else {
        return false;
    };
    let frag = insn_byte(insn, group.byte) & group.mask;
    group.opfrags.contains(&frag)
}

/// `probe_is_prohibited_opcode()`: whether an instruction must not be probed.
///
/// Instructions the disassembler does not know ([`is_known_insn`]); those that change the
/// addressing or branch mode or the PSW (`bassm`, `bsm`, `stnsm`, `stosm`, `bakr`, `bsa`,
/// `bsg`, `pc`, `pt`, `pr`), execute another instruction (`ex`, `exrl`), call the hypervisor
/// (`diag`), read the PSW (`epsw`) or begin and end a transaction (`tbegin`, `tbeginc`,
/// `tend`).
pub fn probe_is_prohibited_opcode(insn: &[u16; 3]) -> bool {
    if !is_known_insn(insn) {
        return true;
    }
    match insn[0] >> 8 {
        0x0c | 0x0b | 0x83 | 0x44 | 0xac | 0xad => return true,
        0xc6 if insn[0] & 0x0f == 0x00 => return true,
        _ => {}
    }
    matches!(
        insn[0],
        0x0101 | 0xb25a | 0xb240 | 0xb258 | 0xb218 | 0xb228 | 0xb98d | 0xe560 | 0xe561 | 0xb2f8
    )
}

/// `FIXUP_PSW_NORMAL`: the PSW address after the step is moved from the slot to the probe.
pub const FIXUP_PSW_NORMAL: u32 = 0x08;
/// `FIXUP_BRANCH_NOT_TAKEN`: a branch that fell through continues after the probe.
pub const FIXUP_BRANCH_NOT_TAKEN: u32 = 0x04;
/// `FIXUP_RETURN_REGISTER`: the return address the instruction stored is moved from the slot
/// to the probe.
pub const FIXUP_RETURN_REGISTER: u32 = 0x02;
/// `FIXUP_NOT_REQUIRED`: the instruction sets the whole PSW (`lpsw`, `lpswe`).
pub const FIXUP_NOT_REQUIRED: u32 = 0x01;

/// `probe_get_fixup_type()`: how the PSW and registers are fixed after stepping `insn` out of
/// line.
///
/// Branches that save a return address (`balr`, `basr`, `bal`, `bas`, `bras`, `brasl`) fix the
/// return register (`balr`/`basr` with R2 0 do not branch); branches on condition or count
/// whose target is absolute (`bcr`, `bctr`, `bc`, `bct`, `bxh`, `bxle`, `bxhg`, `bxleg`,
/// `bctg`, the compare-and-branch forms) only fix a fall-through; `lpsw`/`lpswe` need nothing;
/// everything else, relative branches included, gets the normal fix-up.
#[inline(always)]
pub const fn probe_get_fixup_type(insn: &[u16; 3]) -> u32 {
    match insn[0] >> 8 {
        0x05 | 0x0d if insn[0] & 0x0f == 0 => FIXUP_RETURN_REGISTER | FIXUP_BRANCH_NOT_TAKEN,
        0x05 | 0x0d | 0x45 | 0x4d => FIXUP_RETURN_REGISTER,
        0x06 | 0x07 | 0x47 | 0x46 | 0x86 | 0x87 => FIXUP_BRANCH_NOT_TAKEN,
        0x82 => FIXUP_NOT_REQUIRED,
        0xb2 if insn[0] & 0xff == 0xb2 => FIXUP_NOT_REQUIRED,
        0xa7 | 0xc0 if insn[0] & 0x0f == 0x05 => FIXUP_PSW_NORMAL | FIXUP_RETURN_REGISTER,
        0xeb if matches!(insn[2] & 0xff, 0x44 | 0x45) => FIXUP_BRANCH_NOT_TAKEN,
        0xe3 if insn[2] & 0xff == 0x46 => FIXUP_BRANCH_NOT_TAKEN,
        0xec if matches!(
            insn[2] & 0xff,
            0xe4 | 0xe5 | 0xf6 | 0xf7 | 0xfc | 0xfd | 0xfe | 0xff
        ) =>
        {
            FIXUP_BRANCH_NOT_TAKEN
        }
        _ => FIXUP_PSW_NORMAL,
    }
}

/// `probe_is_insn_relative_long()`: whether the first halfword starts a RIL-b or RIL-c
/// instruction whose 32-bit halfword offset is relative to its own address (`larl`, the
/// load/store/compare relative-long forms, `pfdrl`), which the slot copy must re-aim.
pub const fn probe_is_insn_relative_long(insn0: u16) -> bool {
    match insn0 >> 8 {
        0xc0 => insn0 & 0x0f == 0x00,
        0xc4 => matches!(
            insn0 & 0x0f,
            0x02 | 0x04 | 0x05 | 0x06 | 0x07 | 0x08 | 0x0b | 0x0c | 0x0d | 0x0e | 0x0f
        ),
        0xc6 => matches!(
            insn0 & 0x0f,
            0x02 | 0x04 | 0x05 | 0x06 | 0x07 | 0x08 | 0x0a | 0x0c | 0x0d | 0x0e | 0x0f
        ),
        _ => false,
    }
}
