// SPDX-License-Identifier: GPL-2.0

//! A batch's module symbol answers: what `find_kallsyms_symbol()` (kernel/module/kallsyms.c)
//! answers for an address of a module, from one sorted copy of the symbol values of that
//! module's text instead of a walk of its whole symbol table per address.
//!
//! Constraints: `no_std`, no allocation (the glue fills the slice), does not name the `kernel`
//! crate; process context. Exactness: C's walk keeps, among the symbols it considers (defined,
//! named, not a mapping symbol), the one of highest value at or below the address, the first in
//! symtab order among equal values, and the lowest value above it, or the end of the address's
//! module memory region; every such symbol of an address in the region lies in the region, so
//! the region's own symbols, sorted by (value, index), give the same answer. An address with no
//! considered symbol at or below it in its region is left to C (its answer may come from
//! outside the region).

/// One considered symbol of a region: its value and its index in the module's symtab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sym {
    /// `kallsyms_symbol_value(sym)`.
    pub value: usize,
    /// Index in `mod_kallsyms::symtab`.
    pub idx: u32,
}

/// `is_mapping_symbol()` (include/linux/module_symbol.h): `.L*`, `L0*` and `$*` names.
pub fn is_mapping_symbol(name: &[u8]) -> bool {
    matches!(name, [b'.', b'L', ..] | [b'L', b'0', ..] | [b'$', ..])
}

/// Whether `find_kallsyms_symbol()` considers a symbol: defined (`st_shndx != SHN_UNDEF`),
/// named, and not a mapping symbol.
pub fn considered(defined: bool, name: &[u8]) -> bool {
    defined && !name.is_empty() && !is_mapping_symbol(name)
}

/// Sorts a region's symbols for [`lookup`].
pub fn sort(syms: &mut [Sym]) {
    syms.sort_unstable();
}

/// `find_kallsyms_symbol()` of `addr` in the region `[base, end)` whose considered symbols are
/// `syms` (sorted by [`sort`]): `Some((symtab index, size, offset))`, or `None` where the answer
/// is C's to give (`addr` outside the region, or no symbol of it at or below `addr`).
pub fn lookup(syms: &[Sym], base: usize, end: usize, addr: usize) -> Option<(u32, usize, usize)> {
    if addr < base || addr >= end {
        return None;
    }
    let above = syms.partition_point(|s| s.value <= addr);
    let best_value = syms[..above].last()?.value;
    let best = syms[syms[..above].partition_point(|s| s.value < best_value)];
    let next = syms.get(above).map_or(end, |s| s.value);
    Some((best.idx, next - best.value, addr - best.value))
}
