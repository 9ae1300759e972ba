// SPDX-License-Identifier: GPL-2.0

//! Seeded random bytes never make the decoder panic or look past its input.

mod common;

use common::{input_count, instruction_like, Rng};
use rkprobes_x86_insn::{Error, Insn, Mode, MAX_INSN_SIZE};

fn exercise(insn: &Insn, rng: &mut Rng) {
    // The kprobes analyses are total too.
    let addr = rng.next_u64();
    let _ = insn.emulation();
    let _ = insn.can_boost();
    let _ = insn.branch_target(addr);
    let _ = insn.jump_target(addr);
    let _ = insn.rip_relative_target(addr);
    let _ = insn.is_exception();
    let _ = insn.masks_exception();
    let _ = insn.is_indirect_jump();
    let mut slot = [0u8; MAX_INSN_SIZE];
    let room = rng.below(MAX_INSN_SIZE as u64 + 1) as usize;
    if let Ok(n) = insn.copy_out_of_line(addr, rng.next_u64(), &mut slot[..room]) {
        assert!(n == insn.len() && n <= room);
    }
}

#[test]
fn random_bytes_are_handled() {
    let count = input_count(4_000_000);
    let mut rng = Rng::new(0x6b70_726f_6265_7321);
    let mut buf = [0u8; 16];
    let (mut ok, mut nodata, mut invalid) = (0u64, 0u64, 0u64);
    for i in 0..count {
        let mode = if i % 4 == 3 {
            Mode::Bits32
        } else {
            Mode::Bits64
        };
        let n = instruction_like(&mut rng, &mut buf);
        let input = &buf[..n];
        match Insn::decode(input, mode) {
            Ok(insn) => {
                ok += 1;
                let len = insn.len();
                assert!(
                    (1..=MAX_INSN_SIZE).contains(&len) && len <= n,
                    "{input:02x?}"
                );
                assert_eq!(insn.bytes(), &input[..len]);
                // Only the instruction's own bytes matter: exactly them decode the same ...
                assert_eq!(Insn::decode(&input[..len], mode), Ok(insn), "{input:02x?}");
                // ... and one byte fewer is missing data, not another instruction.
                let cut = rng.below(len as u64) as usize;
                assert_eq!(
                    Insn::decode(&input[..cut], mode),
                    Err(Error::NoData),
                    "{input:02x?} cut at {cut}"
                );
                let parts = insn.immediate_offset()
                    + usize::from(insn.immediate().size)
                    + usize::from(insn.immediate2().size);
                assert_eq!(parts, len, "parts do not add up: {input:02x?}");
                exercise(&insn, &mut rng);
            }
            Err(Error::NoData) => nodata += 1,
            Err(Error::Invalid) => invalid += 1,
            Err(e) => panic!("decode returned {e:?} for {input:02x?}"),
        }
    }
    println!("{count} random inputs: {ok} decoded, {nodata} NoData, {invalid} Invalid, no panic");
    assert_eq!(ok + nodata + invalid, count);
    // The generator must reach all three outcomes, or it tests too little.
    assert!(ok > count / 4 && nodata > count / 100 && invalid > count / 1000);
}

#[test]
fn empty_and_long_inputs() {
    assert_eq!(Insn::decode(&[], Mode::Bits64), Err(Error::NoData));
    // Sixteen prefixes: the decoder must stop at fifteen bytes.
    assert_eq!(Insn::decode(&[0x66; 64], Mode::Bits64), Err(Error::NoData));
    let nops = [0x90u8; 4096];
    assert_eq!(Insn::decode(&nops, Mode::Bits64).map(|i| i.len()), Ok(1));
}
