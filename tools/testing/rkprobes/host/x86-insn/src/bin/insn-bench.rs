// SPDX-License-Identifier: GPL-2.0

//! Benchmark: decode throughput of the Rust x86 decoder against the kernel's C decoder.
//!
//! Usage: `insn-bench [--section NAME] [--rounds N] <vmlinux>`.
//!
//! Both decoders walk the same byte stream (the section, default `.text`), instruction by
//! instruction (one byte on a decode error), in alternating timed rounds; the best round of
//! each is compared. The C decoder is built with `-O2`, as the kernel builds it. Prints `Rust/C ratio: R` where R is Rust throughput over C throughput (above 1
//! means the Rust decoder is faster). The C decoder is only present when `build.rs` found
//! the Linux tree; otherwise this says so and exits with status 2.

use std::process::ExitCode;

#[path = "../elf.rs"]
#[cfg_attr(
    rkprobes_c_decoder,
    expect(dead_code, reason = "the benchmark does not need load addresses")
)]
#[cfg_attr(
    not(rkprobes_c_decoder),
    expect(
        dead_code,
        reason = "without the C decoder there is nothing to benchmark"
    )
)]
mod elf;

#[cfg(rkprobes_c_decoder)]
#[path = "../c_decoder.rs"]
#[expect(dead_code, reason = "the benchmark needs only the length entry point")]
mod c_decoder;

#[cfg(not(rkprobes_c_decoder))]
fn main() -> ExitCode {
    eprintln!(
        "insn-bench: SKIP: the C decoder was not built; run `scripts/rkprobes setup` (or set \
         RKPROBES_LINUX_SRC to a Linux 6.12 tree) and rebuild"
    );
    ExitCode::from(2)
}

#[cfg(rkprobes_c_decoder)]
fn main() -> ExitCode {
    use rkprobes_x86_insn::Mode;
    use std::time::{Duration, Instant};

    let mut section = ".text".to_string();
    let mut rounds = 7u32;
    let mut vmlinux = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--section" => section = args.next().unwrap_or_default(),
            "--rounds" => rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            _ => vmlinux = Some(arg),
        }
    }
    let (Some(vmlinux), 1..) = (vmlinux, rounds) else {
        eprintln!("usage: insn-bench [--section NAME] [--rounds N] <vmlinux>");
        return ExitCode::from(2);
    };
    let text = match std::fs::read(&vmlinux)
        .map_err(|e| e.to_string())
        .and_then(|f| elf::section(&f, &section))
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("insn-bench: {vmlinux}: {e}");
            return ExitCode::from(2);
        }
    };
    let data = text.data.as_slice();
    let is_64 = text.is_64;
    let mode = if is_64 { Mode::Bits64 } else { Mode::Bits32 };

    let rust_walk = || rust_walk(data, mode);
    let c_walk = || c_walk(data, is_64);
    // Alternate the two so a change in machine load hits both alike; keep each one's best.
    let (mut rust_time, mut c_time) = (Duration::MAX, Duration::MAX);
    let (mut rust_count, mut c_count) = (0, 0);
    for _ in 0..rounds {
        let start = Instant::now();
        rust_count = rust_walk();
        rust_time = rust_time.min(start.elapsed());
        let start = Instant::now();
        c_count = c_walk();
        c_time = c_time.min(start.elapsed());
    }
    let mb = data.len() as f64 / 1e6;
    let report = |name: &str, t: Duration, n: u64| {
        println!(
            "{name}: {n} instructions, {mb:.1} MB in {:.3} ms: {:.1} MB/s, {:.1} M insn/s",
            t.as_secs_f64() * 1e3,
            mb / t.as_secs_f64(),
            n as f64 / 1e6 / t.as_secs_f64()
        );
    };
    println!("{vmlinux} {section}: best of {rounds} rounds");
    report("Rust", rust_time, rust_count);
    report("C   ", c_time, c_count);
    if rust_count != c_count {
        println!(
            "note: the decoders split the stream differently ({rust_count} vs {c_count} steps)"
        );
    }
    println!(
        "Rust/C ratio: {:.3} (throughput; above 1 means Rust is faster)",
        c_time.as_secs_f64() / rust_time.as_secs_f64()
    );
    ExitCode::SUCCESS
}

/// Walks `data` with the Rust decoder; returns the number of steps.
///
/// Kept out of line, like [`c_walk`], so a profiler (`valgrind --tool=callgrind`) can count
/// each decoder's instructions separately, independent of machine load.
#[cfg(rkprobes_c_decoder)]
#[inline(never)]
fn rust_walk(data: &[u8], mode: rkprobes_x86_insn::Mode) -> u64 {
    use rkprobes_x86_insn::Insn;
    use std::hint::black_box;

    let (mut off, mut count) = (0usize, 0u64);
    while let Some(rest) = data.get(off..).filter(|r| !r.is_empty()) {
        off += match Insn::decode(black_box(rest), mode) {
            Ok(insn) => insn.len(),
            Err(_) => 1,
        };
        count += 1;
    }
    count
}

/// Walks `data` with the C decoder; returns the number of steps.
#[cfg(rkprobes_c_decoder)]
#[inline(never)]
fn c_walk(data: &[u8], is_64: bool) -> u64 {
    use std::hint::black_box;

    let (mut off, mut count) = (0usize, 0u64);
    while let Some(rest) = data.get(off..).filter(|r| !r.is_empty()) {
        let len = c_decoder::length(black_box(rest), is_64);
        off += usize::try_from(len).ok().filter(|&l| l > 0).unwrap_or(1);
        count += 1;
    }
    count
}
