// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: the Rust s390 kprobes decisions against z/Architecture.
//!
//! Every encoding here was produced by `llvm-mc -triple=s390x-linux-gnu -mcpu=z15
//! -show-encoding` (the relative offsets, which llvm-mc leaves to the linker, are the
//! target's distance in halfwords, as the Principles of Operation define them). Every
//! expected value is worked out from the architecture and from what upstream 6.12's
//! `lib/probes.c` and `kernel/kprobes.c` are documented to do, not from the code under test.

use rkprobes_s390_kprobes::kprobes::{
    can_probe, copy_instruction, disable_singlestep_mask, enable_singlestep_mask, errno,
    insn_length, is_known_insn, prepare_kprobe, probe_get_fixup_type, probe_is_insn_relative_long,
    probe_is_prohibited_opcode, reenter_allowed, resume_execution, KernelText, Prepared, Resumed,
    BREAKPOINT_INSTRUCTION, FIXUP_BRANCH_NOT_TAKEN, FIXUP_NOT_REQUIRED, FIXUP_PSW_NORMAL,
    FIXUP_RETURN_REGISTER, KPROBE_HIT_ACTIVE, KPROBE_HIT_SS, KPROBE_HIT_SSDONE, KPROBE_REENTER,
    PSW_MASK_EXT, PSW_MASK_IO, PSW_MASK_PER,
};

/// An instruction's halfwords, padded with zeros.
fn i(h: &[u16]) -> [u16; 3] {
    let mut out = [0; 3];
    out[..h.len()].copy_from_slice(h);
    out
}

// Encodings (llvm-mc).
const BASSM: [u16; 1] = [0x0c12];
const BSM: [u16; 1] = [0x0b12];
const DIAG: [u16; 2] = [0x8312, 0x0000];
const EX: [u16; 2] = [0x4410, 0x2000];
const STNSM: [u16; 2] = [0xacff, 0x1000];
const STOSM: [u16; 2] = [0xadff, 0x1000];
const EXRL: [u16; 3] = [0xc610, 0x0000, 0x0008]; // exrl %r1,.+16
const PR: [u16; 1] = [0x0101];
const BSA: [u16; 2] = [0xb25a, 0x0012];
const BAKR: [u16; 2] = [0xb240, 0x0012];
const BSG: [u16; 2] = [0xb258, 0x0012];
const PC: [u16; 2] = [0xb218, 0x1000];
const PT: [u16; 2] = [0xb228, 0x0012];
const EPSW: [u16; 2] = [0xb98d, 0x0012];
const TBEGIN: [u16; 3] = [0xe560, 0x1000, 0x0000];
const TBEGINC: [u16; 3] = [0xe561, 0x1000, 0x0000];
const TEND: [u16; 2] = [0xb2f8, 0x0000];
const BALR: [u16; 1] = [0x05e1]; // balr %r14,%r1
const BALR_R0: [u16; 1] = [0x05e0]; // balr %r14,%r0
const BASR: [u16; 1] = [0x0de1];
const BCTR: [u16; 1] = [0x0612];
const BR: [u16; 1] = [0x07fe];
const BAL: [u16; 2] = [0x45e0, 0x1000];
const BAS: [u16; 2] = [0x4de0, 0x1000];
const BC: [u16; 2] = [0x47f0, 0x1000];
const BCT: [u16; 2] = [0x4610, 0x2000];
const BXH: [u16; 2] = [0x8612, 0x3000];
const BXLE: [u16; 2] = [0x8712, 0x3000];
const LPSW: [u16; 2] = [0x8200, 0x1000];
const LPSWE: [u16; 2] = [0xb2b2, 0x1000];
const BRAS: [u16; 2] = [0xa7e5, 0x0008]; // bras %r14,.+16
const BRASL: [u16; 3] = [0xc0e5, 0x0000, 0x0008]; // brasl %r14,.+16
const J: [u16; 2] = [0xa7f4, 0x0008]; // j .+16
const JG: [u16; 3] = [0xc0f4, 0x0000, 0x0008]; // jg .+16
const LARL: [u16; 3] = [0xc010, 0x0000, 0x0800]; // larl %r1,.+0x1000
const LGRL: [u16; 3] = [0xc418, 0xffff, 0xf800]; // lgrl %r1,.-0x1000
const LRL: [u16; 3] = [0xc41d, 0x0008, 0x0000]; // lrl %r1,.+0x100000
const STGRL: [u16; 3] = [0xc41b, 0x0000, 0x0002]; // stgrl %r1,.+4
const CGRL: [u16; 3] = [0xc618, 0x0000, 0x0002]; // cgrl %r1,.+4
const PFDRL: [u16; 3] = [0xc612, 0x0000, 0x0002]; // pfdrl 1,.+4
const BXHG: [u16; 3] = [0xeb12, 0x3000, 0x0044];
const BXLEG: [u16; 3] = [0xeb12, 0x3000, 0x0045];
const BCTG: [u16; 3] = [0xe310, 0x2000, 0x0046];
const CGRB: [u16; 3] = [0xec12, 0x3000, 0x80e4];
const CRB: [u16; 3] = [0xec12, 0x3000, 0x80f6];
const CIB: [u16; 3] = [0xec18, 0x3000, 0x05fe];
const CLIB: [u16; 3] = [0xec18, 0x3000, 0x05ff];
const CGIJ: [u16; 3] = [0xec18, 0x0008, 0x057c]; // cgij %r1,5,8,.+16
const LGR: [u16; 2] = [0xb904, 0x0012];
const STG: [u16; 3] = [0xe310, 0xf008, 0x0024];
const AGHI: [u16; 2] = [0xa7fb, 0xff60];

