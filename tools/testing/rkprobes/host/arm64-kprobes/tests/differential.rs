// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C: on a synthetic text of random words always, on the
//! arm64 KUnit vmlinux when the pipeline has built it (the whole-vmlinux run with more random
//! words is the `arm64-kprobes-difftest` binary; see README.md).

use rkprobes_arm64_kprobes::{diff, image, kprobes, Image};
use std::sync::Arc;

/// Whether the Linux tree build.rs compiles upstream's C from is present.
fn tree_present() -> bool {
    let src = std::env::var_os("RKPROBES_LINUX_SRC")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/root/.cache/rkprobes/linux-source-6.12".into());
    src.join("arch/arm64/kernel/probes/decode-insn.c").exists()
}

fn run(img: Image, opts: &diff::Options) -> Option<diff::Report> {
    match diff::run(Arc::new(img), opts) {
        Ok(rep) => Some(rep),
        Err(why) => {
            // Without the tree there is no upstream to compare with; with it, the C must
            // have been built.
            assert!(!tree_present(), "the Linux tree is present but: {why}");
            println!("SKIP: arm64 kprobes differential: {why}");
            None
        }
    }
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
    let path = std::env::var("RKPROBES_ARM64_VMLINUX")
        .unwrap_or_else(|_| "/root/.cache/rkprobes/build/arm64-rust-kunit/vmlinux".into());
    if !std::path::Path::new(&path).exists() {
        println!("SKIP: no arm64 vmlinux at {path} (set RKPROBES_ARM64_VMLINUX)");
        return;
    }
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
            !tree_present(),
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
