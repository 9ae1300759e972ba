// SPDX-License-Identifier: GPL-2.0

//! What a probed instruction needs: refused, simulated, or stepped out of line.
//!
//! `insns_not_supported()` and `insns_need_simulation()` of `arch/loongarch/kernel/inst.c`,
//! and `arch_prepare_kprobe()` with `arch_prepare_ss_slot()` and `arch_prepare_simulate()` of
//! `arch/loongarch/kernel/kprobes.c`, without the slot allocation.

use super::insn::{self, reg1i21, reg2, reg2i14, reg3};
use super::{errno, KernelText, KPROBE_SSTEPBP_INSN, LOONGARCH_INSN_SIZE, MAX_INSN_SIZE};

/// Why `insns_not_supported()` refuses an instruction: which of its `pr_notice()` messages
/// upstream prints (the glue prints it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unsupported {
    /// An atomic memory access, `amswap.w` to `ammin_db.du` (`amswapw_op ... ammindbdu_op`):
    /// "atomic memory access instructions are not supported".
    AtomicMemoryAccess,
    /// `sc.q` (`scq_op`): "sc.q instruction is not supported".
    ScQ,
    /// `ll.w`, `ll.d`, `sc.w`, `sc.d`: "ll and sc instructions are not supported".
    LlSc,
    /// `llacq.w`, `llacq.d`, `screl.w`, `screl.d`: "llacq and screl instructions are not
    /// supported".
    LlacqScrel,
    /// `bceqz`, `bcnez` (`bceqz_op`): "bceqz and bcnez instructions are not supported".
    BceqzBcnez,
}

/// `insns_not_supported()`: whether (and why) an instruction cannot be probed, because it
/// cannot be stepped out of line (the LL/SC pairs and atomics, whose reservation or
/// atomicity the break exception breaks) nor is simulated (`bceqz`/`bcnez`, which read the
/// condition flags).
///
/// The checks run in upstream's order: the `reg3_format` opcode (atomics, `sc.q`), the
/// `reg2i14_format` opcode (LL/SC), the `reg2_format` opcode (`llacq`/`screl`), the
/// `reg1i21_format` opcode (`bceqz`/`bcnez`).
pub const fn insns_not_supported(word: u32) -> Option<Unsupported> {
    let op3 = reg3::opcode(word);
    if op3 >= insn::AMSWAPW_OP && op3 <= insn::AMMINDBDU_OP {
        return Some(Unsupported::AtomicMemoryAccess);
    }
    if op3 == insn::SCQ_OP {
        return Some(Unsupported::ScQ);
    }
    match reg2i14::opcode(word) {
        insn::LLW_OP | insn::LLD_OP | insn::SCW_OP | insn::SCD_OP => {
            return Some(Unsupported::LlSc)
        }
        _ => {}
    }
    match reg2::opcode(word) {
        insn::LLACQW_OP | insn::LLACQD_OP | insn::SCRELW_OP | insn::SCRELD_OP => {
            return Some(Unsupported::LlacqScrel)
        }
        _ => {}
    }
    if reg1i21::opcode(word) == insn::BCEQZ_OP {
        return Some(Unsupported::BceqzBcnez);
    }
    None
}

/// `insns_need_simulation()`: whether an instruction is simulated rather than stepped out of
/// line: a PC-relative computation ([`insn::is_pc_ins`]) or a branch
/// ([`insn::is_branch_ins`]).
pub const fn insns_need_simulation(word: u32) -> bool {
    insn::is_pc_ins(word) || insn::is_branch_ins(word)
}

/// Which of `arch_simulate_insn()`'s simulators runs a simulated instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Simulator {
    /// `simu_pc()`, for [`insn::is_pc_ins`].
    Pc,
    /// `simu_branch()`, for [`insn::is_branch_ins`].
    Branch,
}

/// What `arch_prepare_kprobe()` decides for an instruction word (upstream has no separate
/// function: this is the decision part of `arch_prepare_kprobe()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeInsn {
    /// `insns_not_supported()`: refused with `-EINVAL`.
    Rejected(Unsupported),
    /// `insns_need_simulation()`: no slot (`p->ainsn.insn = NULL`); a hit runs
    /// `arch_simulate_insn()`, which picks the given simulator.
    Simulate(Simulator),
    /// Copied to a slot and single-stepped there.
    Step,
}

/// The decision of `arch_prepare_kprobe()` for `word`: [`insns_not_supported`] first, then
/// [`insns_need_simulation`], else stepped.
pub const fn decode_insn(word: u32) -> ProbeInsn {
    if let Some(why) = insns_not_supported(word) {
        return ProbeInsn::Rejected(why);
    }
    if insn::is_pc_ins(word) {
        ProbeInsn::Simulate(Simulator::Pc)
    } else if insn::is_branch_ins(word) {
        ProbeInsn::Simulate(Simulator::Branch)
    } else {
        ProbeInsn::Step
    }
}

/// What `arch_prepare_kprobe()` sets up for an accepted probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// Simulated (`arch_prepare_simulate()`): no slot, `ainsn.restore = 0`; the hit runs
    /// `arch_simulate_insn()` on `opcode`.
    Simulate {
        /// The probed instruction (`p->opcode`).
        opcode: u32,
        /// The simulator `arch_simulate_insn()` picks.
        simulator: Simulator,
    },
    /// Stepped (`arch_prepare_ss_slot()`): the glue allocates a slot (`get_insn_slot()`,
    /// `-ENOMEM` if none) and writes `slot` into it.
    Step {
        /// The probed instruction (`p->opcode`).
        opcode: u32,
        /// The slot's words (`p->ainsn.insn[0..MAX_INSN_SIZE]`).
        slot: [u32; MAX_INSN_SIZE],
        /// Where execution resumes after the step (`ainsn.restore`: `addr + 4`).
        restore: u64,
    },
}

/// `arch_prepare_ss_slot()`: the slot of the instruction `opcode` probed at `addr` (the
/// instruction, then [`KPROBE_SSTEPBP_INSN`]) and `ainsn.restore`.
pub const fn arch_prepare_ss_slot(opcode: u32, addr: u64) -> ([u32; MAX_INSN_SIZE], u64) {
    (
        [opcode, KPROBE_SSTEPBP_INSN],
        addr.wrapping_add(LOONGARCH_INSN_SIZE),
    )
}

/// `arch_prepare_kprobe()`, without the slot allocation: `-EILSEQ` for an address that is not
/// 4-byte aligned, `-EINVAL` for an instruction [`insns_not_supported`] refuses (or text
/// [`KernelText::read_insn`] cannot read; upstream dereferences it); otherwise what to set
/// up. Unlike other architectures', LoongArch's 6.12 `arch_prepare_kprobe()` consults no
/// exception table.
pub fn prepare_kprobe<T: KernelText + ?Sized>(text: &T, addr: u64) -> Result<Prepared, i32> {
    if addr & 0x3 != 0 {
        return Err(errno::EILSEQ);
    }
    let opcode = text.read_insn(addr).ok_or(errno::EINVAL)?;
    match decode_insn(opcode) {
        ProbeInsn::Rejected(_) => Err(errno::EINVAL),
        ProbeInsn::Simulate(simulator) => Ok(Prepared::Simulate { opcode, simulator }),
        ProbeInsn::Step => {
            let (slot, restore) = arch_prepare_ss_slot(opcode, addr);
            Ok(Prepared::Step {
                opcode,
                slot,
                restore,
            })
        }
    }
}
