// SPDX-License-Identifier: GPL-2.0

//! The simulators of `arch/riscv/kernel/probes/simulate-insn.c`.
//!
//! Each simulator takes the probed instruction (`opcode`, 16 bits zero-extended for a
//! compressed one), its address (`addr`) and the trap frame, as upstream's
//! `bool simulate_*(u32 opcode, unsigned long addr, struct pt_regs *regs)` do, updates the
//! frame in place and returns upstream's `bool`. Every simulator sets the PC from `addr`
//! (auipc to `addr + 4`), never from the frame's PC. `false` means upstream refused to
//! simulate and left the frame as it was: a BRANCH with the reserved `funct3` 010 or 011, or
//! C.JR/C.JALR with rs1 = x0 (which the decoder never hands over). Upstream's
//! `arch_simulate_insn()` ignores the result, so at a probe hit such a reserved branch leaves
//! the PC on the probe (mirrored here, not corrected).
//!
//! Every function is `#[inline(always)]`: in the kernel the simulators run in the probe-hit
//! path, inside the arch layer's unprobeable handlers, and must not leave an out-of-line copy
//! in probeable text.

use super::decode::Simulator;

/// The trap frame the simulators read and write (`struct pt_regs`): x1..x31 and the PC.
///
/// x0 is hard-wired to zero by the simulators themselves (`rv_insn_reg_get_val()` reads 0 for
/// it, `rv_insn_reg_set_val()` drops a write to it), so implementations are never asked about
/// register 0.
pub trait Regs {
    /// Register `x<n>` for `n` in 1..=31 (`*((unsigned long *)regs + n)`).
    fn x(&self, n: u32) -> u64;
    /// Sets register `x<n>` for `n` in 1..=31.
    fn set_x(&mut self, n: u32, val: u64);
    /// `instruction_pointer(regs)`: `regs->epc`.
    fn pc(&self) -> u64;
    /// `instruction_pointer_set(regs, val)`.
    fn set_pc(&mut self, val: u64);
}

/// `struct pt_regs` of `arch/riscv/include/asm/ptrace.h`, as a plain value with the same
/// layout: `epc`, then x1 (`ra`) to x31 (`t6`), then the CSRs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtRegs {
    /// `epc`: the PC.
    pub epc: u64,
    /// x1..x31 (`ra` .. `t6`): `x[n - 1]` is `x<n>`.
    pub x: [u64; 31],
    /// `status`.
    pub status: u64,
    /// `badaddr`.
    pub badaddr: u64,
    /// `cause`.
    pub cause: u64,
    /// `orig_a0`.
    pub orig_a0: u64,
}

impl Regs for PtRegs {
    fn x(&self, n: u32) -> u64 {
        match (n as usize).checked_sub(1) {
            Some(i) => self.x.get(i).copied().unwrap_or(0),
            None => 0,
        }
    }
    fn set_x(&mut self, n: u32, val: u64) {
        if let Some(r) = (n as usize).checked_sub(1).and_then(|i| self.x.get_mut(i)) {
            *r = val;
        }
    }
    fn pc(&self) -> u64 {
        self.epc
    }
    fn set_pc(&mut self, val: u64) {
        self.epc = val;
    }
}

impl PtRegs {
    /// Register `x<n>` with x0 reading 0 (and any `n` above 31 reading 0).
    pub fn reg(&self, n: u32) -> u64 {
        Regs::x(self, n)
    }

    /// The frame after `simulator` ran `opcode` probed at `addr` from this frame, and the
    /// simulator's result (the by-value form of [`simulate`]).
    pub fn simulated(mut self, simulator: Simulator, opcode: u32, addr: u64) -> (Self, bool) {
        let ok = simulate(simulator, opcode, addr, &mut self);
        (self, ok)
    }
}

/// `rv_insn_reg_get_val()`: x0 reads 0, x1..x31 read the frame, anything else fails.
#[inline(always)]
fn reg_get<R: Regs + ?Sized>(regs: &R, index: u32) -> Option<u64> {
    match index {
        0 => Some(0),
        1..=31 => Some(regs.x(index)),
        _ => None,
    }
}

/// `rv_insn_reg_set_val()`: a write to x0 is dropped, x1..x31 are written, anything else
/// fails.
#[inline(always)]
fn reg_set<R: Regs + ?Sized>(regs: &mut R, index: u32, val: u64) -> bool {
    match index {
        0 => true,
        1..=31 => {
            regs.set_x(index, val);
            true
        }
        _ => false,
    }
}

