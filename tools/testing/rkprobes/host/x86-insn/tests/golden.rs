// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: `tools/testing/rkprobes/decoder/golden.txt` (see its header for the format).

use rkprobes_x86_insn::{BranchKind, Emulation, Error, Insn, Mode};

const GOLDEN: &str = include_str!("../../../decoder/golden.txt");

/// Where the vectors pretend each instruction is, and where its out-of-line copy goes.
const ADDR: u64 = 0xffff_ffff_8100_0000;
const SLOT: u64 = ADDR - 0x10_0000;

fn parse_int(s: &str) -> i64 {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match s.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|e| panic!("bad number {s}: {e}"));
    if neg {
        -v
    } else {
        v
    }
}

fn emulation_name(e: Emulation) -> String {
    match e {
        Emulation::None => "none".into(),
        Emulation::IfModifier(_) => "if".into(),
        Emulation::Ret => "ret".into(),
        Emulation::Call { .. } => "call".into(),
        Emulation::Jmp { .. } => "jmp".into(),
        Emulation::Jcc { .. } => "jcc".into(),
        Emulation::Loop { .. } => "loop".into(),
        Emulation::CallIndirect { reg } => format!("callind.{reg}"),
        Emulation::JmpIndirect { reg } => format!("jmpind.{reg}"),
    }
}

fn branch_name(kind: BranchKind) -> String {
    match kind {
        BranchKind::Jmp => "jmp".into(),
        BranchKind::Call => "call".into(),
        BranchKind::Jcc(cc) => format!("jcc.{cc}"),
        BranchKind::Loop(n) => format!("loop.{n}"),
    }
}

/// Checks one vector; returns a description of each disagreement.
fn check(line: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let (data, _comment) = line.split_once(" # ").unwrap_or((line, ""));
    let (input, notes) = data.split_once(" ; ").expect("MODE BYTES ; NOTES");
    let mut words = input.split_whitespace();
    let mode = match words.next() {
        Some("64") => Mode::Bits64,
        Some("32") => Mode::Bits32,
        other => panic!("bad mode {other:?}"),
    };
    let bytes: Vec<u8> = words
        .map(|h| u8::from_str_radix(h, 16).expect("hex byte"))
        .collect();
    let notes: Vec<(&str, &str)> = notes
        .split_whitespace()
        .map(|kv| kv.split_once('=').expect("KEY=VALUE"))
        .collect();
    let note = |key: &str| notes.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let flag = |key: &str| note(key) == Some("y");

    // Trailing bytes must not change the result: the decoder stops at the instruction's end.
    let mut padded = bytes.clone();
    padded.extend_from_slice(&[0x90; 16]);
    let result = Insn::decode(&bytes, mode);

    if let Some(err) = note("err") {
        let want = match err {
            "NoData" => Error::NoData,
            "Invalid" => Error::Invalid,
            _ => panic!("unknown error {err}"),
        };
        if result != Err(want) {
            bad.push(format!("expected {want:?}, got {result:?}"));
        }
        if want == Error::Invalid && Insn::decode(&padded, mode) != Err(want) {
            bad.push("padding changed an Invalid result".into());
        }
        return bad;
    }
    let insn = match result {
        Ok(insn) => insn,
        Err(e) => return vec![format!("decode failed: {e:?}")],
    };
    if Insn::decode(&padded, mode) != Ok(insn) {
        bad.push("trailing bytes changed the decoding".into());
    }
    let want_len = note("len").map(|l| parse_int(l) as usize);
    if want_len != Some(insn.len()) {
        bad.push(format!("length {} (want {want_len:?})", insn.len()));
    }
    if insn.bytes() != &bytes[..insn.len().min(bytes.len())] {
        bad.push("bytes() differ from the input".into());
    }

    let disp = note("disp").map(parse_int);
    let got_disp = insn
        .is_rip_relative()
        .then(|| i64::from(insn.displacement().value));
    if disp != got_disp {
        bad.push(format!("rip-relative {got_disp:?} (want {disp:?})"));
    }
    if let Some(d) = disp {
        let target = (ADDR + insn.len() as u64).wrapping_add_signed(d);
        if insn.rip_relative_target(ADDR) != Some(target) {
            bad.push("rip_relative_target".into());
        }
    }

    let branch = insn.branch().map(|b| branch_name(b.kind));
    if branch.as_deref() != note("branch") {
        bad.push(format!("branch {branch:?} (want {:?})", note("branch")));
    }
    let target = insn
        .branch_target(ADDR)
        .map(|t| t.wrapping_sub(ADDR) as i64);
    if target != note("target").map(parse_int) {
        bad.push(format!("target {target:?} (want {:?})", note("target")));
    }
    if insn.branch().is_some_and(|b| b.kind == BranchKind::Call) {
        if insn.jump_target(ADDR).is_some() {
            bad.push("a call is not a jump into a range".into());
        }
    } else if insn.jump_target(ADDR) != insn.branch_target(ADDR) {
        bad.push("jump_target differs from branch_target".into());
    }

    let emul = match insn.emulation() {
        Ok(e) => emulation_name(e),
        Err(Error::NotSupported) => "unsupported".into(),
        Err(e) => format!("{e:?}"),
    };
    if emul != note("emul").unwrap_or("none") {
        bad.push(format!("emulation {emul} (want {:?})", note("emul")));
    }
    if let Some(b) = note("boost") {
        if insn.can_boost() != (b == "y") {
            bad.push(format!("can_boost {} (want {b})", insn.can_boost()));
        }
    }
    for (key, got) in [
        ("exc", insn.is_exception()),
        ("ijmp", insn.is_indirect_jump()),
        ("masks", insn.masks_exception()),
        ("emu", insn.emulate_prefix_size() != 0),
    ] {
        if got != flag(key) {
            bad.push(format!("{key} {got} (want {})", flag(key)));
        }
    }

    let mut slot = [0u8; 16];
    let copied = insn.copy_out_of_line(ADDR, SLOT, &mut slot);
    if note("copy") == Some("invalid") {
        if copied != Err(Error::Invalid) {
            bad.push(format!("copy {copied:?} (want Invalid)"));
        }
    } else {
        match copied {
            Ok(n) if n == insn.len() => {
                // The copy at SLOT must reach what the original at ADDR reaches.
                match Insn::decode(&slot[..n], mode) {
                    Ok(copy) => {
                        if copy.rip_relative_target(SLOT) != insn.rip_relative_target(ADDR) {
                            bad.push("copy does not address the same memory".into());
                        }
                        if copy.opcode() != insn.opcode() {
                            bad.push("copy changed the opcode".into());
                        }
                    }
                    Err(e) => bad.push(format!("copy does not decode: {e:?}")),
                }
            }
            other => bad.push(format!("copy {other:?}")),
        }
    }
    bad
}

#[test]
fn golden_vectors() {
    let mut count = 0;
    let mut failures = Vec::new();
    for line in GOLDEN.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        count += 1;
        for problem in check(line) {
            failures.push(format!("{line}\n    {problem}"));
        }
    }
    println!("{count} golden vectors, {} failures", failures.len());
    assert!(count >= 200, "only {count} golden vectors found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn far_displacement_is_refused() {
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
