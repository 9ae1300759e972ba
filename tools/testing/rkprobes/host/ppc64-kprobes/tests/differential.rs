// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C: on a synthetic text of random words always, on the
//! ppc64 KUnit vmlinux when the pipeline has built it (the whole-vmlinux run with more random
//! words is the `ppc64-kprobes-difftest` binary; see README.md).

use rkprobes_difftest_common::upstream;
use rkprobes_ppc64_kprobes::{diff, image, Image};
use std::sync::Arc;

/// The file of the Linux tree build.rs compiles upstream's C from.
const TREE_FILE: &str = "arch/powerpc/kernel/optprobes.c";

/// The ppc64 KUnit vmlinux the pipeline builds.
const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/ppc64-rust-kunit/vmlinux";

/// A report, or `None` (with a SKIP line) when there is no upstream to compare with.
fn run(img: Image, opts: &diff::Options) -> Option<diff::Report> {
    upstream::or_skip(
        diff::run(Arc::new(img), opts),
        TREE_FILE,
        "ppc64 kprobes differential",
    )
}

#[test]
fn random_words_match_upstream() {
    let img = image::random_image(300_000, 0x5eed);
    let Some(rep) = run(img, &diff::Options::default()) else {
        return;
    };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 299_000, "{} sites", rep.sites);
    for outcome in [
        "prepare ok",
        "prepare ok: prefixed",
        "prepare: no slot",
        "prepare refused: Some(CannotSingleStep)",
        "prepare refused: Some(SecondWordOfPrefixed)",
        "prepare refused: Some(Unaligned) (misaligned)",
        "prepare refused: None, previous probe prefixed",
        "prepare refused: Some(CannotSingleStep), previous probe prefixed",
        "optimized",
        "optimized, return branch left unpatched (upstream)",
        "not optimized: can_optimize",
        "not optimized: no slot",
        "not optimized: out of range",
        "not optimized: no symbol",
        "not optimized: call out of range",
        "kprobe_handler: breakpoint gone",
        "kprobe_handler: not ours",
        "kprobe_handler: trap in the slot during the step",
        "kprobe_handler: user or real mode",
        "kprobe_post_handler: not our step",
        "kprobe_post_handler: resumed",
        "kprobe_post_handler: resumed, someone else single-steps",
    ] {
        assert!(rep.outcomes.contains_key(outcome), "never saw {outcome}");
    }
    assert!(rep.divergences.is_empty(), "{:?}", rep.divergences);
}

#[test]
fn vmlinux_matches_upstream() {
    let path = upstream::vmlinux("RKPROBES_PPC64_VMLINUX", DEFAULT_VMLINUX);
    let Some(path) = upstream::existing_vmlinux(path, "ppc64", "RKPROBES_PPC64_VMLINUX") else {
        return;
    };
    let img = Image::from_elf(&path).expect("the vmlinux reads");
    assert!(
        img.functions.len() > 10_000,
        "{} functions",
        img.functions.len()
    );
    let opts = diff::Options {
        opt_scenarios: 1,
        ..diff::Options::default()
    };
    let Some(rep) = run(img, &opts) else { return };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 100_000, "{} sites", rep.sites);
}

/// The negative control: a Rust side not told about the previous probe must disagree.
#[test]
fn skewed_previous_probe_is_caught() {
    let img = image::random_image(20_000, 0x5eed);
    let opts = diff::Options {
        skew_prev: true,
        show: 0,
        ..diff::Options::default()
    };
    let Some(rep) = run(img, &opts) else { return };
    assert!(rep.mismatches > 100, "only {} mismatches", rep.mismatches);
}

/// Upstream's `BREAKPOINT_INSTRUCTION`, `arch_kprobe_on_func_entry()` and
/// `arch_adjust_kprobe_addr()` against the Rust ones.
#[test]
fn constants_match_upstream() {
    match diff::constants_mismatches() {
        Some(n) => assert_eq!(n, 0),
        None => {
            assert!(
                !upstream::tree_has(TREE_FILE),
                "the Linux tree is present but the C was not built"
            );
            println!("SKIP: upstream's C was not built");
        }
    }
}

/// The pipeline's static ppc64le busybox.
const BUSYBOX: &str = "/root/.cache/rkprobes/busybox/ppc64/busybox";

/// Real compiled code: the first 100000 words of the static ppc64le busybox's `.text` (the
/// whole of it is the `ppc64-kprobes-difftest` binary's run).
#[test]
fn busybox_text_matches_upstream() {
    let Some(path) = upstream::existing_vmlinux(BUSYBOX.into(), "ppc64 busybox", "-") else {
        return;
    };
    let img = Image::from_elf(&path)
        .expect("busybox reads")
        .truncated(100_000);
    let opts = diff::Options {
        opt_scenarios: 1,
        ..diff::Options::default()
    };
    let Some(rep) = run(img, &opts) else { return };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 99_000, "{} sites", rep.sites);
}
