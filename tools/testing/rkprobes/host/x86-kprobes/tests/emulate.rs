// SPDX-License-Identifier: GPL-2.0

//! Golden vectors for the x86 kprobe emulators (`arch/x86/kernel/kprobes/emulate.rs`):
//! every condition taken and not taken, each loop counter width, stack effects.

use rkprobes_x86_insn::kprobes::{
    condition, emulate, reg, Emulation, Regs, Stack, X86_EFLAGS_CF, X86_EFLAGS_IF, X86_EFLAGS_OF,
    X86_EFLAGS_PF, X86_EFLAGS_SF, X86_EFLAGS_ZF,
};

/// The probed address.
const A: u64 = 0xffff_ffff_8100_1000;
/// The stack pointer before the emulation.
const SP: u64 = 0xffff_c900_0001_0080;

/// A stack of 32 words ending above [`SP`].
struct Mem {
    base: u64,
    words: [u64; 32],
}

impl Mem {
    fn new() -> Mem {
        Mem {
            base: SP - 8 * 16,
            words: [0xdead_beef; 32],
        }
    }

    fn at(&mut self, addr: u64) -> &mut u64 {
        let i = usize::try_from((addr - self.base) / 8).unwrap();
        &mut self.words[i]
    }
}

impl Stack for Mem {
    fn write(&mut self, addr: u64, val: u64) {
        *self.at(addr) = val;
    }

    fn read(&mut self, addr: u64) -> u64 {
        *self.at(addr)
    }
}

fn regs(flags: u64) -> Regs {
    let mut r = Regs {
        ip: A + 1,
        flags,
        ..Regs::default()
    };
    for (i, g) in r.gpr.iter_mut().enumerate() {
        *g = 0x0101_0101_0101_0101 * (i as u64 + 1);
    }
    r.gpr[reg::SP] = SP;
    r
}

/// The SDM's definition of each condition, written independently of the emulator.
fn sdm(cc: u8, f: u64) -> bool {
    let cf = f & X86_EFLAGS_CF != 0;
    let pf = f & X86_EFLAGS_PF != 0;
    let zf = f & X86_EFLAGS_ZF != 0;
    let sf = f & X86_EFLAGS_SF != 0;
    let of = f & X86_EFLAGS_OF != 0;
    match cc {
        0x0 => of,
        0x1 => !of,
        0x2 => cf,
        0x3 => !cf,
        0x4 => zf,
        0x5 => !zf,
        0x6 => cf || zf,
        0x7 => !cf && !zf,
        0x8 => sf,
        0x9 => !sf,
        0xa => pf,
        0xb => !pf,
        0xc => sf != of,
        0xd => sf == of,
        0xe => zf || sf != of,
        0xf => !zf && sf == of,
        _ => unreachable!(),
    }
}

const FLAGS: [u64; 5] = [
    X86_EFLAGS_CF,
    X86_EFLAGS_PF,
    X86_EFLAGS_ZF,
    X86_EFLAGS_SF,
    X86_EFLAGS_OF,
];

fn flag_combinations() -> impl Iterator<Item = u64> {
    (0..32u32).map(|m| {
        FLAGS
            .iter()
            .enumerate()
            .filter(|(i, _)| m & (1 << i) != 0)
            .fold(0x2, |acc, (_, f)| acc | f)
    })
}

#[test]
fn jcc_every_condition_taken_and_not_taken() {
    for cc in 0..16u8 {
        let (mut taken, mut not_taken) = (0, 0);
        for flags in flag_combinations() {
            let want = sdm(cc, flags);
            assert_eq!(condition(cc, flags), want, "cc {cc:#x} flags {flags:#x}");
            for (size, rel) in [(2u8, -0x10i32), (6, 0x1234)] {
                let mut r = regs(flags);
                let before = r;
                let mut mem = Mem::new();
                assert!(emulate(
                    Emulation::Jcc { cond: cc, rel },
                    size,
                    &mut r,
                    &mut mem
                ));
                let next = A + u64::from(size);
                let ip = if want {
                    next.wrapping_add_signed(rel.into())
                } else {
                    next
                };
                assert_eq!(r, Regs { ip, ..before }, "cc {cc:#x} flags {flags:#x}");
            }
            if want {
                taken += 1;
            } else {
                not_taken += 1;
            }
        }
        assert!(taken > 0 && not_taken > 0, "cc {cc:#x} only one way");
    }
}

