// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: the Rust decisions and simulators against the RISC-V semantics.
//!
//! Every encoding here was produced by `llvm-mc -triple=riscv64 -mattr=+c,+m -show-encoding`
//! (the 32-bit forms of instructions it would compress with `-mattr=-c`); every expected value
//! is worked out from the RISC-V unprivileged specification's description of the instruction,
//! not from the code under test. Where upstream differs from the specification it is said so
//! and upstream's behaviour is what is asserted.

use rkprobes_riscv_kprobes::kprobes::{
    check_kprobe, errno, insn, is_insn_boundary, prepare_kprobe, probe_decode_insn, simulate,
    KernelText, Prepared, ProbeInsn, PtRegs, Simulator, BUG_INSN_16, BUG_INSN_32,
};

/// The probe address of most vectors.
const A: u64 = 0xffff_ffff_8000_1000;

const RA: usize = 1;
const T0: usize = 5;
const T1: usize = 6;
const S0: usize = 8;
const A0: usize = 10;
const A1: usize = 11;
const A5: usize = 15;
const T6: usize = 31;

/// A frame at a probe hit at [`A`], every register set to a recognisable value.
fn frame() -> PtRegs {
    let mut r = PtRegs::default();
    for (i, x) in r.x.iter_mut().enumerate() {
        *x = 0x1111_0000_0000_0000 + i as u64 + 1;
    }
    r.epc = A;
    r.status = 0x2_0000_0120;
    r.badaddr = 0xbad;
    r.cause = 3;
    r.orig_a0 = 0x0a0;
    r
}

/// `before` with register `n` set to `v`.
fn set(before: PtRegs, regs: &[(usize, u64)]) -> PtRegs {
    let mut r = before;
    for &(n, v) in regs {
        r.x[n - 1] = v;
    }
    r
}

/// `before` with the changes listed.
fn with(before: PtRegs, pc: u64, regs: &[(usize, u64)]) -> PtRegs {
    let mut r = set(before, regs);
    r.epc = pc;
    r
}

/// Runs `sim` on `opcode` at `addr` from `before`; the simulator must accept.
fn run(sim: Simulator, opcode: u32, addr: u64, before: PtRegs) -> PtRegs {
    let (after, ok) = before.simulated(sim, opcode, addr);
    assert!(ok, "{sim:?} {opcode:#x} refused");
    after
}

#[test]
fn instruction_length_from_the_low_bits() {
    for (insn, len) in [
        (0x0001, 2),      // c.nop
        (0x9002, 2),      // c.ebreak
        (0x852e, 2),      // c.mv
        (0x0000, 2),      // the all-zero parcel (illegal), quadrant 0
        (0x0015_0513, 4), // addi
        (0x0010_0073, 4), // ebreak
        (0x0000_001f, 4), // a 48-bit prefix: upstream takes it as 4
        (0xffff_ffff, 4),
    ] {
        assert_eq!(insn::insn_length(insn), len, "{insn:#x}");
    }
}

