// SPDX-License-Identifier: GPL-2.0

//! Just enough of a little-endian ELF64 reader for a vmlinux: its section headers, the bytes
//! of a section, `.symtab`, the text symbols as kallsyms sees them, and self-relative tables
//! such as `__ex_table`.

/// `SHT_SYMTAB`.
const SHT_SYMTAB: u32 = 2;
/// `SHT_NOBITS`.
pub const SHT_NOBITS: u32 = 8;
/// `STT_NOTYPE`.
const STT_NOTYPE: u8 = 0;
/// `STT_FUNC`.
const STT_FUNC: u8 = 2;

/// A section header.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    /// Its index (what a symbol's `st_shndx` names).
    pub index: u16,
    /// Offset of its name in the section-name table.
    pub name: u32,
    /// `sh_type`.
    pub kind: u32,
    /// Load address of its first byte.
    pub addr: u64,
    /// Offset of its first byte in the file.
    pub off: u64,
    /// Its size in bytes.
    pub size: u64,
    /// `sh_link` (for `.symtab`, its string table).
    pub link: u32,
}

/// A symbol of `.symtab`.
#[derive(Clone, Copy, Debug)]
pub struct Symbol<'a> {
    /// Its name.
    pub name: &'a str,
    /// `ELF64_ST_TYPE(st_info)`.
    pub kind: u8,
    /// `st_shndx`.
    pub shndx: u16,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
}

/// A little-endian ELF64 file, read in place.
pub struct Elf<'a> {
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
    /// Reads the section headers of `f`, which must be a little-endian ELF64 file and, with
    /// `machine` `Some((e_machine, what))`, one for that machine (`what`, as "an AArch64", names
    /// it in the error).
    pub fn parse(f: &'a [u8], machine: Option<(u16, &str)>) -> Result<Self, String> {
        if f.get(..4) != Some(b"\x7fELF") || f.get(4) != Some(&2) || f.get(5) != Some(&1) {
            return Err("not a little-endian ELF64 file".into());
        }
        if let Some((e_machine, what)) = machine {
            if u16_at(f, 0x12) != Some(e_machine) {
                return Err(format!("not {what} ELF file"));
            }
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

    /// The whole file.
    pub fn file(&self) -> &'a [u8] {
        self.f
    }

    /// Every section header, in file order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    fn str_at(&self, table: Section, off: u32) -> &'a str {
        let start = (table.off + u64::from(off)) as usize;
        let rest = self.f.get(start..).unwrap_or_default();
        let len = rest.iter().position(|&b| b == 0).unwrap_or(0);
        std::str::from_utf8(&rest[..len]).unwrap_or("")
    }

    /// The first section named `name`.
    pub fn section(&self, name: &str) -> Option<Section> {
        self.sections
            .iter()
            .copied()
            .find(|s| self.str_at(self.shstr, s.name) == name)
    }

    /// The bytes of section `s`.
    pub fn data(&self, s: Section) -> Result<&'a [u8], String> {
        if s.kind == SHT_NOBITS {
            return Err("section has no file data (NOBITS)".into());
        }
        self.f
            .get(s.off as usize..(s.off + s.size) as usize)
            .ok_or_else(|| "section beyond the end of the file".into())
    }

    /// Every symbol of `.symtab`, in table order.
    pub fn symbols(&self) -> Result<Vec<Symbol<'a>>, String> {
        let symtab = self
            .sections
            .iter()
            .copied()
            .find(|s| s.kind == SHT_SYMTAB)
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

    /// The symbols of the section `text` that lie below `end`, as the differentials see them
    /// (see [`TextSymbols`]).
    pub fn text_symbols(&self, text: Section, end: u64) -> Result<TextSymbols, String> {
        let mut starts = Vec::new();
        let mut out = TextSymbols::default();
        for s in self.symbols()? {
            if s.shndx != text.index || s.value < text.addr || s.value >= end {
                continue;
            }
            let name = s.name;
            if name.starts_with('$') {
                out.mapping.push((s.value, name.starts_with("$d")));
                continue;
            }
            if name.is_empty() || name.starts_with(".L") {
                continue;
            }
            match s.kind {
                STT_NOTYPE | STT_FUNC => starts.push(s.value),
                _ => continue,
            }
            if s.kind == STT_FUNC && s.size > 0 {
                out.functions.push((s.value, s.size));
            }
        }
        starts.sort_unstable();
        starts.dedup();
        out.symbols = reach_next(&starts, end);
        out.functions.sort_unstable();
        out.functions.dedup();
        out.mapping.sort_unstable();
        Ok(out)
    }

    /// The addresses a table of self-relative entries names: each `stride` bytes long, its
    /// first field an `int` offset from the entry itself (`struct exception_table_entry` of
    /// `__ex_table`, with a stride of 12; `.smp_locks`, with 4).
    pub fn relative_table(&self, s: Section, stride: usize) -> Result<Vec<u64>, String> {
        Ok(self
            .data(s)?
            .chunks_exact(stride)
            .enumerate()
            .map(|(i, e)| {
                let rel = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                let at = s.addr + (stride * i) as u64;
                at.wrapping_add_signed(rel.into())
            })
            .collect())
    }
}

/// The symbols of a text section as the differentials see them.
#[derive(Clone, Debug, Default)]
pub struct TextSymbols {
    /// The symbols kallsyms knows, `(start, size)`: every function and untyped symbol but
    /// local labels (`.L*`) and mapping symbols (`$*`), sorted by start, not overlapping; as
    /// kallsyms does, a symbol reaches to the next one (the last to the end of the text).
    pub symbols: Vec<(u64, u64)>,
    /// The function symbols with an ELF size, `(start, size)`, sorted, each once.
    pub functions: Vec<(u64, u64)>,
    /// The mapping symbols, `(address, whether it is a `$d` (data) one)`, sorted.
    pub mapping: Vec<(u64, bool)>,
}

/// kallsyms' symbols from their sorted, distinct `starts`: each reaches to the next one, the
/// last to `end`.
pub fn reach_next(starts: &[u64], end: u64) -> Vec<(u64, u64)> {
    starts
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, starts.get(i + 1).copied().unwrap_or(end) - s))
        .collect()
}

/// The symbol of `symbols` (`(start, size)`, sorted by start, not overlapping) containing
/// `addr`.
pub fn symbol_containing(symbols: &[(u64, u64)], addr: u64) -> Option<(u64, u64)> {
    let i = symbols.partition_point(|&(s, _)| s <= addr);
    let &(start, size) = symbols.get(i.checked_sub(1)?)?;
    (addr - start < size).then_some((start, size))
}

/// `bytes` as little-endian 32-bit words (a trailing partial word dropped).
pub fn le_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
