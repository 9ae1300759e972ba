// SPDX-License-Identifier: GPL-2.0

//! The x86 kprobe emulators, as pure functions on a small register state.
//!
//! Constraints: `core` only, no allocation, no panic path; address arithmetic wraps as the
//! C's `unsigned long` arithmetic does. The stack is reached only through [`Stack`], so the
//! kernel glue decides how `int3_emulate_push()`/`int3_emulate_pop()` touch memory (the int3
//! entry leaves a gap below `pt_regs` for the push), and the host tests use an array.
//!
//! Each emulator runs after the int3 at the probed address has trapped: `regs.ip` is the
//! probed address plus [`INT3_INSN_SIZE`], as in upstream's `kprobe_emulate_*()` in
//! `arch/x86/kernel/kprobes/core.c` and the `int3_emulate_*()` helpers of
//! `arch/x86/include/asm/text-patching.h`.

use super::insn::Emulation;
use super::INT3_INSN_SIZE;

/// Carry flag.
pub const X86_EFLAGS_CF: u64 = 1 << 0;
/// Parity flag.
pub const X86_EFLAGS_PF: u64 = 1 << 2;
/// Zero flag.
pub const X86_EFLAGS_ZF: u64 = 1 << 6;
/// Sign flag.
pub const X86_EFLAGS_SF: u64 = 1 << 7;
/// Interrupt enable flag.
pub const X86_EFLAGS_IF: u64 = 1 << 9;
/// Overflow flag.
pub const X86_EFLAGS_OF: u64 = 1 << 11;

/// Register numbers as ModRM/REX encode them (`addrmode_regoffs[]` order).
pub mod reg {
    /// `rax`.
    pub const AX: usize = 0;
    /// `rcx`, the `loop`/`jrcxz` counter.
    pub const CX: usize = 1;
    /// `rsp`, the stack pointer.
    pub const SP: usize = 4;
}

/// The registers the emulators read or write: the part of `struct pt_regs` they use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// The general purpose registers, indexed by their encoding (0 `ax` to 15 `r15`).
    pub gpr: [u64; 16],
    /// The instruction pointer (`regs->ip`).
    pub ip: u64,
    /// The flags (`regs->flags`).
    pub flags: u64,
}

impl Regs {
    /// Returns the stack pointer (`regs->sp`).
    pub fn sp(&self) -> u64 {
        self.gpr[reg::SP]
    }

    /// Returns register `n` (0 to 15); `regs_get_register()` on `addrmode_regoffs[n]`.
    pub fn get(&self, n: u8) -> u64 {
        self.gpr.get(usize::from(n)).copied().unwrap_or(0)
    }
}

/// Access to the trapped registers, field by field, for the emulators: [`Regs`] on the host,
/// the trap frame itself in the kernel (so an emulator touches only the fields it uses, as
/// upstream's `int3_emulate_*()` do).
pub trait RegsAccess {
    /// `regs->ip`.
    fn ip(&self) -> u64;
    /// `regs->ip = ip`.
    fn set_ip(&mut self, ip: u64);
    /// `regs->flags`.
    fn flags(&self) -> u64;
    /// `regs->flags = flags`.
    fn set_flags(&mut self, flags: u64);
    /// General purpose register `n` (0 `ax` to 15 `r15`, [`reg`]); 0 for any other `n`.
    fn gpr(&self, n: u8) -> u64;
    /// Sets general purpose register `n`; the emulators only set `sp` and `cx`.
    fn set_gpr(&mut self, n: u8, val: u64);
}

impl RegsAccess for Regs {
    #[inline(always)]
    fn ip(&self) -> u64 {
        self.ip
    }
    #[inline(always)]
    fn set_ip(&mut self, ip: u64) {
        self.ip = ip;
    }
    #[inline(always)]
    fn flags(&self) -> u64 {
        self.flags
    }
    #[inline(always)]
    fn set_flags(&mut self, flags: u64) {
        self.flags = flags;
    }
    #[inline(always)]
    fn gpr(&self, n: u8) -> u64 {
        self.get(n)
    }
    #[inline(always)]
    fn set_gpr(&mut self, n: u8, val: u64) {
        if let Some(r) = self.gpr.get_mut(usize::from(n)) {
            *r = val;
        }
    }
}

/// The memory `int3_emulate_push()` writes and `int3_emulate_pop()` reads.
pub trait Stack {
    /// Stores the machine word `val` at `addr`.
    fn write(&mut self, addr: u64, val: u64);
    /// Loads the machine word at `addr`.
    fn read(&mut self, addr: u64) -> u64;
}

/// `int3_emulate_push()`.
#[inline(always)]
pub fn push(regs: &mut impl RegsAccess, stack: &mut impl Stack, val: u64) {
    let sp = regs.gpr(reg::SP as u8).wrapping_sub(8);
    regs.set_gpr(reg::SP as u8, sp);
    stack.write(sp, val);
}

/// `int3_emulate_pop()`.
#[inline(always)]
pub fn pop(regs: &mut impl RegsAccess, stack: &mut impl Stack) -> u64 {
    let sp = regs.gpr(reg::SP as u8);
    let val = stack.read(sp);
    regs.set_gpr(reg::SP as u8, sp.wrapping_add(8));
    val
}

