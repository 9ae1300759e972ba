// SPDX-License-Identifier: GPL-2.0

//! The per-architecture layer as seen by the core: the hooks an arch implements, and the
//! compile-time choice of the arch.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate. The arch is a type
//! chosen at compile time (by `cfg` in the kernel, never `dyn`), separate from the probe storage
//! it acts on: [`ArchHooks<S>`] is implemented by an arch type over any [`Storage`] `S`, and the
//! storage names its arch in [`Arch::Hooks`]. Required hooks are C's required `arch_*` hooks;
//! defaulted ones are C's `__weak` defaults and header no-op macros, so an arch overrides exactly
//! what it overrides in C, and the optprobe hooks, which an arch without optprobes (no
//! `CONFIG_OPTPROBES` in C) leaves alone. In the kernel the arch is either `CArch`, the bridge calling
//! upstream's C arch code, or a native Rust arch (`CONFIG_KPROBES_RUST_ARCH`); the host tests use
//! a simulated one. Locking contract (`UPSTREAM-CONTRACT.md` 7.4.12): prepare, arm and disarm
//! run under `text_mutex` and `cpus_read_lock`; the optprobe hooks also under `kprobe_mutex`.

use super::errno::{Errno, Result};
use super::report::Report;
use super::store::{Aggr, ProbeStore};
use super::text::KernelText;

/// Probe storage, kernel services and the kernel log: what the core and the arch hooks act on.
pub trait Storage: ProbeStore + KernelText + Report {}

impl<T: ProbeStore + KernelText + Report> Storage for T {}

/// The architecture hooks of kprobes (`arch_*` in C), implemented by an arch type over the
/// storage `S` its probes live in.
pub trait ArchHooks<S: Storage> {
    /// `CONFIG_OPTPROBES`: aggregates are `optimized_kprobe`s and the optimizer runs.
    const OPTPROBES: bool;
    /// `CONFIG_KPROBES_ON_FTRACE`: probes on ftrace sites are armed through ftrace.
    const KPROBES_ON_FTRACE: bool;
    /// `sizeof(kprobe_opcode_t)` in bytes.
    const OPCODE_SIZE: usize;
    /// `MAX_OPTIMIZED_LENGTH` in bytes (0 without OPTPROBES).
    const MAX_OPTIMIZED_LENGTH: usize;
    /// Whether [`ArchHooks::disarm_kprobes`] does better than one `disarm_kprobe` per probe
    /// (Rust only), which makes an unregistration batch record its breakpoints for it.
    const BATCHES_DISARM: bool = false;

    /// `arch_prepare_kprobe()`: validate the instruction, get a slot, fill `opcode`/`ainsn`.
    fn prepare_kprobe(s: &S, p: S::Probe) -> Result;
    /// `arch_arm_kprobe()`: write the breakpoint.
    fn arm_kprobe(s: &S, p: S::Probe);
    /// `arch_disarm_kprobe()`: restore the original instruction.
    fn disarm_kprobe(s: &S, p: S::Probe);
    /// Restores the original instruction of every probe of `probes` (in address order, each
    /// armed, all still in the hash), with text_mutex held: what `disarm_kprobe` on each does,
    /// with the writes and the cross-CPU synchronisation shared where the arch can (Rust only;
    /// C's arch has no batch hook).
    fn disarm_kprobes(s: &S, probes: impl Iterator<Item = S::Probe>) {
        for p in probes {
            Self::disarm_kprobe(s, p);
        }
    }
    /// `arch_remove_kprobe()`: release the slot.
    fn remove_kprobe(s: &S, p: S::Probe);
    /// `arch_trampoline_kprobe()`: never disarmed globally (powerpc's rethook trampoline).
    fn trampoline_kprobe(s: &S, p: S::Probe) -> bool;
    /// `arch_init_kprobes()`: may itself register probes.
    fn init_kprobes(s: &S) -> Result;

    // The optprobe hooks: the core calls them only when `OPTPROBES` is true, so an arch without
    // optprobes (C: the hooks do not exist without CONFIG_OPTPROBES) keeps these defaults, which
    // say "nothing is optimized".