/// `sign_extend32(value, index)`: `value` sign-extended from bit `index` (0..=31).
#[inline(always)]
const fn sign_extend32(value: u32, index: u32) -> i32 {
    let shift = 31 - (index & 31);
    ((value << shift) as i32) >> shift
}

/// `addr + disp` with C's `unsigned long + s32` (wrapping).
#[inline(always)]
const fn offset(addr: u64, disp: i32) -> u64 {
    addr.wrapping_add(disp as i64 as u64)
}

/// `simulate_jal()`: `rd = addr + 4` (dropped for rd = x0), then jump to `addr + imm20`
/// (J-type immediate `imm[20|10:1|11|19:12]`, in multiples of 2).
#[inline(always)]
pub fn simulate_jal<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    let index = (opcode >> 7) & 0x1f;
    if !reg_set(regs, index, addr.wrapping_add(4)) {
        return false;
    }
    let imm = (((opcode >> 21) & 0x3ff) << 1)
        | (((opcode >> 20) & 0x1) << 11)
        | (((opcode >> 12) & 0xff) << 12)
        | (((opcode >> 31) & 0x1) << 20);
    regs.set_pc(offset(addr, sign_extend32(imm, 20)));
    true
}

/// `simulate_jalr()`: reads rs1 first, then `rd = addr + 4` (dropped for rd = x0), then jumps
/// to `(rs1 + imm12) & ~1` (so `jalr ra, 0(ra)` jumps to the old `ra`).
#[inline(always)]
pub fn simulate_jalr<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    let imm = (opcode >> 20) & 0xfff;
    let rd = (opcode >> 7) & 0x1f;
    let rs1 = (opcode >> 15) & 0x1f;
    let Some(base) = reg_get(regs, rs1) else {
        return false;
    };
    if !reg_set(regs, rd, addr.wrapping_add(4)) {
        return false;
    }
    regs.set_pc(offset(base, sign_extend32(imm, 11)) & !1);
    true
}

/// `simulate_auipc()`: `rd = addr + sign_extend64(imm[31:12] << 12, 31)` (dropped for
/// rd = x0), then the PC moves to `addr + 4`.
#[inline(always)]
pub fn simulate_auipc<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    let rd = (opcode >> 7) & 0x1f;
    let imm = ((opcode >> 12) & 0xf_ffff) << 12;
    let val = addr.wrapping_add(imm as i32 as i64 as u64);
    if !reg_set(regs, rd, val) {
        return false;
    }
    regs.set_pc(addr.wrapping_add(4));
    true
}

/// `simulate_branch()`: beq, bne, blt, bge (signed), bltu, bgeu (unsigned) compare rs1 with
/// rs2 and go to `addr + imm12` (B-type immediate `imm[12|10:5]`, `imm[4:1|11]`) if the
/// condition holds, else to `addr + 4`. The reserved `funct3` 010 and 011 return `false` with
/// the frame untouched.
#[inline(always)]
pub fn simulate_branch<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    let (Some(rs1), Some(rs2)) = (
        reg_get(regs, (opcode >> 15) & 0x1f),
        reg_get(regs, (opcode >> 20) & 0x1f),
    ) else {
        return false;
    };
    let imm = (((opcode >> 8) & 0xf) << 1)
        | (((opcode >> 25) & 0x3f) << 5)
        | (((opcode >> 7) & 0x1) << 11)
        | (((opcode >> 31) & 0x1) << 12);
    let taken = match (opcode >> 12) & 0x7 {
        0x0 => rs1 == rs2,                   // RVG_FUNCT3_BEQ
        0x1 => rs1 != rs2,                   // RVG_FUNCT3_BNE
        0x4 => (rs1 as i64) < (rs2 as i64),  // RVG_FUNCT3_BLT
        0x5 => (rs1 as i64) >= (rs2 as i64), // RVG_FUNCT3_BGE
        0x6 => rs1 < rs2,                    // RVG_FUNCT3_BLTU
        0x7 => rs1 >= rs2,                   // RVG_FUNCT3_BGEU
        _ => return false,
    };
    let disp = if taken { sign_extend32(imm, 12) } else { 4 };
    regs.set_pc(offset(addr, disp));
    true
}

