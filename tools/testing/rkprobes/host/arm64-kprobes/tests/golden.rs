// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: the Rust decisions and simulators against the ARMv8 semantics.
//!
//! Every encoding here was produced by `llvm-mc -triple=aarch64` (and disassembled back with
//! `llvm-objdump`); every expected value is worked out from the Arm ARM's description of the
//! instruction, not from the code under test.

use rkprobes_arm64_kprobes::kprobes::{
    self, condition_holds, errno, is_steppable, kprobe_decode_insn, prepare_kprobe,
    probe_decode_insn, simulate, Fault, Memory, Prepared, ProbeInsn, PtRegs, Simulator,
    BRK64_OPCODE_KPROBES, BRK64_OPCODE_KPROBES_SS,
};
use rkprobes_arm64_kprobes::Image;
use std::collections::HashMap;

/// The probe address of most vectors.
const A: u64 = 0xffff_8000_8000_1000;

/// Memory for the literal loads: only the bytes written are mapped.
#[derive(Default)]
struct Mem(HashMap<u64, u8>);

impl Mem {
    fn put(&mut self, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.0.insert(addr + i as u64, *b);
        }
    }
    fn get<const N: usize>(&self, addr: u64) -> Result<[u8; N], Fault> {
        let mut out = [0u8; N];
        for (i, o) in out.iter_mut().enumerate() {
            *o = *self.0.get(&(addr + i as u64)).ok_or(Fault { addr })?;
        }
        Ok(out)
    }
}

impl Memory for Mem {
    fn read_u32(&self, addr: u64) -> Result<u32, Fault> {
        self.get::<4>(addr).map(u32::from_le_bytes)
    }
    fn read_u64(&self, addr: u64) -> Result<u64, Fault> {
        self.get::<8>(addr).map(u64::from_le_bytes)
    }
}

/// A frame at a probe hit at [`A`], every register set to a recognisable value.
fn frame() -> PtRegs {
    let mut r = PtRegs::default();
    for (i, x) in r.regs.iter_mut().enumerate() {
        *x = 0x1111_0000_0000_0000 + i as u64;
    }
    r.sp = 0xffff_8000_8400_3f00;
    r.pc = A;
    r.pstate = 0x3c5; // EL1h, DAIF masked, NZCV clear
    r
}

/// Runs `sim` on `opcode` at `addr` from `before`, with no memory.
fn run(sim: Simulator, opcode: u32, addr: u64, before: PtRegs) -> PtRegs {
    before
        .simulated(sim, opcode, addr, &Mem::default())
        .expect("no memory access")
}

/// `before` with the changes listed.
fn with(before: PtRegs, pc: u64, regs: &[(usize, u64)]) -> PtRegs {
    let mut r = before;
    r.pc = pc;
    for &(n, v) in regs {
        r.regs[n] = v;
    }
    r
}

/// The NZCV nibble (N=8, Z=4, C=2, V=1) as PSTATE bits 31:28, over other PSTATE bits.
fn pstate(nzcv: u64) -> u64 {
    (nzcv << 28) | 0xffff_ffff_0000_03c5
}

/// ConditionHolds() of the Arm ARM, written from its pseudo-code (cond<3:1> picks the test,
/// cond<0> inverts it unless cond is 1111).
fn arm_arm_condition_holds(cond: u32, nzcv: u64) -> bool {
    let (n, z, c, v) = (nzcv & 8 != 0, nzcv & 4 != 0, nzcv & 2 != 0, nzcv & 1 != 0);
    let result = match cond >> 1 {
        0b000 => z,
        0b001 => c,
        0b010 => n,
        0b011 => v,
        0b100 => c && !z,
        0b101 => n == v,
        0b110 => n == v && !z,
        _ => true,
    };
    if cond & 1 == 1 && cond != 0b1111 {
        !result
    } else {
        result
    }
}

