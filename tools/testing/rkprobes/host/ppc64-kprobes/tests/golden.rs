// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: the Rust ppc64 kprobes decisions against the Power ISA.
//!
//! Every encoding here was produced by `llvm-mc -triple=powerpc64le-linux-gnu -mcpu=pwr10
//! -show-encoding`, except the XL-form words llvm-mc does not know (`urfid`, `rfscv`, `doze`,
//! `sleep`, `rvwinkle`, `rfi`, `rfci`, `rfmci`, `rfdi`, `bctar`), which are built from the
//! ISA's XL form (primary opcode 19, extended opcode in bits 21:30) and marked so. Every
//! expected value is worked out from the ISA and from what upstream 6.12's `kprobes.c` and
//! `optprobes.c` are documented to do, not from the code under test.

use rkprobes_ppc64_kprobes::kprobes::{
    arch_kprobe_on_func_entry, can_optimize, errno, fault_resume, imm64_load, insn,
    msr_without_singlestep, optimize_branch, post_step_resume, prepare_kprobe,
    prepare_optimized_kprobe, stray_trap, trap_may_be_kprobe, tries_emulation, try_to_emulate,
    within_optimized_kprobe, AnalyseInstr, Emulation, KernelText, OptProbe, OptRefusal, PpcInst,
    Refusal, Refused, StrayTrap, Template, BREAKPOINT_INSTRUCTION, MSR_SINGLESTEP,
};
use std::cell::Cell;

// Encodings (llvm-mc, little-endian words).
const TRAP: u32 = 0x7fe0_0008; // trap
const TWEQ: u32 = 0x7c83_2808; // tweq 3, 5
const TDU: u32 = 0x7fe0_0088; // td 31, 0, 0
const TWUI: u32 = 0x0fe3_0000; // twi 31, 3, 0
const TDEQI: u32 = 0x0883_0010; // tdi 4, 3, 16
const SC: u32 = 0x4400_0002; // sc
const SCV: u32 = 0x4400_0001; // scv 0
const RFID: u32 = 0x4c00_0024; // rfid
const HRFID: u32 = 0x4c00_0224; // hrfid
const STOP: u32 = 0x4c00_02e4; // stop
const NAP: u32 = 0x4c00_0364; // nap
const MTMSR: u32 = 0x7c60_0124; // mtmsr 3
const MTMSRD: u32 = 0x7c61_0164; // mtmsrd 3, 1
const MFMSR: u32 = 0x7c60_00a6; // mfmsr 3
const MTXER: u32 = 0x7c61_03a6; // mtxer 3
const BLR: u32 = 0x4e80_0020; // blr
const BCTR: u32 = 0x4e80_0420; // bctr
const BCCTR: u32 = 0x4d82_0420; // bcctr 12, 2
const BT: u32 = 0x4182_0008; // bt 2, .+8
const B_256: u32 = 0x4800_0100; // b .+256
const BL_256: u32 = 0x4800_0101; // bl .+256
const ISYNC: u32 = 0x4c00_012c; // isync
const NOP: u32 = 0x6000_0000; // nop
const MFLR: u32 = 0x7c08_02a6; // mflr 0
const ADDIS_R2_R12: u32 = 0x3c4c_0123; // addis 2, 12, 291
const LIS_R2: u32 = 0x3c40_0123; // lis 2, 291
const ADDI_R2_R2: u32 = 0x3842_8100; // addi 2, 2, -32512
const PADDI: (u32, u32) = (0x0600_0000, 0x3864_03e8); // paddi 3, 4, 1000, 0
const PLD: (u32, u32) = (0x0400_0000, 0xe464_0008); // pld 3, 8(4)
                                                    // XL-form words built from the ISA (llvm-mc does not know them).
const URFID: u32 = 0x4c00_0264; // xo 306
const RFSCV: u32 = 0x4c00_00a4; // xo 82
const DOZE: u32 = 0x4c00_0324; // xo 402
const SLEEP: u32 = 0x4c00_03a4; // xo 466
const RVWINKLE: u32 = 0x4c00_03e4; // xo 498
const RFI: u32 = 0x4c00_0064; // xo 50
const RFCI: u32 = 0x4c00_0066; // xo 51
const RFMCI: u32 = 0x4c00_004c; // xo 38
const RFDI: u32 = 0x4c00_004e; // xo 39
const BCTAR: u32 = 0x4d82_0460; // bctar 12, 2: xo 560

