// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: `tools/testing/rkprobes/decoder/golden.txt`, checked by the decoder's own
//! allocation-free checker (`golden.rs`), which a KUnit case can run in the kernel too.

use rkprobes_x86_insn::golden::check_line;
use rkprobes_x86_insn::{Error, Insn, Mode};

const GOLDEN: &str = include_str!("../../../decoder/golden.txt");

#[test]
fn golden_vectors() {
    let mut count = 0;
    let mut failures = Vec::new();
    for (nr, line) in GOLDEN.lines().enumerate() {
        match check_line(line) {
            Ok(true) => count += 1,
            Ok(false) => {}
            Err(why) => failures.push(format!("golden.txt:{}: {}: {line}", nr + 1, why.0)),
        }
    }
    println!("{count} golden vectors pass, {} fail", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(count >= 200, "only {count} golden vectors");
}

#[test]
fn the_checker_catches_wrong_vectors() {
    for bad in [
        "64 90 ; len=2 # wrong length",
        "64 c3 ; len=1 # ret needs emul=ret",
        "64 eb 10 ; len=2 branch=jmp target=+0x10 emul=jmp # wrong target",
        "64 48 8b 05 10 00 00 00 ; len=7 # RIP-relative without disp=",
        "64 0f 0b ; len=2 # ud2 without exc=y",
        "64 90 ; len=1 boost=n # nop is boostable",
        "64 48 ; err=Invalid # it is NoData",
        "64 ff e0 ; len=2 emul=jmpind.1 ijmp=y # wrong register",
        "16 90 ; len=1 # no such mode",
    ] {
        assert!(check_line(bad).is_err(), "accepted: {bad}");
    }
}

#[test]
fn far_displacement_is_refused() {
    const ADDR: u64 = 0xffff_ffff_8100_0000;
    // movq 0x10(%rip), %rax copied 4 GiB away cannot keep a 32-bit displacement.
    let insn = Insn::decode(&[0x48, 0x8b, 0x05, 0x10, 0, 0, 0], Mode::Bits64).unwrap();
    let mut slot = [0u8; 15];
    assert_eq!(
        insn.copy_out_of_line(ADDR, ADDR - (1 << 32), &mut slot),
        Err(Error::Invalid)
    );
    assert_eq!(
        insn.copy_out_of_line(ADDR, ADDR, &mut slot[..3]),
        Err(Error::Invalid)
    );
    assert_eq!(insn.copy_out_of_line(ADDR, ADDR - 0x10, &mut slot), Ok(7));
    assert_eq!(&slot[3..7], &0x20i32.to_le_bytes());
}

#[test]
fn errnos_match_the_kernel() {
    assert_eq!(Error::NoData.to_errno(), -61);
    assert_eq!(Error::Invalid.to_errno(), -22);
    assert_eq!(Error::NotSupported.to_errno(), -95);
}
