// SPDX-License-Identifier: GPL-2.0

//! What a probed instruction needs: refused, simulated, or stepped out of line.
//!
//! `arch/arm64/kernel/probes/decode-insn.c` (`aarch64_insn_is_steppable()`,
//! `arm_probe_decode_insn()`, `is_probed_address_atomic()`, `arm_kprobe_decode_insn()`) and
//! the decision part of `arch_prepare_kprobe()` in `kprobes.c`.

use super::insn;
use super::{errno, KernelText, AARCH64_INSN_SIZE, BRK64_OPCODE_KPROBES_SS};

/// How far back from the probe the atomic-sequence scan looks, in instructions
/// (`MAX_ATOMIC_CONTEXT_SIZE`: Arm recommends at most 128 bytes between a load-exclusive and
/// its store-exclusive).
pub const MAX_ATOMIC_CONTEXT_SIZE: u64 = 128 / AARCH64_INSN_SIZE;

/// The simulator a probed instruction runs instead of being stepped: the value upstream stores
/// in `api->handler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Simulator {
    /// `simulate_adr_adrp()`.
    AdrAdrp,
    /// `simulate_b_bl()`.
    BBl,
    /// `simulate_b_cond()`.
    BCond,
    /// `simulate_br_blr_ret()`.
    BrBlrRet,
    /// `simulate_cbz_cbnz()`.
    CbzCbnz,
    /// `simulate_tbz_tbnz()`.
    TbzTbnz,
    /// `simulate_ldr_literal()`.
    LdrLiteral,
    /// `simulate_ldrsw_literal()`.
    LdrswLiteral,
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

/// `aarch64_insn_is_steppable()`: whether `insn` gives the same result when executed from the
/// out-of-line slot with single-step enabled.
///
/// Not steppable: in the branch/exception/system class, branches, MSR (immediate and
/// register), exception generation, ERET/ERETAA/ERETAB, MRS of anything but DAIF and the
/// hints [`insn::is_steppable_hint`] does not accept; elsewhere, PC-relative literal users,
/// load/store exclusives and the MOPS memory copy/set instructions.
pub fn is_steppable(insn: u32) -> bool {
    if insn::is_class_branch_sys(insn) {
        if insn::is_branch(insn)
            || insn::is_msr_imm(insn)
            || insn::is_msr_reg(insn)
            || insn::is_exception(insn)
            || insn::is_eret(insn)
            || insn::is_eret_auth(insn)
        {
            return false;
        }
        if insn::is_mrs(insn) {
            return insn::extract_system_reg(insn) != insn::AARCH64_INSN_SPCLREG_DAIF;
        }
        if insn::is_hint(insn) {
            return insn::is_steppable_hint(insn);
        }
        return true;
    }
    !(insn::uses_literal(insn) || insn::is_exclusive(insn) || insn::is_mops(insn))
}

/// `arm_probe_decode_insn()`: the decision for one instruction word, shared with uprobes.
///
/// Steppable instructions are stepped; b.cond, cbz/cbnz, tbz/tbnz, adr/adrp, b/bl and
/// br/blr/ret are simulated; everything else (literal loads included: kprobes handles them in
/// [`kprobe_decode_insn`]) is rejected.
pub fn probe_decode_insn(insn: u32) -> ProbeInsn {
    if is_steppable(insn) {
        return ProbeInsn::Step;
    }
    let sim = if insn::is_bcond(insn) {
        Simulator::BCond
    } else if insn::is_cbz(insn) || insn::is_cbnz(insn) {
        Simulator::CbzCbnz
    } else if insn::is_tbz(insn) || insn::is_tbnz(insn) {
        Simulator::TbzTbnz
    } else if insn::is_adr_adrp(insn) {
        Simulator::AdrAdrp
    } else if insn::is_b(insn) || insn::is_bl(insn) {
        Simulator::BBl
    } else if insn::is_br(insn) || insn::is_blr(insn) || insn::is_ret(insn) {
        Simulator::BrBlrRet
    } else {
        return ProbeInsn::Rejected;
    };
    ProbeInsn::Simulate(sim)
}