/// Text at a 64 KiB-aligned kernel address.
struct Text {
    base: u64,
    words: Vec<u32>,
}

impl KernelText for Text {
    fn read_word(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        if off % 4 != 0 {
            return None;
        }
        self.words.get(usize::try_from(off / 4).ok()?).copied()
    }
}

const BASE: u64 = 0xc000_0000_0001_0000;
const PAGE_64K: u64 = 0x1_0000;

fn text(words: &[u32]) -> Text {
    Text {
        base: BASE,
        words: words.to_vec(),
    }
}

#[test]
fn breakpoint_is_trap() {
    assert_eq!(BREAKPOINT_INSTRUCTION, TRAP);
    assert_eq!(insn::tw(31, 0, 0), TRAP);
}

#[test]
fn traps_are_recognised() {
    for w in [TRAP, TWEQ, TDU, TWUI, TDEQI] {
        assert!(insn::is_trap(w), "{w:#x}");
        assert!(!insn::can_single_step(w), "{w:#x}");
    }
    for w in [NOP, SC, MFMSR, MTMSR, BLR, B_256, ISYNC] {
        assert!(!insn::is_trap(w), "{w:#x}");
    }
}

#[test]
fn single_step_refusals() {
    for w in [
        SC, SCV, RFID, HRFID, URFID, RFSCV, STOP, DOZE, NAP, SLEEP, RVWINKLE, RFI, RFCI, RFMCI,
        RFDI, MTMSR, MTMSRD, TRAP, TWEQ, TDU, TWUI, TDEQI,
    ] {
        assert!(!insn::can_single_step(w), "{w:#x} must not be stepped");
    }
    for w in [
        NOP,
        MFLR,
        MFMSR,
        MTXER,
        BLR,
        BCTR,
        BCCTR,
        BCTAR,
        BT,
        B_256,
        BL_256,
        ISYNC,
        PADDI.0,
        PLD.0,
        ADDIS_R2_R12,
    ] {
        assert!(insn::can_single_step(w), "{w:#x} can be stepped");
    }
}

#[test]
fn conditional_branches() {
    for w in [BLR, BCTR, BCCTR, BCTAR, BT] {
        assert!(insn::is_conditional_branch(PpcInst::word(w)), "{w:#x}");
    }
    for w in [B_256, BL_256, ISYNC, RFID, NOP, SC] {
        assert!(!insn::is_conditional_branch(PpcInst::word(w)), "{w:#x}");
    }
}

#[test]
fn prefixed_instructions() {
    let p = PpcInst::prefix(PADDI.0, PADDI.1);
    assert!(p.prefixed());
    assert_eq!(p.inst_len(), 8);
    assert_eq!(p.as_ulong(), 0x3864_03e8_0600_0000);
    assert_eq!(p.words(), ([PADDI.0, PADDI.1], 2));
    let n = PpcInst::word(NOP);
    assert!(!n.prefixed());
    assert_eq!(n.inst_len(), 4);
    assert_eq!(n.words().1, 1);
    let t = text(&[PLD.0, PLD.1, NOP]);
    assert_eq!(t.read_inst(BASE), Some(PpcInst::prefix(PLD.0, PLD.1)));
    assert_eq!(t.read_inst(BASE + 8), Some(PpcInst::word(NOP)));
}

#[test]
fn prepare_copies_the_instruction() {
    let t = text(&[NOP, MFLR, PADDI.0, PADDI.1, NOP]);
    let p = prepare_kprobe(&t, BASE + 4, PAGE_64K, None).expect("mflr is probed");
    assert_eq!(p.insn, PpcInst::word(MFLR));
    assert_eq!(p.opcode(), MFLR);
    let p = prepare_kprobe(&t, BASE + 8, PAGE_64K, None).expect("paddi is probed");
    assert_eq!(p.insn, PpcInst::prefix(PADDI.0, PADDI.1));
    assert_eq!(p.opcode(), PADDI.0);
    assert_eq!(p.insn.words(), ([PADDI.0, PADDI.1], 2));
}

fn refused(first: Option<Refusal>, prev_probe_prefixed: bool) -> Result<(), Refused> {
    Err(Refused {
        first,
        prev_probe_prefixed,
    })
}

