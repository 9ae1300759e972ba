// SPDX-License-Identifier: GPL-2.0

//! Fuzz target: any bytes, in both modes, through the decoder and every kprobes analysis.
//!
//! Checks the same properties as `tests/random.rs`, for as long as the fuzzer runs: no panic,
//! a decoded length within the input and 15 bytes, and a result that depends on the
//! instruction's own bytes only.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rkprobes_x86_insn::{Error, Insn, Mode, MAX_INSN_SIZE};

fuzz_target!(|data: &[u8]| {
    for mode in [Mode::Bits64, Mode::Bits32] {
        match Insn::decode(data, mode) {
            Ok(insn) => {
                let len = insn.len();
                assert!((1..=MAX_INSN_SIZE).contains(&len) && len <= data.len());
                assert_eq!(Insn::decode(&data[..len], mode), Ok(insn));
                assert_eq!(Insn::decode(&data[..len - 1], mode), Err(Error::NoData));
                let _ = insn.emulation();
                let _ = insn.can_boost();
                let _ = insn.branch_target(u64::MAX);
                let _ = insn.rip_relative_target(u64::MAX);
                let mut slot = [0u8; MAX_INSN_SIZE];
                let _ = insn.copy_out_of_line(u64::MAX, 0, &mut slot);
            }
            Err(e) => assert!(matches!(e, Error::NoData | Error::Invalid)),
        }
    }
});
