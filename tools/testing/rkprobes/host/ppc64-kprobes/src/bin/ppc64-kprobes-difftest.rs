// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust ppc64 kprobes decisions with upstream's C over every function word of a
//! ppc64le vmlinux's `.text` (or every word of a stripped ELF's, such as the pipeline's static
//! busybox), and over a synthetic text of random words.
//!
//! ```text
//! ppc64-kprobes-difftest [--random N] [--opt N] [--seed S] [--show N] [--skew] [ELF...]
//! ```

use rkprobes_difftest_common::cli::{or_exit, unknown_option, Args};
use rkprobes_difftest_common::report::Totals;
use rkprobes_difftest_common::upstream;
use rkprobes_ppc64_kprobes::{diff, image, Image};
use std::sync::Arc;

const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/ppc64-rust-kunit/vmlinux";

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 2_000_000usize;
    let mut elves: Vec<String> = Vec::new();
    let mut args = Args::from_env();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--random" => random = args.number("--random") as usize,
            "--opt" => opts.opt_scenarios = args.number("--opt") as usize,
            "--seed" => opts.seed = args.number("--seed"),
            "--show" => opts.show = args.number("--show") as usize,
            "--skew" => opts.skew_prev = true,
            "-h" | "--help" => {
                println!("usage: ppc64-kprobes-difftest [--random N] [--opt N] [--seed S] [--show N] [--skew] [ELF...]");
                return;
            }
            _ if a.starts_with('-') => unknown_option(&a),
            _ => elves.push(a),
        }
    }

    if elves.is_empty() {
        elves.push(upstream::vmlinux("RKPROBES_PPC64_VMLINUX", DEFAULT_VMLINUX));
    }
    let mut images = Vec::new();
    for elf in elves.iter().filter(|e| !e.is_empty()) {
        if std::path::Path::new(elf).exists() {
            images.push(or_exit(Image::from_elf(elf), ""));
        } else {
            println!("SKIP: no ppc64 ELF at {elf} (set RKPROBES_PPC64_VMLINUX)");
        }
    }
    if random > 0 {
        images.push(image::random_image(random, opts.seed));
    }
    match diff::constants_mismatches() {
        Some(0) => println!(
            "BREAKPOINT_INSTRUCTION, MCOUNT_INSN_SIZE, arch_kprobe_on_func_entry(), arch_adjust_kprobe_addr(): same"
        ),
        Some(n) => {
            println!("BREAKPOINT_INSTRUCTION, MCOUNT_INSN_SIZE, arch_kprobe_on_func_entry(), arch_adjust_kprobe_addr(): {n} differences");
            std::process::exit(1);
        }
        None => {}
    }
    let mut totals = Totals::default();
    for img in images {
        let rep = or_exit(diff::run(Arc::new(img), &opts), "cannot compare: ");
        rep.print();
        totals.add(&rep);
    }
    totals.finish("sites");
}