#[test]
fn prepare_refusals() {
    let t = text(&[
        NOP, MTMSR, MTMSRD, RFID, SC, TRAP, PADDI.0, PADDI.1, NOP, HRFID,
    ]);
    let at = |i: u64| BASE + 4 * i;
    let r = |a: u64, prev: Option<u32>| prepare_kprobe(&t, a, PAGE_64K, prev).map(|_| ());
    for i in 1..=5 {
        assert_eq!(
            r(at(i), None),
            refused(Some(Refusal::CannotSingleStep), false)
        );
        assert_eq!(r(at(i), None).unwrap_err().errno(), errno::EINVAL);
    }
    assert_eq!(
        r(at(9), None),
        refused(Some(Refusal::CannotSingleStep), false)
    );
    // The suffix of paddi.
    assert_eq!(
        r(at(7), None),
        refused(Some(Refusal::SecondWordOfPrefixed), false)
    );
    // Unaligned, with the previous probe's slot prefixed too: two lines printed.
    assert_eq!(
        r(at(8) + 2, Some(PADDI.0)),
        refused(Some(Refusal::Unaligned), true)
    );
    // A previous probe that single-steps a prefixed instruction, at an accepted word.
    assert_eq!(r(at(8), Some(PLD.0)), refused(None, true));
    assert!(r(at(8), Some(NOP)).is_ok());
    // A non-steppable word with a prefixed previous probe.
    assert_eq!(
        r(at(1), Some(PADDI.0)),
        refused(Some(Refusal::CannotSingleStep), true)
    );
}

#[test]
fn prepare_does_not_look_before_a_page() {
    // The word before the probe is a prefix, but the probe starts a page: upstream does not
    // look at the previous page, so the second word of a prefixed instruction crossing a
    // page boundary is accepted.
    let mut words = vec![NOP; (PAGE_64K / 4) as usize + 4];
    let page_start = (PAGE_64K / 4) as usize;
    words[page_start - 1] = PADDI.0;
    words[page_start] = PADDI.1;
    let t = text(&words);
    let a = BASE + PAGE_64K;
    assert!(prepare_kprobe(&t, a, PAGE_64K, None).is_ok());
    // With 4K pages the same address is also a page start; one word later it is not.
    assert!(prepare_kprobe(&t, a, 0x1000, None).is_ok());
    let t4k = text(&[NOP, PADDI.0, PADDI.1]);
    assert_eq!(
        prepare_kprobe(&t4k, BASE + 8, 0x1000, None).map(|_| ()),
        refused(Some(Refusal::SecondWordOfPrefixed), false)
    );
    // No check of a prefixed instruction crossing a 64-byte boundary (6.12 has none).
    let mut words = vec![NOP; 20];
    words[15] = PADDI.0;
    words[16] = PADDI.1;
    let t = text(&words);
    assert!(prepare_kprobe(&t, BASE + 60, PAGE_64K, None).is_ok());
}

#[test]
fn prepare_unreadable_text() {
    let t = text(&[PADDI.0]);
    assert_eq!(
        prepare_kprobe(&t, BASE, PAGE_64K, None).map(|_| ()),
        refused(Some(Refusal::Unreadable), false)
    );
}

#[test]
fn emulation_state() {
    assert!(tries_emulation(0) && tries_emulation(1) && !tries_emulation(-1));
    // First hit emulated: boostable becomes 1.
    assert_eq!(try_to_emulate(0, 1), (Emulation::Emulated, 1));
    assert_eq!(try_to_emulate(1, 1), (Emulation::Emulated, 1));
    // First hit not emulated: never try again.
    assert_eq!(try_to_emulate(0, 0), (Emulation::Stepped, -1));
    // Emulated before: this one is stepped, later ones still try.
    assert_eq!(try_to_emulate(1, 0), (Emulation::Stepped, 1));
    // A negative answer is a BUG, the state left alone.
    assert_eq!(try_to_emulate(0, -1), (Emulation::Bug, 0));
    assert_eq!(try_to_emulate(1, -14), (Emulation::Bug, 1));
}

#[test]
fn stray_traps() {
    assert_eq!(stray_trap(None), StrayTrap::NotOurs);
    assert_eq!(stray_trap(Some(TRAP)), StrayTrap::NotOurs);
    assert_eq!(stray_trap(Some(TWEQ)), StrayTrap::NotOurs);
    assert_eq!(stray_trap(Some(TDEQI)), StrayTrap::NotOurs);
    assert_eq!(stray_trap(Some(NOP)), StrayTrap::Removed);
    assert_eq!(stray_trap(Some(MFLR)), StrayTrap::Removed);
}

