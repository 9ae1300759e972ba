// SPDX-License-Identifier: GPL-2.0

//! Golden-vector checker, shared by the host tests and an in-kernel self test.
//!
//! Constraints: `core` only and no allocation, so a KUnit case can run the very file the host
//! runs (`include_str!` of `tools/testing/rkprobes/decoder/golden.txt`); a failure names the
//! first property that disagrees.
//!
//! A vector is one line: `MODE HEX-BYTES ; KEY=VALUE ... # comment`; the keys are described
//! in the header of `golden.txt`. Lines starting with `#` and blank lines are not vectors.

use super::insn::{Error, Insn, Mode, MAX_INSN_SIZE};
use super::kprobes::{BranchKind, Emulation};

/// Address the vectors pretend each instruction is at.
const ADDR: u64 = 0xffff_ffff_8100_0000;
/// Address of the out-of-line copy (1 MiB below, so RIP-relative operands must be rewritten).
const SLOT: u64 = ADDR - 0x10_0000;

/// Why a golden vector failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch(pub &'static str);

// The parsing below avoids `str::split_whitespace`, `str::parse` and `from_str_radix`: where
// `core` is built with overflow checks, as in the kernel, those carry panic paths.

/// Splits `s` at the first `sep`; unlike `str::split_once`, it has no panic path.
fn split_at_first<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let (hay, needle) = (s.as_bytes(), sep.as_bytes());
    let end = |i: usize| i.saturating_add(needle.len());
    let at = (0..hay.len()).find(|&i| hay.get(i..end(i)) == Some(needle))?;
    Some((s.get(..at)?, s.get(end(at)..)?))
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The words of a string separated by ASCII white space.
struct Words<'a>(&'a str);

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.0.as_bytes();
        let mut start = 0usize;
        while bytes.get(start).is_some_and(|&b| is_space(b)) {
            start = start.saturating_add(1);
        }
        let mut end = start;
        while bytes.get(end).is_some_and(|&b| !is_space(b)) {
            end = end.saturating_add(1);
        }
        let word = self.0.get(start..end).filter(|w| !w.is_empty())?;
        self.0 = self.0.get(end..).unwrap_or("");
        Some(word)
    }
}

/// Parses digits in `radix` (10 or 16), with no sign.
fn parse_unsigned(s: &str, radix: u64) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.bytes().try_fold(0u64, |value, c| {
        let digit = match c {
            b'0'..=b'9' => c.wrapping_sub(b'0'),
            b'a'..=b'f' => c.wrapping_sub(b'a').wrapping_add(10),
            b'A'..=b'F' => c.wrapping_sub(b'A').wrapping_add(10),
            _ => return None,
        };
        if u64::from(digit) >= radix {
            return None;
        }
        value.checked_mul(radix)?.checked_add(u64::from(digit))
    })
}

/// The notes of a vector, looked up by key.
struct Notes<'a>(&'a str);

impl<'a> Notes<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        Words(self.0).find_map(|kv| {
            let (k, v) = split_at_first(kv, "=")?;
            (k == key).then_some(v)
        })
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key) == Some("y")
    }
}

/// Parses an optionally signed decimal or `0x` hexadecimal number.
fn parse_int(s: &str) -> Result<i64, Mismatch> {
    let bad = Mismatch("malformed number");
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let magnitude = match digits.strip_prefix("0x") {
        Some(hex) => parse_unsigned(hex, 16),
        None => parse_unsigned(digits, 10),
    }
    .ok_or(bad)?;
    let value = i64::try_from(magnitude).map_err(|_| bad)?;
    if neg {
        value.checked_neg().ok_or(bad)
    } else {
        Ok(value)
    }
}

/// Parses `NAME.N` into `N`, for `name` `NAME`.
fn numbered(s: &str, name: &str) -> Option<u8> {
    let digits = s.strip_prefix(name)?.strip_prefix('.')?;
    u8::try_from(parse_unsigned(digits, 10)?).ok()
}

fn branch_matches(kind: Option<BranchKind>, want: Option<&str>) -> bool {
    match (kind, want) {
        (None, None) => true,
        (Some(BranchKind::Jmp), Some("jmp")) | (Some(BranchKind::Call), Some("call")) => true,
        (Some(BranchKind::Jcc(cc)), Some(w)) => numbered(w, "jcc") == Some(cc),
        (Some(BranchKind::Loop(n)), Some(w)) => numbered(w, "loop") == Some(n),
        _ => false,
    }
}

fn emulation_matches(got: Result<Emulation, Error>, want: &str) -> bool {
    match got {
        Ok(Emulation::None) => want == "none",
        Ok(Emulation::IfModifier(_)) => want == "if",
        Ok(Emulation::Ret) => want == "ret",
        Ok(Emulation::Call { .. }) => want == "call",
        Ok(Emulation::Jmp { .. }) => want == "jmp",
        Ok(Emulation::Jcc { .. }) => want == "jcc",
        Ok(Emulation::Loop { .. }) => want == "loop",
        Ok(Emulation::CallIndirect { reg }) => numbered(want, "callind") == Some(reg),
        Ok(Emulation::JmpIndirect { reg }) => numbered(want, "jmpind") == Some(reg),
        Err(Error::NotSupported) => want == "unsupported",
        Err(_) => false,
    }
}

