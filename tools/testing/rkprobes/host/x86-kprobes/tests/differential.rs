// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C on the built-in corpus (the whole-vmlinux run is
//! the `kprobes-difftest` binary; see README.md).

use rkprobes_difftest_common::upstream;
use rkprobes_x86_kprobes::{corpus, diff};

/// A report, or `None` (with a SKIP line) when there is no upstream to compare with; with the
/// tree, the C must have been built.
fn run(img: &rkprobes_x86_kprobes::Image, opts: &diff::Options) -> Option<diff::Report> {
    upstream::or_skip(
        diff::run(img, opts),
        "arch/x86/kernel/kprobes/core.c",
        "x86 kprobes differential",
    )
}

#[test]
fn corpus_matches_upstream() {
    let img = corpus::image();
    let opts = diff::Options {
        emulate_states: 4,
        ..diff::Options::default()
    };
    let Some(rep) = run(&img, &opts) else { return };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 70_000, "{} sites", rep.sites);
    assert!(rep.checks > 1_000_000, "{} comparisons", rep.checks);
    // Each decision was reached with each outcome, on both slots.
    for outcome in [
        "prepare_kprobe errno -22",
        "prepare_kprobe errno -28",
        "prepare_kprobe errno -84",
        "prepare_kprobe errno -95",
        "prepare_kprobe ok, boosted=false",
        "prepare_kprobe ok, boosted=true",
        "prepare_optimized_kprobe errno -16",
        "prepare_optimized_kprobe errno -22",
        "prepare_optimized_kprobe errno -34",
        "prepare_optimized_kprobe errno -84",
        "prepare_optimized_kprobe ok, size 5",
        "optprobe with another probe inside",
    ] {
        assert!(rep.outcomes.contains_key(outcome), "never saw {outcome}");
    }
    for kind in 1..=8 {
        let k = format!("emulation kind {kind}");
        assert!(rep.outcomes.contains_key(&k), "never emulated kind {kind}");
    }
    for why in [
        diff::PREFIX_MAP_REASON,
        diff::XOP_REASON,
        diff::POP_SS_REASON,
    ] {
        assert!(rep.divergences.contains_key(why), "no divergence: {why}");
    }
}

#[test]
fn corpus_with_cfi_kgdb_and_jump_tables_matches_upstream() {
    let img = corpus::hand_written_image();
    let mut opts = diff::Options::default();
    opts.cfg.cfi_clang = true;
    opts.cfg.kgdb = true;
    opts.cfg.smap = true;
    let Some(rep) = run(&img, &opts) else { return };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    opts.cfg.no_jump_tables = true;
    opts.cfg.ibt = true;
    let rep = run(&img, &opts).expect("ran once");
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
}

/// The negative control: a Rust side given another slot address must disagree.
#[test]
fn skewed_slot_is_caught() {
    let img = corpus::hand_written_image();
    let opts = diff::Options {
        rust_slot_skew: 0x10,
        show: 0,
        ..diff::Options::default()
    };
    let Some(rep) = run(&img, &opts) else { return };
    assert!(rep.mismatches > 50, "only {} mismatches", rep.mismatches);
}
