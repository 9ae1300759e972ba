// SPDX-License-Identifier: GPL-2.0

//! Preparing an int3 kprobe: upstream's `arch_prepare_kprobe()` and what it calls.
//!
//! Constraints: pure functions of the instruction bytes and of the [`KernelText`] answers;
//! no allocation, no panic path.

use super::insn::{Emulation, Error, Insn, Mode};
use super::{
    errno, put, Config, KernelText, CALL_INSN_OPCODE, INT3_INSN_OPCODE, JMP32_INSN_OPCODE,
    JMP32_INSN_SIZE, MAX_INSN_SIZE,
};

/// ENDBR64 as a little-endian word (`gen_endbr()`).
const ENDBR64: u32 = 0xfa1e_0ff3;
/// The 4-byte NOP that replaces a sealed ENDBR (`gen_endbr_poison()`).
const ENDBR_POISON: u32 = 0x001f_0f66;

/// Returns whether the word `val` is an ENDBR32/ENDBR64 or a sealed one (`is_endbr()`).
pub fn is_endbr(val: u32) -> bool {
    val == ENDBR_POISON || val & !0x0100_0000 == ENDBR64
}

/// Moves a probe at a function's entry past its ENDBR (`arch_adjust_kprobe_addr()`).
///
/// `first` is the word at the symbol address `addr`, `None` if it cannot be read. Returns the
/// probe address and whether it is on the function entry, or `None` where upstream returns
/// `NULL`.
pub fn adjust_kprobe_addr(
    cfg: &Config,
    addr: u64,
    offset: u64,
    first: Option<u32>,
) -> Option<(u64, bool)> {
    let word = first?;
    let (offset, on_func_entry) = if cfg.ibt && is_endbr(word) {
        let entry = offset == 0 || offset == 4;
        (if entry { 4 } else { offset }, entry)
    } else {
        (offset, offset == 0)
    };
    Some((addr.wrapping_add(offset), on_func_entry))
}

/// The 5-byte NOP an unused ftrace site holds (`x86_nops[5]`).
pub const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// Restores the original bytes of an instruction a kprobe or ftrace changed
/// (`__recover_probed_insn()` after its `get_kprobe()` and `ftrace_location()` lookups).
///
/// `buf` holds the [`MAX_INSN_SIZE`] bytes read at the address; `ftrace` says the address is
/// an ftrace site (whose original is the 5-byte NOP), `kprobe_opcode` is `p->opcode` of a
/// kprobe there, whose int3 replaced that byte.
pub fn recover_probed_insn(buf: &mut [u8; MAX_INSN_SIZE], ftrace: bool, kprobe_opcode: Option<u8>) {
    if ftrace {
        put(buf, 0, &NOP5);
    } else if let Some(opcode) = kprobe_opcode {
        buf[0] = opcode;
    }
}

fn decode(buf: &[u8]) -> Option<Insn> {
    Insn::decode(buf, Mode::KERNEL).ok()
}

fn first_opcode(insn: &Insn) -> u8 {
    insn.opcode_bytes().first().copied().unwrap_or(0)
}

/// Returns whether `paddr` is an instruction boundary of its function and its instruction may
/// be probed (`can_probe()`); `arch_prepare_kprobe()` turns `false` into `-EILSEQ`.
///
/// The function is decoded from the symbol start reported by
/// [`KernelText::lookup_size_offset`]. `int`, `into`, `int1`, `int3` and `ud0`/`ud1`/`ud2`
/// are refused, and with `CONFIG_CFI_CLANG` the `movl`/`addl` of a kCFI check whose `ud2`
/// [`KernelText::is_cfi_trap`] reports.
pub fn can_probe(k: &impl KernelText, cfg: &Config, paddr: u64) -> bool {
    let Some(sym) = k.lookup_size_offset(paddr) else {
        return false;
    };
    let mut addr = paddr.wrapping_sub(sym.offset);
    while addr < paddr {
        let Some(buf) = k.recover(addr) else {
            return false;
        };
        // Borrowed, not moved out of the `Result`: a move copies the whole `Insn` each round.
        let decoded = Insn::decode(&buf, Mode::KERNEL);
        let Ok(insn) = &decoded else {
            return false;
        };
        if cfg.kgdb && first_opcode(insn) == INT3_INSN_OPCODE && k.kgdb_has_hit_break(addr) {
            return false;
        }
        let Some(next) = addr.checked_add(insn.len() as u64) else {
            return false;
        };
        addr = next;
    }
    if addr != paddr {
        return false;
    }
    let Some(buf) = k.recover(addr) else {
        return false;
    };
    let decoded = Insn::decode(&buf, Mode::KERNEL);
    let Ok(insn) = &decoded else {
        return false;
    };
    if insn.is_exception() {
        return false;
    }
    if cfg.cfi_clang {
        // movl -<id>, %r10d (6 bytes); addl -4(%reg), %r10d (4 bytes); je; ud2: the ud2 is
        // 12 bytes after the movl and 6 after the addl, and the kCFI decoder reads both.
        let to_trap: u64 = match insn.opcode_bytes() {
            [0xba] => 12,
            [0x03] => 6,
            _ => return true,
        };
        if k.is_cfi_trap(addr.wrapping_add(to_trap)) {
            return false;
        }
    }
    true
}