fn expect(ok: bool, what: &'static str) -> Result<(), Mismatch> {
    if ok {
        Ok(())
    } else {
        Err(Mismatch(what))
    }
}

/// Checks one line of a golden-vector file.
///
/// Returns `Ok(true)` for a vector that holds, `Ok(false)` for a comment or blank line.
pub fn check_line(line: &str) -> Result<bool, Mismatch> {
    let line = line.trim_ascii();
    if line.is_empty() || line.as_bytes().first() == Some(&b'#') {
        return Ok(false);
    }
    let data = split_at_first(line, " # ").map_or(line, |(d, _)| d);
    let (input, notes) =
        split_at_first(data, " ; ").ok_or(Mismatch("no ` ; ` between bytes and notes"))?;
    let notes = Notes(notes);
    let mut words = Words(input);
    let mode = match words.next() {
        Some("64") => Mode::Bits64,
        Some("32") => Mode::Bits32,
        _ => return Err(Mismatch("mode is not 64 or 32")),
    };
    // The input, then padding that must not change the result.
    let mut buf = [0x90u8; 2 * MAX_INSN_SIZE + 2];
    let mut n = 0;
    for word in words {
        let slot = buf.get_mut(n).ok_or(Mismatch("too many bytes"))?;
        let byte = parse_unsigned(word, 16).and_then(|b| u8::try_from(b).ok());
        *slot = byte.ok_or(Mismatch("malformed byte"))?;
        n = n.saturating_add(1);
    }
    let bytes = buf.get(..n).ok_or(Mismatch("too many bytes"))?;
    let result = Insn::decode(bytes, mode);
    let padded = Insn::decode(&buf, mode);

    if let Some(err) = notes.get("err") {
        let want = match err {
            "NoData" => Error::NoData,
            "Invalid" => Error::Invalid,
            _ => return Err(Mismatch("unknown err= value")),
        };
        expect(result == Err(want), "decoding does not fail as expected")?;
        if want == Error::Invalid {
            expect(padded == Err(want), "padding changes an Invalid result")?;
        }
        return Ok(true);
    }
    let insn = result.map_err(|_| Mismatch("decoding fails"))?;
    expect(
        padded == Ok(insn),
        "bytes after the instruction change its decoding",
    )?;
    let len = parse_int(notes.get("len").ok_or(Mismatch("no len= or err="))?)?;
    expect(insn.len() as i64 == len, "length")?;
    expect(Some(insn.bytes()) == bytes.get(..insn.len()), "bytes()")?;

    match notes.get("disp") {
        Some(d) => {
            let d = parse_int(d)?;
            expect(insn.is_rip_relative(), "not RIP-relative")?;
            expect(i64::from(insn.displacement().value) == d, "displacement")?;
            let target = ADDR.wrapping_add(insn.len() as u64).wrapping_add_signed(d);
            expect(
                insn.rip_relative_target(ADDR) == Some(target),
                "RIP-relative target",
            )?;
        }
        None => expect(!insn.is_rip_relative(), "unexpectedly RIP-relative")?,
    }

    let branch = insn.branch();
    expect(
        branch_matches(branch.map(|b| b.kind), notes.get("branch")),
        "branch kind",
    )?;
    let target = insn
        .branch_target(ADDR)
        .map(|t| t.wrapping_sub(ADDR) as i64);
    let want_target = notes.get("target").map(parse_int).transpose()?;
    expect(target == want_target, "branch target")?;
    let jump = insn.jump_target(ADDR);
    match branch.map(|b| b.kind) {
        Some(BranchKind::Call) => expect(jump.is_none(), "a call counted as a jump")?,
        _ => expect(jump == insn.branch_target(ADDR), "jump target")?,
    }

    expect(
        emulation_matches(insn.emulation(), notes.get("emul").unwrap_or("none")),
        "emulation",
    )?;
    if let Some(boost) = notes.get("boost") {
        expect(insn.can_boost() == (boost == "y"), "boostable")?;
    }
    expect(
        insn.is_exception() == notes.flag("exc"),
        "exception instruction",
    )?;
    expect(
        insn.is_indirect_jump() == notes.flag("ijmp"),
        "indirect jump",
    )?;
    expect(
        insn.masks_exception() == notes.flag("masks"),
        "MOV SS/POP SS",
    )?;
    expect(
        (insn.emulate_prefix_size() != 0) == notes.flag("emu"),
        "emulate prefix",
    )?;

    let mut slot = [0u8; MAX_INSN_SIZE];
    let copied = insn.copy_out_of_line(ADDR, SLOT, &mut slot);
    if notes.get("copy") == Some("invalid") {
        expect(copied == Err(Error::Invalid), "copy not refused")?;
        return Ok(true);
    }
    let copied = copied.map_err(|_| Mismatch("copy refused"))?;
    expect(copied == insn.len(), "copy length")?;
    let copy = Insn::decode(slot.get(..copied).unwrap_or(&[]), mode)
        .map_err(|_| Mismatch("the copy does not decode"))?;
    expect(
        copy.opcode() == insn.opcode(),
        "the copy changes the opcode",
    )?;
    expect(
        copy.rip_relative_target(SLOT) == insn.rip_relative_target(ADDR),
        "the copy addresses other memory",
    )?;
    Ok(true)
}
