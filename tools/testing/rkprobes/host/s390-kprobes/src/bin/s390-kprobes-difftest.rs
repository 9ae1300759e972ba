// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust s390 kprobes decisions with upstream's C over a synthetic text of random
//! instructions, and over the `.text` of stripped s390x ELF files (such as the pipeline's
//! static busybox).
//!
//! ```text
//! s390-kprobes-difftest [--random N] [--seed S] [--show N] [--skew] [ELF...]
//! ```

use rkprobes_difftest_common::cli::{or_exit, unknown_option, Args};
use rkprobes_difftest_common::report::Totals;
use rkprobes_s390_kprobes::{diff, image};

/// Where the synthetic text is mapped (an s390 kernel-like address the host has free).
const BASE: u64 = 0x3ff_e000_0000;

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 2_000_000usize;
    let mut elves: Vec<String> = Vec::new();
    let mut args = Args::from_env();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--random" => random = args.number("--random") as usize,
            "--seed" => opts.seed = args.number("--seed"),
            "--show" => opts.show = args.number("--show") as usize,
            "--skew" => opts.skew_slot = true,
            "-h" | "--help" => {
                println!(
                    "usage: s390-kprobes-difftest [--random N] [--seed S] [--show N] [--skew]"
                );
                return;
            }
            _ if a.starts_with('-') => unknown_option(&a),
            _ => elves.push(a),
        }
    }
    match diff::insn_length_mismatches() {
        Some(0) => println!("insn_length() of every first byte, MCOUNT_INSN_SIZE: same"),
        Some(n) => {
            println!("insn_length(): {n} differences");
            std::process::exit(1);
        }
        None => {}
    }
    if let Some((n, bad)) = diff::known_insn_sweep(opts.seed) {
        println!("is_known_insn() of every first byte and opcode byte: {n} instructions, {bad} mismatches");
        if bad != 0 {
            std::process::exit(1);
        }
    }
    let mut totals = Totals::default();
    for elf in &elves {
        let img = or_exit(image::Image::from_stripped_elf(elf, BASE), "");
        let rep = or_exit(diff::run(&img, &opts), "cannot compare: ");
        rep.print();
        totals.add(&rep);
    }
    if random > 0 {
        let img = image::random_image(random, opts.seed, BASE);
        let rep = or_exit(diff::run(&img, &opts), "cannot compare: ");
        rep.print();
        totals.add(&rep);
    }
    totals.finish("sites");
}