/// Returns whether the instruction at `addr` may run out of line with a jump back instead of
/// a trap (`can_boost()`): not at an exception-table site, and boostable by its encoding
/// ([`Insn::can_boost`]).
pub fn can_boost(k: &impl KernelText, insn: &Insn, addr: u64) -> bool {
    !k.search_exception_tables(addr) && insn.can_boost()
}

/// Copies the original instruction at `src` into `dest` for execution at `real`, fixing a
/// RIP-relative displacement (`__copy_instruction()`).
///
/// Like upstream, [`MAX_INSN_SIZE`] recovered bytes are copied and the copy is decoded.
/// Returns the decoded instruction and its length, or `None` where upstream returns 0: not
/// recoverable, not decodable, a Xen/KVM emulate prefix, `int3` (another subsystem's
/// breakpoint), MOV SS/POP SS, or a new displacement outside ±2 GiB.
pub fn copy_instruction(
    k: &impl KernelText,
    dest: &mut [u8],
    src: u64,
    real: u64,
) -> Option<(Insn, usize)> {
    let recovered = k.recover(src)?;
    if !put(dest, 0, &recovered) {
        return None;
    }
    let insn = decode(&recovered)?;
    let Ok(len) = insn.copy_out_of_line(src, real, dest) else {
        // C's one message on this path, once the instruction passed the other checks: the
        // copy at `real` cannot reach what the original addresses.
        if insn.emulate_prefix_size() == 0 && !insn.is_int3() && !insn.masks_exception() {
            if let Some(newdisp) = insn.relocated_displacement(src, real) {
                if i32::try_from(newdisp).is_err() {
                    k.displacement_does_not_fit(newdisp);
                }
            }
        }
        return None;
    };
    Some((insn, len))
}

/// Writes `op rel32` at `dest` for an instruction at `from` reaching `to`
/// (`__synthesize_relative_insn()`); `false` if `dest` is shorter than 5 bytes.
fn synthesize_relative_insn(dest: &mut [u8], from: u64, to: u64, op: u8) -> bool {
    // The C truncates to s32: the callers have checked the distance.
    let rel = to.wrapping_sub(from.wrapping_add(JMP32_INSN_SIZE as u64)) as u32;
    let rel = rel.to_le_bytes();
    put(dest, 0, &[op, rel[0], rel[1], rel[2], rel[3]])
}

/// Writes `jmp rel32` at the start of `dest`, to run at `from` and jump to `to`
/// (`synthesize_reljump()`); `false` if `dest` is shorter than 5 bytes.
pub fn synthesize_reljump(dest: &mut [u8], from: u64, to: u64) -> bool {
    synthesize_relative_insn(dest, from, to, JMP32_INSN_OPCODE)
}

/// Writes `call rel32` at the start of `dest`, to run at `from` and call `to`
/// (`synthesize_relcall()`); `false` if `dest` is shorter than 5 bytes.
pub fn synthesize_relcall(dest: &mut [u8], from: u64, to: u64) -> bool {
    synthesize_relative_insn(dest, from, to, CALL_INSN_OPCODE)
}

/// Chooses how the probed instruction runs (`prepare_emulation()`): [`Insn::emulation`], its
/// error turned into `-EOPNOTSUPP`.
pub fn prepare_emulation(insn: &Insn) -> Result<Emulation, i32> {
    insn.emulation().map_err(|e| match e {
        Error::NotSupported => errno::EOPNOTSUPP,
        _ => errno::EINVAL,
    })
}

