// SPDX-License-Identifier: GPL-2.0

//! x86 kprobes decisions and emulators, as pure functions.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate attributes and
//! no use of the `kernel` crate, so the same files build inside the kernel's kprobes crate and
//! in the host test workspace. No allocation and no panic path; arithmetic on addresses wraps
//! as the C's `unsigned long` arithmetic does. Include this module as a sibling of the decoder
//! (`arch/x86/lib/insn_decoder`, named `insn_decoder`).
//!
//! Design: upstream's `arch/x86/kernel/kprobes/core.c` and `opt.c` mix the decisions with
//! reads of kernel state. Here the decisions take that state as explicit input: the
//! [`KernelText`] trait answers what upstream asks kallsyms, the exception tables, kCFI, kgdb,
//! the text-reservation checks and the kprobe hash, and [`Config`] carries the Kconfig
//! switches the decisions depend on. The kernel glue implements the trait on the real kernel;
//! the host differential test implements it on a vmlinux image and runs upstream's C beside
//! it. Every public function names its upstream counterpart so the two can be read side by
//! side: `decide.rs` holds `core.c`'s probe preparation, `emulate.rs` the `kprobe_emulate_*`
//! emulators and `opt.rs` the jump optimization.

mod decide;
mod emulate;
mod opt;

use super::insn_decoder as insn;

pub use decide::{
    adjust_kprobe_addr, can_boost, can_probe, check_kprobe, copy_instruction, copy_kprobe,
    is_endbr, prepare_emulation, prepare_kprobe, prepare_singlestep, recover_probed_insn,
    synthesize_relcall, synthesize_reljump, Prepared, NOP5,
};
pub use emulate::{
    condition, emulate, loop_taken, pop, push, reg, Regs, RegsAccess, Stack, X86_EFLAGS_CF,
    X86_EFLAGS_IF, X86_EFLAGS_OF, X86_EFLAGS_PF, X86_EFLAGS_SF, X86_EFLAGS_ZF,
};
pub use insn::Emulation;
pub use opt::{
    build_detour, can_optimize, check_optimized_kprobe, copy_optimized_instructions,
    prepare_optimized_kprobe, recover_optprobed_insn, Optimized, Template, MAX_OPTIMIZED_LENGTH,
};

/// The `int3` opcode (`INT3_INSN_OPCODE`).
pub const INT3_INSN_OPCODE: u8 = 0xcc;
/// The size of `int3` (`INT3_INSN_SIZE`).
pub const INT3_INSN_SIZE: usize = 1;
/// The opcode of `jmp rel32` (`JMP32_INSN_OPCODE`).
pub const JMP32_INSN_OPCODE: u8 = 0xe9;
/// The size of `jmp rel32` (`JMP32_INSN_SIZE`, also `RELATIVEJUMP_SIZE`).
pub const JMP32_INSN_SIZE: usize = 5;
/// The opcode of `call rel32` (`CALL_INSN_OPCODE`).
pub const CALL_INSN_OPCODE: u8 = 0xe8;
/// The size of `call rel32` (`CALL_INSN_SIZE`).
pub const CALL_INSN_SIZE: usize = 5;
/// The size of a 32-bit displacement (`DISP32_SIZE`).
pub const DISP32_SIZE: usize = 4;
/// The longest instruction, and the size of a kprobe's instruction slot (`MAX_INSN_SIZE`).
pub const MAX_INSN_SIZE: usize = insn::MAX_INSN_SIZE;

/// Kernel errnos the decisions return, negated as the C functions return them.
pub mod errno {
    /// `-EBUSY`.
    pub const EBUSY: i32 = -16;
    /// `-EEXIST`.
    pub const EEXIST: i32 = -17;
    /// `-EINVAL`.
    pub const EINVAL: i32 = -22;
    /// `-ENOSPC`.
    pub const ENOSPC: i32 = -28;
    /// `-ERANGE`.
    pub const ERANGE: i32 = -34;
    /// `-EILSEQ`.
    pub const EILSEQ: i32 = -84;
    /// `-EOPNOTSUPP`.
    pub const EOPNOTSUPP: i32 = -95;
}

