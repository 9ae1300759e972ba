// SPDX-License-Identifier: GPL-2.0

//! The per-architecture layer as seen by the core: one trait, one doc line per method.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate. The arch is chosen at
//! compile time (a `cfg`-selected implementation, never `dyn`). Required methods are C's required
//! `arch_*` hooks; default methods are C's `__weak` defaults and header no-op macros, so an arch
//! overrides exactly what it overrides in C. The first implementation in the kernel is the
//! `CArch` bridge calling upstream's C arch code; native Rust arches implement the same trait
//! without touching the core. Locking contract (`UPSTREAM-CONTRACT.md` 7.4.12): prepare, arm and
//! disarm run under `text_mutex` and `cpus_read_lock`; the optprobe hooks also under
//! `kprobe_mutex`.

use super::errno::{Errno, Result};
use super::report::Report;
use super::store::ProbeStore;
use super::text::KernelText;

/// The architecture hooks of kprobes (`arch_*` in C).
pub trait Arch: ProbeStore + KernelText + Report {
    /// `CONFIG_OPTPROBES`: aggregates are `optimized_kprobe`s and the optimizer runs.
    const OPTPROBES: bool;
    /// `CONFIG_KPROBES_ON_FTRACE`: probes on ftrace sites are armed through ftrace.
    const KPROBES_ON_FTRACE: bool;
    /// `sizeof(kprobe_opcode_t)` in bytes.
    const OPCODE_SIZE: usize;
    /// `MAX_OPTIMIZED_LENGTH` in bytes (0 without OPTPROBES).
    const MAX_OPTIMIZED_LENGTH: usize;

    /// `arch_prepare_kprobe()`: validate the instruction, get a slot, fill `opcode`/`ainsn`.
    fn prepare_kprobe(&self, p: Self::Probe) -> Result;
    /// `arch_arm_kprobe()`: write the breakpoint.
    fn arm_kprobe(&self, p: Self::Probe);
    /// `arch_disarm_kprobe()`: restore the original instruction.
    fn disarm_kprobe(&self, p: Self::Probe);
    /// `arch_remove_kprobe()`: release the slot.
    fn remove_kprobe(&self, p: Self::Probe);
    /// `arch_trampoline_kprobe()`: never disarmed globally (powerpc's rethook trampoline).
    fn trampoline_kprobe(&self, p: Self::Probe) -> bool;
    /// `arch_init_kprobes()`: may itself register probes.
    fn init_kprobes(&self) -> Result;

    /// `arch_prepared_optinsn(&op->optinsn)`: a detour buffer is ready.
    fn prepared_optinsn(&self, ap: Self::Probe) -> bool;
    /// `arch_check_optimized_kprobe(op)`: no other probe inside the jump range.
    fn check_optimized_kprobe(&self, ap: Self::Probe) -> Result;
    /// `arch_prepare_optimized_kprobe(op, orig)`: build the detour (result is ignored, as in C).
    fn prepare_optimized_kprobe(&self, ap: Self::Probe, orig: Self::Probe);
    /// `arch_remove_optimized_kprobe(op)`: free the detour buffer.
    fn remove_optimized_kprobe(&self, ap: Self::Probe);
    /// `arch_optimize_kprobes(&optimizing_list)`: install jumps, taking entries off the queue.
    fn optimize_kprobes(&self);
    /// `arch_unoptimize_kprobes(&unoptimizing_list, &freeing_list)`: remove jumps, move entries.
    fn unoptimize_kprobes(&self);
    /// `arch_unoptimize_kprobe(op)`: remove one jump now.
    fn unoptimize_kprobe(&self, ap: Self::Probe);
    /// `arch_within_optimized_kprobe(op, addr)`: `addr` lies under the jump of `ap`.
    fn within_optimized_kprobe(&self, ap: Self::Probe, addr: usize) -> bool;

    /// `arch_prepare_kprobe_ftrace()`; the header stub returns -EINVAL.
    fn prepare_kprobe_ftrace(&self, _p: Self::Probe) -> Result {
        Err(Errno::EINVAL)
    }
    /// `flush_insn_slot(p)`: a no-op everywhere but loongarch.
    fn flush_insn_slot(&self, _p: Self::Probe) {}
    /// `kprobe_lookup_name(name, offset)`: `kallsyms_lookup_name`; `offset` is NOT folded in.
    fn lookup_name(&self, name: &[u8], _offset: usize) -> usize {
        self.kallsyms_lookup_name(name)
    }
    /// `arch_adjust_kprobe_addr()`: final address and `on_func_entry`, `None` for NULL.
    fn adjust_kprobe_addr(&self, addr: usize, offset: usize) -> Option<(usize, bool)> {
        Some((addr.wrapping_add(offset), offset == 0))
    }
    /// `arch_within_kprobe_blacklist()`: the `.kprobes.text` range.
    fn within_kprobe_blacklist(&self, addr: usize) -> bool {
        let (start, end) = self.kprobes_text();
        addr >= start && addr < end
    }
    /// `arch_populate_kprobe_blacklist()`: add arch areas through `add_area(start, end)`.
    fn populate_kprobe_blacklist(&self, _add_area: impl FnMut(usize, usize) -> Result) -> Result {
        Ok(())
    }
    /// Resolves the names of `kretprobe_blacklist[]` (`kprobe_lookup_name`), logging C's
    /// "Failed to lookup symbol '%s' for kretprobe blacklist. ..." for each that is unknown.
    fn init_kretprobe_blacklist(&self) {}
    /// `kprobe_optinsn_slots.insn_size = MAX_OPTINSN_SIZE` (OPTPROBES with instruction slots).
    fn init_optinsn_slots(&self) {}
    /// Whether `addr` is a resolved entry of `kretprobe_blacklist[]` (x86: `__switch_to`).
    fn in_kretprobe_blacklist(&self, _addr: usize) -> bool {
        false
    }
}
