// SPDX-License-Identifier: GPL-2.0

//! The decisions of `arch/powerpc/kernel/kprobes.c`: what `arch_prepare_kprobe()` refuses and
//! copies to the slot, what `try_to_emulate()` makes of `emulate_step()`'s answer, and what
//! the trap, single-step and fault handlers compute from the probe and the frame. What those
//! handlers use is `#[inline(always)]`: it runs on the probe-hit path, which must not call
//! probeable code.

use super::insn::{self, PpcInst};
use super::{errno, KernelText, PPC_INSN_SIZE};

/// Why `arch_prepare_kprobe()` refuses a probe: which of its `printk()` lines upstream prints
/// first (the glue prints it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The address is not 4-byte aligned: "Attempt to register kprobe at an unaligned
    /// address".
    Unaligned,
    /// [`insn::can_single_step`] refuses the word: "Cannot register a kprobe on instructions
    /// that can't be single stepped".
    CannotSingleStep,
    /// The word before the probe, in the same page, is a prefix: "Cannot register a kprobe on
    /// the second word of prefixed instruction".
    SecondWordOfPrefixed,
    /// [`KernelText`] could not read the text (upstream dereferences it; the core only asks
    /// about kernel text); nothing is printed.
    Unreadable,
}

/// A refused probe: `-EINVAL` ([`Refused::errno`]), with what upstream prints.
///
/// # Invariants
///
/// At least one of `first` and `prev_probe_prefixed` says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Refused {
    /// The first check's refusal, if any.
    pub first: Option<Refusal>,
    /// The probe registered at the previous word (not on ftrace) single-steps a prefixed
    /// instruction: "Cannot register a kprobe on the second word of prefixed instruction"
    /// once more. Upstream checks it even after the first check refused.
    pub prev_probe_prefixed: bool,
}

impl Refused {
    /// The errno `arch_prepare_kprobe()` returns: `-EINVAL`.
    pub const fn errno(&self) -> i32 {
        errno::EINVAL
    }
}

/// What `arch_prepare_kprobe()` sets up for an accepted probe; the glue allocates the slot
/// (`get_insn_slot()`, `-ENOMEM`), writes [`Prepared::insn`] into it with
/// `patch_instruction()`, sets `p->opcode` and `p->ainsn.boostable = 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prepared {
    /// The probed instruction (`ppc_inst_read(p->addr)`), written to the slot.
    pub insn: PpcInst,
}

impl Prepared {
    /// `p->opcode`: the first word (`ppc_inst_val()`).
    pub const fn opcode(&self) -> u32 {
        self.insn.val
    }
}

