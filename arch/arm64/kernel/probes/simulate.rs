// SPDX-License-Identifier: GPL-2.0

//! The simulators of `arch/arm64/kernel/probes/simulate-insn.c` and the condition checks
//! (`aarch32_opcode_cond_checks[]`) of `arch/arm64/kernel/traps.c`.
//!
//! Each simulator takes the probed instruction (`opcode`), its address (`addr`) and the trap
//! frame, as upstream's `void simulate_*(u32 opcode, long addr, struct pt_regs *regs)` do,
//! and updates the frame in place. Branches set the PC from `addr`; adr/adrp and the literal
//! loads advance the frame's own PC by 4, as upstream does. The literal loads read through
//! [`Memory`]; a read that faults leaves the frame untouched and returns the [`Fault`]
//! (upstream's `READ_ONCE()` would take the fault in the kernel).
//!
//! Every function is `#[inline(always)]`: in the kernel the simulators run in the probe-hit
//! path, inside the arch layer's unprobeable handlers, and must not leave an out-of-line copy
//! in probeable text.

use super::decode::Simulator;

/// The N flag of PSTATE (`PSR_N_BIT`).
pub const PSR_N_BIT: u64 = 0x8000_0000;
/// The Z flag of PSTATE (`PSR_Z_BIT`).
pub const PSR_Z_BIT: u64 = 0x4000_0000;
/// The C flag of PSTATE (`PSR_C_BIT`).
pub const PSR_C_BIT: u64 = 0x2000_0000;
/// The V flag of PSTATE (`PSR_V_BIT`).
pub const PSR_V_BIT: u64 = 0x1000_0000;

/// The trap frame the simulators read and write (`struct pt_regs`).
pub trait Regs {
    /// `regs->regs[n]` for `n` in 0..=30; any other `n` reads 0.
    fn x(&self, n: u32) -> u64;
    /// Sets `regs->regs[n]` for `n` in 0..=30; any other `n` is ignored.
    fn set_x(&mut self, n: u32, val: u64);
    /// `regs->sp` (no simulator uses it; the probe's users may).
    fn sp(&self) -> u64;
    /// `instruction_pointer(regs)`.
    fn pc(&self) -> u64;
    /// `instruction_pointer_set(regs, val)`.
    fn set_pc(&mut self, val: u64);
    /// `regs->pstate`.
    fn pstate(&self) -> u64;
}

/// A literal load that faulted, at `addr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The address that could not be read.
    pub addr: u64,
}

/// The memory the literal loads read (`READ_ONCE(*(u32 *)load_addr)` and friends), in CPU
/// byte order.
pub trait Memory {
    /// Reads the 32-bit word at `addr`.
    fn read_u32(&self, addr: u64) -> Result<u32, Fault>;
    /// Reads the 64-bit word at `addr`.
    fn read_u64(&self, addr: u64) -> Result<u64, Fault>;
}

/// The registers of `struct pt_regs` the simulators use, as a plain value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtRegs {
    /// `regs[0..31]`: x0 to x30.
    pub regs: [u64; 31],
    /// `sp`.
    pub sp: u64,
    /// `pc`.
    pub pc: u64,
    /// `pstate`.
    pub pstate: u64,
}

impl Regs for PtRegs {
    fn x(&self, n: u32) -> u64 {
        self.regs.get(n as usize).copied().unwrap_or(0)
    }
    fn set_x(&mut self, n: u32, val: u64) {
        if let Some(r) = self.regs.get_mut(n as usize) {
            *r = val;
        }
    }
    fn sp(&self) -> u64 {
        self.sp
    }
    fn pc(&self) -> u64 {
        self.pc
    }
    fn set_pc(&mut self, val: u64) {
        self.pc = val;
    }
    fn pstate(&self) -> u64 {
        self.pstate
    }
}

impl PtRegs {
    /// The frame after `simulator` ran `opcode` probed at `addr` from this frame (the
    /// by-value form of [`simulate`]).
    pub fn simulated<M: Memory + ?Sized>(
        mut self,
        simulator: Simulator,
        opcode: u32,
        addr: u64,
        mem: &M,
    ) -> Result<Self, Fault> {
        simulate(simulator, opcode, addr, &mut self, mem)?;
        Ok(self)
    }
}

/// `pt_regs_read_reg()` (`get_x_reg()`): register `n`, where 31 is XZR and reads 0.
#[inline(always)]
fn get_x_reg<R: Regs + ?Sized>(regs: &R, n: u32) -> u64 {
    if n < 31 {
        regs.x(n)
    } else {
        0
    }
}

/// `get_w_reg()`: the low 32 bits of register `n` (31 reads 0).
#[inline(always)]
fn get_w_reg<R: Regs + ?Sized>(regs: &R, n: u32) -> u32 {
    get_x_reg(regs, n) as u32
}

/// `pt_regs_write_reg()` (`set_x_reg()`): writes register `n`; a write to 31 (XZR) is dropped.
#[inline(always)]
fn set_x_reg<R: Regs + ?Sized>(regs: &mut R, n: u32, val: u64) {
    if n < 31 {
        regs.set_x(n, val);
    }
}

