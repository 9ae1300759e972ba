// SPDX-License-Identifier: GPL-2.0

//! The simulators of `arch/loongarch/kernel/inst.c`: `simu_pc()`, `simu_branch()` and their
//! dispatcher `arch_simulate_insn()`.
//!
//! Each takes the trap frame and the probed instruction, as upstream's `void simu_*(struct
//! pt_regs *regs, union loongarch_instruction insn)` do, and updates the frame in place. The
//! PC they compute from is the frame's `csr_era` (at a probe hit, the probe address). Where
//! upstream logs and returns without touching the frame (`pr_warn()` for an `csr_era` that is
//! not 4-byte aligned, `pr_info()` for an opcode the simulator does not know), these return
//! the [`SimuError`] for the glue to log, with the frame untouched.
//!
//! The immediates are widened as upstream's `unsigned int` expressions are: a field is shifted
//! in 32 bits (`imm << 2`, `(imm_h << 16 | imm_l) << 2`, `imm << 12`, `imm << 18`), then
//! zero-extended to 64 bits and sign-extended from the given bit by [`sign_extend64`].
//!
//! Every function is `#[inline(always)]`: in the kernel the simulators run in the probe-hit
//! path and compile into its unprobeable (`.kprobes.text`) entry points.

use super::decode::Simulator;
use super::insn::{self, reg0i26, reg1i20, reg1i21, reg2i16};
use super::LOONGARCH_INSN_SIZE;

/// The trap frame the simulators read and write (`struct pt_regs`).
pub trait Regs {
    /// `regs->regs[n]` for `n` in 0..32 (`regs[0]` is what the frame holds, not the hardwired
    /// zero); any other `n` reads 0.
    fn reg(&self, n: u32) -> u64;
    /// Sets `regs->regs[n]` for `n` in 0..32 (`regs[0]` included, as upstream writes it); any
    /// other `n` is ignored.
    fn set_reg(&mut self, n: u32, val: u64);
    /// `regs->csr_era` (`instruction_pointer(regs)`).
    fn era(&self) -> u64;
    /// `regs->csr_era = val` (`instruction_pointer_set(regs, val)`).
    fn set_era(&mut self, val: u64);
}

/// `struct pt_regs` (`arch/loongarch/include/asm/ptrace.h`), as a plain value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtRegs {
    /// `regs[32]`: the general registers `$r0` to `$r31`.
    pub regs: [u64; 32],
    /// `orig_a0`.
    pub orig_a0: u64,
    /// `csr_era`: the exception return address, the probe address at a hit.
    pub csr_era: u64,
    /// `csr_badvaddr`.
    pub csr_badvaddr: u64,
    /// `csr_crmd`.
    pub csr_crmd: u64,
    /// `csr_prmd`.
    pub csr_prmd: u64,
    /// `csr_euen`.
    pub csr_euen: u64,
    /// `csr_ecfg`.
    pub csr_ecfg: u64,
    /// `csr_estat`.
    pub csr_estat: u64,
}

impl Regs for PtRegs {
    fn reg(&self, n: u32) -> u64 {
        self.regs.get(n as usize).copied().unwrap_or(0)
    }
    fn set_reg(&mut self, n: u32, val: u64) {
        if let Some(r) = self.regs.get_mut(n as usize) {
            *r = val;
        }
    }
    fn era(&self) -> u64 {
        self.csr_era
    }
    fn set_era(&mut self, val: u64) {
        self.csr_era = val;
    }
}

impl PtRegs {
    /// The frame after `arch_simulate_insn()` ran `word` from this frame (the by-value form
    /// of [`simulate_insn`]).
    pub fn simulated(mut self, word: u32) -> Result<Self, SimuError> {
        simulate_insn(word, &mut self)?;
        Ok(self)
    }
}

/// Why a simulator left the frame untouched: what upstream logs instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimuError {
    /// `csr_era` is not 4-byte aligned (upstream: `pr_warn("%s: invalid pc 0x%lx\n")`).
    InvalidPc(u64),
    /// The simulator does not know the opcode (upstream: `pr_info("%s: unknown opcode\n")`).
    UnknownOpcode,
}

/// `sign_extend64(value, index)` (`include/linux/bitops.h`): `value` sign-extended from bit
/// `index` (0..=63; larger values are taken modulo 64).
#[inline(always)]
pub const fn sign_extend64(value: u64, index: u32) -> i64 {
    let shift = 63u32.wrapping_sub(index) & 63;
    ((value << shift) as i64) >> shift
}

/// `pc + sign_extend64(value, index)`, in `unsigned long` arithmetic.
#[inline(always)]
const fn pc_plus(pc: u64, value: u32, index: u32) -> u64 {
    pc.wrapping_add(sign_extend64(value as u64, index) as u64)
}

