// SPDX-License-Identifier: GPL-2.0

//! The decisions of `arch/powerpc/kernel/optprobes.c`: whether a probe can be optimized
//! (`can_optimize()`), whether its detour is within branch range of the probe and of the
//! instruction after it, and the words `arch_prepare_optimized_kprobe()` patches into the
//! detour (a copy of `optprobe_template_*` of `optprobes_head.S`, which stays assembly).

use core::num::NonZeroU64;

use super::insn::{self, PpcInst, BRANCH_SET_LINK};
use super::{errno, is_kernel_addr, PPC_INSN_SIZE};

/// The words of an immediate load in the template (`TEMPLATE_FOR_IMM_LOAD_INSNS` of ppc64:
/// five `nop`s, patched by `patch_imm64_load_insns()`).
pub const IMM_LOAD_WORDS: usize = 5;

/// The layout of the detour template: where each `optprobe_template_*` label is, in words
/// from `optprobe_template_entry` (`TMPL_*_IDX`).
///
/// # Invariants
///
/// Every word the detour patches lies before `end`, so the slot of `end` words
/// (`MAX_OPTINSN_SIZE`) holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Template {
    op_address: usize,
    call_handler: usize,
    insn: usize,
    call_emulate: usize,
    ret: usize,
    end: usize,
}

impl Template {
    /// The template whose labels are at these word indices (`TMPL_OP_IDX`,
    /// `TMPL_CALL_HDLR_IDX`, `TMPL_INSN_IDX`, `TMPL_EMULATE_IDX`, `TMPL_RET_IDX`,
    /// `TMPL_END_IDX`), or `None` when a patched word would lie at or past `end` (the glue
    /// then does not optimize; upstream's labels are in order by construction).
    pub const fn new(
        op_address: usize,
        call_handler: usize,
        insn: usize,
        call_emulate: usize,
        ret: usize,
        end: usize,
    ) -> Option<Self> {
        if !fits(op_address, IMM_LOAD_WORDS, end)
            || !fits(insn, IMM_LOAD_WORDS, end)
            || !fits(call_handler, 1, end)
            || !fits(call_emulate, 1, end)
            || !fits(ret, 1, end)
        {
            return None;
        }
        // INVARIANT: every patched range was checked against `end` above.
        Some(Template {
            op_address,
            call_handler,
            insn,
            call_emulate,
            ret,
            end,
        })
    }

    /// `TMPL_END_IDX`: the words of the template, copied whole into the detour
    /// (`MAX_OPTINSN_SIZE`, the size of an optinsn slot).
    pub const fn words(&self) -> usize {
        self.end
    }

    /// `TMPL_RET_IDX`.
    pub const fn ret(&self) -> usize {
        self.ret
    }
}

/// Whether `words` words from `at` lie before `end`.
const fn fits(at: usize, words: usize, end: usize) -> bool {
    at < end && end - at >= words
}

/// `analyse_instr()` followed by `emulate_update_regs()`, a kernel service
/// (`arch/powerpc/lib/sstep.c`, shared with xmon, uprobes and hw breakpoints; it stays C).
pub trait AnalyseInstr {
    /// Analyses `insn` from a frame that is all zeros but `nip` (the probe address), `msr`
    /// (`MSR_KERNEL`) and `trap` (0); when `analyse_instr()` returns 1, the frame's `nip`
    /// after `emulate_update_regs()`, else `None`.
    fn emulated_nip(&self, insn: PpcInst, nip: u64) -> Option<u64>;
}

/// `can_optimize()`: the address execution continues at after emulating `insn` (the probe's
/// slot instruction) at `addr`, or `None` (upstream: 0) when the probe cannot be optimized.
///
/// The probe on the rethook trampoline (`rethook_trampoline`, a `nop`) continues at the next
/// word; a probe outside the kernel's addresses (a module) or on a conditional branch is not
/// optimized; otherwise it is when [`AnalyseInstr`] emulates it to a non-zero `nip`.
pub fn can_optimize<A: AnalyseInstr + ?Sized>(
    addr: u64,
    insn: PpcInst,
    rethook_trampoline: u64,
    analyse: &A,
) -> Option<NonZeroU64> {
    if addr == rethook_trampoline {
        return NonZeroU64::new(addr.wrapping_add(PPC_INSN_SIZE));
    }
    if !is_kernel_addr(addr) || insn::is_conditional_branch(insn) {
        return None;
    }
    analyse.emulated_nip(insn, addr).and_then(NonZeroU64::new)
}

