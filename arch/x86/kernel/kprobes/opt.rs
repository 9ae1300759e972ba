// SPDX-License-Identifier: GPL-2.0

//! Jump optimization: upstream's `arch/x86/kernel/kprobes/opt.c` decisions and the detour.
//!
//! Constraints: pure functions of the instruction bytes and of the [`KernelText`] answers;
//! no allocation, no panic path. The detour is built into a caller's buffer around the
//! `optprobe_template_*` code, which stays assembly in the kernel and is an input here.

use super::decide::{can_boost, copy_instruction, synthesize_relcall, synthesize_reljump};
use super::insn::{Insn, Mode};
use super::{
    errno, put, Config, KernelText, DISP32_SIZE, INT3_INSN_OPCODE, INT3_INSN_SIZE, JMP32_INSN_SIZE,
    MAX_INSN_SIZE,
};

/// The most bytes an optimized probe replaces (`MAX_OPTIMIZED_LENGTH`).
pub const MAX_OPTIMIZED_LENGTH: usize = MAX_INSN_SIZE + DISP32_SIZE;

/// The detour template (`optprobe_template_entry` to `optprobe_template_end`).
#[derive(Clone, Copy, Debug)]
pub struct Template<'a> {
    /// The template code (`TMPL_END_IDX` bytes).
    pub code: &'a [u8],
    /// Offset of the 3-byte NOP that becomes `clac` (`TMPL_CLAC_IDX`).
    pub clac: usize,
    /// Offset of the 10 bytes that load the probe's address (`TMPL_MOVE_IDX`).
    pub val: usize,
    /// Offset of the 5 bytes that call the handler (`TMPL_CALL_IDX`).
    pub call: usize,
    /// The handler the detour calls (`optimized_callback`).
    pub callback: u64,
}

impl Template<'_> {
    /// Returns the detour size to allocate (`MAX_OPTINSN_SIZE`).
    pub fn max_optinsn_size(&self) -> usize {
        self.code
            .len()
            .saturating_add(MAX_OPTIMIZED_LENGTH + JMP32_INSN_SIZE)
    }
}

/// Restores the original bytes at `addr` that the jump of an optimized probe at `kp_addr`
/// replaced (`__recover_optprobed_insn()` once its `get_kprobe()` loop found the probe
/// within [`JMP32_INSN_SIZE`] bytes before `addr`).
///
/// `buf` holds the bytes read at `addr`; `opcode` is `p->opcode` and `copied` is
/// `op->optinsn.copied_insn`, the four bytes after it. Does nothing if `addr` is not in
/// `[kp_addr, kp_addr + 5)`.
pub fn recover_optprobed_insn(
    buf: &mut [u8; MAX_INSN_SIZE],
    addr: u64,
    kp_addr: u64,
    opcode: u8,
    copied: &[u8; DISP32_SIZE],
) {
    match addr.wrapping_sub(kp_addr) {
        0 => {
            buf[0] = opcode;
            put(buf, 1, copied);
        }
        n @ 1..=4 => {
            let offs = (n - 1) as usize;
            if let Some(rest) = copied.get(offs..) {
                put(buf, 0, rest);
            }
        }
        _ => {}
    }
}

/// Returns whether the relative jump `insn` at `addr` lands in `[start, start + len]`
/// (`insn_jump_into_range()`; calls are not jumps).
fn jump_into_range(insn: &Insn, addr: u64, start: u64, len: u64) -> bool {
    insn.jump_target(addr)
        .is_some_and(|target| start <= target && target <= start.wrapping_add(len))
}

/// Returns whether a probe at `paddr` may become a jump (`can_optimize()`).
///
/// Refused: no symbol, the entry text, fewer than 5 bytes to the symbol end, and any
/// function containing an exception-table site, an undecodable or unrecoverable
/// instruction, a kgdb breakpoint, an indirect jump (unless the kernel has no jump tables)
/// or a relative jump into the 4 bytes after the probe's first byte.
pub fn can_optimize(k: &impl KernelText, cfg: &Config, paddr: u64) -> bool {
    let Some(sym) = k.lookup_size_offset(paddr) else {
        return false;
    };
    if k.in_entry_text(paddr) {
        return false;
    }
    if sym.size.wrapping_sub(sym.offset) < JMP32_INSN_SIZE as u64 {
        return false;
    }
    let start = paddr.wrapping_sub(sym.offset);
    let end = start.wrapping_add(sym.size);
    let mut addr = start;
    while addr < end {
        if k.search_exception_tables(addr) {
            return false;
        }
        let Some(buf) = k.recover(addr) else {
            return false;
        };
        // Borrowed, not moved out of the `Result`: a move copies the whole `Insn` each round.
        let decoded = Insn::decode(&buf, Mode::KERNEL);
        let Ok(insn) = &decoded else {
            return false;
        };
        let first = insn.opcode_bytes().first().copied();
        if cfg.kgdb && first == Some(INT3_INSN_OPCODE) && k.kgdb_has_hit_break(addr) {
            return false;
        }
        if !cfg.no_jump_tables && insn.is_indirect_jump() {
            return false;
        }
        let range = paddr.wrapping_add(INT3_INSN_SIZE as u64);
        if jump_into_range(insn, addr, range, DISP32_SIZE as u64) {
            return false;
        }
        let Some(next) = addr.checked_add(insn.len() as u64) else {
            return false;
        };
        addr = next;
    }
    true
}