#[test]
fn every_condition_against_the_arm_arm() {
    for cond in 0..16 {
        for nzcv in 0..16 {
            assert_eq!(
                condition_holds(cond, pstate(nzcv)),
                arm_arm_condition_holds(cond, nzcv),
                "cond {cond:#x}, nzcv {nzcv:#06b}"
            );
        }
    }
}

#[test]
fn b_cond_taken_and_not_taken() {
    // b.<cond> .+0x40 is 0x54000200 | cond (`b.eq .+0x40` = 0x54000200).
    // (cond, NZCV where taken, NZCV where not taken)
    let table: [(u32, &str, u64, Option<u64>); 16] = [
        (0x0, "eq", 0b0100, Some(0b0000)),
        (0x1, "ne", 0b0000, Some(0b0100)),
        (0x2, "cs", 0b0010, Some(0b0000)),
        (0x3, "cc", 0b0000, Some(0b0010)),
        (0x4, "mi", 0b1000, Some(0b0000)),
        (0x5, "pl", 0b0000, Some(0b1000)),
        (0x6, "vs", 0b0001, Some(0b0000)),
        (0x7, "vc", 0b0000, Some(0b0001)),
        (0x8, "hi", 0b0010, Some(0b0110)),
        (0x9, "ls", 0b0110, Some(0b0010)),
        (0xa, "ge", 0b1001, Some(0b1000)),
        (0xb, "lt", 0b1000, Some(0b1001)),
        (0xc, "gt", 0b0000, Some(0b0100)),
        (0xd, "le", 0b0100, Some(0b0000)),
        (0xe, "al", 0b0000, None),
        (0xf, "nv", 0b1111, None),
    ];
    for (cond, name, taken, not_taken) in table {
        let op = 0x5400_0200 | cond;
        assert_eq!(probe_decode_insn(op), ProbeInsn::Simulate(Simulator::BCond));
        let mut r = frame();
        r.pstate = pstate(taken);
        assert_eq!(
            run(Simulator::BCond, op, A, r).pc,
            A + 0x40,
            "b.{name} taken"
        );
        if let Some(nt) = not_taken {
            r.pstate = pstate(nt);
            assert_eq!(
                run(Simulator::BCond, op, A, r),
                with(r, A + 4, &[]),
                "b.{name} not taken"
            );
        }
    }
    // More not-taken cases of the compound conditions.
    let mut r = frame();
    r.pstate = pstate(0b0001); // N != V
    assert_eq!(
        run(Simulator::BCond, 0x5400_020c, A, r).pc,
        A + 4,
        "b.gt with N != V"
    );
    r.pstate = pstate(0b0000);
    assert_eq!(
        run(Simulator::BCond, 0x5400_0208, A, r).pc,
        A + 4,
        "b.hi with C clear"
    );
    // b.ne .-0x40 (0x54fffe01), taken, and b.al .+8 (0x5400004e).
    r.pstate = pstate(0);
    assert_eq!(
        run(Simulator::BCond, 0x54ff_fe01, A, r),
        with(r, A - 0x40, &[])
    );
    assert_eq!(run(Simulator::BCond, 0x5400_004e, A, r).pc, A + 8);
    // The flags are read from PSTATE bits 31:28 only.
    r.pstate = 0xf_0000_0000 | 0x0fff_ffff;
    assert_eq!(
        run(Simulator::BCond, 0x5400_0200, A, r).pc,
        A + 4,
        "b.eq, Z clear"
    );
}

