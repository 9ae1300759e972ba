// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: the Rust decisions and simulators against the LoongArch semantics.
//!
//! Every encoding here was produced by `llvm-mc -triple=loongarch64
//! -mattr=+lamcas,+scq,+ld-seq-sa,+lam-bh -show-encoding`; every expected value is worked out
//! from the LoongArch Reference Manual's description of the instruction, not from the code
//! under test. Where upstream differs from the manual it is said so and upstream's behaviour is
//! what is asserted.

use rkprobes_loongarch_kprobes::kprobes::{
    decode_insn, errno, insn, insns_need_simulation, insns_not_supported, prepare_kprobe,
    sign_extend64, simu_branch, simu_pc, simulate_insn, Prepared, ProbeInsn, PtRegs, SimuError,
    Simulator, Unsupported, KPROBE_BP_INSN, KPROBE_SSTEPBP_INSN,
};
use rkprobes_loongarch_kprobes::Image;

/// The probe address of most vectors.
const A: u64 = 0x9000_0000_0020_1000;

const ZERO: usize = 0;
const RA: usize = 1;
const A0: usize = 4;
const A1: usize = 5;
const T0: usize = 12;
const T1: usize = 13;

/// A frame at a probe hit at [`A`], every register set to a recognisable value.
fn frame() -> PtRegs {
    let mut r = PtRegs::default();
    for (i, x) in r.regs.iter_mut().enumerate() {
        *x = 0x1111_0000_0000_0000 + i as u64;
    }
    r.regs[ZERO] = 0;
    r.orig_a0 = 0x0a0;
    r.csr_era = A;
    r.csr_badvaddr = 0xbad;
    r.csr_crmd = 0xb0;
    r.csr_prmd = 0x7;
    r.csr_euen = 0x1;
    r.csr_ecfg = 0x1fff;
    r.csr_estat = 0xc_0000;
    r
}

/// `before` with `csr_era` set to `era` and the registers listed.
fn with(before: PtRegs, era: u64, regs: &[(usize, u64)]) -> PtRegs {
    let mut r = before;
    r.csr_era = era;
    for &(n, v) in regs {
        r.regs[n] = v;
    }
    r
}

/// `arch_simulate_insn()` of `word` from `before`, which must succeed.
fn sim(word: u32, before: PtRegs) -> PtRegs {
    before.simulated(word).expect("simulated")
}

// Encodings (llvm-mc).
const B_4096: u32 = 0x5010_0000; // b 4096
const B_MIN: u32 = 0x5000_0200; // b -134217728
const B_MAX: u32 = 0x53ff_fdff; // b 134217724
const BL_M8: u32 = 0x57ff_fbff; // bl -8
const BEQZ_A0_256: u32 = 0x4001_0080; // beqz $a0, 256
const BNEZ_T0_MIN: u32 = 0x4400_0190; // bnez $t0, -4194304
const BCEQZ: u32 = 0x4800_0800; // bceqz $fcc0, 8
const BCNEZ: u32 = 0x4800_0920; // bcnez $fcc1, 8
const JIRL_RA_T1_16: u32 = 0x4c00_11a1; // jirl $ra, $t1, 16
const JIRL_T1_T1_M4: u32 = 0x4fff_fdad; // jirl $t1, $t1, -4
const RET: u32 = 0x4c00_0020; // ret (jirl $zero, $ra, 0)
const BEQ_32: u32 = 0x5800_2085; // beq $a0, $a1, 32
const BNE_MIN: u32 = 0x5e00_0085; // bne $a0, $a1, -131072
const BLT_64: u32 = 0x6000_4085; // blt $a0, $a1, 64
const BGE_64: u32 = 0x6400_4085; // bge $a0, $a1, 64
const BLTU_64: u32 = 0x6800_4085; // bltu $a0, $a1, 64
const BGEU_64: u32 = 0x6c00_4085; // bgeu $a0, $a1, 64
const PCADDI_1: u32 = 0x1800_0024; // pcaddi $a0, 1
const PCADDI_MIN: u32 = 0x1900_0004; // pcaddi $a0, -524288
const PCALAU12I_1: u32 = 0x1a00_0024; // pcalau12i $a0, 1
const PCADDU12I_M1: u32 = 0x1dff_ffe4; // pcaddu12i $a0, -1
const PCADDU18I_1: u32 = 0x1e00_002c; // pcaddu18i $t0, 1
const PCADDU18I_M1: u32 = 0x1fff_ffec; // pcaddu18i $t0, -1
const PCADDU18I_4000: u32 = 0x1e08_000c; // pcaddu18i $t0, 16384
const LU12I_W: u32 = 0x1400_0024; // lu12i.w $a0, 1
const LU32I_D: u32 = 0x1600_0024; // lu32i.d $a0, 1
const LL_W: u32 = 0x2000_00a4; // ll.w $a0, $a1, 0
const LL_D: u32 = 0x2200_08a4; // ll.d $a0, $a1, 8
const SC_W: u32 = 0x2100_00a4; // sc.w $a0, $a1, 0
const SC_D: u32 = 0x2300_00a4; // sc.d $a0, $a1, 0
const AMSWAP_W: u32 = 0x3860_14c4; // amswap.w $a0, $a1, $a2
const AMMIN_DB_DU: u32 = 0x3871_94c4; // ammin_db.du $a0, $a1, $a2
const AMADD_DB_D: u32 = 0x386a_94c4; // amadd_db.d $a0, $a1, $a2
const AMSWAP_B: u32 = 0x385c_14c4; // amswap.b $a0, $a1, $a2
const AMCAS_W: u32 = 0x3859_14c4; // amcas.w $a0, $a1, $a2
const LLACQ_W: u32 = 0x3857_80a4; // llacq.w $a0, $a1
const LLACQ_D: u32 = 0x3857_88a4; // llacq.d $a0, $a1
const SCREL_W: u32 = 0x3857_84a4; // screl.w $a0, $a1
const SCREL_D: u32 = 0x3857_8ca4; // screl.d $a0, $a1
const SC_Q: u32 = 0x3857_14c4; // sc.q $a0, $a1, $a2
const LDPTR_D: u32 = 0x2600_00a4; // ldptr.d $a0, $a1, 0
const LD_D: u32 = 0x28c0_2064; // ld.d $a0, $sp, 8
const ADDI_D_SP: u32 = 0x02ff_c063; // addi.d $sp, $sp, -16
const BREAK_10: u32 = 0x002a_000a; // break 10
const BREAK_11: u32 = 0x002a_000b; // break 11
const NOP: u32 = 0x0340_0000; // nop
const SYSCALL: u32 = 0x002b_0000; // syscall 0
const ERTN: u32 = 0x0648_3800; // ertn