#[test]
fn traps_the_handler_considers() {
    // MSR_IR | MSR_DR, kernel mode: a kprobe's; user mode or real mode: not.
    let kernel = 0x8000_0000_0000_0032;
    assert!(trap_may_be_kprobe(kernel));
    assert!(!trap_may_be_kprobe(kernel | 0x4000));
    assert!(!trap_may_be_kprobe(kernel & !0x20));
    assert!(!trap_may_be_kprobe(kernel & !0x10));
}

#[test]
fn after_the_step() {
    let slot = 0xc000_0000_0200_0000;
    let addr = BASE + 0x40;
    assert_eq!(
        post_step_resume(PpcInst::word(NOP), slot, slot + 4, addr),
        Some(addr + 4)
    );
    let p = PpcInst::prefix(PADDI.0, PADDI.1);
    assert_eq!(post_step_resume(p, slot, slot + 8, addr), Some(addr + 8));
    assert_eq!(post_step_resume(p, slot, slot + 4, addr), None);
    assert_eq!(post_step_resume(PpcInst::word(NOP), slot, slot, addr), None);
    assert_eq!(MSR_SINGLESTEP, 0x400);
    assert_eq!(
        msr_without_singlestep(0x8000_0000_0000_0433, 0),
        0x8000_0000_0000_0033
    );
    assert_eq!(msr_without_singlestep(0x400, 0x8000), 0x8000);
    assert_eq!(fault_resume(addr, 0x8433, 0x10), (addr, 0x8033));
}

#[test]
fn function_entry() {
    assert_eq!(
        insn::ppc_function_entry(BASE, ADDIS_R2_R12, ADDI_R2_R2),
        BASE + 8
    );
    assert_eq!(insn::ppc_function_entry(BASE, LIS_R2, ADDI_R2_R2), BASE + 8);
    assert_eq!(insn::ppc_function_entry(BASE, MFLR, ADDI_R2_R2), BASE);
    assert_eq!(insn::ppc_function_entry(BASE, ADDIS_R2_R12, NOP), BASE);
    assert!(arch_kprobe_on_func_entry(0, false) && arch_kprobe_on_func_entry(8, false));
    assert!(!arch_kprobe_on_func_entry(12, false));
    assert!(arch_kprobe_on_func_entry(16, true) && !arch_kprobe_on_func_entry(20, true));
}

#[test]
fn branch_range() {
    assert!(insn::is_offset_in_branch_range(-0x200_0000));
    assert!(insn::is_offset_in_branch_range(0x1ff_fffc));
    assert!(insn::is_offset_in_branch_range(0));
    assert!(!insn::is_offset_in_branch_range(0x200_0000));
    assert!(!insn::is_offset_in_branch_range(-0x200_0004));
    assert!(!insn::is_offset_in_branch_range(2));
    assert_eq!(insn::create_branch(BASE, BASE + 256, 0), Some(B_256));
    assert_eq!(
        insn::create_branch(BASE, BASE + 256, insn::BRANCH_SET_LINK),
        Some(BL_256)
    );
    // b .-4 and b .+0x1fffffc, b .-0x2000000 (llvm-mc).
    assert_eq!(insn::create_branch(BASE, BASE - 4, 0), Some(0x4bff_fffc));
    assert_eq!(
        insn::create_branch(BASE, BASE + 0x1ff_fffc, 0),
        Some(0x49ff_fffc)
    );
    assert_eq!(
        insn::create_branch(BASE, BASE - 0x200_0000, 0),
        Some(0x4a00_0000)
    );
    assert_eq!(insn::create_branch(BASE, BASE + 0x200_0000, 0), None);
    assert_eq!(insn::create_branch(BASE, BASE + 6, 0), None);
    // ba 0x100 (absolute).
    assert_eq!(
        insn::create_branch(BASE, 0x100, insn::BRANCH_ABSOLUTE),
        Some(0x4800_0102)
    );
    assert_eq!(optimize_branch(BASE, BASE + 256), Some(B_256));
}