#[test]
fn b_and_bl() {
    let r = frame();
    // b .+0x7fffffc (0x15ffffff), b .-0x8000000 (0x16000000): the 26-bit range's ends.
    assert_eq!(
        run(Simulator::BBl, 0x15ff_ffff, A, r),
        with(r, A + 0x7ff_fffc, &[])
    );
    assert_eq!(
        run(Simulator::BBl, 0x1600_0000, A, r),
        with(r, A - 0x800_0000, &[])
    );
    // bl .+0x1000 (0x94000400), bl .-4 (0x97ffffff): x30 = the next instruction.
    assert_eq!(
        run(Simulator::BBl, 0x9400_0400, A, r),
        with(r, A + 0x1000, &[(30, A + 4)])
    );
    assert_eq!(
        run(Simulator::BBl, 0x97ff_ffff, A, r),
        with(r, A - 4, &[(30, A + 4)])
    );
    // The target is relative to the probe address, not to the frame's pc.
    let mut r2 = r;
    r2.pc = 0x1234;
    assert_eq!(run(Simulator::BBl, 0x9400_0400, A, r2).pc, A + 0x1000);
    for op in [0x15ff_ffff, 0x9400_0400] {
        assert_eq!(probe_decode_insn(op), ProbeInsn::Simulate(Simulator::BBl));
    }
}

#[test]
fn cbz_and_cbnz_w_and_x() {
    let r = frame();
    let sim = |op: u32, reg: usize, val: u64| {
        run(Simulator::CbzCbnz, op, A, with(r, A, &[(reg, val)])).pc
    };
    // cbz w3, .+0x100 (0x34000803): only the low 32 bits count.
    assert_eq!(sim(0x3400_0803, 3, 0xffff_ffff_0000_0000), A + 0x100);
    assert_eq!(sim(0x3400_0803, 3, 1), A + 4);
    // cbz x3, .-0x100 (0xb4fff803).
    assert_eq!(sim(0xb4ff_f803, 3, 0), A - 0x100);
    assert_eq!(sim(0xb4ff_f803, 3, 0xffff_ffff_0000_0000), A + 4);
    // cbnz w5, .+0x3fffc (0x351fffe5).
    assert_eq!(sim(0x351f_ffe5, 5, 0x8000_0000), A + 0x3_fffc);
    assert_eq!(sim(0x351f_ffe5, 5, 0x1_0000_0000), A + 4);
    // cbnz x5, .-0x40000 (0xb5e00005).
    assert_eq!(sim(0xb5e0_0005, 5, 0x1_0000_0000), A - 0x4_0000);
    assert_eq!(sim(0xb5e0_0005, 5, 0), A + 4);
    // cbz wzr, .+0x100 (0x3400081f) always branches; cbnz xzr never does.
    assert_eq!(sim(0x3400_081f, 0, 5), A + 0x100);
    assert_eq!(sim(0xb500_081f, 0, 5), A + 4);
    // Nothing else changes.
    assert_eq!(
        run(Simulator::CbzCbnz, 0xb4ff_f803, A, r),
        with(r, A + 4, &[])
    );
    for op in [0x3400_0803, 0xb4ff_f803, 0x351f_ffe5, 0xb5e0_0005] {
        assert_eq!(
            probe_decode_insn(op),
            ProbeInsn::Simulate(Simulator::CbzCbnz)
        );
    }
}

#[test]
fn tbz_and_tbnz_bits_0_31_32_63() {
    let r = frame();
    let sim = |op: u32, val: u64| run(Simulator::TbzTbnz, op, A, with(r, A, &[(7, val)])).pc;
    // tbz w7, #0, .+0x20 (0x36000107).
    assert_eq!(sim(0x3600_0107, 0b10), A + 0x20);
    assert_eq!(sim(0x3600_0107, 0b01), A + 4);
    // tbnz w7, #31, .-0x20 (0x37ffff07).
    assert_eq!(sim(0x37ff_ff07, 0x8000_0000), A - 0x20);
    assert_eq!(sim(0x37ff_ff07, 0xffff_ffff_7fff_ffff), A + 4);
    // tbz x7, #32, .+0x7ffc (0xb603ffe7).
    assert_eq!(sim(0xb603_ffe7, 0xffff_fffe_ffff_ffff), A + 0x7ffc);
    assert_eq!(sim(0xb603_ffe7, 0x1_0000_0000), A + 4);
    // tbnz x7, #63, .-0x8000 (0xb7fc0007).
    assert_eq!(sim(0xb7fc_0007, 0x8000_0000_0000_0000), A - 0x8000);
    assert_eq!(sim(0xb7fc_0007, 0x7fff_ffff_ffff_ffff), A + 4);
    assert_eq!(
        run(Simulator::TbzTbnz, 0x3600_0107, A, r),
        with(r, A + 4, &[])
    );
    for op in [0x3600_0107, 0x37ff_ff07, 0xb603_ffe7, 0xb7fc_0007] {
        assert_eq!(
            probe_decode_insn(op),
            ProbeInsn::Simulate(Simulator::TbzTbnz)
        );
    }
}