/// `set_w_reg()`: writes the low 32 bits of `val`, zero-extended, to register `n`.
#[inline(always)]
fn set_w_reg<R: Regs + ?Sized>(regs: &mut R, n: u32, val: u64) {
    set_x_reg(regs, n, u64::from(val as u32));
}

/// `sign_extend32(value, index)`: `value` sign-extended from bit `index` (0..=31).
#[inline(always)]
const fn sign_extend32(value: u32, index: u32) -> i32 {
    let shift = 31 - (index & 31);
    ((value << shift) as i32) >> shift
}

/// `bbl_displacement()`: the 26-bit word offset of b/bl, in bytes.
#[inline(always)]
const fn bbl_displacement(insn: u32) -> i32 {
    sign_extend32((insn & 0x3ff_ffff) << 2, 27)
}

/// `bcond_displacement()`, `cbz_displacement()` and `ldr_displacement()`: the 19-bit word
/// offset at bits 23:5, in bytes.
#[inline(always)]
const fn imm19_displacement(insn: u32) -> i32 {
    sign_extend32(((insn >> 5) & 0x7_ffff) << 2, 20)
}

/// `tbz_displacement()`: the 14-bit word offset at bits 18:5, in bytes.
#[inline(always)]
const fn tbz_displacement(insn: u32) -> i32 {
    sign_extend32(((insn >> 5) & 0x3fff) << 2, 15)
}

/// `addr + disp` with C's `long + int` (wrapping).
#[inline(always)]
const fn offset(addr: u64, disp: i32) -> u64 {
    addr.wrapping_add(disp as i64 as u64)
}

/// `aarch32_opcode_cond_checks[cond](pstate)`: whether condition `cond` (its low four bits)
/// holds for the NZCV flags of `pstate` (`__check_eq()` .. `__check_al()`). 0b1111 ("nv")
/// behaves as "al".
#[inline(always)]
pub const fn condition_holds(cond: u32, pstate: u64) -> bool {
    let n = pstate & PSR_N_BIT != 0;
    let z = pstate & PSR_Z_BIT != 0;
    let c = pstate & PSR_C_BIT != 0;
    let v = pstate & PSR_V_BIT != 0;
    match cond & 0xf {
        0x0 => z,            // eq
        0x1 => !z,           // ne
        0x2 => c,            // cs/hs
        0x3 => !c,           // cc/lo
        0x4 => n,            // mi
        0x5 => !n,           // pl
        0x6 => v,            // vs
        0x7 => !v,           // vc
        0x8 => c && !z,      // hi
        0x9 => !c || z,      // ls
        0xa => n == v,       // ge
        0xb => n != v,       // lt
        0xc => !z && n == v, // gt
        0xd => z || n != v,  // le
        _ => true,           // al, nv
    }
}

/// `simulate_adr_adrp()`: `Xd = addr + imm21` (adr) or `Xd = (addr & ~0xfff) + (imm21 <<
/// 12)` (adrp); the PC advances by 4.
#[inline(always)]
pub fn simulate_adr_adrp<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) {
    let xn = opcode & 0x1f;
    let raw = ((opcode >> 3) & 0x1f_fffc) | ((opcode >> 29) & 0x3);
    // sign_extend64(imm, 20)
    let imm = (((raw as u64) << 43) as i64 >> 43) as u64;
    let val = if opcode & 0x8000_0000 != 0 {
        (imm << 12).wrapping_add(addr & 0xffff_ffff_ffff_f000)
    } else {
        imm.wrapping_add(addr)
    };
    set_x_reg(regs, xn, val);
    let pc = regs.pc().wrapping_add(4);
    regs.set_pc(pc);
}

/// `simulate_b_bl()`: branch to `addr + imm26 * 4`; bl (bit 31) also sets x30 to
/// `addr + 4`.
#[inline(always)]
pub fn simulate_b_bl<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) {
    let disp = bbl_displacement(opcode);
    if opcode & (1 << 31) != 0 {
        set_x_reg(regs, 30, addr.wrapping_add(4));
    }
    regs.set_pc(offset(addr, disp));
}

/// `simulate_b_cond()`: branch to `addr + imm19 * 4` if the condition in bits 3:0 holds for
/// the low 32 bits of PSTATE, else to `addr + 4`.
#[inline(always)]
pub fn simulate_b_cond<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) {
    let disp = if condition_holds(opcode & 0xf, regs.pstate() & 0xffff_ffff) {
        imm19_displacement(opcode)
    } else {
        4
    };
    regs.set_pc(offset(addr, disp));
}

/// `simulate_br_blr_ret()`: branch to Xn (bits 9:5); blr (bits 22:21 = 01) also sets x30 to
/// `addr + 4`, after reading Xn (so `blr x30` branches to the old x30).
#[inline(always)]
pub fn simulate_br_blr_ret<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) {
    let xn = (opcode >> 5) & 0x1f;
    let target = get_x_reg(regs, xn);
    regs.set_pc(target);
    if (opcode >> 21) & 0x3 == 1 {
        set_x_reg(regs, 30, addr.wrapping_add(4));
    }
}

