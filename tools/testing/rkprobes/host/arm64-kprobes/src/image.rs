// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: text, kallsyms and the exception
//! table.

use crate::kprobes::{insn, KernelText, SymbolSpan};
use crate::rng::Rng;
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
        let i = self.symbols.partition_point(|&(s, _)| s <= addr);
        let &(start, size) = self.symbols.get(i.checked_sub(1)?)?;
        let offset = addr - start;
        (offset < size).then_some(SymbolSpan { size, offset })
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
        let elf = Elf::parse(&f)?;
        let text = elf.section(".text").ok_or("no .text")?;
        let bytes = elf.data(text)?;
        let words = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect::<Vec<_>>();
        let mut img = Image {
            name: path.to_string(),
            base: text.addr,
            words,
            ..Image::default()
        };
        let end = img.end();
        let mut starts = Vec::new();
        for s in elf.symbols()? {
            if s.shndx != text.index || s.value < img.base || s.value >= end {
                continue;
            }
            let name = s.name;
            if name.is_empty() || name.starts_with('$') || name.starts_with(".L") {
                continue;
            }
            match s.kind {
                0 | 2 => starts.push(s.value),
                _ => continue,
            }
            if s.kind == 2 && s.size > 0 {
                img.functions.push((s.value, s.size));
            }
        }
        starts.sort_unstable();
        starts.dedup();
        img.symbols = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, starts.get(i + 1).copied().unwrap_or(end) - s))
            .collect();
        img.functions.sort_unstable();
        img.functions.dedup();
        if let Some(ex) = elf.section("__ex_table") {
            for (i, e) in elf.data(ex)?.chunks_exact(12).enumerate() {
                let rel = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                let at = ex.addr + 12 * i as u64;
                img.extable.insert(at.wrapping_add(rel as i64 as u64));
            }
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

/// A section header.
#[derive(Clone, Copy, Debug)]
struct Section {
    index: u16,
    name: u32,
    kind: u32,
    addr: u64,
    off: u64,
    size: u64,
    link: u32,
}

/// A symbol of `.symtab`.
struct Symbol<'a> {
    name: &'a str,
    kind: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

/// Just enough of a little-endian ELF64 reader.
struct Elf<'a> {
    f: &'a [u8],
    sections: Vec<Section>,
    shstr: Section,
}

fn u16_at(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(f.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(f: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(f.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(f: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(f.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> Elf<'a> {
    fn parse(f: &'a [u8]) -> Result<Self, String> {
        if f.get(..4) != Some(b"\x7fELF") || f.get(4) != Some(&2) || f.get(5) != Some(&1) {
            return Err("not a little-endian ELF64 file".into());
        }
        if u16_at(f, 0x12) != Some(183) {
            return Err("not an AArch64 ELF file".into());
        }
        let bad = || "truncated ELF header".to_string();
        let shoff = u64_at(f, 0x28).ok_or_else(bad)? as usize;
        let shentsize = u16_at(f, 0x3a).ok_or_else(bad)? as usize;
        let shnum = u16_at(f, 0x3c).ok_or_else(bad)?;
        let shstrndx = u16_at(f, 0x3e).ok_or_else(bad)?;
        let mut sections = Vec::new();
        for i in 0..shnum {
            let at = shoff + i as usize * shentsize;
            let sh = || -> Option<Section> {
                Some(Section {
                    index: i,
                    name: u32_at(f, at)?,
                    kind: u32_at(f, at + 4)?,
                    addr: u64_at(f, at + 0x10)?,
                    off: u64_at(f, at + 0x18)?,
                    size: u64_at(f, at + 0x20)?,
                    link: u32_at(f, at + 0x28)?,
                })
            };
            sections.push(sh().ok_or("truncated section header")?);
        }
        let shstr = *sections.get(shstrndx as usize).ok_or("no section names")?;
        Ok(Elf { f, sections, shstr })
    }

    fn str_at(&self, table: Section, off: u32) -> &'a str {
        let start = (table.off + u64::from(off)) as usize;
        let rest = self.f.get(start..).unwrap_or_default();
        let len = rest.iter().position(|&b| b == 0).unwrap_or(0);
        std::str::from_utf8(&rest[..len]).unwrap_or("")
    }

    fn section(&self, name: &str) -> Option<Section> {
        self.sections
            .iter()
            .copied()
            .find(|s| self.str_at(self.shstr, s.name) == name)
    }

    fn data(&self, s: Section) -> Result<&'a [u8], String> {
        if s.kind == 8 {
            return Err("section has no file data (NOBITS)".into());
        }
        self.f
            .get(s.off as usize..(s.off + s.size) as usize)
            .ok_or_else(|| "section beyond the end of the file".into())
    }

    fn symbols(&self) -> Result<Vec<Symbol<'a>>, String> {
        let symtab = self
            .sections
            .iter()
            .copied()
            .find(|s| s.kind == 2)
            .ok_or("no .symtab (stripped vmlinux?)")?;
        let names = *self
            .sections
            .get(symtab.link as usize)
            .ok_or("no symbol names")?;
        let mut out = Vec::new();
        for s in self.data(symtab)?.chunks_exact(24) {
            out.push(Symbol {
                name: self.str_at(names, u32::from_le_bytes([s[0], s[1], s[2], s[3]])),
                kind: s[4] & 0xf,
                shndx: u16::from_le_bytes([s[6], s[7]]),
                value: u64::from_le_bytes(s[8..16].try_into().unwrap_or_default()),
                size: u64::from_le_bytes(s[16..24].try_into().unwrap_or_default()),
            });
        }
        Ok(out)
    }
}