#[test]
fn adr_and_adrp() {
    let r = frame();
    // adr x1, .+0xfffff (0x707fffe1) and adr x1, .-0x100000 (0x10800001): the range's ends.
    assert_eq!(
        run(Simulator::AdrAdrp, 0x707f_ffe1, A, r),
        with(r, A + 4, &[(1, A + 0xf_ffff)])
    );
    assert_eq!(
        run(Simulator::AdrAdrp, 0x1080_0001, A, r),
        with(r, A + 4, &[(1, A - 0x10_0000)])
    );
    // adrp x2, .+0x1000 (0xb0000002) and adrp x2, .-0x100000000 (0x90800002), from an
    // address inside its page: relative to the page.
    let at = 0xffff_8000_8000_1ffc;
    let r2 = with(r, at, &[]);
    assert_eq!(
        run(Simulator::AdrAdrp, 0xb000_0002, at, r2),
        with(r2, at + 4, &[(2, 0xffff_8000_8000_2000)])
    );
    assert_eq!(
        run(Simulator::AdrAdrp, 0x9080_0002, at, r2),
        with(r2, at + 4, &[(2, 0xffff_7fff_8000_1000)])
    );
    // adr xzr (0x1000001f) writes nothing.
    assert_eq!(
        run(Simulator::AdrAdrp, 0x1000_001f, A, r),
        with(r, A + 4, &[])
    );
    // As upstream, the PC advances from the frame's pc, the address from the probe's.
    let r3 = with(r, 0x4000, &[]);
    assert_eq!(
        run(Simulator::AdrAdrp, 0x707f_ffe1, A, r3),
        with(r3, 0x4004, &[(1, A + 0xf_ffff)])
    );
    for op in [0x707f_ffe1, 0xb000_0002] {
        assert_eq!(
            probe_decode_insn(op),
            ProbeInsn::Simulate(Simulator::AdrAdrp)
        );
        assert!(!is_steppable(op));
    }
}