/// Copies whole boostable instructions from `src` until they cover a `jmp rel32`, for
/// execution at `real` (`copy_optimized_instructions()`).
///
/// `dest` needs [`MAX_OPTIMIZED_LENGTH`] bytes. Returns the copied length; `-EINVAL` for an
/// instruction that cannot be copied or boosted, `-EBUSY` when the range is reserved by
/// ftrace, alternatives, jump labels or static calls.
pub fn copy_optimized_instructions(
    k: &impl KernelText,
    dest: &mut [u8],
    src: u64,
    real: u64,
) -> Result<usize, i32> {
    let mut len = 0usize;
    while len < JMP32_INSN_SIZE {
        let at = |base: u64| base.wrapping_add(len as u64);
        let to = dest.get_mut(len..).ok_or(errno::EINVAL)?;
        let (insn, n) = copy_instruction(k, to, at(src), at(real)).ok_or(errno::EINVAL)?;
        if !can_boost(k, &insn, at(src)) {
            return Err(errno::EINVAL);
        }
        len = len.wrapping_add(n);
    }
    if k.text_reserved(src, src.wrapping_add(len as u64).wrapping_sub(1)) {
        return Err(errno::EBUSY);
    }
    Ok(len)
}

/// Returns `-EEXIST` if another armed probe sits inside the `size` bytes an optimized probe
/// at `addr` replaces (`arch_check_optimized_kprobe()`).
pub fn check_optimized_kprobe(k: &impl KernelText, addr: u64, size: usize) -> Result<(), i32> {
    for i in 1..size {
        if k.armed_kprobe_at(addr.wrapping_add(i as u64)) {
            return Err(errno::EEXIST);
        }
    }
    Ok(())
}

/// A prepared detour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Optimized {
    /// How many original bytes the jump replaces (`op->optinsn.size`).
    pub size: usize,
    /// How many detour bytes are poked into the slot.
    pub len: usize,
}

/// Builds the detour of an optimized probe at `addr` in `buf`, for the slot at `slot`
/// (`arch_prepare_optimized_kprobe()` after `get_optinsn_slot()`).
///
/// `buf` must be zeroed and [`Template::max_optinsn_size`] long; `op` is the probe's address
/// loaded as the handler's first argument. The detour is the template with `clac` (if SMAP) and the argument
/// and call filled in, the copied instructions, and a jump back behind them.
///
/// Errors as upstream: `-EILSEQ` when [`can_optimize`] refuses, `-ERANGE` for a slot out of
/// `jmp rel32` reach, and those of [`copy_optimized_instructions`]; a short `buf` is
/// `-EINVAL`. The caller allocates `buf` and the slot (upstream's `-ENOMEM`s), pokes
/// [`Optimized::len`] bytes into the slot, sets `op->optinsn.size` and frees the slot on
/// error.
pub fn prepare_optimized_kprobe(
    k: &impl KernelText,
    cfg: &Config,
    addr: u64,
    slot: u64,
    op: u64,
    tmpl: &Template<'_>,
    buf: &mut [u8],
) -> Result<Optimized, i32> {
    if !can_optimize(k, cfg, addr) {
        return Err(errno::EILSEQ);
    }
    build_detour(k, cfg, addr, slot, op, tmpl, buf)
}

/// The part of [`prepare_optimized_kprobe`] after [`can_optimize`] accepted `addr`: the range
/// check and the detour itself.
pub fn build_detour(
    k: &impl KernelText,
    cfg: &Config,
    addr: u64,
    slot: u64,
    op: u64,
    tmpl: &Template<'_>,
    buf: &mut [u8],
) -> Result<Optimized, i32> {
    let rel = slot.wrapping_sub(addr).wrapping_add(JMP32_INSN_SIZE as u64) as i64;
    if rel.unsigned_abs() > 0x7fff_ffff {
        return Err(errno::ERANGE);
    }
    if buf.len() < tmpl.max_optinsn_size() || !put(buf, 0, tmpl.code) {
        return Err(errno::EINVAL);
    }
    let end = tmpl.code.len();
    let at = |base: u64, off: usize| base.wrapping_add(off as u64);
    let copied = buf.get_mut(end..).ok_or(errno::EINVAL)?;
    let size = copy_optimized_instructions(k, copied, addr, at(slot, end))?;
    let len = end.wrapping_add(size);
    // synthesize_clac()
    if cfg.smap && !put(buf, tmpl.clac, &[0x0f, 0x01, 0xca]) {
        return Err(errno::EINVAL);
    }
    // synthesize_set_arg1(): movabs $op, %rdi
    let arg = op.to_le_bytes();
    let movabs = [
        0x48, 0xbf, arg[0], arg[1], arg[2], arg[3], arg[4], arg[5], arg[6], arg[7],
    ];
    if !put(buf, tmpl.val, &movabs) {
        return Err(errno::EINVAL);
    }
    let call_ok = buf
        .get_mut(tmpl.call..)
        .is_some_and(|d| synthesize_relcall(d, at(slot, tmpl.call), tmpl.callback));
    let jump_ok = buf
        .get_mut(len..)
        .is_some_and(|d| synthesize_reljump(d, at(slot, len), at(addr, size)));
    if !call_ok || !jump_ok {
        return Err(errno::EINVAL);
    }
    Ok(Optimized {
        size,
        len: len.wrapping_add(JMP32_INSN_SIZE),
    })
}
