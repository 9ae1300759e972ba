// SPDX-License-Identifier: GPL-2.0

//! What a probed instruction needs: refused, simulated, or stepped out of line; and whether a
//! probe address is an instruction boundary.
//!
//! `arch/riscv/kernel/probes/decode-insn.c` (`riscv_probe_decode_insn()`) and the decision
//! part of `arch_prepare_kprobe()` in `kprobes.c`, with its boundary walk
//! `arch_check_kprobe()`.

use super::insn;
use super::{errno, KernelText, BUG_INSN_32, SLOT_BYTES};

/// The simulator a probed instruction runs instead of being stepped: the value upstream stores
/// in `api->handler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Simulator {
    /// `simulate_jal()`.
    Jal,
    /// `simulate_jalr()`.
    Jalr,
    /// `simulate_auipc()`.
    Auipc,
    /// `simulate_branch()`: beq, bne, blt, bge, bltu, bgeu (and the reserved `funct3` 010 and
    /// 011, which it refuses to simulate).
    Branch,
    /// `simulate_c_j()`.
    CJ,
    /// `simulate_c_jr()`.
    CJr,
    /// `simulate_c_jalr()`.
    CJalr,
    /// `simulate_c_bnez()`.
    CBnez,
    /// `simulate_c_beqz()`.
    CBeqz,
}

/// The decoder's verdict (`enum probe_insn`, with the handler for `INSN_GOOD_NO_SLOT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeInsn {
    /// `INSN_REJECTED`: the instruction cannot be probed.
    Rejected,
    /// `INSN_GOOD_NO_SLOT`: simulated by the given handler; no slot.
    Simulate(Simulator),
    /// `INSN_GOOD`: copied to a slot and single-stepped there.
    Step,
}

/// `riscv_probe_decode_insn()`: the decision for the instruction `insn`.
///
/// `insn` is the instruction zero-extended to 32 bits (`p->opcode`), or the 32 bits upstream
/// reads at the probe address whatever the length: the compressed predicates only look at
/// bits 15:0 and no 32-bit predicate matches a compressed instruction (low bits 11), so both
/// decide alike. `isa_c` is `CONFIG_RISCV_ISA_C`.
///
/// In upstream's order: refused are SYSTEM (ecall, ebreak, CSR accesses, sret, wfi, ...) and
/// MISC-MEM (fence, fence.i); with `isa_c`, also C.EBREAK (and C.JAL, which RV64 does not
/// have); simulated are C.J, C.JR, C.JALR, C.BEQZ, C.BNEZ (with `isa_c`), JAL, JALR (funct3
/// 000), AUIPC and every BRANCH; everything else, reserved and illegal encodings included, is
/// stepped out of line.
pub fn probe_decode_insn(insn: u32, isa_c: bool) -> ProbeInsn {
    if insn::is_system(insn) || insn::is_fence(insn) {
        return ProbeInsn::Rejected;
    }
    if isa_c {
        if insn::is_c_jal(insn) || insn::is_c_ebreak(insn) {
            return ProbeInsn::Rejected;
        }
        let sim = if insn::is_c_j(insn) {
            Some(Simulator::CJ)
        } else if insn::is_c_jr(insn) {
            Some(Simulator::CJr)
        } else if insn::is_c_jalr(insn) {
            Some(Simulator::CJalr)
        } else if insn::is_c_beqz(insn) {
            Some(Simulator::CBeqz)
        } else if insn::is_c_bnez(insn) {
            Some(Simulator::CBnez)
        } else {
            None
        };
        if let Some(sim) = sim {
            return ProbeInsn::Simulate(sim);
        }
    }
    let sim = if insn::is_jal(insn) {
        Simulator::Jal
    } else if insn::is_jalr(insn) {
        Simulator::Jalr
    } else if insn::is_auipc(insn) {
        Simulator::Auipc
    } else if insn::is_branch(insn) {
        Simulator::Branch
    } else {
        return ProbeInsn::Step;
    };
    ProbeInsn::Simulate(sim)
}