#[test]
fn literal_loads() {
    let r = frame();
    let mut mem = Mem::default();
    mem.put(A + 0x40, &0x89ab_cdefu32.to_le_bytes());
    mem.put(A - 0x40, &0x0123_4567_89ab_cdefu64.to_le_bytes());
    mem.put(A + 0x10, &0x8000_0001u32.to_le_bytes());
    mem.put(A + 0x14, &0x7fff_ffffu32.to_le_bytes());
    // Half-mapped 64-bit literal.
    mem.put(A + 0x100, &[0; 4]);
    let sim = |s, op, r: PtRegs| r.simulated(s, op, A, &mem);
    // ldr w4, .+0x40 (0x18000204): zero-extended into x4.
    assert_eq!(
        sim(Simulator::LdrLiteral, 0x1800_0204, r),
        Ok(with(r, A + 4, &[(4, 0x89ab_cdef)]))
    );
    // ldr x4, .-0x40 (0x58fffe04).
    assert_eq!(
        sim(Simulator::LdrLiteral, 0x58ff_fe04, r),
        Ok(with(r, A + 4, &[(4, 0x0123_4567_89ab_cdef)]))
    );
    // ldrsw x6, .+0x10 (0x98000086): sign-extended; and .+0x14 (0x980000a6), positive.
    assert_eq!(
        sim(Simulator::LdrswLiteral, 0x9800_0086, r),
        Ok(with(r, A + 4, &[(6, 0xffff_ffff_8000_0001)]))
    );
    assert_eq!(
        sim(Simulator::LdrswLiteral, 0x9800_00a6, r),
        Ok(with(r, A + 4, &[(6, 0x7fff_ffff)]))
    );
    // ldr xzr, .+8 (0x5800005f) loads nothing but still reads; here it faults.
    assert_eq!(
        sim(Simulator::LdrLiteral, 0x5800_005f, r),
        Err(Fault { addr: A + 8 })
    );
    // A faulting read leaves the frame as it was (in place, too).
    assert_eq!(
        sim(Simulator::LdrLiteral, 0x5800_0404, r),
        Err(Fault { addr: A + 0x80 })
    );
    let mut r2 = r;
    assert_eq!(
        simulate(Simulator::LdrswLiteral, 0x98ff_ffe6, A, &mut r2, &mem),
        Err(Fault { addr: A - 4 })
    );
    assert_eq!(r2, r);
    // The half-mapped 64-bit literal faults (reported at its start).
    assert_eq!(
        sim(Simulator::LdrLiteral, 0x5800_0804, r),
        Err(Fault { addr: A + 0x100 })
    );
    // arm_probe_decode_insn() rejects literal loads; kprobes simulates them.
    for (op, s) in [
        (0x1800_0204, Simulator::LdrLiteral),
        (0x58ff_fe04, Simulator::LdrLiteral),
        (0x9800_0086, Simulator::LdrswLiteral),
    ] {
        assert_eq!(probe_decode_insn(op), ProbeInsn::Rejected);
        let img = image_of(&[op]);
        assert_eq!(kprobe_decode_insn(&img, img.base), ProbeInsn::Simulate(s));
    }
}

#[test]
fn br_blr_ret() {
    let t = 0xffff_8000_8123_4568;
    let r = with(frame(), A, &[(9, t), (3, t + 8), (30, t + 16)]);
    // br x9 (0xd61f0120): no link.
    assert_eq!(run(Simulator::BrBlrRet, 0xd61f_0120, A, r), with(r, t, &[]));
    // blr x9 (0xd63f0120): x30 = A + 4.
    assert_eq!(
        run(Simulator::BrBlrRet, 0xd63f_0120, A, r),
        with(r, t, &[(30, A + 4)])
    );
    // blr x30 (0xd63f03c0): to the old x30, then x30 = A + 4.
    assert_eq!(
        run(Simulator::BrBlrRet, 0xd63f_03c0, A, r),
        with(r, t + 16, &[(30, A + 4)])
    );
    // ret (0xd65f03c0) and ret x3 (0xd65f0060).
    assert_eq!(
        run(Simulator::BrBlrRet, 0xd65f_03c0, A, r),
        with(r, t + 16, &[])
    );
    assert_eq!(
        run(Simulator::BrBlrRet, 0xd65f_0060, A, r),
        with(r, t + 8, &[])
    );
    // blr xzr (0xd63f03e0): to 0.
    assert_eq!(
        run(Simulator::BrBlrRet, 0xd63f_03e0, A, r),
        with(r, 0, &[(30, A + 4)])
    );
    for op in [0xd61f_0120, 0xd63f_0120, 0xd65f_03c0] {
        assert_eq!(
            probe_decode_insn(op),
            ProbeInsn::Simulate(Simulator::BrBlrRet)
        );
    }
}

