// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C: on a synthetic text of random words always, on the
//! loongarch KUnit vmlinux when the pipeline has built it (the whole-vmlinux run with more
//! random words is the `loongarch-kprobes-difftest` binary; see README.md).

use rkprobes_difftest_common::upstream;
use rkprobes_loongarch_kprobes::kprobes::{KPROBE_BP_INSN, KPROBE_SSTEPBP_INSN};
use rkprobes_loongarch_kprobes::{diff, image, Image};
use std::sync::Arc;

/// The file of the Linux tree build.rs compiles upstream's C from.
const TREE_FILE: &str = "arch/loongarch/kernel/inst.c";

/// The loongarch KUnit vmlinux the pipeline builds.
const DEFAULT_VMLINUX: &str = "/root/.cache/rkprobes/build/loongarch-rust-kunit/vmlinux";

/// A report, or `None` (with a SKIP line) when there is no upstream to compare with.
fn run(img: Image, opts: &diff::Options) -> Option<diff::Report> {
    upstream::or_skip(
        diff::run(Arc::new(img), opts),
        TREE_FILE,
        "loongarch kprobes differential",
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
        "rejected: AtomicMemoryAccess",
        "rejected: ScQ",
        "rejected: LlSc",
        "rejected: LlacqScrel",
        "rejected: BceqzBcnez",
        "stepped out of line",
        "simulated: Pc",
        "simulated: Branch",
        "prepare ok",
        "prepare errno -22",
        "prepare errno -84, misaligned",
        "ArchSimulateInsn: simulated",
        "ArchSimulateInsn: invalid pc",
        "ArchSimulateInsn: unknown opcode",
        "SimuPc: ok",
        "SimuPc: unknown opcode",
        "SimuBranch: ok",
        "SimuBranch: unknown opcode",
    ] {
        assert!(rep.outcomes.contains_key(outcome), "never saw {outcome}");
    }
    assert!(rep.divergences.is_empty(), "{:?}", rep.divergences);
}

#[test]
fn vmlinux_matches_upstream() {
    let path = upstream::vmlinux("RKPROBES_LOONGARCH_VMLINUX", DEFAULT_VMLINUX);
    let Some(path) = upstream::existing_vmlinux(path, "loongarch", "RKPROBES_LOONGARCH_VMLINUX")
    else {
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
        skew_a0: true,
        show: 0,
        ..diff::Options::default()
    };
    let Some(rep) = run(img, &opts) else { return };
    assert!(rep.mismatches > 100, "only {} mismatches", rep.mismatches);
}

/// Upstream's `KPROBE_BP_INSN` and `KPROBE_SSTEPBP_INSN` against the Rust ones.
#[test]
fn break_instructions_match_upstream() {
    let Some((bp, ss)) = diff::c_break_insns() else {
        assert!(
            !upstream::tree_has(TREE_FILE),
            "the Linux tree is present but the C was not built"
        );
        println!("SKIP: upstream's C was not built");
        return;
    };
    assert_eq!((KPROBE_BP_INSN, KPROBE_SSTEPBP_INSN), (bp, ss));
}