/// `arch_prepare_kprobe()` at `addr`, without the slot allocation.
///
/// `page_size` is `PAGE_SIZE` (a power of two); `prev_slot` is the first word of the slot of
/// the probe registered at `addr - 4` (`get_kprobe(p->addr - 1)`), when there is one that is
/// not on ftrace (`!kprobe_ftrace(prev)`; an ftrace probe has no slot).
///
/// Upstream's checks, in its order: an unaligned address; else a word
/// [`insn::can_single_step`] refuses; else, when `addr` is not the start of a page, a prefix
/// in the word before. Then, whatever those found, a prefixed instruction in the previous
/// probe's slot. No check of a prefixed instruction that would cross a 64-byte boundary:
/// 6.12 has none.
pub fn prepare_kprobe<T: KernelText + ?Sized>(
    text: &T,
    addr: u64,
    page_size: u64,
    prev_slot: Option<u32>,
) -> Result<Prepared, Refused> {
    let mut first = None;
    let mut found = PpcInst::default();
    if addr & 0x3 != 0 {
        first = Some(Refusal::Unaligned);
    } else {
        match text.read_inst(addr) {
            None => first = Some(Refusal::Unreadable),
            Some(i) if !insn::can_single_step(i.val) => {
                found = i;
                first = Some(Refusal::CannotSingleStep);
            }
            Some(i) => {
                found = i;
                if addr & page_size.wrapping_sub(1) != 0 {
                    match text.read_word(addr.wrapping_sub(PPC_INSN_SIZE)) {
                        None => first = Some(Refusal::Unreadable),
                        Some(w) if insn::get_op(w) == insn::OP_PREFIX => {
                            first = Some(Refusal::SecondWordOfPrefixed)
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    let prev_probe_prefixed = prev_slot.is_some_and(|w| insn::get_op(w) == insn::OP_PREFIX);
    if first.is_some() || prev_probe_prefixed {
        // INVARIANT: one of the two is set.
        return Err(Refused {
            first,
            prev_probe_prefixed,
        });
    }
    Ok(Prepared { insn: found })
}

/// What a probe hit does after `try_to_emulate()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Emulation {
    /// `emulate_step()` returned > 0: emulated, `nip` already advanced; no step.
    Emulated,
    /// It returned 0: single-step the slot.
    Stepped,
    /// It returned < 0 (an instruction `arch_prepare_kprobe()` should have refused): upstream
    /// prints "Can't step on instruction %08lx" and calls `BUG()`.
    Bug,
}

/// Whether a hit tries `emulate_step()` first (`p->ainsn.boostable >= 0`): not once it has
/// failed on a probe that never emulated.
#[inline(always)]
pub const fn tries_emulation(boostable: i32) -> bool {
    boostable >= 0
}

/// `try_to_emulate()` after `emulate_step()` returned `ret` for a probe whose
/// `p->ainsn.boostable` is `boostable`: what follows, and the new `boostable` (0 unknown, 1
/// emulated once, -1 never emulate: set when it fails before ever succeeding).
#[inline(always)]
pub const fn try_to_emulate(boostable: i32, ret: i32) -> (Emulation, i32) {
    if ret > 0 {
        (
            Emulation::Emulated,
            if boostable == 0 { 1 } else { boostable },
        )
    } else if ret < 0 {
        (Emulation::Bug, boostable)
    } else {
        (
            Emulation::Stepped,
            if boostable != 1 { -1 } else { boostable },
        )
    }
}

/// `kprobe_handler()`'s answer to a trap where no probe is registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StrayTrap {
    /// Not ours (return 0): the word cannot be read, is `BREAKPOINT_INSTRUCTION` (someone
    /// else's), or is another trap variant.
    NotOurs,
    /// Handled (return 1): the word is no longer a trap, so another CPU removed the probe (or
    /// a debugger breakpoint) right after this one hit it; execution resumes there.
    Removed,
}

/// `kprobe_handler()` with no probe at `nip`: `word` is what `get_kernel_nofault()` read there.
#[inline(always)]
pub const fn stray_trap(word: Option<u32>) -> StrayTrap {
    match word {
        Some(w) if w != super::BREAKPOINT_INSTRUCTION && !insn::is_trap(w) => StrayTrap::Removed,
        _ => StrayTrap::NotOurs,
    }
}

/// `MSR_SINGLESTEP` without `CONFIG_PPC_ADV_DEBUG_REGS` (Book3S): `MSR_SE`, bit 10.
pub const MSR_SINGLESTEP: u64 = 1 << 10;
/// `MSR_PR`: problem state (user mode), bit 14.
pub const MSR_PR: u64 = 1 << 14;
/// `MSR_IR`: instruction relocation, bit 5.
pub const MSR_IR: u64 = 1 << 5;
/// `MSR_DR`: data relocation, bit 4.
pub const MSR_DR: u64 = 1 << 4;

/// Whether `kprobe_handler()` looks at a trap taken with `msr` at all: not from user mode
/// (`user_mode()`), and on Book3S only with instruction and data relocation on (a trap in
/// real mode is not a kprobe's).
#[inline(always)]
pub const fn trap_may_be_kprobe(msr: u64) -> bool {
    msr & MSR_PR == 0 && msr & MSR_IR != 0 && msr & MSR_DR != 0
}

/// The MSR after a step is abandoned (`kprobe_handler()` re-entered on a trap in the slot,
/// `kprobe_fault_handler()` during a step): single-step off, the bits saved at the hit back.
#[inline(always)]
pub const fn msr_without_singlestep(msr: u64, saved_msr: u64) -> u64 {
    (msr & !MSR_SINGLESTEP) | saved_msr
}

/// `kprobe_post_handler()`: where execution resumes after the step of the instruction
/// `stepped` (read from the slot) at `slot`, for the probe at `addr`, or `None` when `nip` is
/// not just after the slot's instruction (not our step: return 0). The MSR becomes
/// `msr | saved_msr`; when that still has [`MSR_SINGLESTEP`], upstream returns 0 so someone
/// else's single-step goes on.
#[inline(always)]
pub const fn post_step_resume(stepped: PpcInst, slot: u64, nip: u64, addr: u64) -> Option<u64> {
    let len = stepped.inst_len();
    if slot.wrapping_add(len) != nip {
        return None;
    }
    Some(addr.wrapping_add(len))
}

/// `kprobe_fault_handler()` in `KPROBE_HIT_SS` or `KPROBE_REENTER`: the frame's `nip` and MSR
/// after a fault in the step of the probe at `addr` (back at the probe, single-step off).
#[inline(always)]
pub const fn fault_resume(addr: u64, msr: u64, saved_msr: u64) -> (u64, u64) {
    (addr, msr_without_singlestep(msr, saved_msr))
}

/// `arch_kprobe_on_func_entry()` of ELFv2: a probe at `offset` from a symbol is on its entry
/// when within the global entry's two words (8 bytes), or, with kprobes on ftrace, the 16
/// bytes that hold the ftrace call.
pub const fn arch_kprobe_on_func_entry(offset: u64, kprobes_on_ftrace: bool) -> bool {
    if kprobes_on_ftrace {
        offset <= 16
    } else {
        offset <= 8
    }
}