#[test]
fn decisions_by_class() {
    use ProbeInsn::{Rejected, Step};
    let cases: &[(u32, &str, ProbeInsn)] = &[
        (0xd503_201f, "nop", Step),
        (0xd503_233f, "paciasp", Step),
        (0xd503_245f, "bti c", Step),
        (0xd503_23bf, "autiasp", Rejected),
        (0xd503_207f, "wfi", Rejected),
        (0xd53b_4220, "mrs x0, daif", Rejected),
        (0xd53b_4200, "mrs x0, nzcv", Step),
        (0xd503_42df, "msr daifset, #2", Rejected),
        (0xd51b_4200, "msr nzcv, x0", Rejected),
        (0xd400_0001, "svc #0", Rejected),
        (0xd420_0080, "brk #4", Rejected),
        (0xd69f_03e0, "eret", Rejected),
        (0xc85f_7c20, "ldxr x0, [x1]", Rejected),
        (0xc802_7c20, "stxr w2, x0, [x1]", Rejected),
        (0x885f_fc20, "ldaxr w0, [x1]", Rejected),
        // Load-acquire is outside aarch64_insn_is_exclusive()'s mask: stepped.
        (0xc8df_fc20, "ldar x0, [x1]", Step),
        (0xd800_0040, "prfm pldl1keep, .+8", Rejected),
        // SIMD&FP literal loads are outside aarch64_insn_uses_literal() in 6.12: stepped
        // (upstream's choice, mirrored; see README.md).
        (0x9c00_0080, "ldr q0, .+16", Step),
        (0x8b02_0020, "add x0, x1, x2", Step),
        (0xd71f_0822, "braa x1, x2", Rejected),
        (0xd65f_0bff, "retaa", Rejected),
        (0x1902_0420, "a MOPS prologue (cpyfp)", Rejected),
        (BRK64_OPCODE_KPROBES, "brk #4 (kprobes)", Rejected),
    ];
    for &(op, name, want) in cases {
        assert_eq!(probe_decode_insn(op), want, "{name} ({op:#010x})");
        let img = image_of(&[op]);
        assert_eq!(kprobe_decode_insn(&img, img.base), want, "kprobe: {name}");
    }
}

/// An image of `words` at `A`, one symbol covering them all.
fn image_of(words: &[u32]) -> Image {
    let len = 4 * words.len() as u64;
    Image {
        name: "golden".into(),
        base: A,
        words: words.to_vec(),
        symbols: vec![(A, len)],
        functions: vec![(A, len)],
        ..Image::default()
    }
}

#[test]
fn atomic_sequences() {
    const LDXR: u32 = 0xc85f_7c20;
    const STXR: u32 = 0xc802_7c20;
    const ADD: u32 = 0x8b02_0020;
    const LDAR: u32 = 0xc8df_fc20;
    let at = |img: &Image, i: u64| kprobe_decode_insn(img, img.base + 4 * i);
    // Between a load-exclusive and its store: refused; after the store: stepped.
    let img = image_of(&[LDXR, ADD, ADD, STXR, ADD]);
    assert_eq!(at(&img, 1), ProbeInsn::Rejected);
    assert_eq!(at(&img, 2), ProbeInsn::Rejected);
    assert_eq!(at(&img, 4), ProbeInsn::Step);
    // A simulated branch inside the sequence is refused too.
    let img = image_of(&[LDXR, 0x3500_0803, STXR]);
    assert_eq!(at(&img, 1), ProbeInsn::Rejected);
    // The scan counts a load-acquire as a load-exclusive (its mask), as upstream does.
    let img = image_of(&[LDAR, ADD]);
    assert_eq!(at(&img, 1), ProbeInsn::Rejected);
    // The scan stops at the symbol's start.
    let mut img = image_of(&[LDXR, ADD, ADD]);
    img.symbols = vec![(A, 4), (A + 4, 8)];
    assert_eq!(at(&img, 2), ProbeInsn::Step);
    // ... and at 32 instructions back: a load-exclusive 32 back counts, 33 back does not.
    let mut words = vec![ADD; 40];
    words[0] = LDXR;
    let img = image_of(&words);
    assert_eq!(at(&img, 32), ProbeInsn::Rejected);
    assert_eq!(at(&img, 33), ProbeInsn::Step);
    // No symbol: no scan.
    let mut img = image_of(&[LDXR, ADD]);
    img.symbols.clear();
    assert_eq!(at(&img, 1), ProbeInsn::Step);
    // A refused instruction stays refused.
    let img = image_of(&[LDXR, 0xd400_0001]);
    assert_eq!(at(&img, 1), ProbeInsn::Rejected);
}

