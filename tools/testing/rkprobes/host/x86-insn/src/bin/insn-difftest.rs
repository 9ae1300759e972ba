// SPDX-License-Identifier: GPL-2.0

//! Differential test of the Rust x86 decoder against `objdump -d` over a whole vmlinux.
//!
//! Usage: `insn-difftest [--objdump PROG] [--section NAME] [--verbose] <vmlinux>`.
//!
//! Like the kernel's `arch/x86/tools/insn_decoder_test`, it disassembles the section (default
//! `.text`) and checks that the decoder gives every instruction the length objdump gives it,
//! skipping what objdump could not decode or printed as a lone prefix (the rules of
//! `objdump_reformat.awk`). The decoder reads the real bytes that follow each instruction,
//! taken from the ELF file. Ends with `N instructions, M mismatches`; exits 1 if M > 0.

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};

use rkprobes_x86_insn::{Insn, Mode};

#[path = "../elf.rs"]
mod elf;

/// Mnemonics objdump prints for bytes it could not decode as a whole instruction: `(bad)`,
/// `.byte`, or prefixes alone (`objdump_reformat.awk` lists single ones; objdump also prints
/// runs such as `cs rex.WR` when it loses sync in data placed in a text section).
fn is_bad(mnemonic: &str) -> bool {
    const PREFIXES: [&str; 18] = [
        "lock", "rep", "repz", "repnz", "repe", "repne", "es", "cs", "ss", "ds", "fs", "gs",
        "data16", "data32", "addr16", "addr32", "addr64", "notrack",
    ];
    mnemonic.contains("(bad)")
        || mnemonic.contains("<unknown>")
        || mnemonic.starts_with(".byte")
        || mnemonic
            .split_whitespace()
            .all(|w| w.starts_with("rex") || PREFIXES.contains(&w))
}

struct Line {
    addr: u64,
    bytes: Vec<u8>,
    mnemonic: String,
}

/// Parses `  addr:\tbb bb bb \tmnemonic ...` (GNU) or `  addr: bb bb   \tmnemonic` (LLVM).
fn parse_line(line: &str) -> Option<Line> {
    let (addr, rest) = line.trim_start().split_once(':')?;
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let rest = rest.strip_prefix('\t').or_else(|| rest.strip_prefix(' '))?;
    let (hex, mnemonic) = match rest.split_once('\t') {
        Some((h, m)) => (h, m.trim().to_string()),
        None => (rest, String::new()),
    };
    let mut bytes = Vec::new();
    for tok in hex.split_whitespace() {
        if tok.len() != 2 {
            return None;
        }
        bytes.push(u8::from_str_radix(tok, 16).ok()?);
    }
    if bytes.is_empty() {
        return None;
    }
    Some(Line {
        addr,
        bytes,
        mnemonic,
    })
}

fn find_objdump() -> Option<String> {
    ["objdump", "llvm-objdump-22", "llvm-objdump"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        })
        .map(String::from)
}

