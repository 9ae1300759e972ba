// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C: on a synthetic text of random instructions and on
//! loose words always, on the riscv KUnit vmlinux when the pipeline has built it (the
//! whole-vmlinux run with more random instructions is the `riscv-kprobes-difftest` binary;
//! see README.md).

use rkprobes_difftest_common::upstream;
use rkprobes_riscv_kprobes::{diff, image, Image};
use std::sync::Arc;

/// A report, or `None` (with a SKIP line) when there is no upstream to compare with; with the
/// tree, the C must have been built.
fn check(rep: Result<diff::Report, String>) -> Option<diff::Report> {
    upstream::or_skip(
        rep,
        "arch/riscv/kernel/probes/decode-insn.c",
        "riscv kprobes differential",
    )
}

#[test]
fn random_instructions_match_upstream() {
    let img = image::random_image(300_000, 0x5eed);
    let Some(rep) = check(diff::run(Arc::new(img), &diff::Options::default())) else {
        return;
    };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert_eq!(rep.sites, 300_000);
    for outcome in [
        "decision: rejected (2-byte)",
        "decision: rejected (4-byte)",
        "decision: stepped out of line (2-byte)",
        "decision: stepped out of line (4-byte)",
        "decision: simulated by Jal",
        "decision: simulated by Jalr",
        "decision: simulated by Auipc",
        "decision: simulated by Branch",
        "decision: simulated by CJ",
        "decision: simulated by CJr",
        "decision: simulated by CJalr",
        "decision: simulated by CBeqz",
        "decision: simulated by CBnez",
        "Branch: taken",
        "Branch: not taken",
        "Branch: simulator refused (frame untouched)",
        "CBeqz: taken",
        "CBeqz: not taken",
        "CBnez: taken",
        "CBnez: not taken",
        "prepare at the site: ok, simulated",
        "prepare at the site: ok, slot for a 2-byte instruction",
        "prepare at the site: ok, slot for a 4-byte instruction",
        "prepare at the site: errno -22",
        "prepare at the site: -EILSEQ: no kallsyms symbol",
        "prepare at site+1: -EILSEQ: odd address",
        "prepare at site+2 (inside a 32-bit instruction): -EILSEQ: not an instruction boundary from its symbol's start",
    ] {
        assert!(rep.outcomes.contains_key(outcome), "never saw {outcome}");
    }
}

#[test]
fn words_match_upstream() {
    let Some(rep) = check(diff::run_words(300_000, &diff::Options::default())) else {
        return;
    };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert_eq!(rep.sites, 300_000 + 0x1_0000);
}

#[test]
fn vmlinux_matches_upstream() {
    let path = upstream::vmlinux(
        "RKPROBES_RISCV_VMLINUX",
        "/root/.cache/rkprobes/build/riscv-rust-kunit/vmlinux",
    );
    let Some(path) = upstream::existing_vmlinux(path, "riscv", "RKPROBES_RISCV_VMLINUX") else {
        return;
    };
    let img = Image::from_elf(&path).expect("the vmlinux reads");
    assert!(
        img.functions.len() > 10_000,
        "{} functions",
        img.functions.len()
    );
    let opts = diff::Options {
        states: 2,
        ..diff::Options::default()
    };
    let Some(rep) = check(diff::run(Arc::new(img), &opts)) else {
        return;
    };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 100_000, "{} sites", rep.sites);
}

/// The negative control: a Rust side given another probe address must disagree.
#[test]
fn skewed_address_is_caught() {
    let img = image::random_image(20_000, 0x5eed);
    let opts = diff::Options {
        skew_addr: true,
        show: 0,
        ..diff::Options::default()
    };
    let Some(rep) = check(diff::run(Arc::new(img), &opts)) else {
        return;
    };
    assert!(rep.mismatches > 100, "only {} mismatches", rep.mismatches);
}