/// Returns whether condition code `cc` (0 to 15, the low nibble of a `jcc`) holds for
/// `flags`, as `int3_emulate_jcc()` decides it.
#[inline(always)]
pub fn condition(cc: u8, flags: u64) -> bool {
    const MASK: [u64; 6] = [
        X86_EFLAGS_OF,
        X86_EFLAGS_CF,
        X86_EFLAGS_ZF,
        X86_EFLAGS_CF | X86_EFLAGS_ZF,
        X86_EFLAGS_SF,
        X86_EFLAGS_PF,
    ];
    let cc = cc & 0xf;
    let base = match MASK.get(usize::from(cc >> 1)) {
        Some(mask) => flags & mask != 0,
        None => {
            let lt = (flags & X86_EFLAGS_SF != 0) != (flags & X86_EFLAGS_OF != 0);
            lt || (cc >= 0xe && flags & X86_EFLAGS_ZF != 0)
        }
    };
    base != (cc & 1 != 0)
}

/// Returns whether a `loop*`/`j*cxz` of `kind` (0 `loopne`, 1 `loope`, 2 `loop`, 3 `jcxz`)
/// with an `address_bits` wide counter branches, updating the counter in `regs`
/// (`kprobe_emulate_loop()`).
///
/// `loop*` decrements only the low `address_bits` bits of `rcx`, as the C's store through a
/// `u16 *`/`u32 *` does: a 32-bit `loop` on x86-64 leaves bits 63:32 unchanged.
///
/// Like upstream (`match = ((*(u64 *)&regs->cx)--) != 0`), the count is tested *before* the
/// decrement, where the processor tests it after: with a count of 1 the emulated `loop`
/// branches and the real one falls through. This is kept so probed code behaves the same
/// under both implementations; compilers do not emit `loop` in kernel text.
#[inline(always)]
pub fn loop_taken(kind: u8, address_bits: u8, regs: &mut impl RegsAccess) -> bool {
    let cx = regs.gpr(reg::CX as u8);
    let mask = match address_bits {
        32 => u64::from(u32::MAX),
        64 => u64::MAX,
        _ => u64::from(u16::MAX),
    };
    let count = cx & mask;
    let mut taken = if kind != 3 {
        regs.set_gpr(reg::CX as u8, (cx & !mask) | (count.wrapping_sub(1) & mask));
        count != 0
    } else {
        count == 0
    };
    match kind {
        0 => taken = taken && regs.flags() & X86_EFLAGS_ZF == 0,
        1 => taken = taken && regs.flags() & X86_EFLAGS_ZF != 0,
        _ => {}
    }
    taken
}

/// Runs the emulation of a probed instruction of `size` bytes (`p->ainsn.emulate_op`).
///
/// `regs.ip` is the probed address plus [`INT3_INSN_SIZE`] on entry and where execution
/// continues on return. Returns `false`, touching nothing, for [`Emulation::None`]: that
/// instruction is single-stepped out of line instead.
#[inline(always)]
pub fn emulate(
    emulation: Emulation,
    size: u8,
    regs: &mut impl RegsAccess,
    stack: &mut impl Stack,
) -> bool {
    let next = regs
        .ip()
        .wrapping_sub(INT3_INSN_SIZE as u64)
        .wrapping_add(u64::from(size));
    let rel = |rel: i32| next.wrapping_add_signed(i64::from(rel));
    match emulation {
        Emulation::None => return false,
        // kprobe_emulate_ifmodifiers()
        Emulation::IfModifier(op) => {
            match op {
                0xfa => regs.set_flags(regs.flags() & !X86_EFLAGS_IF),
                0xfb => regs.set_flags(regs.flags() | X86_EFLAGS_IF),
                0x9c => {
                    let flags = regs.flags();
                    push(regs, stack, flags);
                }
                0x9d => {
                    let flags = pop(regs, stack);
                    regs.set_flags(flags);
                }
                _ => {}
            }
            regs.set_ip(next);
        }
        // kprobe_emulate_ret(), int3_emulate_ret()
        Emulation::Ret => {
            let ip = pop(regs, stack);
            regs.set_ip(ip);
        }
        // kprobe_emulate_call(), int3_emulate_call(): the return address is the end of a
        // 5-byte call whatever the probed call's size, as upstream computes it.
        Emulation::Call { rel: r } => {
            let ret = regs
                .ip()
                .wrapping_sub(INT3_INSN_SIZE as u64)
                .wrapping_add(super::CALL_INSN_SIZE as u64);
            push(regs, stack, ret);
            regs.set_ip(rel(r));
        }
        // kprobe_emulate_jmp()
        Emulation::Jmp { rel: r } => regs.set_ip(rel(r)),
        // kprobe_emulate_jcc(), int3_emulate_jcc()
        Emulation::Jcc { cond, rel: r } => {
            let ip = if condition(cond, regs.flags()) {
                rel(r)
            } else {
                next
            };
            regs.set_ip(ip);
        }
        // kprobe_emulate_loop()
        Emulation::Loop {
            kind,
            address_bits,
            rel: r,
        } => {
            let ip = if loop_taken(kind, address_bits, regs) {
                rel(r)
            } else {
                next
            };
            regs.set_ip(ip);
        }
        // kprobe_emulate_call_indirect(): the target register is read after the push, so
        // `call *%rsp` jumps to the new stack pointer, as upstream does.
        Emulation::CallIndirect { reg } => {
            push(regs, stack, next);
            let target = regs.gpr(reg);
            regs.set_ip(target);
        }
        // kprobe_emulate_jmp_indirect()
        Emulation::JmpIndirect { reg } => {
            let target = regs.gpr(reg);
            regs.set_ip(target);
        }
    }
    true
}