#[test]
fn jcc_golden() {
    // (cc, flags, taken)
    let golden = [
        (0x0, X86_EFLAGS_OF, true),
        (0x0, 0, false),
        (0x2, X86_EFLAGS_CF, true),
        (0x3, X86_EFLAGS_CF, false),
        (0x4, X86_EFLAGS_ZF, true),
        (0x5, X86_EFLAGS_ZF, false),
        (0x6, X86_EFLAGS_ZF, true),
        (0x7, X86_EFLAGS_CF, false),
        (0x8, X86_EFLAGS_SF, true),
        (0x9, X86_EFLAGS_SF, false),
        (0xa, X86_EFLAGS_PF, true),
        (0xb, X86_EFLAGS_PF, false),
        (0xc, X86_EFLAGS_SF | X86_EFLAGS_OF, false),
        (0xc, X86_EFLAGS_OF, true),
        (0xd, X86_EFLAGS_SF | X86_EFLAGS_OF, true),
        (0xe, X86_EFLAGS_ZF | X86_EFLAGS_SF | X86_EFLAGS_OF, true),
        (0xe, X86_EFLAGS_SF | X86_EFLAGS_OF, false),
        (0xf, 0, true),
        (0xf, X86_EFLAGS_ZF, false),
        (0xf, X86_EFLAGS_SF, false),
    ];
    for (cc, flags, taken) in golden {
        assert_eq!(condition(cc, flags), taken, "cc {cc:#x} flags {flags:#x}");
    }
}

#[test]
fn jmp_and_call() {
    let mut r = regs(0);
    let mut mem = Mem::new();
    assert!(emulate(Emulation::Jmp { rel: -2 }, 2, &mut r, &mut mem));
    assert_eq!(r.ip, A, "jmp . loops on itself");
    assert_eq!(r.sp(), SP);

    let mut r = regs(0);
    assert!(emulate(Emulation::Call { rel: 0x100 }, 5, &mut r, &mut mem));
    assert_eq!(r.ip, A + 5 + 0x100);
    assert_eq!(r.sp(), SP - 8);
    assert_eq!(*mem.at(SP - 8), A + 5, "return address");

    // Address arithmetic wraps instead of panicking.
    let mut r = regs(0);
    r.ip = u64::MAX;
    assert!(emulate(
        Emulation::Jmp { rel: i32::MAX },
        5,
        &mut r,
        &mut mem
    ));
    assert_eq!(r.ip, (u64::MAX - 1).wrapping_add(5 + i32::MAX as u64));
}

#[test]
fn indirect_call_and_jmp() {
    let mut r = regs(0);
    let mut mem = Mem::new();
    let r11 = r.gpr[11];
    assert!(emulate(
        Emulation::CallIndirect { reg: 11 },
        3,
        &mut r,
        &mut mem
    ));
    assert_eq!((r.ip, r.sp()), (r11, SP - 8));
    assert_eq!(*mem.at(SP - 8), A + 3);

    // call *%rsp reads %rsp after pushing, as upstream does.
    let mut r = regs(0);
    assert!(emulate(
        Emulation::CallIndirect { reg: 4 },
        2,
        &mut r,
        &mut mem
    ));
    assert_eq!((r.ip, r.sp()), (SP - 8, SP - 8));

    let mut r = regs(0);
    let rax = r.gpr[reg::AX];
    assert!(emulate(
        Emulation::JmpIndirect { reg: 0 },
        2,
        &mut r,
        &mut mem
    ));
    assert_eq!((r.ip, r.sp()), (rax, SP));
}

#[test]
fn ret_pops_without_the_immediate() {
    let mut mem = Mem::new();
    *mem.at(SP) = 0xffff_ffff_8200_0000;
    let mut r = regs(0);
    assert!(emulate(Emulation::Ret, 1, &mut r, &mut mem));
    assert_eq!((r.ip, r.sp()), (0xffff_ffff_8200_0000, SP + 8));
    // `ret $8` is emulated as upstream's kprobe_emulate_ret() does it: the immediate is not
    // added to %rsp.
    let mut r = regs(0);
    assert!(emulate(Emulation::Ret, 3, &mut r, &mut mem));
    assert_eq!((r.ip, r.sp()), (0xffff_ffff_8200_0000, SP + 8));
}

fn run_loop(kind: u8, bits: u8, rcx: u64, flags: u64) -> (bool, u64) {
    let mut r = regs(flags);
    r.gpr[reg::CX] = rcx;
    let mut mem = Mem::new();
    let size = if bits == 64 { 2 } else { 3 };
    let e = Emulation::Loop {
        kind,
        address_bits: bits,
        rel: -0x20,
    };
    assert!(emulate(e, size, &mut r, &mut mem));
    let next = A + u64::from(size);
    assert_eq!(r.sp(), SP);
    let taken = r.ip == next - 0x20;
    assert!(taken || r.ip == next);
    (taken, r.gpr[reg::CX])
}