/// `check_cbz()` / `check_cbnz()`: whether Xt (bit 31 set) or Wt is zero.
#[inline(always)]
fn reg_is_zero<R: Regs + ?Sized>(opcode: u32, regs: &R) -> bool {
    let xn = opcode & 0x1f;
    if opcode & (1 << 31) != 0 {
        get_x_reg(regs, xn) == 0
    } else {
        get_w_reg(regs, xn) == 0
    }
}

/// `simulate_cbz_cbnz()`: branch to `addr + imm19 * 4` if Xt/Wt is zero (cbz) or non-zero
/// (cbnz, bit 24), else to `addr + 4`.
#[inline(always)]
pub fn simulate_cbz_cbnz<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) {
    let zero = reg_is_zero(opcode, regs);
    let taken = if opcode & (1 << 24) != 0 { !zero } else { zero };
    let disp = if taken { imm19_displacement(opcode) } else { 4 };
    regs.set_pc(offset(addr, disp));
}

/// `check_tbz()` / `check_tbnz()`: bit `b5:b40` of Xt.
#[inline(always)]
fn test_bit<R: Regs + ?Sized>(opcode: u32, regs: &R) -> bool {
    let xn = opcode & 0x1f;
    let bit_pos = ((opcode & (1 << 31)) >> 26) | ((opcode >> 19) & 0x1f);
    (get_x_reg(regs, xn).wrapping_shr(bit_pos) & 1) != 0
}

/// `simulate_tbz_tbnz()`: branch to `addr + imm14 * 4` if the tested bit is zero (tbz) or
/// one (tbnz, bit 24), else to `addr + 4`.
#[inline(always)]
pub fn simulate_tbz_tbnz<R: Regs + ?Sized>(opcode: u32, addr: u64, regs: &mut R) {
    let set = test_bit(opcode, regs);
    let taken = if opcode & (1 << 24) != 0 { set } else { !set };
    let disp = if taken { tbz_displacement(opcode) } else { 4 };
    regs.set_pc(offset(addr, disp));
}

/// `simulate_ldr_literal()`: Xt (bit 30) or Wt, zero-extended, from `addr + imm19 * 4`; the
/// PC advances by 4. On a fault nothing changes.
#[inline(always)]
pub fn simulate_ldr_literal<R: Regs + ?Sized, M: Memory + ?Sized>(
    opcode: u32,
    addr: u64,
    regs: &mut R,
    mem: &M,
) -> Result<(), Fault> {
    let xn = opcode & 0x1f;
    let load_addr = offset(addr, imm19_displacement(opcode));
    if opcode & (1 << 30) != 0 {
        let val = mem.read_u64(load_addr)?;
        set_x_reg(regs, xn, val);
    } else {
        let val = mem.read_u32(load_addr)?;
        set_w_reg(regs, xn, u64::from(val));
    }
    let pc = regs.pc().wrapping_add(4);
    regs.set_pc(pc);
    Ok(())
}

/// `simulate_ldrsw_literal()`: Xt from the 32-bit word at `addr + imm19 * 4`,
/// sign-extended; the PC advances by 4. On a fault nothing changes.
#[inline(always)]
pub fn simulate_ldrsw_literal<R: Regs + ?Sized, M: Memory + ?Sized>(
    opcode: u32,
    addr: u64,
    regs: &mut R,
    mem: &M,
) -> Result<(), Fault> {
    let xn = opcode & 0x1f;
    let load_addr = offset(addr, imm19_displacement(opcode));
    let val = mem.read_u32(load_addr)?;
    set_x_reg(regs, xn, val as i32 as i64 as u64);
    let pc = regs.pc().wrapping_add(4);
    regs.set_pc(pc);
    Ok(())
}

/// `p->ainsn.api.handler((u32)p->opcode, (long)p->addr, regs)` (`arch_simulate_insn()`):
/// runs `simulator`.
#[inline(always)]
pub fn simulate<R: Regs + ?Sized, M: Memory + ?Sized>(
    simulator: Simulator,
    opcode: u32,
    addr: u64,
    regs: &mut R,
    mem: &M,
) -> Result<(), Fault> {
    match simulator {
        Simulator::AdrAdrp => simulate_adr_adrp(opcode, addr, regs),
        Simulator::BBl => simulate_b_bl(opcode, addr, regs),
        Simulator::BCond => simulate_b_cond(opcode, addr, regs),
        Simulator::BrBlrRet => simulate_br_blr_ret(opcode, addr, regs),
        Simulator::CbzCbnz => simulate_cbz_cbnz(opcode, addr, regs),
        Simulator::TbzTbnz => simulate_tbz_tbnz(opcode, addr, regs),
        Simulator::LdrLiteral => return simulate_ldr_literal(opcode, addr, regs, mem),
        Simulator::LdrswLiteral => return simulate_ldrsw_literal(opcode, addr, regs, mem),
    }
    Ok(())
}