#[test]
fn lengths() {
    assert_eq!(insn_length(0x07), 2);
    assert_eq!(insn_length(0x3f), 2);
    assert_eq!(insn_length(0x40), 4);
    assert_eq!(insn_length(0xb9), 4);
    assert_eq!(insn_length(0xbf), 4);
    assert_eq!(insn_length(0xc0), 6);
    assert_eq!(insn_length(0xff), 6);
    assert_eq!(insn_length(0x00), 2);
}

#[test]
fn known_instructions() {
    for insn in [
        &LGR[..],
        &STG,
        &AGHI,
        &BR,
        &LARL,
        &BRASL,
        &LPSW,
        &CRB,
        &CGIJ,
        &BXHG,
        &BCTG,
        &PR,
        &TEND,
        &EXRL,
        &BASSM,
        &DIAG,
    ] {
        assert!(is_known_insn(&i(insn)), "{insn:04x?}");
    }
    // The breakpoint and 0x0000 are in the disassembler's table ("brkpt", "illegal").
    assert!(is_known_insn(&[BREAKPOINT_INSTRUCTION, 0, 0]));
    assert!(is_known_insn(&[0x0000, 0, 0]));
    // Opcodes opcodes.txt does not list: 0x0001, 0x0100, 0x00ff, 0xb203, 0xb2fe, and 0xe3
    // with last byte 0x00.
    for insn in [
        [0x0001, 0, 0],
        [0x0100, 0, 0],
        [0x00ff, 0, 0],
        [0xb203, 0, 0],
        [0xb2fe, 0, 0],
        [0xe310, 0x2000, 0x0000],
    ] {
        assert!(!is_known_insn(&insn), "{insn:04x?}");
    }
    // The fragment of a group that looks at byte 5 is there, not in byte 1.
    assert!(!is_known_insn(&[0xe324, 0xf008, 0x0000]));
    assert!(is_known_insn(&[0xe300, 0xf008, 0x0024]));
}

#[test]
fn prohibited() {
    for insn in [
        &BASSM[..],
        &BSM,
        &DIAG,
        &EX,
        &STNSM,
        &STOSM,
        &EXRL,
        &PR,
        &BSA,
        &BAKR,
        &BSG,
        &PC,
        &PT,
        &EPSW,
        &TBEGIN,
        &TBEGINC,
        &TEND,
    ] {
        assert!(probe_is_prohibited_opcode(&i(insn)), "{insn:04x?}");
    }
    for insn in [&LGR[..], &STG, &AGHI, &BR, &LARL, &BRASL, &LPSW, &CRB] {
        assert!(!probe_is_prohibited_opcode(&i(insn)), "{insn:04x?}");
    }
    // Whatever the disassembler does not know is refused.
    assert!(probe_is_prohibited_opcode(&[0xb203, 0x0012, 0]));
}

