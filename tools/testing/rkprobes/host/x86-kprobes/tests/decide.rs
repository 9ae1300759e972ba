// SPDX-License-Identifier: GPL-2.0

//! Golden checks of the decisions on the built-in corpus, without upstream's C: RIP-relative
//! fix-up and its reach, the slot layout (boosted jump back or trailing int3), the errnos,
//! ENDBR, and the detour of an optprobe.

use rkprobes_x86_insn::kprobes::{
    adjust_kprobe_addr, can_probe, errno, prepare_kprobe, prepare_optimized_kprobe, Config,
    Emulation, Template,
};
use rkprobes_x86_kprobes::corpus::{self, BASE};

/// A slot in the module area, and one out of `rel32` reach.
const NEAR: u64 = 0xffff_ffff_c000_0000;
const FAR: u64 = 0xffff_c900_0000_0000;

// Offsets in the corpus' first function, "basic".
const ENDBR: u64 = 0x0;
const PUSH: u64 = 0x4;
const RIP_LOAD: u64 = 0x8; // mov 0x100(%rip),%rax, 7 bytes
const RIP_FAR: u64 = 0x15; // mov -2GiB(%rip),%rax, 7 bytes
const MOVABS: u64 = 0x22; // 10 bytes
const MOVQ: u64 = 0x2c; // 12 bytes
const NOP15: u64 = 0x38;

fn jmp_from(from: u64, to: u64) -> [u8; 5] {
    let r = (to.wrapping_sub(from + 5) as u32).to_le_bytes();
    [0xe9, r[0], r[1], r[2], r[3]]
}

#[test]
fn rip_relative_copy_and_boosted_jump_back() {
    let img = corpus::hand_written_image();
    let a = BASE + RIP_LOAD;
    let p = prepare_kprobe(&img, &Config::default(), a, NEAR, false).expect("prepared");
    let disp = (0x100i64 + (a as i64).wrapping_sub(NEAR as i64)) as i32;
    assert_eq!(p.slot[..3], [0x48, 0x8b, 0x05]);
    assert_eq!(p.slot[3..7], disp.to_le_bytes());
    assert_eq!(p.slot[7..12], jmp_from(NEAR + 7, a + 7));
    assert_eq!((p.len, p.boostable, p.size, p.opcode), (12, true, 7, 0x48));
    assert_eq!(p.emulation, Emulation::None);

    // The copy still reads the same memory: slot end + new displacement = original target.
    let target = (a + 7).wrapping_add(0x100);
    assert_eq!((NEAR + 7).wrapping_add_signed(disp.into()), target);
}

#[test]
fn rip_relative_out_of_reach() {
    let img = corpus::hand_written_image();
    let cfg = Config::default();
    assert_eq!(
        prepare_kprobe(&img, &cfg, BASE + RIP_LOAD, FAR, false),
        Err(errno::EINVAL)
    );
    assert_eq!(
        prepare_kprobe(&img, &cfg, BASE + RIP_FAR, NEAR, false),
        Err(errno::EINVAL)
    );
    // Each refusal with C's message ("new displacement does not fit into s32"), giving the
    // displacement the copy would have needed.
    let a = BASE + RIP_LOAD;
    let far_disp = 0x100i64 + (a as i64).wrapping_sub(FAR as i64);
    let errors = img.displacement_errors.borrow().clone();
    assert_eq!(errors.len(), 2, "{errors:x?}");
    assert_eq!(errors[0], far_disp);
    assert!(i32::try_from(errors[1]).is_err());
    // Not RIP-relative: any slot will do.
    assert!(prepare_kprobe(&img, &cfg, BASE + PUSH, FAR, false).is_ok());
}

#[test]
fn int3_after_the_copy_when_not_boosted() {
    let img = corpus::hand_written_image();
    let a = BASE + PUSH;
    for (cfg, post) in [
        (Config::default(), true),
        (
            Config {
                preemption: true,
                ..Config::default()
            },
            false,
        ),
    ] {
        let p = prepare_kprobe(&img, &cfg, a, NEAR, post).expect("prepared");
        assert_eq!(
            (&p.slot[..2], p.len, p.boostable),
            (&[0x55, 0xcc][..], 2, false)
        );
    }
    let p = prepare_kprobe(&img, &Config::default(), a, NEAR, false).expect("prepared");
    assert_eq!(p.slot[0], 0x55);
    assert_eq!(p.slot[1..6], jmp_from(NEAR + 1, a + 1));
    assert_eq!(p.slot[1..6], [0xe9, 0xff, 0xff, 0xff, 0xc0]);
    assert!(p.boostable);
    // ENDBR64 is not boostable (0f 1e).
    let p = prepare_kprobe(&img, &Config::default(), BASE + ENDBR, NEAR, false).unwrap();
    assert_eq!((p.len, p.boostable, p.slot[4]), (5, false, 0xcc));
}