#[test]
fn decision_per_class() {
    use ProbeInsn::{Rejected, Simulate, Step};
    let table: &[(u32, &str, ProbeInsn)] = &[
        // Refused: SYSTEM and MISC-MEM, c.ebreak.
        (0x0010_0073, "ebreak", Rejected),
        (0x0000_0073, "ecall", Rejected),
        (0x1000_2573, "csrr a0, sstatus", Rejected),
        (0x1020_0073, "sret", Rejected),
        (0x1050_0073, "wfi", Rejected),
        (0x1200_0073, "sfence.vma", Rejected),
        (0x0ff0_000f, "fence", Rejected),
        (0x0000_100f, "fence.i", Rejected),
        (0x9002, "c.ebreak", Rejected),
        // Simulated.
        (0x04b5_0063, "beq a0, a1, 64", Simulate(Simulator::Branch)),
        (0x04b5_7063, "bgeu a0, a1, 64", Simulate(Simulator::Branch)),
        (
            0x04b5_2063,
            "branch, reserved funct3 010",
            Simulate(Simulator::Branch),
        ),
        (0x0010_00ef, "jal ra, 2048", Simulate(Simulator::Jal)),
        (0x0005_00e7, "jalr ra, 0(a0)", Simulate(Simulator::Jalr)),
        (0x0000_8067, "ret", Simulate(Simulator::Jalr)),
        (0xffff_f517, "auipc a0, 0xfffff", Simulate(Simulator::Auipc)),
        (0xa081, "c.j 64", Simulate(Simulator::CJ)),
        (0x8082, "c.jr ra", Simulate(Simulator::CJr)),
        (0x9782, "c.jalr a5", Simulate(Simulator::CJalr)),
        (0xdd65, "c.beqz a0, -8", Simulate(Simulator::CBeqz)),
        (0xfd65, "c.bnez a0, -8", Simulate(Simulator::CBnez)),
        // Stepped out of line.
        (0x0015_0513, "addi a0, a0, 1", Step),
        (0x0081_3503, "ld a0, 8(sp)", Step),
        (0x1234_5537, "lui a0, 0x12345", Step),
        (0x02c5_8533, "mul a0, a1, a2", Step),
        (0x0005_1067, "jalr with reserved funct3 001", Step),
        (0x2505, "c.addiw a0, 1 (c.jal's encoding on RV32)", Step),
        (0x852e, "c.mv a0, a1", Step),
        (0x952e, "c.add a0, a0, a1", Step),
        (0x0001, "c.nop", Step),
        (0x60a2, "c.ldsp ra, 8(sp)", Step),
        (0x8002, "c.jr x0 (reserved)", Step),
        (0x0000, "the all-zero parcel (illegal)", Step),
    ];
    for &(w, name, want) in table {
        assert_eq!(probe_decode_insn(w, true), want, "{name} ({w:#x})");
        if insn::insn_length(w) == 2 {
            // Upstream reads 32 bits at a compressed instruction: the next parcel does not
            // matter.
            for hi in [0xffff_0000, 0x0073_0000, 0xa081_0000] {
                assert_eq!(
                    probe_decode_insn(w | hi, true),
                    want,
                    "{name} under {hi:#x}"
                );
            }
            // Without CONFIG_RISCV_ISA_C nothing compressed is recognised: all stepped.
            assert_eq!(probe_decode_insn(w, false), Step, "{name} without RVC");
        } else {
            assert_eq!(probe_decode_insn(w, false), want, "{name} without RVC");
        }
    }
    assert_eq!(BUG_INSN_16, 0x9002);
    assert_eq!(BUG_INSN_32, 0x0010_0073);
}

#[test]
fn every_branch_condition_taken_and_not_taken() {
    let (min, max) = (i64::MIN as u64, i64::MAX as u64);
    // (opcode of `bXX a0, a1, 64`, name, a0, a1, taken)
    let table: &[(u32, &str, u64, u64, bool)] = &[
        (0x04b5_0063, "beq", 5, 5, true),
        (0x04b5_0063, "beq", 5, 6, false),
        (0x04b5_0063, "beq", 0, 1 << 32, false),
        (0x04b5_1063, "bne", 5, 6, true),
        (0x04b5_1063, "bne", u64::MAX, u64::MAX, false),
        (0x04b5_1063, "bne", 1 << 63, 0, true),
        (0x04b5_4063, "blt", u64::MAX, 0, true), // -1 < 0
        (0x04b5_4063, "blt", 0, u64::MAX, false),
        (0x04b5_4063, "blt", min, max, true),
        (0x04b5_4063, "blt", max, min, false),
        (0x04b5_4063, "blt", 7, 7, false),
        (0x04b5_5063, "bge", 0, u64::MAX, true),
        (0x04b5_5063, "bge", u64::MAX, 0, false),
        (0x04b5_5063, "bge", min, min, true),
        (0x04b5_5063, "bge", min, max, false),
        (0x04b5_6063, "bltu", 0, u64::MAX, true),
        (0x04b5_6063, "bltu", u64::MAX, 0, false),
        (0x04b5_6063, "bltu", max, min, true), // 0x7fff.. < 0x8000.. unsigned
        (0x04b5_6063, "bltu", 9, 9, false),
        (0x04b5_7063, "bgeu", u64::MAX, 0, true),
        (0x04b5_7063, "bgeu", 0, u64::MAX, false),
        (0x04b5_7063, "bgeu", min, max, true),
        (0x04b5_7063, "bgeu", 9, 9, true),
    ];
    for &(op, name, a, b, taken) in table {
        assert_eq!(
            probe_decode_insn(op, true),
            ProbeInsn::Simulate(Simulator::Branch)
        );
        let r = set(frame(), &[(A0, a), (A1, b)]);
        let want = with(r, if taken { A + 64 } else { A + 4 }, &[]);
        assert_eq!(
            run(Simulator::Branch, op, A, r),
            want,
            "{name} {a:#x}, {b:#x}"
        );
    }
    // The ends of the 13-bit range: beq a0, a1, -4096 and bne t0, t1, 4094.
    let r = set(frame(), &[(A0, 1), (A1, 1)]);
    assert_eq!(
        run(Simulator::Branch, 0x80b5_0063, A, r),
        with(r, A - 4096, &[])
    );
    let r = set(frame(), &[(T0, 1), (T1, 2)]);
    assert_eq!(
        run(Simulator::Branch, 0x7e62_9fe3, A, r),
        with(r, A + 4094, &[])
    );
    // x0 reads zero: beq zero, zero, 8 is always taken; blt a0, zero, -8 compares with 0.
    let r = frame();
    assert_eq!(
        run(Simulator::Branch, 0x0000_0463, A, r),
        with(r, A + 8, &[])
    );
    let r = set(frame(), &[(A0, u64::MAX)]);
    assert_eq!(
        run(Simulator::Branch, 0xfe05_4ce3, A, r),
        with(r, A - 8, &[])
    );
    let r = set(frame(), &[(A0, 1)]);
    assert_eq!(
        run(Simulator::Branch, 0xfe05_4ce3, A, r),
        with(r, A + 4, &[])
    );
    // The reserved funct3 010 and 011: upstream's simulate_branch() returns false with the
    // frame untouched (arch_simulate_insn() ignores it).
    for op in [0x04b5_2063, 0x04b5_3063] {
        let r = frame();
        assert_eq!(r.simulated(Simulator::Branch, op, A), (r, false), "{op:#x}");
    }
}

