// SPDX-License-Identifier: GPL-2.0

//! The differential against upstream's C on a synthetic text of random instructions (the
//! longer run is the `s390-kprobes-difftest` binary; see README.md).

use rkprobes_difftest_common::upstream;
use rkprobes_s390_kprobes::{diff, image, Image};

/// The file of the Linux tree build.rs compiles upstream's C from.
const TREE_FILE: &str = "arch/s390/kernel/kprobes.c";

/// Where the tests map their synthetic texts.
const BASE: u64 = 0x3ff_e000_0000;

/// A report, or `None` (with a SKIP line) when there is no upstream to compare with.
fn run(img: &Image, opts: &diff::Options) -> Option<diff::Report> {
    upstream::or_skip(diff::run(img, opts), TREE_FILE, "s390 kprobes differential")
}

#[test]
fn random_instructions_match_upstream() {
    let img = image::random_image(300_000, 0x5eed, BASE);
    let Some(rep) = run(&img, &diff::Options::default()) else {
        return;
    };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 299_000, "{} sites", rep.sites);
    for outcome in [
        "prepare ok",
        "prepare ok: relative long re-aimed",
        "prepare errno -12",
        "prepare errno -22",
        "prepare errno -22, not a boundary",
        "prepare errno -22, odd address",
        "resume: after the probe",
        "resume: elsewhere",
        "instruction unknown",
        "instruction known, prohibited",
        "instruction known, allowed",
        "kprobe_handler: no probe",
        "kprobe_handler: pre handler took over",
        "kprobe_handler: reentered from a handler",
        "kprobe_handler: reentered while stepping (BUG)",
        "kprobe_handler: stepping",
        "post_kprobe_handler: no probe",
        "post_kprobe_handler: resumed",
        "post_kprobe_handler: resumed, PER still on",
        "kprobe_trap_handler: fault in the step",
        "kprobe_trap_handler: fixed up",
        "kprobe_trap_handler: not handled",
    ] {
        assert!(rep.outcomes.contains_key(outcome), "never saw {outcome}");
    }
}

/// The negative control: a Rust side re-aiming for another slot must disagree.
#[test]
fn skewed_slot_is_caught() {
    let img = image::random_image(20_000, 0x5eed, BASE);
    let opts = diff::Options {
        skew_slot: true,
        show: 0,
        ..diff::Options::default()
    };
    let Some(rep) = run(&img, &opts) else { return };
    assert!(rep.mismatches > 50, "only {} mismatches", rep.mismatches);
}

#[test]
fn insn_length_matches_upstream() {
    match diff::insn_length_mismatches() {
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

/// `is_known_insn()` against upstream's over every first byte and every value of the byte its
/// group looks at.
#[test]
fn known_instructions_match_upstream() {
    let Some((n, bad)) = diff::known_insn_sweep(0x5eed) else {
        assert!(
            !upstream::tree_has(TREE_FILE),
            "the Linux tree is present but the C was not built"
        );
        println!("SKIP: upstream's C was not built");
        return;
    };
    println!("is_known_insn(): {n} instructions, {bad} mismatches");
    assert_eq!(bad, 0);
    assert_eq!(n, 2 * 256 * 256);
}

/// The pipeline's static s390x busybox.
const BUSYBOX: &str = "/root/.cache/rkprobes/busybox/s390/busybox";

/// Real compiled code: the first 200000 halfwords of the static s390x busybox's `.text` (the
/// whole of it is the `s390-kprobes-difftest` binary's run with `--elf`).
#[test]
fn busybox_text_matches_upstream() {
    let Some(path) = upstream::existing_vmlinux(BUSYBOX.into(), "s390 busybox", "-") else {
        return;
    };
    let img = Image::from_stripped_elf(&path, BASE)
        .expect("busybox reads")
        .truncated(200_000);
    let Some(rep) = run(&img, &diff::Options::default()) else {
        return;
    };
    rep.print();
    assert_eq!(rep.mismatches, 0, "{:#?}", rep.shown);
    assert!(rep.sites > 190_000, "{} sites", rep.sites);
    assert!(rep
        .outcomes
        .contains_key("prepare ok: relative long re-aimed"));
}