/// The Kconfig switches and CPU features the decisions depend on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// `CONFIG_PREEMPTION`: no boosting (`prepare_singlestep`).
    pub preemption: bool,
    /// `CONFIG_CFI_CLANG`: the kCFI check sequence may not be probed (`can_probe`).
    pub cfi_clang: bool,
    /// `CONFIG_KGDB`: a kgdb breakpoint makes a function unprobeable.
    pub kgdb: bool,
    /// `CONFIG_MITIGATION_RETPOLINE` or `CONFIG_X86_KERNEL_IBT`: no jump tables, so indirect
    /// jumps do not stop jump optimization (`can_optimize`).
    pub no_jump_tables: bool,
    /// `CONFIG_X86_KERNEL_IBT`: a function may start with ENDBR (`arch_adjust_kprobe_addr`).
    pub ibt: bool,
    /// `boot_cpu_has(X86_FEATURE_SMAP)`: the detour starts with `clac` (`synthesize_clac`).
    pub smap: bool,
}

/// A symbol's size and an address's offset in it (`kallsyms_lookup_size_offset()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolSpan {
    /// The size of the symbol.
    pub size: u64,
    /// The offset of the address from the symbol's start.
    pub offset: u64,
}

/// What the decisions read from the running kernel.
///
/// The kernel glue implements it on the kernel's own tables; each method names the C
/// function it stands for.
pub trait KernelText {
    /// Returns the original bytes of the instruction at `addr`: `recover_probed_instruction()`
    /// followed by `copy_from_kernel_nofault()` of [`MAX_INSN_SIZE`] bytes; `None` if they
    /// cannot be recovered or read. The kernel glue reads the text and looks up the probes
    /// and ftrace sites; [`recover_optprobed_insn`] and [`recover_probed_insn`] restore the
    /// bytes.
    fn recover(&self, addr: u64) -> Option<[u8; MAX_INSN_SIZE]>;
    /// `kallsyms_lookup_size_offset()`.
    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan>;
    /// `search_exception_tables()`: a fixup may resume at or jump from `addr`.
    fn search_exception_tables(&self, addr: u64) -> bool;
    /// `is_cfi_trap()`: `addr` is the `ud2` of a kCFI check.
    fn is_cfi_trap(&self, addr: u64) -> bool;
    /// `kgdb_has_hit_break()`.
    fn kgdb_has_hit_break(&self, addr: u64) -> bool;
    /// `alternatives_text_reserved()` on `[start, end]`.
    fn alternatives_text_reserved(&self, start: u64, end: u64) -> bool;
    /// `ftrace_text_reserved()`, `alternatives_text_reserved()`, `jump_label_text_reserved()`
    /// or `static_call_text_reserved()` on `[start, end]`.
    fn text_reserved(&self, start: u64, end: u64) -> bool;
    /// Whether `addr` is in the entry text (`__entry_text_start` to `__entry_text_end`).
    fn in_entry_text(&self, addr: u64) -> bool;
    /// `get_kprobe(addr)` found a probe and `!kprobe_disarmed()` on it.
    fn armed_kprobe_at(&self, addr: u64) -> bool;
    /// The `pr_err()` of `__copy_instruction()`: the copy's RIP-relative displacement,
    /// `newdisp`, does not fit into 32 bits. The kernel prints C's line; a model may record it.
    fn displacement_does_not_fit(&self, _newdisp: i64) {}
}

/// Copies `src` into `dst` at `at`; `false`, leaving `dst` unchanged, if it does not fit.
fn put(dst: &mut [u8], at: usize, src: &[u8]) -> bool {
    let Some(to) = at
        .checked_add(src.len())
        .and_then(|end| dst.get_mut(at..end))
    else {
        return false;
    };
    // `to` is exactly `src.len()` long, so all of `src` is copied.
    insn::copy_prefix(to, src);
    true
}