#[test]
fn jal_links_and_jumps() {
    let r = frame();
    // jal ra, 2048: ra = the next instruction.
    assert_eq!(
        run(Simulator::Jal, 0x0010_00ef, A, r),
        with(r, A + 2048, &[(RA, A + 4)])
    );
    // j -1048576 (jal x0): no link, the far end of the 21-bit range.
    assert_eq!(
        run(Simulator::Jal, 0x8000_006f, A, r),
        with(r, A - 0x10_0000, &[])
    );
    // jal t0, 1048574: the near end, another link register.
    assert_eq!(
        run(Simulator::Jal, 0x7fff_f2ef, A, r),
        with(r, A + 0xf_fffe, &[(T0, A + 4)])
    );
    // jal ra, 0: jumps to itself.
    assert_eq!(
        run(Simulator::Jal, 0x0000_00ef, A, r),
        with(r, A, &[(RA, A + 4)])
    );
}

#[test]
fn jalr_links_jumps_and_clears_bit_0() {
    let r = set(frame(), &[(A0, 0xffff_ffff_8123_4567)]);
    // jalr ra, 0(a0): target = a0 with bit 0 cleared.
    assert_eq!(
        run(Simulator::Jalr, 0x0005_00e7, A, r),
        with(r, 0xffff_ffff_8123_4566, &[(RA, A + 4)])
    );
    // jr -1(a0) (rd = x0): a0 - 1 = ...4566, bit 0 already clear; no link.
    assert_eq!(
        run(Simulator::Jalr, 0xfff5_0067, A, r),
        with(r, 0xffff_ffff_8123_4566, &[])
    );
    let r = set(frame(), &[(A0, 0x1000)]);
    assert_eq!(run(Simulator::Jalr, 0xfff5_0067, A, r), with(r, 0xffe, &[]));
    // jalr ra, 2047(ra): the base is the old ra, read before the link is written.
    let r = set(frame(), &[(RA, 0xffff_ffff_8000_8000)]);
    assert_eq!(
        run(Simulator::Jalr, 0x7ff0_80e7, A, r),
        with(r, 0xffff_ffff_8000_87fe, &[(RA, A + 4)])
    );
    // ret (jalr x0, 0(ra)).
    assert_eq!(
        run(Simulator::Jalr, 0x0000_8067, A, r),
        with(r, 0xffff_ffff_8000_8000, &[])
    );
    // jalr ra, -2048(zero): x0 reads zero, the immediate is sign-extended.
    assert_eq!(
        run(Simulator::Jalr, 0x8000_00e7, A, r),
        with(r, 0xffff_ffff_ffff_f800, &[(RA, A + 4)])
    );
    // jalr a0, 0(a0): rd = rs1.
    let r = set(frame(), &[(A0, 0x4000)]);
    assert_eq!(
        run(Simulator::Jalr, 0x0005_0567, A, r),
        with(r, 0x4000, &[(A0, A + 4)])
    );
}

