// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C: on a synthetic text of random words always, on the
//! arm64 KUnit vmlinux when the pipeline has built it (the whole-vmlinux run with more random
//! words is the `arm64-kprobes-difftest` binary; see README.md).

use rkprobes_arm64_kprobes::{diff, image, kprobes, Image};
use rkprobes_difftest_common::upstream;
use std::sync::Arc;

/// The file of the Linux tree build.rs compiles upstream's C from.
const TREE_FILE: &str = "arch/arm64/kernel/probes/decode-insn.c";

/// A report, or `None` (with a SKIP line) when there is no upstream to compare with.
fn run(img: Image, opts: &diff::Options) -> Option<diff::Report> {
    upstream::or_skip(
        diff::run(Arc::new(img), opts),
        TREE_FILE,
        "arm64 kprobes differential",
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
    assert_eq!(rep.sites, 300_000);
    for outcome in [
        "rejected",
        "rejected: inside an atomic sequence",
        "stepped out of line",
        "simulated: AdrAdrp",
        "simulated: BBl",
        "simulated: BCond",
        "simulated: BrBlrRet",
        "simulated: CbzCbnz",
        "simulated: TbzTbnz",
        "simulated: LdrLiteral",
        "simulated: LdrswLiteral",
        "prepare ok",
        "prepare errno -22",
        "prepare errno -22, misaligned",
        "prepare errno -22, exception table",
    ] {
        assert!(rep.outcomes.contains_key(outcome), "never saw {outcome}");
    }
    assert!(rep.divergences.contains_key(diff::FAULT_REASON));
}

#[test]
fn vmlinux_matches_upstream() {
    let path = upstream::vmlinux(
        "RKPROBES_ARM64_VMLINUX",
        "/root/.cache/rkprobes/build/arm64-rust-kunit/vmlinux",
    );
    let Some(path) = upstream::existing_vmlinux(path, "arm64", "RKPROBES_ARM64_VMLINUX") else {
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
    let Some(rep) = run(img, &opts) else { return };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 100_000, "{} sites", rep.sites);
}

/// The negative control: a Rust side given another frame must disagree.
#[test]
fn skewed_frame_is_caught() {
    let img = image::random_image(20_000, 0x5eed);
    let opts = diff::Options {
        skew_x0: true,
        show: 0,
        ..diff::Options::default()
    };
    let Some(rep) = run(img, &opts) else { return };
    assert!(rep.mismatches > 100, "only {} mismatches", rep.mismatches);
}

/// `aarch32_opcode_cond_checks[]` against the Rust conditions, every condition with every
/// flag pattern and random other PSTATE bits.
#[test]
fn conditions_match_upstream() {
    if !rkprobes_arm64_kprobes::diff::c_available() {
        assert!(
            !upstream::tree_has(TREE_FILE),
            "the Linux tree is present but the C was not built"
        );
        println!("SKIP: upstream's C was not built");
        return;
    }
    let mut rng = rkprobes_arm64_kprobes::rng::Rng::new(7);
    for cond in 0..16 {
        for nzcv in 0..16u64 {
            for _ in 0..64 {
                let pstate = (nzcv << 28) | (rng.next_u64() & !0xf000_0000);
                assert_eq!(
                    kprobes::condition_holds(cond, pstate),
                    diff::c_condition_holds(cond, pstate),
                    "cond {cond:#x} pstate {pstate:#x}"
                );
            }
        }
    }
}