/// `is_probed_address_atomic(scan_start, scan_end)`: whether the probe lies inside a
/// load-exclusive/store-exclusive sequence.
///
/// Walks back from `scan_start` over `words` instructions (upstream: from `scan_start` down to
/// `scan_end` inclusive, `words = scan_start - scan_end + 1`): a store-exclusive first means
/// no, a load-exclusive first means yes, neither means no. A word [`KernelText::read_insn`]
/// cannot read ends the walk with no (upstream reads kernel text, which is always readable).
pub fn is_probed_address_atomic<T: KernelText + ?Sized>(
    text: &T,
    scan_start: u64,
    words: u64,
) -> bool {
    let mut at = scan_start;
    for _ in 0..words {
        let Some(w) = text.read_insn(at) else {
            return false;
        };
        if insn::is_store_ex(w) {
            return false;
        } else if insn::is_load_ex(w) {
            return true;
        }
        at = at.wrapping_sub(AARCH64_INSN_SIZE);
    }
    false
}

/// `arm_kprobe_decode_insn()`: the decision for a kprobe at `addr`.
///
/// Literal loads (`ldr` w/x and `ldrsw` literal) are simulated; everything else is decided by
/// [`probe_decode_insn`]. An accepted instruction is then rejected if it lies in an atomic
/// sequence: the scan covers the words before `addr` back to the start of its symbol, at most
/// [`MAX_ATOMIC_CONTEXT_SIZE`] of them, and is skipped when kallsyms knows no symbol there.
/// An unreadable `addr` is rejected (upstream dereferences it).
pub fn kprobe_decode_insn<T: KernelText + ?Sized>(text: &T, addr: u64) -> ProbeInsn {
    let Some(insn) = text.read_insn(addr) else {
        return ProbeInsn::Rejected;
    };
    let decoded = if insn::is_ldr_lit(insn) {
        ProbeInsn::Simulate(Simulator::LdrLiteral)
    } else if insn::is_ldrsw_lit(insn) {
        ProbeInsn::Simulate(Simulator::LdrswLiteral)
    } else {
        probe_decode_insn(insn)
    };
    // scan_end = addr - offset / 4 instructions, or addr - MAX_ATOMIC_CONTEXT_SIZE; the scan
    // runs from addr - 1 instruction down to scan_end.
    let words = text.lookup_size_offset(addr).map(|s| {
        if s.offset < MAX_ATOMIC_CONTEXT_SIZE * AARCH64_INSN_SIZE {
            s.offset / AARCH64_INSN_SIZE
        } else {
            MAX_ATOMIC_CONTEXT_SIZE
        }
    });
    if decoded != ProbeInsn::Rejected {
        if let Some(words) = words {
            if is_probed_address_atomic(text, addr.wrapping_sub(AARCH64_INSN_SIZE), words) {
                return ProbeInsn::Rejected;
            }
        }
    }
    decoded
}

/// What `arch_prepare_kprobe()` sets up for an accepted probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// `INSN_GOOD_NO_SLOT` (`arch_prepare_simulate()`): no slot, `api.restore = 0`; the hit
    /// runs the simulator.
    Simulate {
        /// The probed instruction (`p->opcode`).
        opcode: u32,
        /// `api.handler`.
        simulator: Simulator,
    },
    /// `INSN_GOOD` (`arch_prepare_ss_slot()`): the glue allocates a slot (`get_insn_slot()`,
    /// `-ENOMEM` if none) and writes `slot` into it.
    Step {
        /// The probed instruction (`p->opcode`).
        opcode: u32,
        /// The slot's two instructions: the probed one and `BRK64_OPCODE_KPROBES_SS`.
        slot: [u32; 2],
        /// Where execution resumes after the step (`api.restore`: `addr + 4`).
        restore: u64,
    },
}

/// `arch_prepare_kprobe()`, without the slot allocation: `-EINVAL` for a misaligned
/// address, an address with an exception-table entry or an instruction
/// [`kprobe_decode_insn`] rejects (or unreadable text); otherwise what to set up.
pub fn prepare_kprobe<T: KernelText + ?Sized>(text: &T, addr: u64) -> Result<Prepared, i32> {
    if addr & 0x3 != 0 {
        return Err(errno::EINVAL);
    }
    let opcode = text.read_insn(addr).ok_or(errno::EINVAL)?;
    if text.search_exception_tables(addr) {
        return Err(errno::EINVAL);
    }
    match kprobe_decode_insn(text, addr) {
        ProbeInsn::Rejected => Err(errno::EINVAL),
        ProbeInsn::Simulate(simulator) => Ok(Prepared::Simulate { opcode, simulator }),
        ProbeInsn::Step => Ok(Prepared::Step {
            opcode,
            slot: [opcode, BRK64_OPCODE_KPROBES_SS],
            restore: addr.wrapping_add(AARCH64_INSN_SIZE),
        }),
    }
}
