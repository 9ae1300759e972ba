// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust arm64 kprobes decisions and simulators with upstream's C over every
//! function word of an arm64 vmlinux's `.text`, and over a synthetic text of random words.
//!
//! ```text
//! arm64-kprobes-difftest [--random N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]
//! ```

use rkprobes_arm64_kprobes::{diff, image, Image};
use std::sync::Arc;

const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/arm64-rust-kunit/vmlinux";

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 4_000_000usize;
    let mut vmlinux = std::env::var("RKPROBES_ARM64_VMLINUX").unwrap_or(DEFAULT_VMLINUX.into());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |what: &str| -> u64 {
            let v = args.next().unwrap_or_default();
            let v = v
                .strip_prefix("0x")
                .map_or_else(|| v.parse(), |h| u64::from_str_radix(h, 16));
            v.unwrap_or_else(|_| {
                eprintln!("{what} takes a number");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--random" => random = num("--random") as usize,
            "--states" => opts.states = num("--states") as usize,
            "--seed" => opts.seed = num("--seed"),
            "--show" => opts.show = num("--show") as usize,
            "--skew" => opts.skew_x0 = true,
            "-h" | "--help" => {
                println!("usage: arm64-kprobes-difftest [--random N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]");
                return;
            }
            _ if a.starts_with('-') => {
                eprintln!("unknown option {a}");
                std::process::exit(2)
            }
            _ => vmlinux = a,
        }
    }

    let mut images = Vec::new();
    if !vmlinux.is_empty() {
        match Image::from_elf(&vmlinux) {
            Ok(img) => images.push(img),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        }
    }
    if random > 0 {
        images.push(image::random_image(random, opts.seed));
    }
    let (mut sites, mut mismatches) = (0, 0);
    let mut divergences = std::collections::BTreeMap::new();
    for img in images {
        let rep = match diff::run(Arc::new(img), &opts) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("cannot compare: {e}");
                std::process::exit(2)
            }
        };
        rep.print();
        sites += rep.sites;
        mismatches += rep.mismatches;
        for (k, v) in rep.divergences {
            *divergences.entry(k).or_insert(0u64) += v;
        }
    }
    for (k, v) in &divergences {
        println!("deliberate divergence ({v} simulations): {k}");
    }
    println!("{sites} sites, {mismatches} mismatches");
    if mismatches != 0 {
        std::process::exit(1);
    }
}
