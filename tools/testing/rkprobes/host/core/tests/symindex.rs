// SPDX-License-Identifier: GPL-2.0

//! The batch symbol index against a line-for-line model of upstream's `find_kallsyms_symbol()`
//! (kernel/module/kallsyms.c), over random module symbol tables and addresses.

use proptest::prelude::*;
use rkprobes_core::symindex::{considered, is_mapping_symbol, lookup, sort, Sym};

/// One symtab entry: value, defined (`st_shndx != SHN_UNDEF`), name.
type Entry = (usize, bool, &'static str);

/// Upstream's walk: symtab[0] is the initial best; returns (index, size, offset) or None.
fn find_kallsyms_symbol(
    symtab: &[Entry],
    region_end: usize,
    addr: usize,
) -> Option<(u32, usize, usize)> {
    let mut best = 0usize;
    let mut nextval = region_end;
    let mut bestval = symtab[0].0;
    for (i, &(thisval, defined, name)) in symtab.iter().enumerate().skip(1) {
        if !defined {
            continue;
        }
        if name.is_empty() || is_mapping_symbol(name.as_bytes()) {
            continue;
        }
        if thisval <= addr && thisval > bestval {
            best = i;
            bestval = thisval;
        }
        if thisval > addr && thisval < nextval {
            nextval = thisval;
        }
    }
    if best == 0 {
        return None;
    }
    Some((best as u32, nextval - bestval, addr - bestval))
}

/// The index of the region `[base, end)`: its considered symbols, sorted.
fn index(symtab: &[Entry], base: usize, end: usize) -> Vec<Sym> {
    let mut v: Vec<Sym> = symtab
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(_, &(value, defined, name))| {
            considered(defined, name.as_bytes()) && value >= base && value < end
        })
        .map(|(i, &(value, _, _))| Sym {
            value,
            idx: i as u32,
        })
        .collect();
    sort(&mut v);
    v
}

const NAMES: [&str; 8] = ["f", "g", "", ".Ltmp", "L0x", "$x", "data", "h"];

fn symtab() -> impl Strategy<Value = Vec<Entry>> {
    // Values in three regions: text [0x1000, 0x2000), data below and above it.
    let entry = (
        prop_oneof![
            0x1000usize..0x2000,
            0x0usize..0x1000,
            0x2000usize..0x3000,
            Just(0x1000usize)
        ],
        prop::bool::weighted(0.9),
        prop::sample::select(NAMES.to_vec()),
    );
    prop::collection::vec(entry, 0..40).prop_map(|mut v| {
        v.insert(0, (0, false, ""));
        v
    })
}

proptest! {
    #[test]
    fn same_answer_as_the_walk(symtab in symtab(), addrs in prop::collection::vec(0x0usize..0x3000, 1..20)) {
        let (base, end) = (0x1000, 0x2000);
        let idx = index(&symtab, base, end);
        for addr in addrs {
            let c = if (base..end).contains(&addr) { find_kallsyms_symbol(&symtab, end, addr) } else { None };
            match lookup(&idx, base, end, addr) {
                Some(ours) => prop_assert_eq!(Some(ours), c, "addr {:#x}", addr),
                // Left to C: outside the region, or no symbol of the region at or below.
                None => prop_assert!(!(base..end).contains(&addr) || idx.iter().all(|s| s.value > addr)),
            }
        }
    }
}

#[test]
fn aliases_pick_the_first_in_symtab_order() {
    let symtab: Vec<Entry> = vec![
        (0, false, ""),
        (0x1010, true, "b"),
        (0x1000, true, "a"),
        (0x1000, true, "alias"),
    ];
    let idx = index(&symtab, 0x1000, 0x2000);
    assert_eq!(lookup(&idx, 0x1000, 0x2000, 0x1008), Some((2, 0x10, 8)));
    assert_eq!(
        lookup(&idx, 0x1000, 0x2000, 0x1010),
        Some((1, 0x1000 - 0x10, 0))
    );
    assert_eq!(
        find_kallsyms_symbol(&symtab, 0x2000, 0x1008),
        Some((2, 0x10, 8))
    );
}

#[test]
fn mapping_and_unnamed_symbols_are_skipped() {
    assert!(is_mapping_symbol(b".Lfoo") && is_mapping_symbol(b"L0") && is_mapping_symbol(b"$d"));
    assert!(!is_mapping_symbol(b"L1") && !is_mapping_symbol(b".text") && !is_mapping_symbol(b"f"));
    assert!(!considered(true, b"") && !considered(false, b"f") && considered(true, b"f"));
}