#[test]
fn break_instructions() {
    assert_eq!(KPROBE_BP_INSN, BREAK_10);
    assert_eq!(KPROBE_SSTEPBP_INSN, BREAK_11);
    assert!(insn::is_break_ins(BREAK_10) && insn::is_break_ins(BREAK_11));
    assert!(!insn::is_break_ins(SYSCALL) && !insn::is_break_ins(NOP));
}

#[test]
fn sign_extension() {
    assert_eq!(sign_extend64(0x2_0000, 17), -0x2_0000);
    assert_eq!(sign_extend64(0x1_fffc, 17), 0x1_fffc);
    assert_eq!(sign_extend64(0xffff_ffff, 31), -1);
    assert_eq!(sign_extend64(0x8000_0000_0000_0000, 63), i64::MIN);
    assert_eq!(sign_extend64(1, 0), -1);
}

#[test]
fn unconditional_branches() {
    let f = frame();
    assert_eq!(sim(B_4096, f), with(f, A + 4096, &[]));
    assert_eq!(sim(B_MIN, f), with(f, A - 0x800_0000, &[]));
    assert_eq!(sim(B_MAX, f), with(f, A + 0x7ff_fffc, &[]));
    assert_eq!(sim(BL_M8, f), with(f, A - 8, &[(RA, A + 4)]));
}

#[test]
fn compare_with_zero() {
    let mut f = frame();
    f.regs[A0] = 0;
    assert_eq!(sim(BEQZ_A0_256, f), with(f, A + 256, &[]));
    f.regs[A0] = 1 << 63;
    assert_eq!(sim(BEQZ_A0_256, f), with(f, A + 4, &[]));
    f.regs[T0] = 0;
    assert_eq!(sim(BNEZ_T0_MIN, f), with(f, A + 4, &[]));
    f.regs[T0] = 0x1_0000_0000;
    assert_eq!(sim(BNEZ_T0_MIN, f), with(f, A - 0x40_0000, &[]));
}

#[test]
fn two_register_branches() {
    let mut f = frame();
    f.regs[A0] = 5;
    f.regs[A1] = 5;
    assert_eq!(sim(BEQ_32, f), with(f, A + 32, &[]));
    assert_eq!(sim(BNE_MIN, f), with(f, A + 4, &[]));
    assert_eq!(sim(BGE_64, f), with(f, A + 64, &[]));
    assert_eq!(sim(BGEU_64, f), with(f, A + 64, &[]));
    assert_eq!(sim(BLT_64, f), with(f, A + 4, &[]));
    assert_eq!(sim(BLTU_64, f), with(f, A + 4, &[]));
    // -1 against 0: less signed, greater unsigned.
    f.regs[A0] = u64::MAX;
    f.regs[A1] = 0;
    assert_eq!(sim(BEQ_32, f), with(f, A + 4, &[]));
    assert_eq!(sim(BNE_MIN, f), with(f, A - 0x2_0000, &[]));
    assert_eq!(sim(BLT_64, f), with(f, A + 64, &[]));
    assert_eq!(sim(BGE_64, f), with(f, A + 4, &[]));
    assert_eq!(sim(BLTU_64, f), with(f, A + 4, &[]));
    assert_eq!(sim(BGEU_64, f), with(f, A + 64, &[]));
}