#[test]
fn prepare() {
    let mut img = image_of(&[0x8b02_0020, 0x9400_0400, 0xd400_0001, 0x8b02_0020]);
    img.extable.insert(A + 12);
    assert_eq!(
        prepare_kprobe(&img, A),
        Ok(Prepared::Step {
            opcode: 0x8b02_0020,
            slot: [0x8b02_0020, 0xd420_00c0],
            restore: A + 4
        })
    );
    assert_eq!(BRK64_OPCODE_KPROBES_SS, 0xd420_00c0); // brk #6
    assert_eq!(BRK64_OPCODE_KPROBES, 0xd420_0080); // brk #4
    assert_eq!(
        prepare_kprobe(&img, A + 4),
        Ok(Prepared::Simulate {
            opcode: 0x9400_0400,
            simulator: Simulator::BBl
        })
    );
    assert_eq!(prepare_kprobe(&img, A + 8), Err(errno::EINVAL), "svc");
    assert_eq!(
        prepare_kprobe(&img, A + 12),
        Err(errno::EINVAL),
        "exception table"
    );
    assert_eq!(
        prepare_kprobe(&img, A + 2),
        Err(errno::EINVAL),
        "misaligned"
    );
    assert_eq!(
        prepare_kprobe(&img, A + 16),
        Err(errno::EINVAL),
        "outside the text"
    );
    assert_eq!(kprobes::MAX_ATOMIC_CONTEXT_SIZE, 32);
}

#[test]
fn no_panic_at_the_edges() {
    // Addresses at the ends of the address space wrap as C's unsigned arithmetic does.
    let mut r = frame();
    r.pc = u64::MAX - 1;
    for (sim, op) in [
        (Simulator::AdrAdrp, 0x707f_ffe1u32),
        (Simulator::BBl, 0x95ff_ffff),
        (Simulator::BCond, 0x5400_000e | 0x7f_ffe0),
        (Simulator::BrBlrRet, 0xd63f_03e0),
        (Simulator::CbzCbnz, 0xb47f_ffe3),
        (Simulator::TbzTbnz, 0xb7ff_ffe7),
    ] {
        for addr in [
            0,
            4,
            u64::MAX - 3,
            0x7fff_ffff_ffff_fffc,
            0x8000_0000_0000_0000,
        ] {
            let _ = run(sim, op, addr, r);
        }
    }
    let mem = Mem::default();
    for addr in [0, u64::MAX - 3] {
        let _ = r.simulated(Simulator::LdrLiteral, 0x5880_0000, addr, &mem);
        let _ = r.simulated(Simulator::LdrswLiteral, 0x987f_ffff, addr, &mem);
    }
    // Every simulator with every register number, 31 included.
    for reg in 0..32 {
        for (sim, op) in [
            (Simulator::AdrAdrp, 0x1000_0000 | reg),
            (Simulator::BrBlrRet, 0xd63f_0000 | reg << 5),
            (Simulator::CbzCbnz, 0x3400_0000 | reg),
            (Simulator::TbzTbnz, 0xb700_0000 | reg),
        ] {
            let _ = run(sim, op, A, r);
        }
    }
    // Decisions near address 0 and the top.
    let img = Image {
        base: u64::MAX - 7,
        words: vec![0xc85f_7c20, 0x8b02_0020],
        symbols: vec![(u64::MAX - 7, 8)],
        ..Image::default()
    };
    assert_eq!(kprobe_decode_insn(&img, u64::MAX - 3), ProbeInsn::Rejected);
    assert_eq!(kprobe_decode_insn(&img, 0), ProbeInsn::Rejected);
    let _ = prepare_kprobe(&img, u64::MAX - 3);
}