// Upstream's kprobe_emulate_loop() tests the count before decrementing it (the processor
// tests it after), so a count of 1 branches; the Rust emulator keeps that (see
// `loop_taken()`), and these vectors pin it.
#[test]
fn loop_counter_widths() {
    const LOOP: u8 = 2;
    // 64-bit counter.
    assert_eq!(run_loop(LOOP, 64, 2, 0), (true, 1));
    assert_eq!(run_loop(LOOP, 64, 1, 0), (true, 0));
    assert_eq!(run_loop(LOOP, 64, 0, 0), (false, u64::MAX));
    // 32-bit: only %ecx counts and changes.
    assert_eq!(
        run_loop(LOOP, 32, 0xffff_ffff_0000_0001, 0),
        (true, 0xffff_ffff_0000_0000)
    );
    assert_eq!(run_loop(LOOP, 32, 0x1_0000_0000, 0), (false, 0x1_ffff_ffff));
    assert_eq!(run_loop(LOOP, 32, 0x5_0000_0002, 0), (true, 0x5_0000_0001));
    // 16-bit: only %cx.
    assert_eq!(run_loop(LOOP, 16, 0x1234_0000, 0), (false, 0x1234_ffff));
    assert_eq!(run_loop(LOOP, 16, 0x1234_0001, 0), (true, 0x1234_0000));
    assert_eq!(run_loop(LOOP, 16, 0x1234_5678, 0), (true, 0x1234_5677));
}

#[test]
fn loope_loopne() {
    const LOOPNE: u8 = 0;
    const LOOPE: u8 = 1;
    for bits in [16, 32, 64] {
        assert_eq!(run_loop(LOOPE, bits, 5, X86_EFLAGS_ZF), (true, 4));
        assert_eq!(run_loop(LOOPE, bits, 5, 0), (false, 4));
        assert!(!run_loop(LOOPE, bits, 0, X86_EFLAGS_ZF).0);
        assert_eq!(run_loop(LOOPNE, bits, 5, 0), (true, 4));
        assert_eq!(run_loop(LOOPNE, bits, 5, X86_EFLAGS_ZF), (false, 4));
        assert!(!run_loop(LOOPNE, bits, 0, 0).0);
    }
}

#[test]
fn jcxz_widths_do_not_decrement() {
    const JCXZ: u8 = 3;
    assert_eq!(run_loop(JCXZ, 64, 0, 0), (true, 0));
    assert_eq!(run_loop(JCXZ, 64, 0x1_0000_0000, 0), (false, 0x1_0000_0000));
    assert_eq!(run_loop(JCXZ, 32, 0x1_0000_0000, 0), (true, 0x1_0000_0000));
    assert_eq!(run_loop(JCXZ, 32, 1, 0), (false, 1));
    assert_eq!(run_loop(JCXZ, 16, 0xffff_0000, 0), (true, 0xffff_0000));
    assert_eq!(run_loop(JCXZ, 16, 0x8000, 0), (false, 0x8000));
}

#[test]
fn if_modifiers() {
    let mut mem = Mem::new();
    let mut r = regs(X86_EFLAGS_IF | X86_EFLAGS_CF);
    assert!(emulate(Emulation::IfModifier(0xfa), 1, &mut r, &mut mem));
    assert_eq!((r.flags, r.ip, r.sp()), (X86_EFLAGS_CF, A + 1, SP), "cli");

    let mut r = regs(X86_EFLAGS_ZF);
    assert!(emulate(Emulation::IfModifier(0xfb), 1, &mut r, &mut mem));
    assert_eq!(
        (r.flags, r.ip),
        (X86_EFLAGS_ZF | X86_EFLAGS_IF, A + 1),
        "sti"
    );

    let mut r = regs(0x246);
    assert!(emulate(Emulation::IfModifier(0x9c), 1, &mut r, &mut mem));
    assert_eq!((r.flags, r.ip, r.sp()), (0x246, A + 1, SP - 8), "pushf");
    assert_eq!(*mem.at(SP - 8), 0x246);

    *mem.at(SP) = 0x202;
    let mut r = regs(0x46);
    assert!(emulate(Emulation::IfModifier(0x9d), 1, &mut r, &mut mem));
    assert_eq!((r.flags, r.ip, r.sp()), (0x202, A + 1, SP + 8), "popf");

    // pushfw: two bytes; the size moves ip, the push stays a word as upstream's.
    let mut r = regs(0x246);
    assert!(emulate(Emulation::IfModifier(0x9c), 2, &mut r, &mut mem));
    assert_eq!((r.ip, r.sp()), (A + 2, SP - 8));
}

#[test]
fn none_is_not_emulated() {
    let mut mem = Mem::new();
    let mut r = regs(0x246);
    let before = r;
    assert!(!emulate(Emulation::None, 3, &mut r, &mut mem));
    assert_eq!(r, before);
}