/// Whether `start + offset` is an instruction boundary when decoding from `start`: the walk of
/// `arch_check_kprobe()`, which reads the 16-bit parcel at each instruction from `start` on
/// and steps by its length ([`insn::insn_length`]), until it lands on or passes the target.
///
/// RISC-V mixes 2- and 4-byte instructions, so only a walk from a known instruction start
/// (the symbol's) tells whether an offset is the start of an instruction or the second half
/// of a 32-bit one. A parcel [`KernelText::read_u16`] cannot read ends the walk with `false`
/// (upstream dereferences it). The walk runs over offsets, so it cannot wrap: where upstream's
/// `tmp += len` would wrap past the top of the address space and go on walking from 0, this
/// returns `false` (no kernel text is there).
pub fn is_insn_boundary<T: KernelText + ?Sized>(text: &T, start: u64, offset: u64) -> bool {
    let mut at = 0u64;
    loop {
        if at == offset {
            return true;
        }
        if at > offset {
            return false;
        }
        let Some(parcel) = text.read_u16(start.wrapping_add(at)) else {
            return false;
        };
        at = match at.checked_add(insn::insn_length(u32::from(parcel))) {
            Some(next) => next,
            None => return false,
        };
    }
}

/// `arch_check_kprobe(addr)`: whether `addr` is an instruction boundary of the symbol
/// containing it, walking from the symbol's start ([`is_insn_boundary`]); `false` when
/// kallsyms knows no symbol at `addr`.
pub fn check_kprobe<T: KernelText + ?Sized>(text: &T, addr: u64) -> bool {
    match text.lookup_offset(addr) {
        Some(offset) => is_insn_boundary(text, addr.wrapping_sub(offset), offset),
        None => false,
    }
}

/// What `arch_prepare_kprobe()` sets up for an accepted probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// `INSN_GOOD_NO_SLOT` (`arch_prepare_simulate()`): no slot, `api.restore = 0`; the hit
    /// runs the simulator.
    Simulate {
        /// The probed instruction (`p->opcode`: 16 bits zero-extended, or 32).
        opcode: u32,
        /// `api.handler`.
        simulator: Simulator,
    },
    /// `INSN_GOOD` (`arch_prepare_ss_slot()`): the glue allocates a slot (`get_insn_slot()`,
    /// `-ENOMEM` if none) and writes the first `len + 4` bytes of `slot` into it.
    Step {
        /// The probed instruction (`p->opcode`).
        opcode: u32,
        /// Its length in bytes, 2 or 4 (`GET_INSN_LENGTH(p->opcode)`).
        len: u64,
        /// The slot's bytes: the instruction's `len` bytes, then `ebreak` ([`BUG_INSN_32`]);
        /// the bytes after those are zero and not written.
        slot: [u8; SLOT_BYTES],
        /// Where execution resumes after the step (`api.restore`: `addr + len`).
        restore: u64,
    },
}

impl Prepared {
    /// How many bytes of [`Prepared::Step::slot`] are written (0 for a simulated probe).
    pub const fn slot_len(&self) -> u64 {
        match self {
            Prepared::Simulate { .. } => 0,
            Prepared::Step { len, .. } => len.saturating_add(4),
        }
    }
}

/// `arch_prepare_kprobe()`, without the slot allocation: `-EILSEQ` for an odd address or one
/// that is not an instruction boundary of its symbol ([`check_kprobe`]), `-EINVAL` for an
/// instruction [`probe_decode_insn`] rejects (or unreadable text); otherwise what to set up.
pub fn prepare_kprobe<T: KernelText + ?Sized>(
    text: &T,
    addr: u64,
    isa_c: bool,
) -> Result<Prepared, i32> {
    if addr & 0x1 != 0 {
        return Err(errno::EILSEQ);
    }
    if !check_kprobe(text, addr) {
        return Err(errno::EILSEQ);
    }
    let mut opcode = u32::from(text.read_u16(addr).ok_or(errno::EINVAL)?);
    let len = insn::insn_length(opcode);
    if len == 4 {
        let hi = text.read_u16(addr.wrapping_add(2)).ok_or(errno::EINVAL)?;
        opcode |= u32::from(hi) << 16;
    }
    match probe_decode_insn(opcode, isa_c) {
        ProbeInsn::Rejected => Err(errno::EINVAL),
        ProbeInsn::Simulate(simulator) => Ok(Prepared::Simulate { opcode, simulator }),
        ProbeInsn::Step => {
            let [o0, o1, o2, o3] = opcode.to_le_bytes();
            let [b0, b1, b2, b3] = BUG_INSN_32.to_le_bytes();
            let slot = if len == 4 {
                [o0, o1, o2, o3, b0, b1, b2, b3]
            } else {
                [o0, o1, b0, b1, b2, b3, 0, 0]
            };
            Ok(Prepared::Step {
                opcode,
                len,
                slot,
                restore: addr.wrapping_add(len),
            })
        }
    }
}
