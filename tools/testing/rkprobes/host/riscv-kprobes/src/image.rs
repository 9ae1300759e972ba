// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: text and kallsyms.

use crate::kprobes::insn::insn_length;
use crate::kprobes::KernelText;
use crate::rng::Rng;
use rkprobes_difftest_common::elf::{reach_next, symbol_containing, Elf};

/// Bytes of zero padding after the text: upstream reads 32 bits at a probed parcel whatever
/// its length, and the shim's reads must stay in the buffer.
const PADDING: usize = 4;

/// A kernel text image and the symbols the riscv kprobes decisions consult about it.
#[derive(Clone, Debug, Default)]
pub struct Image {
    /// What the image is (a path, or "random").
    pub name: String,
    /// Address of the first byte of [`Self::bytes`].
    pub base: u64,
    /// The text, then [`PADDING`] zero bytes.
    pub bytes: Vec<u8>,
    /// The symbols kallsyms knows, `(start, size)`, sorted by start, not overlapping; as
    /// kallsyms does, a symbol reaches to the next one.
    pub symbols: Vec<(u64, u64)>,
    /// The function symbols whose instructions are probe sites, `(start, size)`.
    pub functions: Vec<(u64, u64)>,
    /// The ranges the ELF mapping symbols mark as data (`$d` up to the next `$x`), sorted.
    pub data: Vec<(u64, u64)>,
}

impl KernelText for Image {
    fn read_u16(&self, addr: u64) -> Option<u16> {
        let off = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        if off.checked_add(2)? > self.text_len() {
            return None;
        }
        Some(u16::from_le_bytes([self.bytes[off], self.bytes[off + 1]]))
    }

    fn lookup_offset(&self, addr: u64) -> Option<u64> {
        self.symbol_at(addr).map(|(start, _)| addr - start)
    }
}

impl Image {
    /// The length of the text, without the padding.
    pub fn text_len(&self) -> usize {
        self.bytes.len().saturating_sub(PADDING)
    }

    /// The end of the text.
    pub fn end(&self) -> u64 {
        self.base + self.text_len() as u64
    }

    /// The kallsyms symbol containing `addr`, `(start, size)`.
    pub fn symbol_at(&self, addr: u64) -> Option<(u64, u64)> {
        symbol_containing(&self.symbols, addr)
    }

    /// The size of the kallsyms symbol containing `addr`.
    pub fn symbol_size(&self, addr: u64) -> Option<u64> {
        self.symbol_at(addr).map(|(_, size)| size)
    }

    /// Whether `addr` lies in a range the mapping symbols mark as data.
    pub fn in_data(&self, addr: u64) -> bool {
        let i = self.data.partition_point(|&(s, _)| s <= addr);
        i.checked_sub(1)
            .and_then(|i| self.data.get(i))
            .is_some_and(|&(s, e)| addr < e && addr >= s)
    }

