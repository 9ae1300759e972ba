// SPDX-License-Identifier: GPL-2.0

//! `TWOBYTE_BOOSTABLE` is the policy of upstream's `twobyte_is_boostable` bitmap.

use rkprobes_x86_insn::TWOBYTE_BOOSTABLE;

#[path = "../src/paths.rs"]
#[expect(dead_code, reason = "only the tree location is needed here")]
mod paths;

/// Reads the sixteen `W(0xR0, b0, ..., bf)` rows of `twobyte_is_boostable` in core.c.
fn upstream_rows(core_c: &str) -> Vec<u16> {
    let start = core_c
        .find("twobyte_is_boostable[256 / 32]")
        .expect("core.c defines twobyte_is_boostable");
    core_c[start..]
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("W(0x"))
        .take(16)
        .map(|row| {
            let args = row.split(')').next().expect("W(...)");
            args.split(',')
                .skip(1)
                .enumerate()
                .fold(0u16, |bits, (i, b)| match b.trim() {
                    "1" => bits | (1 << i),
                    "0" => bits,
                    other => panic!("unexpected bit {other:?} in {row}"),
                })
        })
        .collect()
}

#[test]
fn matches_kernel_core_c() {
    let path = paths::linux_src().join("arch/x86/kernel/kprobes/core.c");
    let core_c = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run `scripts/rkprobes setup` or set RKPROBES_LINUX_SRC",
            path.display()
        )
    });
    let rows = upstream_rows(&core_c);
    assert_eq!(rows.len(), 16);
    assert_eq!(rows.as_slice(), TWOBYTE_BOOSTABLE.as_slice());
}