#[test]
fn slot_room() {
    let img = corpus::hand_written_image();
    let cfg = Config::default();
    // 10 bytes + jmp rel32 fill the 15-byte slot exactly.
    let p = prepare_kprobe(&img, &cfg, BASE + MOVABS, NEAR, false).unwrap();
    assert_eq!((p.len, p.boostable), (15, true));
    // 12 bytes: no room for the jump, an int3 instead.
    let p = prepare_kprobe(&img, &cfg, BASE + MOVQ, NEAR, false).unwrap();
    assert_eq!((p.len, p.boostable, p.slot[12]), (13, false, 0xcc));
    // 15 bytes: not even the int3.
    assert_eq!(
        prepare_kprobe(&img, &cfg, BASE + NOP15, NEAR, false),
        Err(errno::ENOSPC)
    );
}

#[test]
fn boundaries_and_endbr() {
    let img = corpus::hand_written_image();
    let cfg = Config::default();
    assert!(can_probe(&img, &cfg, BASE + PUSH));
    assert!(!can_probe(&img, &cfg, BASE + RIP_LOAD + 1));
    assert_eq!(
        prepare_kprobe(&img, &cfg, BASE + RIP_LOAD + 1, NEAR, false),
        Err(errno::EILSEQ)
    );
    let endbr = Some(u32::from_le_bytes([0xf3, 0x0f, 0x1e, 0xfa]));
    let ibt = Config { ibt: true, ..cfg };
    assert_eq!(
        adjust_kprobe_addr(&ibt, BASE, 0, endbr),
        Some((BASE + 4, true))
    );
    assert_eq!(
        adjust_kprobe_addr(&ibt, BASE, 4, endbr),
        Some((BASE + 4, true))
    );
    assert_eq!(
        adjust_kprobe_addr(&ibt, BASE, 5, endbr),
        Some((BASE + 5, false))
    );
    assert_eq!(adjust_kprobe_addr(&cfg, BASE, 0, endbr), Some((BASE, true)));
    assert_eq!(adjust_kprobe_addr(&ibt, BASE, 0, None), None);
}

#[test]
fn kgdb_kcfi_lock_prefix() {
    let img = corpus::hand_written_image();
    let cfg = Config::default();
    let refused = img.symbols[4].0;
    let kcfi = img.symbols[6].0;
    // A kgdb breakpoint before the site makes the rest of the function unprobeable.
    assert!(can_probe(&img, &cfg, refused + 12), "hlt");
    let kgdb = Config { kgdb: true, ..cfg };
    assert!(!can_probe(&img, &kgdb, refused + 12));
    // The movl and addl of a kCFI check, not the call after it.
    let cfi = Config {
        cfi_clang: true,
        ..cfg
    };
    assert!(can_probe(&img, &cfg, kcfi) && can_probe(&img, &cfg, kcfi + 6));
    assert!(!can_probe(&img, &cfi, kcfi) && !can_probe(&img, &cfi, kcfi + 6));
    assert!(can_probe(&img, &cfi, kcfi + 14));
    // A lock prefix the alternatives may patch.
    assert_eq!(
        prepare_kprobe(&img, &cfg, BASE + 0x1f, NEAR, false),
        Err(errno::EINVAL)
    );
}

#[test]
fn optprobe_detour() {
    let img = corpus::hand_written_image();
    let cfg = Config {
        smap: true,
        ..Config::default()
    };
    let code = [0x90u8; 0x40];
    let tmpl = Template {
        code: &code,
        clac: 4,
        val: 0x10,
        call: 0x1a,
        callback: 0xffff_ffff_8123_4560,
    };
    let op = 0xffff_8880_0000_1000;
    let a = BASE + PUSH;
    let mut buf = vec![0u8; tmpl.max_optinsn_size()];
    let o = prepare_optimized_kprobe(&img, &cfg, a, NEAR, op, &tmpl, &mut buf).expect("ok");
    // push; mov %rsp,%rbp; mov 0x100(%rip),%rax: 1 + 3 + 7 bytes cover the jump.
    assert_eq!((o.size, o.len), (11, 0x40 + 11 + 5));
    assert_eq!(buf[4..7], [0x0f, 0x01, 0xca], "clac");
    assert_eq!(buf[0x10..0x12], [0x48, 0xbf]);
    assert_eq!(buf[0x12..0x1a], op.to_le_bytes());
    let call = (tmpl.callback.wrapping_sub(NEAR + 0x1a + 5) as u32).to_le_bytes();
    assert_eq!(buf[0x1a..0x1f], [0xe8, call[0], call[1], call[2], call[3]]);
    assert_eq!(buf[0x40..0x44], [0x55, 0x48, 0x89, 0xe5]);
    let disp = (0x100i64 + (a as i64 + 4) - (NEAR as i64 + 0x44)) as i32;
    assert_eq!(buf[0x47..0x4b], disp.to_le_bytes());
    assert_eq!(buf[0x4b..0x50], jmp_from(NEAR + 0x4b, a + 11));

    let mut buf = vec![0u8; tmpl.max_optinsn_size()];
    assert_eq!(
        prepare_optimized_kprobe(&img, &cfg, a, FAR, op, &tmpl, &mut buf),
        Err(errno::ERANGE)
    );
    let mut short = vec![0u8; tmpl.max_optinsn_size() - 1];
    assert_eq!(
        prepare_optimized_kprobe(&img, &cfg, a, NEAR, op, &tmpl, &mut short),
        Err(errno::EINVAL)
    );
}