#[test]
fn immediate_loads() {
    // lis 3,-16384; ori 3,3,0; sldi 3,3,32; oris 3,3,0x123; ori 3,3,0x4567 (llvm-mc).
    assert_eq!(
        imm64_load(0xc000_0000_0123_4567, 3),
        [
            0x3c60_c000,
            0x6063_0000,
            0x7863_07c6,
            0x6463_0123,
            0x6063_4567
        ]
    );
    // lis 4,0x3864; ori 4,4,0x3e8; sldi 4,4,32; oris 4,4,0x600; ori 4,4,0: paddi as ulong.
    assert_eq!(
        imm64_load(PpcInst::prefix(PADDI.0, PADDI.1).as_ulong(), 4),
        [
            0x3c80_3864,
            0x6084_03e8,
            0x7884_07c6,
            0x6484_0600,
            0x6084_0000
        ]
    );
}

#[test]
fn within_the_replaced_word() {
    assert!(within_optimized_kprobe(BASE, BASE));
    assert!(within_optimized_kprobe(BASE, BASE + 3));
    assert!(!within_optimized_kprobe(BASE, BASE + 4));
    assert!(!within_optimized_kprobe(BASE, BASE - 1));
}

/// An analysis that emulates to `nip` (or does not), and records what it was asked.
struct Emulates {
    nip: Option<u64>,
    asked: Cell<usize>,
}

impl AnalyseInstr for Emulates {
    fn emulated_nip(&self, _insn: PpcInst, _nip: u64) -> Option<u64> {
        self.asked.set(self.asked.get() + 1);
        self.nip
    }
}

fn emulates(nip: Option<u64>) -> Emulates {
    Emulates {
        nip,
        asked: Cell::new(0),
    }
}

const RETHOOK: u64 = 0xc000_0000_0000_2000;

#[test]
fn can_optimize_decisions() {
    let a = BASE + 0x100;
    let nop = PpcInst::word(NOP);
    let e = emulates(Some(a + 4));
    assert_eq!(
        can_optimize(a, nop, RETHOOK, &e).map(|n| n.get()),
        Some(a + 4)
    );
    // The rethook trampoline is not analysed.
    let e = emulates(None);
    assert_eq!(
        can_optimize(RETHOOK, nop, RETHOOK, &e).map(|n| n.get()),
        Some(RETHOOK + 4)
    );
    assert_eq!(e.asked.get(), 0);
    // A module address, a conditional branch: not analysed, not optimized.
    let e = emulates(Some(a + 4));
    assert_eq!(
        can_optimize(0xc000_0000_0000_0000 - 4, nop, RETHOOK, &e),
        None
    );
    assert_eq!(can_optimize(a, PpcInst::word(BT), RETHOOK, &e), None);
    assert_eq!(can_optimize(a, PpcInst::word(BLR), RETHOOK, &e), None);
    assert_eq!(e.asked.get(), 0);
    // Not emulated, or emulated to 0.
    assert_eq!(can_optimize(a, nop, RETHOOK, &emulates(None)), None);
    assert_eq!(can_optimize(a, nop, RETHOOK, &emulates(Some(0))), None);
}

/// ppc64's `optprobes_head.S` layout as the differential uses it.
fn template() -> Template {
    Template::new(55, 61, 63, 68, 81, 82).expect("valid")
}

#[test]
fn template_layouts() {
    assert_eq!(template().words(), 82);
    assert_eq!(template().ret(), 81);
    assert!(Template::new(0, 5, 6, 11, 12, 13).is_some());
    // An immediate load running past the end, a label at the end.
    assert!(Template::new(9, 5, 0, 6, 7, 13).is_none());
    assert!(Template::new(0, 5, 6, 11, 13, 13).is_none());
    assert!(Template::new(0, 5, 6, 11, 12, 0).is_none());
}