#[test]
fn fixup_types() {
    let f = |h: &[u16]| probe_get_fixup_type(&i(h));
    assert_eq!(f(&BALR), FIXUP_RETURN_REGISTER);
    assert_eq!(f(&BALR_R0), FIXUP_RETURN_REGISTER | FIXUP_BRANCH_NOT_TAKEN);
    assert_eq!(f(&BASR), FIXUP_RETURN_REGISTER);
    assert_eq!(f(&[0x0de0]), FIXUP_RETURN_REGISTER | FIXUP_BRANCH_NOT_TAKEN);
    for h in [
        &BCTR[..],
        &BR,
        &BC,
        &BCT,
        &BXH,
        &BXLE,
        &BXHG,
        &BXLEG,
        &BCTG,
        &CGRB,
        &CRB,
        &CIB,
        &CLIB,
    ] {
        assert_eq!(f(h), FIXUP_BRANCH_NOT_TAKEN, "{h:04x?}");
    }
    assert_eq!(f(&BAL), FIXUP_RETURN_REGISTER);
    assert_eq!(f(&BAS), FIXUP_RETURN_REGISTER);
    assert_eq!(f(&LPSW), FIXUP_NOT_REQUIRED);
    assert_eq!(f(&LPSWE), FIXUP_NOT_REQUIRED);
    assert_eq!(f(&BRAS), FIXUP_PSW_NORMAL | FIXUP_RETURN_REGISTER);
    assert_eq!(f(&BRASL), FIXUP_PSW_NORMAL | FIXUP_RETURN_REGISTER);
    // Relative branches and everything else: the normal fix-up (cgij is relative).
    for h in [&J[..], &JG, &CGIJ, &LGR, &STG, &AGHI, &LARL, &TEND] {
        assert_eq!(f(h), FIXUP_PSW_NORMAL, "{h:04x?}");
    }
}

#[test]
fn relative_long() {
    for h in [LARL, LGRL, LRL, STGRL, CGRL, PFDRL] {
        assert!(probe_is_insn_relative_long(h[0]), "{h:04x?}");
    }
    for h in [
        BRASL[0], JG[0], EXRL[0], STG[0], LGR[0], 0xc4e0, 0xc4e3, 0xc4e9, 0xc6e3, 0xc6eb,
    ] {
        assert!(!probe_is_insn_relative_long(h), "{h:#06x}");
    }
}

#[test]
fn displacement_fix_up() {
    let addr = 0x3ff_e000_1000u64;
    // larl %r1,.+0x1000 copied to a slot 0x10000 below: .+0x11000, 0x8800 halfwords.
    assert_eq!(
        copy_instruction(LARL, addr, addr - 0x1_0000),
        [0xc010, 0x0000, 0x8800]
    );
    // lgrl %r1,.-0x1000 copied to a slot 0x10000 above: .-0x11000.
    assert_eq!(
        copy_instruction(LGRL, addr, addr + 0x1_0000),
        [0xc418, 0xffff, 0x7800]
    );
    // A slot 4 GiB - 2 below: the offset wraps to 32 bits as upstream truncates it.
    let slot = addr - 0xffff_fffe;
    assert_eq!(
        copy_instruction(STGRL, addr, slot),
        [0xc41b, 0x8000, 0x0001]
    );
    // Not relative long: copied as is.
    assert_eq!(copy_instruction(BRASL, addr, addr - 0x1_0000), BRASL);
}

/// Text at an s390 kernel address.
struct Text {
    base: u64,
    halfwords: Vec<u16>,
}

impl KernelText for Text {
    fn read_halfword(&self, addr: u64) -> Option<u16> {
        let off = addr.checked_sub(self.base)?;
        if off % 2 != 0 {
            return None;
        }
        self.halfwords.get(usize::try_from(off / 2).ok()?).copied()
    }
}

const BASE: u64 = 0x3ff_e000_0000;

fn text(insns: &[&[u16]]) -> Text {
    Text {
        base: BASE,
        halfwords: insns.iter().flat_map(|h| h.iter().copied()).collect(),
    }
}

#[test]
fn instruction_boundaries() {
    // stg (6), aghi (4), lgr (4), br (2).
    let t = text(&[&STG, &AGHI, &LGR, &BR]);
    let none = |_| None;
    for (off, ok) in [
        (0, true),
        (2, false),
        (6, true),
        (8, false),
        (10, true),
        (14, true),
        (15, false),
    ] {
        assert_eq!(
            can_probe(&t, BASE + off, Some(off), none),
            ok,
            "offset {off}"
        );
    }
    assert!(!can_probe(&t, BASE + 6, None, none));
    // A breakpoint at aghi: a probe's (its original opcode gives the length) or not.
    let t = text(&[&STG, &[BREAKPOINT_INSTRUCTION, 0xff60], &LGR, &BR]);
    assert!(can_probe(&t, BASE + 10, Some(10), |a| (a == BASE + 6)
        .then_some(AGHI[0])));
    assert!(!can_probe(&t, BASE + 10, Some(10), none));
    // The breakpoint itself is probed again (the walk stops before it).
    assert!(can_probe(&t, BASE + 6, Some(6), none));
    // A QEMU breakpoint (0x0000) before the address stops the walk.
    let t = text(&[&[0x0000], &BR]);
    assert!(!can_probe(&t, BASE + 2, Some(2), none));
}