/// `patch_imm64_load_insns()`: the five words that load `val` into `reg`
/// (`lis`, `ori`, `sldi 32`, `oris`, `ori`).
pub const fn imm64_load(val: u64, reg: u32) -> [u32; IMM_LOAD_WORDS] {
    [
        insn::lis(reg, (val >> 48) as u32 & 0xffff),
        insn::ori(reg, reg, (val >> 32) as u32 & 0xffff),
        insn::sldi(reg, reg, 32),
        insn::oris(reg, reg, (val >> 16) as u32 & 0xffff),
        insn::ori(reg, reg, val as u32 & 0xffff),
    ]
}

/// A probe to optimize, as `arch_prepare_optimized_kprobe()` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptProbe {
    /// `p->addr`.
    pub addr: u64,
    /// The instruction in its slot (`ppc_inst_read(p->ainsn.insn)`).
    pub insn: PpcInst,
    /// The address of its `struct optimized_kprobe`, loaded into r3 for
    /// `optimized_callback()`.
    pub op: u64,
}

/// Why `arch_prepare_optimized_kprobe()` does not optimize a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptRefusal {
    /// [`can_optimize`] said no: `-EILSEQ`, no slot taken.
    CannotOptimize,
    /// No optinsn slot: `-ENOMEM`.
    NoSlot,
    /// The detour at `slot` is out of branch range of the probe, or its return branch of the
    /// address after the probe: `-ERANGE`, the slot freed.
    OutOfRange {
        /// The slot to free.
        slot: u64,
    },
    /// `optimized_callback` or `emulate_step` has no address: upstream `WARN`s "Unable to
    /// lookup optimized_callback()/emulate_step()" and returns `-ERANGE`, the slot freed.
    NoSymbol {
        /// The slot to free.
        slot: u64,
    },
    /// `optimized_callback` or `emulate_step` is out of branch range of the detour at `slot`:
    /// `-ERANGE`, the slot freed.
    CallOutOfRange {
        /// The slot to free.
        slot: u64,
    },
}

impl OptRefusal {
    /// The errno upstream returns.
    pub const fn errno(&self) -> i32 {
        match self {
            OptRefusal::CannotOptimize => errno::EILSEQ,
            OptRefusal::NoSlot => errno::ENOMEM,
            _ => errno::ERANGE,
        }
    }

    /// The slot upstream frees (`free_optinsn_slot(buff, 0)`), if one was taken.
    pub const fn freed_slot(&self) -> Option<u64> {
        match *self {
            OptRefusal::CannotOptimize | OptRefusal::NoSlot => None,
            OptRefusal::OutOfRange { slot }
            | OptRefusal::NoSymbol { slot }
            | OptRefusal::CallOutOfRange { slot } => Some(slot),
        }
    }
}

/// What `arch_prepare_optimized_kprobe()` patches into a copy of the template at `slot`
/// (`op->optinsn.insn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Detour {
    /// The detour's address (the optinsn slot).
    pub slot: u64,
    /// At `TMPL_OP_IDX`: the `struct optimized_kprobe` address into r3.
    pub op_load: [u32; IMM_LOAD_WORDS],
    /// At `TMPL_CALL_HDLR_IDX`: `bl optimized_callback`.
    pub call_handler: u32,
    /// At `TMPL_INSN_IDX`: the probed instruction (`ppc_inst_as_ulong()`) into r4.
    pub insn_load: [u32; IMM_LOAD_WORDS],
    /// At `TMPL_EMULATE_IDX`: `bl emulate_step`.
    pub call_emulate: u32,
    /// At `TMPL_RET_IDX`: `b nip`, the branch back. `None` where upstream's
    /// `patch_branch()` fails and its error is ignored, leaving the template's word: the
    /// range check before measures `slot + ret - nip`, the branch `nip - (slot + ret)`, so
    /// a `nip` exactly 32 MiB after the return word passes the one and not the other.
    pub ret: Option<u32>,
}