    /// `arch_prepared_optinsn(&op->optinsn)`: a detour buffer is ready.
    fn prepared_optinsn(_s: &S, _ap: Aggr<S::Probe>) -> bool {
        false
    }
    /// `arch_check_optimized_kprobe(op)`: no other probe inside the jump range.
    fn check_optimized_kprobe(_s: &S, _ap: Aggr<S::Probe>) -> Result {
        Err(Errno::EINVAL)
    }
    /// `arch_prepare_optimized_kprobe(op, orig)`: build the detour (result is ignored, as in C).
    fn prepare_optimized_kprobe(_s: &S, _ap: Aggr<S::Probe>, _orig: S::Probe) {}
    /// `arch_remove_optimized_kprobe(op)`: free the detour buffer.
    fn remove_optimized_kprobe(_s: &S, _ap: Aggr<S::Probe>) {}
    /// `arch_optimize_kprobes(&optimizing_list)`: install jumps, taking entries off the queue.
    fn optimize_kprobes(_s: &S) {}
    /// `arch_unoptimize_kprobes(&unoptimizing_list, &freeing_list)`: remove jumps, move entries.
    fn unoptimize_kprobes(_s: &S) {}
    /// `arch_unoptimize_kprobe(op)`: remove one jump now.
    fn unoptimize_kprobe(_s: &S, _ap: Aggr<S::Probe>) {}
    /// `arch_within_optimized_kprobe(op, addr)`: `addr` lies under the jump of `ap`.
    fn within_optimized_kprobe(_s: &S, _ap: Aggr<S::Probe>, _addr: usize) -> bool {
        false
    }

    /// `arch_prepare_kprobe_ftrace()`; the header stub returns -EINVAL.
    fn prepare_kprobe_ftrace(_s: &S, _p: S::Probe) -> Result {
        Err(Errno::EINVAL)
    }
    /// `flush_insn_slot(p)`: a no-op everywhere but loongarch.
    fn flush_insn_slot(_s: &S, _p: S::Probe) {}
    /// `kprobe_lookup_name(name, offset)`: `kallsyms_lookup_name`; `offset` is NOT folded in.
    fn lookup_name(s: &S, name: &[u8], _offset: usize) -> usize {
        s.kallsyms_lookup_name(name)
    }
    /// `arch_adjust_kprobe_addr()`: final address and `on_func_entry`, `None` for NULL.
    fn adjust_kprobe_addr(_s: &S, addr: usize, offset: usize) -> Option<(usize, bool)> {
        Some((addr.wrapping_add(offset), offset == 0))
    }
    /// `arch_within_kprobe_blacklist()`: the `.kprobes.text` range.
    fn within_kprobe_blacklist(s: &S, addr: usize) -> bool {
        let (start, end) = s.kprobes_text();
        addr >= start && addr < end
    }
    /// `arch_populate_kprobe_blacklist()`: add arch areas through `add_area(start, end)`.
    fn populate_kprobe_blacklist(_s: &S, _add_area: impl FnMut(usize, usize) -> Result) -> Result {
        Ok(())
    }
    /// Resolves the names of `kretprobe_blacklist[]` (`kprobe_lookup_name`), logging C's
    /// "Failed to lookup symbol '%s' for kretprobe blacklist. ..." for each that is unknown.
    fn init_kretprobe_blacklist(_s: &S) {}
    /// `kprobe_optinsn_slots.insn_size = MAX_OPTINSN_SIZE` (OPTPROBES with instruction slots).
    fn init_optinsn_slots(_s: &S) {}
    /// Whether `addr` is a resolved entry of `kretprobe_blacklist[]` (x86: `__switch_to`).
    fn in_kretprobe_blacklist(_s: &S, _addr: usize) -> bool {
        false
    }
}

/// A storage with its compile-time arch: what the core's functions are generic over.
///
/// Implementations only name the arch type. The core calls a hook as `A::Hooks::name(a, ...)`;
/// the constants are the arch's, under the names the core tests them by.
pub trait Arch: Storage + Sized {
    /// The architecture.
    type Hooks: ArchHooks<Self>;

    /// See [`ArchHooks::OPTPROBES`].
    const OPTPROBES: bool = <Self::Hooks as ArchHooks<Self>>::OPTPROBES;
    /// See [`ArchHooks::KPROBES_ON_FTRACE`].
    const KPROBES_ON_FTRACE: bool = <Self::Hooks as ArchHooks<Self>>::KPROBES_ON_FTRACE;
    /// See [`ArchHooks::OPCODE_SIZE`].
    const OPCODE_SIZE: usize = <Self::Hooks as ArchHooks<Self>>::OPCODE_SIZE;
    /// See [`ArchHooks::MAX_OPTIMIZED_LENGTH`].
    const MAX_OPTIMIZED_LENGTH: usize = <Self::Hooks as ArchHooks<Self>>::MAX_OPTIMIZED_LENGTH;
    /// See [`ArchHooks::BATCHES_DISARM`].
    const BATCHES_DISARM: bool = <Self::Hooks as ArchHooks<Self>>::BATCHES_DISARM;
}