#[test]
fn prepare() {
    let t = text(&[&STG, &LARL, &EX, &BR, &[0xb203, 0x0012]]);
    let none = |_| None;
    let slot = BASE - 0x1_0000;
    let p = prepare_kprobe(&t, BASE + 6, Some(6), none, Some(slot)).expect("larl");
    assert_eq!(
        p,
        Prepared {
            opcode: LARL[0],
            slot_insn: [0xc010, 0x0000, 0x8803],
            len: 6
        }
    );
    let p = prepare_kprobe(&t, BASE, Some(0), none, Some(slot)).expect("stg");
    assert_eq!(p.slot_insn, STG);
    assert_eq!(
        prepare_kprobe(&t, BASE + 12, Some(12), none, Some(slot)),
        Err(errno::EINVAL),
        "ex"
    );
    assert_eq!(
        prepare_kprobe(&t, BASE + 8, Some(8), none, Some(slot)),
        Err(errno::EINVAL),
        "inside larl"
    );
    assert_eq!(
        prepare_kprobe(&t, BASE + 16, Some(16), none, None),
        Err(errno::ENOMEM)
    );
    assert_eq!(
        prepare_kprobe(&t, BASE + 18, Some(18), none, Some(slot)),
        Err(errno::EINVAL),
        "unknown"
    );
}

#[test]
fn resume() {
    let addr = BASE + 0x100;
    let slot = BASE - 0x1_0000;
    // Normal: the PSW after the slot's instruction moves to after the probe.
    assert_eq!(
        resume_execution(&i(&STG), addr, slot, slot + 6),
        Resumed {
            ip: addr + 6,
            gpr_fix: None
        }
    );
    // A relative branch taken: the target computed from the slot, moved back.
    let r = resume_execution(&i(&J), addr, slot, slot + 16);
    assert_eq!(r.ip, addr + 16);
    // An absolute branch taken stays; not taken, continues after the probe.
    assert_eq!(resume_execution(&i(&BR), addr, slot, 0x1234).ip, 0x1234);
    assert_eq!(resume_execution(&i(&BR), addr, slot, slot + 2).ip, addr + 2);
    // basr %r14,%r1: the return address in r14 moves from the slot to the probe.
    let r = resume_execution(&i(&BASR), addr, slot, 0x5678);
    assert_eq!(
        r,
        Resumed {
            ip: 0x5678,
            gpr_fix: Some((14, addr.wrapping_sub(slot)))
        }
    );
    // brasl %r14: both.
    let r = resume_execution(&i(&BRASL), addr, slot, slot + 16);
    assert_eq!(
        r,
        Resumed {
            ip: addr + 16,
            gpr_fix: Some((14, addr.wrapping_sub(slot)))
        }
    );
    // lpsw: nothing.
    assert_eq!(
        resume_execution(&i(&LPSW), addr, slot, 0x9abc),
        Resumed {
            ip: 0x9abc,
            gpr_fix: None
        }
    );
    let mask = PSW_MASK_PER | 0x0700_0000_8000_0000;
    assert_eq!(
        disable_singlestep_mask(mask, PSW_MASK_IO | PSW_MASK_EXT),
        0x0700_0000_8000_0000 | PSW_MASK_IO | PSW_MASK_EXT
    );
}

#[test]
fn single_step_masks() {
    // Interrupts on, PER off: the step runs with PER on and I/O and external interrupts off,
    // and gets its interrupts back after.
    let mask = 0x0400_0001_8000_0000 | PSW_MASK_IO | PSW_MASK_EXT;
    let (during, saved) = enable_singlestep_mask(mask);
    assert_eq!(during, 0x0400_0001_8000_0000 | PSW_MASK_PER);
    assert_eq!(saved, PSW_MASK_IO | PSW_MASK_EXT);
    assert_eq!(disable_singlestep_mask(during, saved), mask);
    // Someone else's PER stays on after the step.
    let (during, saved) = enable_singlestep_mask(mask | PSW_MASK_PER);
    assert_eq!(disable_singlestep_mask(during, saved), mask | PSW_MASK_PER);
}

#[test]
fn reentry() {
    assert!(reenter_allowed(KPROBE_HIT_ACTIVE));
    assert!(reenter_allowed(KPROBE_HIT_SSDONE));
    assert!(!reenter_allowed(KPROBE_HIT_SS));
    assert!(!reenter_allowed(KPROBE_REENTER));
    assert!(!reenter_allowed(0));
}