/// `simu_pc()`: simulates `pcaddi`, `pcaddu12i`, `pcaddu18i` and `pcalau12i`, then advances
/// `csr_era` by 4.
///
/// `rd` gets `csr_era` plus the 20-bit immediate shifted by 2 (`pcaddi`) or 12 (`pcaddu12i`),
/// sign-extended; `pcalau12i` clears the low 12 bits of that. For `pcaddu18i` upstream 6.12
/// computes `imm << 18` in an `unsigned int` and sign-extends from bit 37, which that value
/// does not have: `rd` gets `csr_era + ((imm << 18) mod 2^32)`, zero-extended; the LoongArch
/// manual's `csr_era + sign_extend(imm << 18)` differs whenever the immediate has bits above
/// bit 13. This follows upstream.
#[inline(always)]
pub fn simu_pc<R: Regs + ?Sized>(regs: &mut R, word: u32) -> Result<(), SimuError> {
    let pc = regs.era();
    let rd = reg1i20::rd(word);
    let imm = reg1i20::immediate(word);
    if pc & 3 != 0 {
        return Err(SimuError::InvalidPc(pc));
    }
    let val = match reg1i20::opcode(word) {
        insn::PCADDI_OP => pc_plus(pc, imm << 2, 21),
        insn::PCADDU12I_OP => pc_plus(pc, imm << 12, 31),
        insn::PCADDU18I_OP => pc_plus(pc, imm << 18, 37),
        // `~((1 << 12) - 1)`: an `int`, sign-extended to `unsigned long`.
        insn::PCALAU12I_OP => pc_plus(pc, imm << 12, 31) & !0xfff,
        _ => return Err(SimuError::UnknownOpcode),
    };
    regs.set_reg(rd, val);
    regs.set_era(pc.wrapping_add(LOONGARCH_INSN_SIZE));
    Ok(())
}

/// `simu_branch()`: simulates `b`, `bl`, `beqz`, `bnez`, `beq`, `bne`, `blt`, `bge`, `bltu`,
/// `bgeu` and `jirl` from `pc = csr_era`.
///
/// `b`/`bl` go to `pc` plus their 26-bit offset times 4 (`bl` sets `$ra`, `regs[1]`, to
/// `pc + 4`); `beqz`/`bnez` test `regs[rj]` against zero and go to `pc` plus their 21-bit
/// offset times 4, or to `pc + 4`; the two-register branches compare `regs[rj]` with
/// `regs[rd]` (signed for `blt`/`bge`, unsigned for `bltu`/`bgeu`) and go to `pc` plus their
/// 16-bit offset times 4, or to `pc + 4`; `jirl` goes to `regs[rj]` (read first) plus its
/// 16-bit offset times 4 and then sets `regs[rd]` to `pc + 4`. Any other opcode
/// (`bceqz`/`bcnez` among the branches) is [`SimuError::UnknownOpcode`].
#[inline(always)]
pub fn simu_branch<R: Regs + ?Sized>(regs: &mut R, word: u32) -> Result<(), SimuError> {
    let pc = regs.era();
    if pc & 3 != 0 {
        return Err(SimuError::InvalidPc(pc));
    }
    let next = pc.wrapping_add(LOONGARCH_INSN_SIZE);

    let imm26 = (reg0i26::immediate_h(word) << 16 | reg0i26::immediate_l(word)) << 2;
    match reg0i26::opcode(word) {
        insn::B_OP => {
            regs.set_era(pc_plus(pc, imm26, 27));
            return Ok(());
        }
        insn::BL_OP => {
            regs.set_era(pc_plus(pc, imm26, 27));
            regs.set_reg(1, next);
            return Ok(());
        }
        _ => {}
    }

    let imm21 = (reg1i21::immediate_h(word) << 16 | reg1i21::immediate_l(word)) << 2;
    let rj = reg1i21::rj(word);
    let taken = match reg1i21::opcode(word) {
        insn::BEQZ_OP => Some(regs.reg(rj) == 0),
        insn::BNEZ_OP => Some(regs.reg(rj) != 0),
        _ => None,
    };
    if let Some(taken) = taken {
        regs.set_era(if taken { pc_plus(pc, imm21, 22) } else { next });
        return Ok(());
    }

    let imm16 = reg2i16::immediate(word) << 2;
    let rj = reg2i16::rj(word);
    let rd = reg2i16::rd(word);
    let (vj, vd) = (regs.reg(rj), regs.reg(rd));
    let taken = match reg2i16::opcode(word) {
        insn::BEQ_OP => vj == vd,
        insn::BNE_OP => vj != vd,
        insn::BLT_OP => (vj as i64) < (vd as i64),
        insn::BGE_OP => (vj as i64) >= (vd as i64),
        insn::BLTU_OP => vj < vd,
        insn::BGEU_OP => vj >= vd,
        insn::JIRL_OP => {
            regs.set_era(vj.wrapping_add(sign_extend64(u64::from(imm16), 17) as u64));
            regs.set_reg(rd, next);
            return Ok(());
        }
        _ => return Err(SimuError::UnknownOpcode),
    };
    regs.set_era(if taken { pc_plus(pc, imm16, 17) } else { next });
    Ok(())
}

/// `arch_simulate_insn()`: runs [`simu_pc`] for [`insn::is_pc_ins`], else [`simu_branch`] for
/// [`insn::is_branch_ins`], else nothing (`Ok`, the frame untouched).
#[inline(always)]
pub fn simulate_insn<R: Regs + ?Sized>(word: u32, regs: &mut R) -> Result<(), SimuError> {
    match simulator(word) {
        Some(Simulator::Pc) => simu_pc(regs, word),
        Some(Simulator::Branch) => simu_branch(regs, word),
        None => Ok(()),
    }
}

/// The simulator `arch_simulate_insn()` picks for `word`, if any.
#[inline(always)]
const fn simulator(word: u32) -> Option<Simulator> {
    if insn::is_pc_ins(word) {
        Some(Simulator::Pc)
    } else if insn::is_branch_ins(word) {
        Some(Simulator::Branch)
    } else {
        None
    }
}