impl Detour {
    /// Writes the patched words into `buf`, a copy of the template's [`Template::words`]
    /// words (words `buf` does not have are not written).
    pub fn apply(&self, tmpl: &Template, buf: &mut [u32]) {
        let mut put = |at: usize, w: u32| {
            if let Some(slot) = buf.get_mut(at) {
                *slot = w;
            }
        };
        for (i, &w) in self.op_load.iter().enumerate() {
            put(tmpl.op_address.wrapping_add(i), w);
        }
        put(tmpl.call_handler, self.call_handler);
        put(tmpl.call_emulate, self.call_emulate);
        for (i, &w) in self.insn_load.iter().enumerate() {
            put(tmpl.insn.wrapping_add(i), w);
        }
        if let Some(w) = self.ret {
            put(tmpl.ret, w);
        }
    }
}

/// The address of word `idx` of the detour at `slot`.
const fn word_at(slot: u64, idx: usize) -> u64 {
    slot.wrapping_add((idx as u64).wrapping_mul(PPC_INSN_SIZE))
}

/// `arch_prepare_optimized_kprobe()`, without writing text: whether the probe `p` can be
/// optimized and, if so, the detour.
///
/// `callback` and `emulate` are the (local entry) addresses of `optimized_callback()` and
/// `emulate_step()` (`ppc_kallsyms_lookup_name()`), `None` when not found; `get_slot`
/// allocates the optinsn slot (`get_optinsn_slot()`), called once [`can_optimize`] agrees.
/// Upstream's order: [`can_optimize`] (`-EILSEQ`), the slot (`-ENOMEM`), the branch from the
/// probe to the detour and the branch back from the template's return word to the `nip`
/// after emulation in range (`-ERANGE`), the two symbols found (`WARN`, `-ERANGE`), the two
/// calls in range (`-ERANGE`). The glue copies the template, applies [`Detour::apply`] with
/// `patch_instruction()`, and frees the slot of a refusal ([`OptRefusal::freed_slot`]).
pub fn prepare_optimized_kprobe<A: AnalyseInstr + ?Sized>(
    p: &OptProbe,
    tmpl: &Template,
    rethook_trampoline: u64,
    analyse: &A,
    callback: Option<u64>,
    emulate: Option<u64>,
    get_slot: impl FnOnce() -> Option<u64>,
) -> Result<Detour, OptRefusal> {
    let nip = can_optimize(p.addr, p.insn, rethook_trampoline, analyse)
        .ok_or(OptRefusal::CannotOptimize)?
        .get();
    let slot = get_slot().ok_or(OptRefusal::NoSlot)?;
    let ret_at = word_at(slot, tmpl.ret);
    if !insn::is_offset_in_branch_range(slot.wrapping_sub(p.addr) as i64)
        || !insn::is_offset_in_branch_range(ret_at.wrapping_sub(nip) as i64)
    {
        return Err(OptRefusal::OutOfRange { slot });
    }
    let op_load = imm64_load(p.op, 3);
    let (Some(callback), Some(emulate)) = (callback, emulate) else {
        return Err(OptRefusal::NoSymbol { slot });
    };
    let call_handler =
        insn::create_branch(word_at(slot, tmpl.call_handler), callback, BRANCH_SET_LINK);
    let call_emulate =
        insn::create_branch(word_at(slot, tmpl.call_emulate), emulate, BRANCH_SET_LINK);
    let (Some(call_handler), Some(call_emulate)) = (call_handler, call_emulate) else {
        return Err(OptRefusal::CallOutOfRange { slot });
    };
    Ok(Detour {
        slot,
        op_load,
        call_handler,
        insn_load: imm64_load(p.insn.as_ulong(), 4),
        call_emulate,
        ret: insn::create_branch(ret_at, nip, 0),
    })
}

/// The branch `arch_optimize_kprobes()` writes over the probe at `addr` to its detour at
/// `slot` (`create_branch(..., 0)`); `None` where upstream's `create_branch()` fails (and it
/// would write `ppc_inst(0)`), which [`prepare_optimized_kprobe`]'s range check excludes.
pub const fn optimize_branch(addr: u64, slot: u64) -> Option<u32> {
    insn::create_branch(addr, slot, 0)
}

/// `arch_within_optimized_kprobe()`: whether `addr` is in the word an optimized probe at
/// `kp_addr` replaces.
pub const fn within_optimized_kprobe(kp_addr: u64, addr: u64) -> bool {
    kp_addr <= addr && kp_addr.wrapping_add(super::RELATIVEJUMP_SIZE) > addr
}
