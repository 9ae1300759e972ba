// SPDX-License-Identifier: GPL-2.0

//! ppc64 (64-bit little-endian, ELFv2) kprobes decisions, as pure functions.
//!
//! Constraints: plain `core` Rust: no `std`, no `alloc`, no `unsafe`, no crate attributes and
//! no use of the `kernel` crate, so the same files build inside the kernel's kprobes crate and
//! in the host test crate (`tools/testing/rkprobes/host/ppc64-kprobes`). No allocation and no
//! panic path on any input; address arithmetic wraps as the C's `unsigned long` and `long`
//! arithmetic does in the kernel (built with `-fno-strict-overflow`).
//!
//! Design: upstream's `arch/powerpc/kernel/kprobes.c` and `optprobes.c` read kernel state
//! directly (the probed text, the probe at the previous word, the slot they allocate, symbol
//! addresses) and log what they refuse with `printk()`/`WARN()`. Here that state is explicit
//! input: [`KernelText`] answers what upstream reads of the text, [`AnalyseInstr`] stands for
//! `analyse_instr()` with `emulate_update_regs()` (`arch/powerpc/lib/sstep.c`, which stays C and
//! is called by the glue as a kernel service), and what upstream would log is returned
//! ([`Refused`], [`OptRefusal`]) for the glue to print. `emulate_step()` itself is also a C
//! service: what is decided here is only what its caller, `try_to_emulate()`, does with its
//! answer ([`try_to_emulate`]). Every public item names its upstream counterpart:
//! `insn.rs` holds `ppc_inst_t` and the opcode helpers of `asm/inst.h`, `asm/probes.h`,
//! `asm/disassemble.h`, `asm/ppc-opcode.h` and `asm/code-patching.h` (with
//! `is_conditional_branch()` of `lib/code-patching.c`); `decode.rs` the decisions of
//! `kprobes.c` (`arch_prepare_kprobe()`, `try_to_emulate()`, what `kprobe_handler()`,
//! `kprobe_post_handler()` and `kprobe_fault_handler()` compute, `arch_kprobe_on_func_entry()`);
//! `opt.rs` those of `optprobes.c` (`can_optimize()`, the branch-range checks and the detour
//! of `arch_prepare_optimized_kprobe()`, the branch of `arch_optimize_kprobes()`,
//! `arch_within_optimized_kprobe()`).
//!
//! Version: Linux 6.12 (Debian's 6.12.117), followed exactly, including what 6.12 does that
//! a reader might not expect (see the README of the host crate): `arch_prepare_kprobe()`
//! refuses the second word of a prefixed instruction by looking at the word before the probe
//! only when the probe is not at the start of a page, and again through the probe registered
//! at the previous word; 6.12 has no check of a prefixed instruction crossing a 64-byte
//! boundary (the assembler never emits one); the return branch of a detour is range-checked
//! with the offset's sign reversed, so at exactly -32 MiB the check passes and
//! `patch_branch()` then fails, unchecked ([`Detour::ret`]).
//!
//! Not here, as it is glue: the trap and single-step handlers themselves, the slot allocation
//! (`get_insn_slot()`, `get_optinsn_slot()`, `-ENOMEM`), writing text with
//! `patch_instruction()`, the symbol lookups of `optimized_callback` and `emulate_step`.

mod decode;
pub mod insn;
mod opt;

pub use decode::{
    arch_kprobe_on_func_entry, fault_resume, msr_without_singlestep, post_step_resume,
    prepare_kprobe, stray_trap, trap_may_be_kprobe, tries_emulation, try_to_emulate, Emulation,
    Prepared, Refusal, Refused, StrayTrap, MSR_DR, MSR_IR, MSR_PR, MSR_SINGLESTEP,
};
pub use insn::PpcInst;
pub use opt::{
    can_optimize, imm64_load, optimize_branch, prepare_optimized_kprobe, within_optimized_kprobe,
    AnalyseInstr, Detour, OptProbe, OptRefusal, Template, IMM_LOAD_WORDS,
};

/// The size of a word of text (`sizeof(kprobe_opcode_t)`); a prefixed instruction is two.
pub const PPC_INSN_SIZE: u64 = 4;

/// The words of a single-step slot (`MAX_INSN_SIZE`): room for a prefixed instruction.
pub const MAX_INSN_SIZE: usize = 2;

/// The bytes an optimized probe replaces (`RELATIVEJUMP_SIZE`, also `MAX_OPTIMIZED_LENGTH`):
/// one branch word.
pub const RELATIVEJUMP_SIZE: u64 = 4;

/// `MCOUNT_INSN_SIZE`: the ftrace call of a function's entry. `kprobe_ftrace_handler()` moves
/// `nip` back by it for the pre handler (`nip` is before the call there) and forward again
/// for the post handler, as if a `nop` had been stepped.
pub const MCOUNT_INSN_SIZE: u64 = 4;

/// What `arch_prepare_kprobe_ftrace()` leaves in `p->ainsn.boostable` (with no slot): never
/// emulate.
pub const FTRACE_BOOSTABLE: i32 = -1;

/// The breakpoint written over a probed instruction (`BREAKPOINT_INSTRUCTION`, `trap`, that
/// is `tw 31,0,0`).
pub const BREAKPOINT_INSTRUCTION: u32 = insn::tw(31, 0, 0);

/// The start of the kernel's address space on Book3S-64 (`PAGE_OFFSET`, the
/// `CONFIG_PAGE_OFFSET` of pseries); `is_kernel_addr(x)` is `x >= PAGE_OFFSET` there.
pub const PAGE_OFFSET: u64 = 0xc000_0000_0000_0000;

/// `is_kernel_addr()` of Book3S-64.
pub const fn is_kernel_addr(addr: u64) -> bool {
    addr >= PAGE_OFFSET
}

/// Kernel errnos the decisions return, negated as the C functions return them.
pub mod errno {
    /// `-EINVAL`: an instruction or address `arch_prepare_kprobe()` refuses.
    pub const EINVAL: i32 = -22;
    /// `-EILSEQ`: a probe `can_optimize()` refuses.
    pub const EILSEQ: i32 = -84;
    /// `-ENOMEM`: no slot (the glue allocates it).
    pub const ENOMEM: i32 = -12;
    /// `-ERANGE`: a detour out of branch range, or a symbol it calls not found.
    pub const ERANGE: i32 = -34;
}

/// The kernel state the decisions read: the text.
///
/// The kernel glue answers this from the running kernel; the host differential from a vmlinux
/// image or a synthetic one.
pub trait KernelText {
    /// The 32-bit word at `addr` (4-byte aligned), in CPU order: `*(u32 *)addr`. `None` when
    /// `addr` is not readable text (upstream dereferences the pointer; the core only asks
    /// about kernel text).
    fn read_word(&self, addr: u64) -> Option<u32>;

    /// `ppc_inst_read()`: the instruction at `addr`, with its suffix when the word there is a
    /// prefix.
    #[inline(always)]
    fn read_inst(&self, addr: u64) -> Option<PpcInst> {
        let val = self.read_word(addr)?;
        if insn::get_op(val) == insn::OP_PREFIX {
            let suffix = self.read_word(addr.wrapping_add(PPC_INSN_SIZE))?;
            Some(PpcInst::prefix(val, suffix))
        } else {
            Some(PpcInst::word(val))
        }
    }
}