#[test]
fn jump_and_link_register() {
    let mut f = frame();
    f.regs[T1] = 0x9000_0000_0030_0000;
    assert_eq!(
        sim(JIRL_RA_T1_16, f),
        with(f, 0x9000_0000_0030_0010, &[(RA, A + 4)])
    );
    // rd == rj: the target uses the old value.
    assert_eq!(
        sim(JIRL_T1_T1_M4, f),
        with(f, 0x9000_0000_002f_fffc, &[(T1, A + 4)])
    );
    // `ret` is `jirl $zero, $ra, 0`: the manual discards the link; upstream writes
    // regs[0] of the frame like any other register.
    f.regs[RA] = 0x9000_0000_0040_0000;
    assert_eq!(
        sim(RET, f),
        with(f, 0x9000_0000_0040_0000, &[(ZERO, A + 4)])
    );
}

#[test]
fn pc_relative() {
    let f = frame();
    assert_eq!(sim(PCADDI_1, f), with(f, A + 4, &[(A0, A + 4)]));
    assert_eq!(sim(PCADDI_MIN, f), with(f, A + 4, &[(A0, A - 0x20_0000)]));
    assert_eq!(sim(PCADDU12I_M1, f), with(f, A + 4, &[(A0, A - 0x1000)]));
    let g = with(f, A + 0x124, &[]);
    assert_eq!(
        sim(PCALAU12I_1, g),
        with(g, A + 0x128, &[(A0, (A + 0x124 + 0x1000) & !0xfff)])
    );
    assert_eq!(sim(PCADDU18I_1, f), with(f, A + 4, &[(T0, A + 0x4_0000)]));
}

/// Upstream 6.12's `simu_pc()` computes `imm << 18` in an `unsigned int`: the manual's
/// `pcaddu18i $t0, -1` gives `pc - 0x40000`, upstream `pc + 0xfffc0000`; the manual's
/// `pcaddu18i $t0, 0x4000` gives `pc + 2^32`, upstream `pc`.
#[test]
fn pcaddu18i_as_upstream() {
    let f = frame();
    assert_eq!(
        sim(PCADDU18I_M1, f),
        with(f, A + 4, &[(T0, A + 0xfffc_0000)])
    );
    assert_eq!(sim(PCADDU18I_4000, f), with(f, A + 4, &[(T0, A)]));
}

#[test]
fn wrapping_at_the_ends_of_the_address_space() {
    let top = with(frame(), 0xffff_ffff_ffff_f000, &[]);
    assert_eq!(sim(B_4096, top), with(top, 0, &[]));
    assert_eq!(
        sim(BL_M8, with(top, 0, &[])),
        with(top, u64::MAX - 7, &[(RA, 4)])
    );
    let last = with(frame(), u64::MAX - 3, &[]);
    assert_eq!(sim(PCADDI_1, last), with(last, 0, &[(A0, 0)]));
    let mut f = frame();
    f.regs[T1] = u64::MAX - 3;
    assert_eq!(sim(JIRL_RA_T1_16, f), with(f, 12, &[(RA, A + 4)]));
}

#[test]
fn misaligned_era_leaves_the_frame() {
    for era in [A + 1, A + 2, A + 3] {
        let f = with(frame(), era, &[]);
        for w in [B_4096, BEQ_32, JIRL_RA_T1_16, PCADDI_1, PCALAU12I_1] {
            let mut r = f;
            assert_eq!(simulate_insn(w, &mut r), Err(SimuError::InvalidPc(era)));
            assert_eq!(r, f);
        }
        let mut r = f;
        assert_eq!(simu_branch(&mut r, NOP), Err(SimuError::InvalidPc(era)));
        assert_eq!(simu_pc(&mut r, NOP), Err(SimuError::InvalidPc(era)));
        assert_eq!(r, f);
    }
}

#[test]
fn unknown_opcodes_leave_the_frame() {
    let f = frame();
    for w in [BCEQZ, BCNEZ, NOP, LD_D] {
        let mut r = f;
        assert_eq!(simu_branch(&mut r, w), Err(SimuError::UnknownOpcode));
        assert_eq!(r, f);
    }
    for w in [B_4096, LU12I_W, LU32I_D, NOP] {
        let mut r = f;
        assert_eq!(simu_pc(&mut r, w), Err(SimuError::UnknownOpcode));
        assert_eq!(r, f);
    }
    // arch_simulate_insn() does nothing for what it does not simulate, bceqz/bcnez aside.
    for w in [NOP, LD_D, LU12I_W, BREAK_10] {
        let mut r = f;
        assert_eq!(simulate_insn(w, &mut r), Ok(()));
        assert_eq!(r, f);
    }
    let mut r = f;
    assert_eq!(simulate_insn(BCEQZ, &mut r), Err(SimuError::UnknownOpcode));
    assert_eq!(r, f);
}