#[test]
fn auipc_adds_the_sign_extended_upper_immediate() {
    let r = frame();
    // auipc a0, 0xfffff: -0x1000.
    assert_eq!(
        run(Simulator::Auipc, 0xffff_f517, A, r),
        with(r, A + 4, &[(A0, A - 0x1000)])
    );
    // auipc a0, 0x80000: the most negative, -2 GiB.
    assert_eq!(
        run(Simulator::Auipc, 0x8000_0517, A, r),
        with(r, A + 4, &[(A0, A.wrapping_sub(0x8000_0000))])
    );
    // auipc a0, 0x7ffff: the most positive.
    assert_eq!(
        run(Simulator::Auipc, 0x7fff_f517, A, r),
        with(r, A + 4, &[(A0, A.wrapping_add(0x7fff_f000))])
    );
    // auipc zero, 1: no register written, the PC still moves on.
    assert_eq!(
        run(Simulator::Auipc, 0x0000_1017, A, r),
        with(r, A + 4, &[])
    );
    // auipc t6, 0: the probe address itself.
    assert_eq!(
        run(Simulator::Auipc, 0x0000_0f97, A, r),
        with(r, A + 4, &[(T6, A)])
    );
    // The PC comes from the probe address, not the frame's epc.
    let mut r2 = frame();
    r2.epc = 0x1234;
    assert_eq!(
        run(Simulator::Auipc, 0x0000_0f97, A, r2),
        with(r2, A + 4, &[(T6, A)])
    );
}

#[test]
fn compressed_jumps() {
    let r = set(
        frame(),
        &[(RA, 0xffff_ffff_8000_4000), (A5, 0xffff_ffff_8000_6000)],
    );
    // c.j 64, c.j -2048, c.j 2046: the 12-bit range.
    assert_eq!(run(Simulator::CJ, 0xa081, A, r), with(r, A + 64, &[]));
    assert_eq!(run(Simulator::CJ, 0xb001, A, r), with(r, A - 2048, &[]));
    assert_eq!(run(Simulator::CJ, 0xaffd, A, r), with(r, A + 2046, &[]));
    // c.jr ra (ret), c.jr a5: no link.
    assert_eq!(
        run(Simulator::CJr, 0x8082, A, r),
        with(r, 0xffff_ffff_8000_4000, &[])
    );
    assert_eq!(
        run(Simulator::CJr, 0x8782, A, r),
        with(r, 0xffff_ffff_8000_6000, &[])
    );
    // c.jalr a5: ra = the next (2-byte) instruction.
    assert_eq!(
        run(Simulator::CJalr, 0x9782, A, r),
        with(r, 0xffff_ffff_8000_6000, &[(RA, A + 2)])
    );
    // c.jalr ra: jumps to the old ra, then links.
    assert_eq!(
        run(Simulator::CJalr, 0x9082, A, r),
        with(r, 0xffff_ffff_8000_4000, &[(RA, A + 2)])
    );
    // The specification defines C.JR/C.JALR as jalr x0/x1, 0(rs1), which clears bit 0 of the
    // target; upstream's simulate_c_jr_jalr() does not (kernel code only jumps to even
    // addresses). Upstream's behaviour is kept.
    let odd = set(frame(), &[(A5, 0x4001)]);
    assert_eq!(run(Simulator::CJr, 0x8782, A, odd), with(odd, 0x4001, &[]));
    // rs1 = x0 (c.jr x0 is reserved, c.jalr x0 is c.ebreak): refused, frame untouched. The
    // decoder never hands these over.
    for op in [0x8002, 0x9002] {
        let sim = if op == 0x8002 {
            Simulator::CJr
        } else {
            Simulator::CJalr
        };
        assert_eq!(r.simulated(sim, op, A), (r, false), "{op:#x}");
    }
}

