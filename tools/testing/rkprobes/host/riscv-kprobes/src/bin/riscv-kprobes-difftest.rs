// SPDX-License-Identifier: GPL-2.0

//! Compares the Rust riscv kprobes decisions and simulators with upstream's C at every
//! instruction boundary of the function symbols of a riscv vmlinux's `.text`, over a
//! synthetic text of random instructions, and on loose random words.
//!
//! ```text
//! riscv-kprobes-difftest [--random N] [--words N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]
//! ```

use rkprobes_riscv_kprobes::{diff, image, Image};
use std::sync::Arc;

const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/riscv-rust-kunit/vmlinux";

fn main() {
    let mut opts = diff::Options::default();
    let mut random = 4_000_000usize;
    let mut words = 4_000_000u64;
    let mut vmlinux = std::env::var("RKPROBES_RISCV_VMLINUX").unwrap_or(DEFAULT_VMLINUX.into());
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
            "--words" => words = num("--words"),
            "--states" => opts.states = num("--states") as usize,
            "--seed" => opts.seed = num("--seed"),
            "--show" => opts.show = num("--show") as usize,
            "--skew" => opts.skew_addr = true,
            "-h" | "--help" => {
                println!("usage: riscv-kprobes-difftest [--random N] [--words N] [--states N] [--seed S] [--show N] [--skew] [VMLINUX]");
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
        if std::path::Path::new(&vmlinux).exists() {
            match Image::from_elf(&vmlinux) {
                Ok(img) => images.push(img),
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(2)
                }
            }
        } else {
            println!("SKIP: no riscv vmlinux at {vmlinux} (set RKPROBES_RISCV_VMLINUX)");
        }
    }
    if random > 0 {
        images.push(image::random_image(random, opts.seed));
    }
    let fail = |e: String| -> ! {
        eprintln!("cannot compare: {e}");
        std::process::exit(2)
    };
    let mut reports = Vec::new();
    for img in images {
        reports.push(diff::run(Arc::new(img), &opts).unwrap_or_else(|e| fail(e)));
    }
    if words > 0 {
        reports.push(diff::run_words(words, &opts).unwrap_or_else(|e| fail(e)));
    }
    let (mut sites, mut mismatches) = (0, 0);
    let mut divergences = std::collections::BTreeMap::new();
    for rep in reports {
        rep.print();
        sites += rep.sites;
        mismatches += rep.mismatches;
        for (k, v) in rep.divergences {
            *divergences.entry(k).or_insert(0u64) += v;
        }
    }
    for (k, v) in &divergences {
        println!("deliberate divergence ({v} times): {k}");
    }
    println!("{sites} sites, {mismatches} mismatches");
    if mismatches != 0 {
        std::process::exit(1);
    }
}
