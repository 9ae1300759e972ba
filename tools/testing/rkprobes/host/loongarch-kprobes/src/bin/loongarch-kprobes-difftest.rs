// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust loongarch64 kprobes decisions and simulators with upstream's C over every
//! function word of a loongarch64 vmlinux's `.text`, and over a synthetic text of random words.
//!
//! ```text
//! loongarch-kprobes-difftest [--random N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]
//! ```

use rkprobes_difftest_common::cli::{or_exit, unknown_option, Args};
use rkprobes_difftest_common::report::Totals;
use rkprobes_difftest_common::upstream;
use rkprobes_loongarch_kprobes::{diff, image, Image};
use std::sync::Arc;

const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/loongarch-rust-kunit/vmlinux";

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 4_000_000usize;
    let mut vmlinux = upstream::vmlinux("RKPROBES_LOONGARCH_VMLINUX", DEFAULT_VMLINUX);
    let mut args = Args::from_env();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--random" => random = args.number("--random") as usize,
            "--states" => opts.states = args.number("--states") as usize,
            "--seed" => opts.seed = args.number("--seed"),
            "--show" => opts.show = args.number("--show") as usize,
            "--skew" => opts.skew_a0 = true,
            "-h" | "--help" => {
                println!("usage: loongarch-kprobes-difftest [--random N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]");
                return;
            }
            _ if a.starts_with('-') => unknown_option(&a),
            _ => vmlinux = a,
        }
    }

    let mut images = Vec::new();
    if !vmlinux.is_empty() {
        images.push(or_exit(Image::from_elf(&vmlinux), ""));
    }
    if random > 0 {
        images.push(image::random_image(random, opts.seed));
    }
    let mut totals = Totals::default();
    for img in images {
        let rep = or_exit(diff::run(Arc::new(img), &opts), "cannot compare: ");
        rep.print();
        totals.add(&rep);
    }
    totals.finish("simulations");
}
