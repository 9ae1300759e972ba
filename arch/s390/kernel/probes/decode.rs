// SPDX-License-Identifier: GPL-2.0

//! The decisions of `arch/s390/kernel/kprobes.c`: whether an address is an instruction
//! boundary (`can_probe()`), what `arch_prepare_kprobe()` refuses and copies into the slot
//! (`copy_instruction()`), and where execution resumes after the step (`resume_execution()`,
//! `disable_singlestep()`). What the handlers use is `#[inline(always)]`: it runs on the
//! probe-hit path, which must not call probeable code.

use super::insn::{
    insn_length, probe_get_fixup_type, probe_is_insn_relative_long, probe_is_prohibited_opcode,
    FIXUP_BRANCH_NOT_TAKEN, FIXUP_PSW_NORMAL, FIXUP_RETURN_REGISTER,
};
use super::{errno, KernelText, BREAKPOINT_INSTRUCTION, MAX_INSN_SIZE};

/// `can_probe()`: whether `paddr` is at an instruction boundary of its symbol.
///
/// `offset` is `paddr`'s offset in its symbol (`kallsyms_lookup_size_offset()`), `None` when
/// it has none; `probe_opcode(addr)` is the original first halfword of the probe registered at
/// `addr` (`get_kprobe(addr)->opcode`), `None` when there is none. From the symbol's start,
/// instruction by instruction: a halfword that cannot be read, or an opcode 0x00 other than
/// [`BREAKPOINT_INSTRUCTION`] (QEMU's software breakpoint, of unknown length), or a breakpoint
/// that is no probe's, ends the walk with `false`; a probe's breakpoint is walked over as the
/// instruction it replaced.
pub fn can_probe<T: KernelText + ?Sized>(
    text: &T,
    paddr: u64,
    offset: Option<u64>,
    probe_opcode: impl Fn(u64) -> Option<u16>,
) -> bool {
    if paddr & 0x01 != 0 {
        return false;
    }
    let Some(offset) = offset else {
        return false;
    };
    let mut addr = paddr.wrapping_sub(offset);
    while addr < paddr {
        let Some(mut insn) = text.read_halfword(addr) else {
            return false;
        };
        if insn >> 8 == 0 {
            if insn != BREAKPOINT_INSTRUCTION {
                return false;
            }
            match probe_opcode(addr) {
                Some(op) => insn = op,
                None => return false,
            }
        }
        addr = addr.wrapping_add(insn_length((insn >> 8) as u8));
    }
    addr == paddr
}

/// `copy_instruction()`: the halfwords written into the slot at `slot` for the instruction
/// `insn` (of `len` bytes) probed at `addr`.
///
/// A relative-long instruction ([`probe_is_insn_relative_long`]) gets its 32-bit halfword
/// offset re-aimed from the slot at the same target: `((addr + 2 * disp) - slot) / 2`,
/// computed as upstream does (in `u64`, halved unsigned, truncated to 32 bits). Upstream does
/// not check that it fits: the slot is taken within the 4 GiB of the kernel image, so the
/// target stays within ±4 GiB of it.
pub const fn copy_instruction(insn: [u16; MAX_INSN_SIZE], addr: u64, slot: u64) -> [u16; 3] {
    let mut out = insn;
    if probe_is_insn_relative_long(insn[0]) {
        let disp = (((insn[1] as u32) << 16) | insn[2] as u32) as i32 as i64;
        let target = addr.wrapping_add((disp.wrapping_mul(2)) as u64);
        let new_disp = target.wrapping_sub(slot) / 2;
        out[1] = (new_disp >> 16) as u16;
        out[2] = new_disp as u16;
    }
    out
}

/// What `arch_prepare_kprobe()` sets up for an accepted probe; the glue allocates the slot
/// (`get_insn_slot()`, `-ENOMEM`), writes [`Prepared::slot_insn`]'s first
/// [`Prepared::len`] bytes into it (`s390_kernel_write()`) and sets `p->opcode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prepared {
    /// `p->opcode`: the first halfword of the probed instruction.
    pub opcode: u16,
    /// The instruction as the slot holds it ([`copy_instruction`]).
    pub slot_insn: [u16; MAX_INSN_SIZE],
    /// Its length in bytes.
    pub len: u64,
}