    /// Every instruction boundary of every function symbol, walking each from its start by
    /// instruction length (`GET_INSN_LENGTH` of the parcel), once, in address order; an
    /// instruction must end inside the text.
    pub fn sites(&self) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for &(start, size) in &self.functions {
            let mut a = start;
            while a < start + size {
                let Some(p) = self.read_u16(a) else { break };
                let len = insn_length(u32::from(p));
                if a + len > self.end() {
                    break;
                }
                v.push(a);
                a += len;
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Reads the `.text` of a riscv vmlinux and its symbols.
    pub fn from_elf(path: &str) -> Result<Image, String> {
        let f = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let elf = Elf::parse(&f, Some((243, "a RISC-V")))?;
        let text = elf.section(".text").ok_or("no .text")?;
        let mut bytes = elf.data(text)?.to_vec();
        bytes.extend_from_slice(&[0; PADDING]);
        let mut img = Image {
            name: path.to_string(),
            base: text.addr,
            bytes,
            ..Image::default()
        };
        let end = img.end();
        let syms = elf.text_symbols(text, end)?;
        img.symbols = syms.symbols;
        img.functions = syms.functions;
        let mapping = syms.mapping;
        for (i, &(at, data)) in mapping.iter().enumerate() {
            if data {
                let next = mapping[i + 1..].iter().find(|m| !m.1).map_or(end, |m| m.0);
                img.data.push((at, next));
            }
        }
        Ok(img)
    }
}

/// A random instruction, biased towards the classes the decisions treat apart: its encoding
/// (16 bits zero-extended for a compressed one).
pub fn random_insn(rng: &mut Rng) -> u32 {
    let r = rng.next_u32();
    let r16 = r & 0xffff;
    match rng.below(32) {
        // The refused classes: SYSTEM (ebreak and ecall now and then) and MISC-MEM.
        0 => match rng.below(4) {
            0 => [0x0010_0073, 0x0000_0073, 0x1020_0073][rng.below(3) as usize],
            _ => (r & !0x7f) | 0x73,
        },
        1 => (r & !0x7f) | 0x0f,
        // jal, jalr (now and then with a reserved funct3), auipc, every branch funct3.
        2 | 3 => (r & !0x7f) | 0x6f,
        4 | 5 => {
            if rng.below(4) == 0 {
                (r & !0x7f) | 0x67
            } else {
                (r & !0x707f) | 0x67
            }
        }
        6 | 7 => (r & !0x7f) | 0x17,
        8..=11 => (r & !0x7f) | 0x63,
        // c.j, the RV32 c.jal encoding (c.addiw on RV64), c.beqz/c.bnez.
        12 | 13 => (r16 & !0xe003) | 0xa001,
        14 => (r16 & !0xe003) | 0x2001,
        15 | 16 => (r16 & !0xe003) | [0xc001, 0xe001][rng.below(2) as usize],
        // CR format, funct4 100x: c.jr/c.jalr (rs2 = 0), c.mv/c.add (rs2 != 0), rs1 = 0
        // (reserved c.jr x0, c.ebreak) now and then.
        17 | 18 => {
            let rs1 = if rng.below(4) == 0 { 0 } else { r & 0x1f };
            let rs2 = if rng.below(2) == 0 {
                0
            } else {
                (r >> 5) & 0x1f
            };
            [0x8002, 0x9002][rng.below(2) as usize] | (rs1 << 7) | (rs2 << 2)
        }
        19 => [0x9002, 0x8002, 0x0000, 0xffff_ffff][rng.below(4) as usize],
        // Any compressed instruction.
        20..=23 => {
            let q = rng.below(3) as u32;
            (r16 & !0x3) | q
        }
        // Any 32-bit instruction (longer encodings, low bits 11111, included).
        _ => r | 0x3,
    }
}

/// A synthetic image of `n` random instructions (see [`random_insn`]), in functions of
/// random length, each a kallsyms symbol but for an occasional one kallsyms knows nothing
/// about, with now and then a kallsyms-only label inside a function at a random parcel (so
/// the boundary walk also starts mid-instruction).
pub fn random_image(n: usize, seed: u64) -> Image {
    let mut rng = Rng::new(seed);
    let base = 0xffff_ffff_8000_2000;
    let mut bytes = Vec::with_capacity(3 * n + PADDING);
    let mut starts = Vec::with_capacity(n);
    for _ in 0..n {
        starts.push(bytes.len() as u64);
        let insn = random_insn(&mut rng);
        let len = insn_length(insn) as usize;
        bytes.extend_from_slice(&insn.to_le_bytes()[..len]);
    }
    bytes.extend_from_slice(&[0; PADDING]);
    let mut img = Image {
        name: format!("random (seed {seed:#x})"),
        base,
        bytes,
        ..Image::default()
    };
    let end = img.end();
    let mut syms = Vec::new();
    let mut i = 0usize;
    while i < n {
        let max = if rng.below(4) == 0 { 300 } else { 40 };
        let count = (1 + rng.below(max) as usize).min(n - i);
        let start = base + starts[i];
        let stop = starts.get(i + count).map_or(end, |&s| base + s);
        // The first function is never known to kallsyms: its sites have no symbol.
        if i != 0 && rng.below(50) != 0 {
            syms.push(start);
        }
        if rng.below(30) == 0 {
            let parcels = (stop - start) / 2;
            syms.push(start + 2 * rng.below(parcels));
        }
        img.functions.push((start, stop - start));
        i += count;
    }
    syms.sort_unstable();
    syms.dedup();
    img.symbols = reach_next(&syms, end);
    img
}