fn main() -> ExitCode {
    let mut objdump = None;
    let mut section = ".text".to_string();
    let mut verbose = false;
    let mut vmlinux = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--objdump" => objdump = args.next(),
            "--section" => section = args.next().unwrap_or_default(),
            "--verbose" | "-v" => verbose = true,
            _ if vmlinux.is_none() && !arg.starts_with('-') => vmlinux = Some(arg),
            _ => vmlinux = None,
        }
    }
    let Some(vmlinux) = vmlinux else {
        eprintln!("usage: insn-difftest [--objdump PROG] [--section NAME] [--verbose] <vmlinux>");
        return ExitCode::from(2);
    };
    let Some(objdump) = objdump.or_else(find_objdump) else {
        eprintln!("insn-difftest: no objdump found (install binutils or llvm-22)");
        return ExitCode::from(2);
    };
    let file = match std::fs::read(&vmlinux) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("insn-difftest: cannot read {vmlinux}: {e}");
            return ExitCode::from(2);
        }
    };
    let text = match elf::section(&file, &section) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("insn-difftest: {vmlinux}: {e}");
            return ExitCode::from(2);
        }
    };
    drop(file);
    let mode = if text.is_64 {
        Mode::Bits64
    } else {
        Mode::Bits32
    };

    let mut child = match Command::new(&objdump)
        .arg("-d")
        .arg("-j")
        .arg(&section)
        .arg(&vmlinux)
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("insn-difftest: cannot run {objdump}: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(stdout) = child.stdout.take() else {
        eprintln!("insn-difftest: no output from {objdump}");
        return ExitCode::from(2);
    };

    let mut insns = 0u64;
    let mut mismatches = 0u64;
    let mut skipped = 0u64;
    let mut symbol = String::from("<unknown>");
    // An instruction whose bytes continue on the next objdump line(s).
    let mut pending: Option<Line> = None;
    let mut check = |line: Line, symbol: &str| {
        if is_bad(&line.mnemonic) {
            skipped += 1;
            return;
        }
        let mut start = line.addr;
        let mut expected = line.bytes.len();
        // objdump folds `fwait` into a following x87 instruction; count it separately.
        if line.bytes.len() > 1 && line.bytes[0] == 0x9b && line.mnemonic != "fwait" {
            check_one(
                &text,
                mode,
                start,
                1,
                symbol,
                &line.mnemonic,
                verbose,
                &mut insns,
                &mut mismatches,
            );
            start += 1;
            expected -= 1;
        }
        check_one(
            &text,
            mode,
            start,
            expected,
            symbol,
            &line.mnemonic,
            verbose,
            &mut insns,
            &mut mismatches,
        );
    };
    for raw in BufReader::new(stdout).lines() {
        let Ok(raw) = raw else { break };
        if raw.ends_with(">:") {
            if let Some(p) = pending.take() {
                check(p, &symbol);
            }
            symbol = raw
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .trim_end_matches(':')
                .to_string();
            continue;
        }
        let Some(line) = parse_line(&raw) else {
            continue;
        };
        match pending.as_mut() {
            Some(p) if line.mnemonic.is_empty() && line.addr == p.addr + p.bytes.len() as u64 => {
                p.bytes.extend_from_slice(&line.bytes);
            }
            _ => {
                if let Some(p) = pending.replace(line) {
                    check(p, &symbol);
                }
            }
        }
    }
    if let Some(p) = pending.take() {
        check(p, &symbol);
    }
    let status = child.wait();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("insn-difftest: {objdump} failed");
        return ExitCode::from(2);
    }
    println!("{objdump} -d -j {section} {vmlinux}: {skipped} lines skipped as not one instruction (bad or a lone prefix)");
    println!("{insns} instructions, {mismatches} mismatches");
    if mismatches > 0 || insns == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[expect(clippy::too_many_arguments)]
fn check_one(
    text: &elf::Section,
    mode: Mode,
    addr: u64,
    expected: usize,
    symbol: &str,
    mnemonic: &str,
    verbose: bool,
    insns: &mut u64,
    mismatches: &mut u64,
) {
    *insns += 1;
    let off = addr.wrapping_sub(text.addr) as usize;
    let input = text.data.get(off..).unwrap_or(&[]);
    let got = Insn::decode(input, mode);
    let ok = matches!(got, Ok(insn) if insn.len() == expected);
    if !ok {
        *mismatches += 1;
        if verbose || *mismatches <= 50 {
            let shown = &input[..input.len().min(expected.max(1)).min(15)];
            let hex: Vec<String> = shown.iter().map(|b| format!("{b:02x}")).collect();
            let got = match got {
                Ok(insn) => format!("{} bytes", insn.len()),
                Err(e) => format!("error {e:?}"),
            };
            eprintln!(
                "mismatch at {addr:#x} {symbol}: {} ({mnemonic}): objdump {expected} bytes, decoder {got}",
                hex.join(" ")
            );
        }
    }
}