#[test]
fn detour() {
    let a = BASE + 0x100;
    let slot = BASE + 0x10_0000;
    let tmpl = template();
    let p = OptProbe {
        addr: a,
        insn: PpcInst::word(MFLR),
        op: 0xc000_0000_0123_4567,
    };
    let cb = slot - 0x1000;
    let em = slot + 0x2000;
    let d = prepare_optimized_kprobe(
        &p,
        &tmpl,
        RETHOOK,
        &emulates(Some(a + 4)),
        Some(cb),
        Some(em),
        || Some(slot),
    )
    .expect("optimized");
    assert_eq!(d.slot, slot);
    assert_eq!(d.op_load, imm64_load(p.op, 3));
    assert_eq!(d.insn_load, imm64_load(MFLR as u64, 4));
    // bl from word 61 back to cb: offset -0x1000 - 244.
    assert_eq!(
        d.call_handler,
        0x4800_0001 | ((-0x1000i64 - 244) as u32 & 0x03ff_fffc)
    );
    assert_eq!(
        d.call_emulate,
        0x4800_0001 | ((0x2000 - 272) as u32 & 0x03ff_fffc)
    );
    let back = (a + 4).wrapping_sub(slot + 4 * 81) as i64;
    assert_eq!(d.ret, Some(0x4800_0000 | (back as u32 & 0x03ff_fffc)));
    let mut buf = vec![NOP; 82];
    d.apply(&tmpl, &mut buf);
    assert_eq!(buf[55..60], d.op_load);
    assert_eq!(buf[61], d.call_handler);
    assert_eq!(buf[81], d.ret.unwrap());
    assert_eq!(buf[60], NOP);
    assert_eq!(
        optimize_branch(a, slot),
        Some(0x4800_0000 | (slot - a) as u32)
    );
}

#[test]
fn detour_return_quirk() {
    // nip exactly 32 MiB after the return word: the range check (return word - nip =
    // -32 MiB) passes, the branch (nip - return word = +32 MiB) cannot be made, and upstream
    // ignores patch_branch()'s error, leaving the template's word.
    let a = BASE + 0x100;
    let slot = a + 0x1000;
    let ret_at = slot + 4 * 81;
    let nip = ret_at + 0x200_0000;
    let p = OptProbe {
        addr: a,
        insn: PpcInst::word(B_256),
        op: 0,
    };
    let d = prepare_optimized_kprobe(
        &p,
        &template(),
        RETHOOK,
        &emulates(Some(nip)),
        Some(slot),
        Some(slot),
        || Some(slot),
    )
    .expect("optimized");
    assert_eq!(d.ret, None);
    // One word closer and the check itself refuses on the other side.
    let nip = ret_at - 0x200_0000;
    let r = prepare_optimized_kprobe(
        &p,
        &template(),
        RETHOOK,
        &emulates(Some(nip)),
        Some(slot),
        Some(slot),
        || Some(slot),
    );
    assert_eq!(r.map(|_| ()), Err(OptRefusal::OutOfRange { slot }));
}

#[test]
fn detour_refusals() {
    let a = BASE + 0x100;
    let slot = a + 0x1000;
    let p = OptProbe {
        addr: a,
        insn: PpcInst::word(NOP),
        op: 0,
    };
    let tmpl = template();
    let run = |nip: Option<u64>, cb: Option<u64>, em: Option<u64>, s: Option<u64>| {
        prepare_optimized_kprobe(&p, &tmpl, RETHOOK, &emulates(nip), cb, em, || s).map(|_| ())
    };
    let e = run(None, Some(slot), Some(slot), Some(slot)).unwrap_err();
    assert_eq!(
        (e, e.errno(), e.freed_slot()),
        (OptRefusal::CannotOptimize, errno::EILSEQ, None)
    );
    let e = run(Some(a + 4), Some(slot), Some(slot), None).unwrap_err();
    assert_eq!(
        (e, e.errno(), e.freed_slot()),
        (OptRefusal::NoSlot, errno::ENOMEM, None)
    );
    // The slot 32 MiB away from the probe.
    let far = a + 0x200_0000;
    let e = run(Some(a + 4), Some(far), Some(far), Some(far)).unwrap_err();
    assert_eq!(
        (e, e.errno(), e.freed_slot()),
        (
            OptRefusal::OutOfRange { slot: far },
            errno::ERANGE,
            Some(far)
        )
    );
    let e = run(Some(a + 4), None, Some(slot), Some(slot)).unwrap_err();
    assert_eq!(
        (e, e.errno()),
        (OptRefusal::NoSymbol { slot }, errno::ERANGE)
    );
    let e = run(Some(a + 4), Some(slot), Some(slot + 0x400_0000), Some(slot)).unwrap_err();
    assert_eq!(
        (e, e.errno(), e.freed_slot()),
        (
            OptRefusal::CallOutOfRange { slot },
            errno::ERANGE,
            Some(slot)
        )
    );
}