#[test]
fn compressed_branches_taken_and_not_taken() {
    // c.beqz a0, -8 / c.bnez a0, -8; c.beqz s0, 254; c.bnez a5, -256 (rs1' = x8..x15).
    let cases: &[(u32, Simulator, usize, u64, u64)] = &[
        // (opcode, simulator, register, value, expected pc)
        (0xdd65, Simulator::CBeqz, A0, 0, A - 8),
        (0xdd65, Simulator::CBeqz, A0, 1, A + 2),
        (0xdd65, Simulator::CBeqz, A0, 1 << 63, A + 2),
        (0xdd65, Simulator::CBeqz, A0, 1 << 32, A + 2),
        (0xfd65, Simulator::CBnez, A0, 0, A + 2),
        (0xfd65, Simulator::CBnez, A0, u64::MAX, A - 8),
        (0xfd65, Simulator::CBnez, A0, 1 << 32, A - 8),
        (0xcc7d, Simulator::CBeqz, S0, 0, A + 254),
        (0xcc7d, Simulator::CBeqz, S0, 2, A + 2),
        (0xf381, Simulator::CBnez, A5, 3, A - 256),
        (0xf381, Simulator::CBnez, A5, 0, A + 2),
    ];
    for &(op, sim, reg, val, pc) in cases {
        assert_eq!(probe_decode_insn(op, true), ProbeInsn::Simulate(sim));
        let r = set(frame(), &[(reg, val)]);
        assert_eq!(
            run(sim, op, A, r),
            with(r, pc, &[]),
            "{op:#x} x{reg} = {val:#x}"
        );
    }
}

#[test]
fn simulation_wraps_at_the_ends_of_the_address_space() {
    let top = u64::MAX - 1;
    let r = frame();
    assert_eq!(run(Simulator::CJ, 0xa081, top, r).epc, 62);
    assert_eq!(
        run(Simulator::Jal, 0x0010_00ef, top, r),
        with(r, 2046, &[(RA, 2)])
    );
    assert_eq!(
        run(Simulator::Auipc, 0x0000_0f97, top, r),
        with(r, 2, &[(T6, top)])
    );
    assert_eq!(run(Simulator::CJalr, 0x9782, top, r).x[RA - 1], 0);
    let r = set(frame(), &[(A0, 0)]);
    assert_eq!(run(Simulator::CBeqz, 0xdd65, 0, r).epc, u64::MAX - 7);
    let r = set(frame(), &[(A0, u64::MAX)]);
    assert_eq!(run(Simulator::Jalr, 0x7ff5_00e7, 0, r).epc, 0x7fe);
    // simulate() dispatches to the same simulators.
    let mut r = frame();
    assert!(simulate(Simulator::CJ, 0xa081, A, &mut r));
    assert_eq!(r.epc, A + 64);
}

/// Kernel text as parcels at `base`, with kallsyms symbols at `syms`.
struct Text {
    base: u64,
    parcels: Vec<u16>,
    syms: Vec<u64>,
}

impl KernelText for Text {
    fn read_u16(&self, addr: u64) -> Option<u16> {
        let off = addr.checked_sub(self.base)?;
        if off % 2 != 0 {
            return None;
        }
        self.parcels.get(usize::try_from(off / 2).ok()?).copied()
    }
    fn lookup_offset(&self, addr: u64) -> Option<u64> {
        let end = self.base + 2 * self.parcels.len() as u64;
        if addr >= end {
            return None;
        }
        self.syms
            .iter()
            .rev()
            .find(|&&s| s <= addr)
            .map(|&s| addr - s)
    }
}

/// Parcels of the instructions `insns` (16-bit ones zero-extended).
fn parcels(insns: &[u32]) -> Vec<u16> {
    let mut v = Vec::new();
    for &i in insns {
        v.push(i as u16);
        if insn::insn_length(i) == 4 {
            v.push((i >> 16) as u16);
        }
    }
    v
}

