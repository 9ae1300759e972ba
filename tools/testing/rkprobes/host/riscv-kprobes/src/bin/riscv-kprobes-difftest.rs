// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust riscv kprobes decisions and simulators with upstream's C at every
//! instruction boundary of the function symbols of a riscv vmlinux's `.text`, over a
//! synthetic text of random instructions, and on loose random words.
//!
//! ```text
//! riscv-kprobes-difftest [--random N] [--words N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]
//! ```

use rkprobes_difftest_common::cli::{or_exit, unknown_option, Args};
use rkprobes_difftest_common::report::Totals;
use rkprobes_difftest_common::upstream;
use rkprobes_riscv_kprobes::{diff, image, Image};
use std::sync::Arc;

const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/riscv-rust-kunit/vmlinux";

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 4_000_000usize;
    let mut words = 4_000_000u64;
    let mut vmlinux = upstream::vmlinux("RKPROBES_RISCV_VMLINUX", DEFAULT_VMLINUX);
    let mut args = Args::from_env();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--random" => random = args.number("--random") as usize,
            "--words" => words = args.number("--words"),
            "--states" => opts.states = args.number("--states") as usize,
            "--seed" => opts.seed = args.number("--seed"),
            "--show" => opts.show = args.number("--show") as usize,
            "--skew" => opts.skew_addr = true,
            "-h" | "--help" => {
                println!("usage: riscv-kprobes-difftest [--random N] [--words N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]");
                return;
            }
            _ if a.starts_with('-') => unknown_option(&a),
            _ => vmlinux = a,
        }
    }

    let mut images = Vec::new();
    if !vmlinux.is_empty() {
        if let Some(path) = upstream::existing_vmlinux(vmlinux, "riscv", "RKPROBES_RISCV_VMLINUX") {
            images.push(or_exit(Image::from_elf(&path), ""));
        }
    }
    if random > 0 {
        images.push(image::random_image(random, opts.seed));
    }
    let mut reports = Vec::new();
    for img in images {
        reports.push(or_exit(diff::run(Arc::new(img), &opts), "cannot compare: "));
    }
    if words > 0 {
        reports.push(or_exit(diff::run_words(words, &opts), "cannot compare: "));
    }
    let mut totals = Totals::default();
    for rep in reports {
        rep.print();
        totals.add(&rep);
    }
    totals.finish("times");
}