/// `arch_prepare_kprobe()` at `addr`, with the slot at `slot` (`get_insn_slot()`, `None` when
/// none is free): `-EINVAL` when [`can_probe`] says no or the instruction is prohibited
/// ([`probe_is_prohibited_opcode`]), `-ENOMEM` without a slot, else what to write into the
/// slot.
///
/// `offset` and `probe_opcode` are [`can_probe`]'s. Text that cannot be read where upstream
/// dereferences it (the instruction at `addr`) is refused with `-EINVAL`.
pub fn prepare_kprobe<T: KernelText + ?Sized>(
    text: &T,
    addr: u64,
    offset: Option<u64>,
    probe_opcode: impl Fn(u64) -> Option<u16>,
    slot: Option<u64>,
) -> Result<Prepared, i32> {
    if !can_probe(text, addr, offset, probe_opcode) {
        return Err(errno::EINVAL);
    }
    let (insn, len) = text.read_insn(addr).ok_or(errno::EINVAL)?;
    if probe_is_prohibited_opcode(&insn) {
        return Err(errno::EINVAL);
    }
    let slot = slot.ok_or(errno::ENOMEM)?;
    Ok(Prepared {
        opcode: insn[0],
        slot_insn: copy_instruction(insn, addr, slot),
        len,
    })
}

/// Where execution resumes after the step, and the register to fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resumed {
    /// The new PSW address.
    pub ip: u64,
    /// The return register the instruction wrote (`(insn[0] & 0xf0) >> 4`) and what to add
    /// to it (`addr - slot`), for [`FIXUP_RETURN_REGISTER`].
    pub gpr_fix: Option<(usize, u64)>,
}

/// `resume_execution()`: after stepping `slot_insn` (the slot's halfwords) at `slot` for the
/// probe at `addr`, with the PSW address `psw_addr`, where to resume and which register to
/// fix (by [`probe_get_fixup_type`] of the slot's instruction).
#[inline(always)]
pub const fn resume_execution(
    slot_insn: &[u16; MAX_INSN_SIZE],
    addr: u64,
    slot: u64,
    psw_addr: u64,
) -> Resumed {
    let fixup = probe_get_fixup_type(slot_insn);
    let mut ip = psw_addr;
    if fixup & FIXUP_PSW_NORMAL != 0 {
        ip = ip.wrapping_add(addr.wrapping_sub(slot));
    }
    if fixup & FIXUP_BRANCH_NOT_TAKEN != 0 {
        let ilen = insn_length((slot_insn[0] >> 8) as u8);
        if ip.wrapping_sub(slot) == ilen {
            ip = addr.wrapping_add(ilen);
        }
    }
    let gpr_fix = if fixup & FIXUP_RETURN_REGISTER != 0 {
        Some((
            ((slot_insn[0] & 0xf0) >> 4) as usize,
            addr.wrapping_sub(slot),
        ))
    } else {
        None
    };
    Resumed { ip, gpr_fix }
}

/// `PSW_MASK_PER` of s390x: program-event recording, the single step.
pub const PSW_MASK_PER: u64 = 0x4000_0000_0000_0000;
/// `PSW_MASK_IO` of s390x: I/O interrupts.
pub const PSW_MASK_IO: u64 = 0x0200_0000_0000_0000;
/// `PSW_MASK_EXT` of s390x: external interrupts.
pub const PSW_MASK_EXT: u64 = 0x0100_0000_0000_0000;

/// `enable_singlestep()`'s PSW mask: PER on, I/O and external interrupts off for the step;
/// and what it saves of the old mask to restore after (`kcb->kprobe_saved_imask`: its PER,
/// I/O and external bits).
#[inline(always)]
pub const fn enable_singlestep_mask(mask: u64) -> (u64, u64) {
    let saved_imask = mask & (PSW_MASK_PER | PSW_MASK_IO | PSW_MASK_EXT);
    (
        (mask | PSW_MASK_PER) & !(PSW_MASK_IO | PSW_MASK_EXT),
        saved_imask,
    )
}

/// `kprobe_reenter_check()`: whether a probe hit while another is `current_kprobe` in state
/// `status` (a `KPROBE_*` value) may be stepped (counted as missed): only from the other's
/// handlers (`KPROBE_HIT_ACTIVE`, `KPROBE_HIT_SSDONE`). Upstream prints "Failed to recover
/// from reentered kprobes.", dumps the probe and calls `BUG()` otherwise: a probe on the
/// single-step path.
#[inline(always)]
pub const fn reenter_allowed(status: u64) -> bool {
    matches!(status, KPROBE_HIT_ACTIVE | KPROBE_HIT_SSDONE)
}

/// `KPROBE_HIT_ACTIVE` (`linux/kprobes.h`).
pub const KPROBE_HIT_ACTIVE: u64 = 0x1;
/// `KPROBE_HIT_SS`.
pub const KPROBE_HIT_SS: u64 = 0x2;
/// `KPROBE_REENTER`.
pub const KPROBE_REENTER: u64 = 0x4;
/// `KPROBE_HIT_SSDONE`.
pub const KPROBE_HIT_SSDONE: u64 = 0x8;

/// `disable_singlestep()`'s PSW mask: PER off, the I/O and external interrupt bits saved at
/// the step's start (`kcb->kprobe_saved_imask`) back.
#[inline(always)]
pub const fn disable_singlestep_mask(mask: u64, saved_imask: u64) -> u64 {
    (mask & !PSW_MASK_PER) | saved_imask
}