#[test]
fn boundaries_are_found_by_walking_from_the_symbol_start() {
    // c.nop; addi a0, a0, 1; c.j 64; ld a0, 8(sp); c.ebreak; auipc t6, 0
    // at offsets 0, 2, 6, 8, 12, 14 (end 18).
    let t = Text {
        base: A,
        parcels: parcels(&[
            0x0001,
            0x0015_0513,
            0xa081,
            0x0081_3503,
            0x9002,
            0x0000_0f97,
        ]),
        syms: vec![A],
    };
    for off in [0, 2, 6, 8, 12, 14, 18] {
        assert!(is_insn_boundary(&t, A, off), "offset {off}");
    }
    for off in [1, 3, 4, 10, 16, 20, 22, u64::MAX] {
        assert!(!is_insn_boundary(&t, A, off), "offset {off}");
    }
    // Walking from the upper half of addi (0x0015, which reads as a compressed instruction)
    // is wrong but lands on c.j at offset 6 again.
    assert!(is_insn_boundary(&t, A + 4, 2));
    assert!(check_kprobe(&t, A + 8));
    assert!(!check_kprobe(&t, A + 10));
    assert!(!check_kprobe(&t, A + 18), "past the text: no symbol");

    let ok = |addr| prepare_kprobe(&t, addr, true);
    assert_eq!(ok(A + 1), Err(errno::EILSEQ), "odd");
    assert_eq!(ok(A + 4), Err(errno::EILSEQ), "inside addi");
    assert_eq!(ok(A + 10), Err(errno::EILSEQ), "inside ld");
    assert_eq!(ok(A + 12), Err(errno::EINVAL), "c.ebreak is refused");
    assert_eq!(
        ok(A + 6),
        Ok(Prepared::Simulate {
            opcode: 0xa081,
            simulator: Simulator::CJ
        })
    );
    assert_eq!(
        ok(A + 14),
        Ok(Prepared::Simulate {
            opcode: 0x0000_0f97,
            simulator: Simulator::Auipc
        })
    );
    // A stepped 16-bit and 32-bit instruction: the slot holds it and ebreak.
    let p = ok(A).expect("c.nop is stepped");
    assert_eq!(
        p,
        Prepared::Step {
            opcode: 0x0001,
            len: 2,
            slot: [0x01, 0x00, 0x73, 0x00, 0x10, 0x00, 0, 0],
            restore: A + 2
        }
    );
    assert_eq!(p.slot_len(), 6);
    let p = ok(A + 2).expect("addi is stepped");
    assert_eq!(
        p,
        Prepared::Step {
            opcode: 0x0015_0513,
            len: 4,
            slot: [0x13, 0x05, 0x15, 0x00, 0x73, 0x00, 0x10, 0x00],
            restore: A + 6
        }
    );
    assert_eq!(p.slot_len(), 8);

    // No kallsyms symbol: refused as not a boundary.
    let nosym = Text { syms: vec![], ..t };
    assert_eq!(prepare_kprobe(&nosym, A, true), Err(errno::EILSEQ));
}

#[test]
fn data_in_a_symbol_desynchronises_the_walk() {
    // A symbol that starts with a 16-bit data word whose low bits are 11 (0xffff): the walk
    // takes it for a 32-bit instruction and skips the c.nop after it, so the c.j at offset 2
    // is refused and offset 4 is taken as a boundary. This is upstream's walk, mirrored.
    let t = Text {
        base: A,
        parcels: vec![0xffff, 0xa081, 0x0001, 0x0001],
        syms: vec![A],
    };
    assert_eq!(prepare_kprobe(&t, A + 2, true), Err(errno::EILSEQ));
    assert!(prepare_kprobe(&t, A + 4, true).is_ok());
    // A symbol of its own at the code re-synchronises it.
    let t = Text {
        syms: vec![A, A + 2],
        ..t
    };
    assert_eq!(
        prepare_kprobe(&t, A + 2, true),
        Ok(Prepared::Simulate {
            opcode: 0xa081,
            simulator: Simulator::CJ
        })
    );
}

#[test]
fn the_walk_does_not_wrap() {
    // A symbol in the last bytes of the address space: a 32-bit instruction there ends past
    // the top; upstream's `tmp += len` would wrap to 0 and walk on, the walk here stops.
    let base = u64::MAX - 3;
    let t = Text {
        base,
        parcels: parcels(&[0x0001, 0x0000_0f97 & 0xffff]),
        syms: vec![base],
    };
    assert!(is_insn_boundary(&t, base, 2));
    assert!(!is_insn_boundary(&t, base, u64::MAX - base));
    assert!(!is_insn_boundary(&t, base, u64::MAX));
}
