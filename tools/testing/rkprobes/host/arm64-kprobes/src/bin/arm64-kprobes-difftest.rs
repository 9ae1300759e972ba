// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust arm64 kprobes decisions and simulators with upstream's C over every
//! function word of an arm64 vmlinux's `.text`, and over a synthetic text of random words.
//!
//! ```text
//! arm64-kprobes-difftest [--random N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]
//! ```

use rkprobes_arm64_kprobes::{diff, image, Image};
use rkprobes_difftest_common::cli::{or_exit, unknown_option, Args};
use rkprobes_difftest_common::report::Totals;
use rkprobes_difftest_common::upstream;
use std::sync::Arc;

const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/arm64-rust-kunit/vmlinux";

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 4_000_000usize;
    let mut vmlinux = upstream::vmlinux("RKPROBES_ARM64_VMLINUX", DEFAULT_VMLINUX);
    let mut args = Args::from_env();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--random" => random = args.number("--random") as usize,
            "--states" => opts.states = args.number("--states") as usize,
            "--seed" => opts.seed = args.number("--seed"),
            "--show" => opts.show = args.number("--show") as usize,
            "--skew" => opts.skew_x0 = true,
            "-h" | "--help" => {
                println!("usage: arm64-kprobes-difftest [--random N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]");
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