/// `simulate_c_j()`: jump to `addr + imm11` (CJ-type immediate
/// `offset[11|4|9:8|10|6|7|3:1|5]`).
#[inline(always)]
pub fn simulate_c_j<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    let imm = (((opcode >> 3) & 0x7) << 1)
        | (((opcode >> 11) & 0x1) << 4)
        | (((opcode >> 2) & 0x1) << 5)
        | (((opcode >> 7) & 0x1) << 6)
        | (((opcode >> 6) & 0x1) << 7)
        | (((opcode >> 9) & 0x3) << 8)
        | (((opcode >> 8) & 0x1) << 10)
        | (((opcode >> 12) & 0x1) << 11);
    regs.set_pc(offset(addr, sign_extend32(imm, 11)));
    true
}

/// `simulate_c_jr_jalr()`: jump to rs1 (bits 11:7), read before C.JALR sets `ra` to
/// `addr + 2` (so `c.jalr ra` jumps to the old `ra`); rs1 = x0 returns `false`.
#[inline(always)]
fn simulate_c_jr_jalr<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R, jalr: bool) -> bool {
    let rs1 = (opcode >> 7) & 0x1f;
    if rs1 == 0 {
        return false;
    }
    let Some(target) = reg_get(regs, rs1) else {
        return false;
    };
    if jalr && !reg_set(regs, 1, addr.wrapping_add(2)) {
        return false;
    }
    regs.set_pc(target);
    true
}

/// `simulate_c_jr()`: jump to rs1.
#[inline(always)]
pub fn simulate_c_jr<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    simulate_c_jr_jalr(opcode, addr, regs, false)
}

/// `simulate_c_jalr()`: jump to rs1, `ra = addr + 2`.
#[inline(always)]
pub fn simulate_c_jalr<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    simulate_c_jr_jalr(opcode, addr, regs, true)
}

/// `simulate_c_bnez_beqz()`: go to `addr + imm8` (CB-type immediate
/// `offset[8|4:3]`, `offset[7:6|2:1|5]`) if rs1' (x8..x15, bits 9:7) is non-zero (C.BNEZ) or
/// zero (C.BEQZ), else to `addr + 2`.
#[inline(always)]
fn simulate_c_bnez_beqz<R: Regs + ?Sized>(
    opcode: u32,
    addr: u64,
    regs: &mut R,
    bnez: bool,
) -> bool {
    let rs1 = 0x8 | ((opcode >> 7) & 0x7);
    let Some(val) = reg_get(regs, rs1) else {
        return false;
    };
    let disp = if (val != 0) == bnez {
        let imm = (((opcode >> 3) & 0x3) << 1)
            | (((opcode >> 10) & 0x3) << 3)
            | (((opcode >> 2) & 0x1) << 5)
            | (((opcode >> 5) & 0x3) << 6)
            | (((opcode >> 12) & 0x1) << 8);
        sign_extend32(imm, 8)
    } else {
        2
    };
    regs.set_pc(offset(addr, disp));
    true
}

/// `simulate_c_bnez()`: branch if rs1' is non-zero.
#[inline(always)]
pub fn simulate_c_bnez<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    simulate_c_bnez_beqz(opcode, addr, regs, true)
}

/// `simulate_c_beqz()`: branch if rs1' is zero.
#[inline(always)]
pub fn simulate_c_beqz<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) -> bool {
    simulate_c_bnez_beqz(opcode, addr, regs, false)
}

/// `p->ainsn.api.handler((u32)p->opcode, (unsigned long)p->addr, regs)`
/// (`arch_simulate_insn()`): runs `simulator` and returns its result (which upstream
/// ignores).
#[inline(always)]
pub fn simulate<R: Regs + ?Sized>(
    simulator: Simulator,
    opcode: u32,
    addr: u64,
    regs: &mut R,
) -> bool {
    match simulator {
        Simulator::Jal => simulate_jal(opcode, addr, regs),
        Simulator::Jalr => simulate_jalr(opcode, addr, regs),
        Simulator::Auipc => simulate_auipc(opcode, addr, regs),
        Simulator::Branch => simulate_branch(opcode, addr, regs),
        Simulator::CJ => simulate_c_j(opcode, addr, regs),
        Simulator::CJr => simulate_c_jr(opcode, addr, regs),
        Simulator::CJalr => simulate_c_jalr(opcode, addr, regs),
        Simulator::CBnez => simulate_c_bnez(opcode, addr, regs),
        Simulator::CBeqz => simulate_c_beqz(opcode, addr, regs),
    }
}