#[test]
fn decisions() {
    use ProbeInsn::{Rejected, Simulate, Step};
    use Unsupported::*;
    let cases: &[(u32, ProbeInsn)] = &[
        (AMSWAP_W, Rejected(AtomicMemoryAccess)),
        (AMMIN_DB_DU, Rejected(AtomicMemoryAccess)),
        (AMADD_DB_D, Rejected(AtomicMemoryAccess)),
        (SC_Q, Rejected(ScQ)),
        (LL_W, Rejected(LlSc)),
        (LL_D, Rejected(LlSc)),
        (SC_W, Rejected(LlSc)),
        (SC_D, Rejected(LlSc)),
        (LLACQ_W, Rejected(LlacqScrel)),
        (LLACQ_D, Rejected(LlacqScrel)),
        (SCREL_W, Rejected(LlacqScrel)),
        (SCREL_D, Rejected(LlacqScrel)),
        (BCEQZ, Rejected(BceqzBcnez)),
        (BCNEZ, Rejected(BceqzBcnez)),
        // Upstream 6.12 does not know the byte/halfword atomics and amcas: stepped.
        (AMSWAP_B, Step),
        (AMCAS_W, Step),
        (LDPTR_D, Step),
        (LD_D, Step),
        (ADDI_D_SP, Step),
        (NOP, Step),
        (BREAK_10, Step),
        (SYSCALL, Step),
        (ERTN, Step),
        (LU12I_W, Step),
        (LU32I_D, Step),
        (PCADDI_1, Simulate(Simulator::Pc)),
        (PCALAU12I_1, Simulate(Simulator::Pc)),
        (PCADDU12I_M1, Simulate(Simulator::Pc)),
        (PCADDU18I_M1, Simulate(Simulator::Pc)),
    ];
    for &(w, want) in cases {
        assert_eq!(decode_insn(w), want, "{w:#010x}");
        assert_eq!(
            insns_not_supported(w),
            if let Rejected(u) = want {
                Some(u)
            } else {
                None
            },
            "{w:#010x}"
        );
    }
    for w in [
        B_4096,
        BL_M8,
        BEQZ_A0_256,
        BNEZ_T0_MIN,
        JIRL_RA_T1_16,
        RET,
        BEQ_32,
        BNE_MIN,
        BLT_64,
        BGE_64,
        BLTU_64,
        BGEU_64,
    ] {
        assert_eq!(decode_insn(w), Simulate(Simulator::Branch), "{w:#010x}");
        assert!(insns_need_simulation(w));
    }
    // bceqz is in is_branch_ins()'s range but refused first.
    assert!(insns_need_simulation(BCEQZ));
    assert!(!insns_need_simulation(NOP) && !insns_need_simulation(LU12I_W));
}

#[test]
fn preparation() {
    let img = Image {
        name: "golden".into(),
        base: A,
        words: vec![NOP, BEQ_32, LL_W, PCADDI_1],
        functions: vec![(A, 16)],
    };
    assert_eq!(
        prepare_kprobe(&img, A),
        Ok(Prepared::Step {
            opcode: NOP,
            slot: [NOP, BREAK_11],
            restore: A + 4,
        })
    );
    assert_eq!(
        prepare_kprobe(&img, A + 4),
        Ok(Prepared::Simulate {
            opcode: BEQ_32,
            simulator: Simulator::Branch,
        })
    );
    assert_eq!(prepare_kprobe(&img, A + 8), Err(errno::EINVAL));
    assert_eq!(
        prepare_kprobe(&img, A + 12),
        Ok(Prepared::Simulate {
            opcode: PCADDI_1,
            simulator: Simulator::Pc,
        })
    );
    for off in [1, 2, 3, 6] {
        assert_eq!(prepare_kprobe(&img, A + off), Err(errno::EILSEQ));
    }
    // Text the model cannot read.
    assert_eq!(prepare_kprobe(&img, A + 16), Err(errno::EINVAL));
    assert_eq!(prepare_kprobe(&img, A - 4), Err(errno::EINVAL));
    // A slot's restore wraps at the end of the address space.
    let top = Image {
        base: u64::MAX - 3,
        words: vec![NOP],
        ..Image::default()
    };
    assert_eq!(
        prepare_kprobe(&top, u64::MAX - 3),
        Ok(Prepared::Step {
            opcode: NOP,
            slot: [NOP, BREAK_11],
            restore: 0,
        })
    );
}