/// Ends the slot after the copied instruction of `insn_len` bytes (`prepare_singlestep()`).
///
/// `boost` is upstream's condition: `!CONFIG_PREEMPTION`, no post handler and
/// [`can_boost`]. A boosted copy, if a `jmp rel32` still fits in the slot, jumps back from
/// `slot + insn_len` to `addr + insn_len`; otherwise an `int3` traps after the single step.
/// Returns the slot length to poke and whether it was boosted, or `-ENOSPC` when not even
/// the `int3` fits.
pub fn prepare_singlestep(
    buf: &mut [u8; MAX_INSN_SIZE],
    insn_len: usize,
    boost: bool,
    addr: u64,
    slot: u64,
) -> Result<(usize, bool), i32> {
    let room = MAX_INSN_SIZE.saturating_sub(insn_len);
    let back = |n: u64| n.wrapping_add(insn_len as u64);
    if boost && room >= JMP32_INSN_SIZE {
        if let Some(tail) = buf.get_mut(insn_len..) {
            if synthesize_reljump(tail, back(slot), back(addr)) {
                return Ok((insn_len.wrapping_add(JMP32_INSN_SIZE), true));
            }
        }
    }
    if room < 1 || !put(buf, insn_len, &[INT3_INSN_OPCODE]) {
        return Err(errno::ENOSPC);
    }
    Ok((insn_len.wrapping_add(1), false))
}

/// A prepared int3 kprobe: what `arch_prepare_kprobe()` stores in `p->ainsn` and pokes into
/// the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The slot contents (`buf` of `arch_copy_kprobe()`); the first [`Self::len`] are poked.
    pub slot: [u8; MAX_INSN_SIZE],
    /// How many bytes of the slot are poked (`p->ainsn.tp_len`).
    pub len: usize,
    /// The first byte of the original instruction (`p->opcode`).
    pub opcode: u8,
    /// Whether the copy jumps back instead of trapping (`p->ainsn.boostable`).
    pub boostable: bool,
    /// The length of the probed instruction (`p->ainsn.size`).
    pub size: u8,
    /// How the instruction runs (`p->ainsn.emulate_op` and its operands).
    pub emulation: Emulation,
}

/// Prepares a kprobe at `addr` with the instruction slot at `slot` (`arch_prepare_kprobe()`
/// after `get_insn_slot()`, with `arch_copy_kprobe()`): [`check_kprobe`] then [`copy_kprobe`].
///
/// Errors as upstream: `-EINVAL` for an alternatives site or an instruction that cannot be
/// copied, `-EILSEQ` when [`can_probe`] refuses, `-EOPNOTSUPP` from [`prepare_emulation`],
/// `-ENOSPC` from [`prepare_singlestep`]. The caller allocates the slot between the
/// `can_probe` and the copy as upstream does (its `-ENOMEM`), pokes the first
/// [`Prepared::len`] bytes into it, and frees it on error.
pub fn prepare_kprobe(
    k: &impl KernelText,
    cfg: &Config,
    addr: u64,
    slot: u64,
    post_handler: bool,
) -> Result<Prepared, i32> {
    check_kprobe(k, cfg, addr)?;
    copy_kprobe(k, cfg, addr, slot, post_handler)
}

/// The refusals of `arch_prepare_kprobe()` before it takes a slot: `-EINVAL` for an
/// alternatives site, `-EILSEQ` when [`can_probe`] refuses.
pub fn check_kprobe(k: &impl KernelText, cfg: &Config, addr: u64) -> Result<(), i32> {
    if k.alternatives_text_reserved(addr, addr) {
        return Err(errno::EINVAL);
    }
    if !can_probe(k, cfg, addr) {
        return Err(errno::EILSEQ);
    }
    Ok(())
}

/// `arch_copy_kprobe()` for a probe [`check_kprobe`] accepted, with its slot at `slot`.
pub fn copy_kprobe(
    k: &impl KernelText,
    cfg: &Config,
    addr: u64,
    slot: u64,
    post_handler: bool,
) -> Result<Prepared, i32> {
    let mut buf = [0u8; MAX_INSN_SIZE];
    let (insn, len) = copy_instruction(k, &mut buf, addr, slot).ok_or(errno::EINVAL)?;
    let emulation = prepare_emulation(&insn)?;
    let boost = !cfg.preemption && !post_handler && can_boost(k, &insn, addr);
    let (tp_len, boostable) = prepare_singlestep(&mut buf, len, boost, addr, slot)?;
    Ok(Prepared {
        slot: buf,
        len: tp_len,
        opcode: buf[0],
        boostable,
        size: len as u8,
        emulation,
    })
}
