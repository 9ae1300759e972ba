// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: text, kallsyms and the exception
//! table.

use crate::kprobes::{insn, KernelText, SymbolSpan};
use crate::rng::Rng;
use rkprobes_difftest_common::elf::{le_words, symbol_containing, Elf};
use std::collections::HashSet;

/// A kernel text image and the tables the arm64 kprobes decisions consult about it.
#[derive(Clone, Debug, Default)]
pub struct Image {
    /// What the image is (a path, or "random").
    pub name: String,
    /// Address of the first word of [`Self::words`].
    pub base: u64,
    /// The text, one instruction word per element (little-endian words, decoded).
    pub words: Vec<u32>,
    /// The symbols kallsyms knows, `(start, size)`, sorted by start, not overlapping; as
    /// kallsyms does, a symbol reaches to the next one.
    pub symbols: Vec<(u64, u64)>,
    /// The function symbols whose words are probe sites, `(start, size)`.
    pub functions: Vec<(u64, u64)>,
    /// Instruction addresses with an exception-table entry.
    pub extable: HashSet<u64>,
}

impl KernelText for Image {
    fn read_insn(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        if off % 4 != 0 {
            // The C reads an unaligned word; the harness never asks for one.
            return None;
        }
        self.words.get(usize::try_from(off / 4).ok()?).copied()
    }

    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan> {
        let (start, size) = symbol_containing(&self.symbols, addr)?;
        Some(SymbolSpan {
            size,
            offset: addr - start,
        })
    }

    fn search_exception_tables(&self, addr: u64) -> bool {
        self.extable.contains(&addr)
    }
}

impl Image {
    /// The end of the text.
    pub fn end(&self) -> u64 {
        self.base + 4 * self.words.len() as u64
    }

    /// Every 4-byte aligned address inside a function symbol, once, in address order.
    pub fn sites(&self) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for &(start, size) in &self.functions {
            let first = start.next_multiple_of(4);
            let mut a = first;
            while a < start + size && a + 4 <= self.end() {
                v.push(a);
                a += 4;
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Reads the `.text` of an arm64 vmlinux, its symbols and its `__ex_table`.
    pub fn from_elf(path: &str) -> Result<Image, String> {
        let f = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let elf = Elf::parse(&f, Some((183, "an AArch64")))?;
        let text = elf.section(".text").ok_or("no .text")?;
        let mut img = Image {
            name: path.to_string(),
            base: text.addr,
            words: le_words(elf.data(text)?),
            ..Image::default()
        };
        // Mapping symbols ($x, $d) are no kallsyms symbols, and arm64 sites are words.
        let syms = elf.text_symbols(text, img.end())?;
        img.symbols = syms.symbols;
        img.functions = syms.functions;
        if let Some(ex) = elf.section("__ex_table") {
            img.extable = elf.relative_table(ex, 12)?.into_iter().collect();
        }
        Ok(img)
    }
}

/// A random instruction word, biased towards the classes the decisions treat apart.
pub fn random_word(rng: &mut Rng) -> u32 {
    let r = rng.next_u32();
    match rng.below(24) {
        // The branch, exception and system class (b, bl, b.cond, br/blr/ret and PAC forms,
        // svc/brk, hints, mrs/msr, eret).
        0..=3 => (r & !0x1c00_0000) | 0x1400_0000,
        4 => (r & 0x00ff_ffff) | 0xd400_0000,
        5 => (r & 0x0000_0fe0) | 0xd503_201f,
        6 => (r & 0x000f_ffff) | [0xd530_0000, 0xd510_0000, 0xd500_0000][rng.below(3) as usize],
        7 => {
            (r & 0x0000_0fff)
                | [0xd61f_0000, 0xd63f_0000, 0xd65f_0000, 0xd69f_0000][rng.below(4) as usize]
        }
        // mrs xN, daif, and msr daifset/daifclr.
        8 => (r & 0x1f) | 0xd53b_4220 | (rng.below(2) as u32 * 0x0040_0000),
        // cbz/cbnz/tbz/tbnz, adr/adrp, ldr/ldrsw/prfm literal, SIMD literal.
        9 => (r & !0x7e00_0000) | 0x3400_0000,
        10 => (r & !0x1f00_0000) | 0x1000_0000,
        11 => (r & 0xc0ff_ffff) | 0x1800_0000,
        12 => (r & 0x00ff_ffff) | [0x9800_0000, 0xd800_0000, 0x1c00_0000][rng.below(3) as usize],
        // Exclusives and MOPS.
        13 => (r & !0x3f00_0000) | 0x0800_0000,
        14 => (r & !0x3b20_0c00) | 0x1900_0400,
        _ => r,
    }
}

/// A synthetic image of `n` words: random words (see [`random_word`]), with load- and
/// store-exclusives sprinkled so the atomic-sequence scan meets both, functions of random
/// length, each a kallsyms symbol but for an occasional one kallsyms knows nothing about, and
/// some exception-table entries.
pub fn random_image(n: usize, seed: u64) -> Image {
    let mut rng = Rng::new(seed);
    let base = 0xffff_8000_8001_0000;
    let mut words = Vec::with_capacity(n);
    for _ in 0..n {
        let w = match rng.below(40) {
            0 => (rng.next_u32() & !0x3f40_0000) | 0x0840_0000, // load-exclusive
            1 => (rng.next_u32() & !0x3f40_0000) | 0x0800_0000, // store-exclusive
            _ => random_word(&mut rng),
        };
        words.push(w);
    }
    let mut img = Image {
        name: format!("random (seed {seed:#x})"),
        base,
        words,
        ..Image::default()
    };
    let end = img.end();
    let mut at = base;
    while at < end {
        let max = if rng.below(4) == 0 { 200 } else { 40 };
        let len = 4 * (1 + rng.below(max));
        let len = len.min(end - at);
        if rng.below(50) != 0 {
            img.symbols.push((at, len));
        }
        img.functions.push((at, len));
        at += len;
    }
    for _ in 0..n / 500 {
        img.extable.insert(base + 4 * rng.below(n as u64));
    }
    debug_assert!(img.words.iter().any(|&w| insn::is_load_ex(w)));
    img
}
