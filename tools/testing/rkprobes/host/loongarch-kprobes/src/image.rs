// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: the text and its function symbols.

use crate::kprobes::KernelText;
use crate::rng::Rng;
use rkprobes_difftest_common::elf::{le_words, Elf};

/// `EM_LOONGARCH`.
const EM_LOONGARCH: u16 = 258;

/// A kernel text image.
#[derive(Clone, Debug, Default)]
pub struct Image {
    /// What the image is (a path, or "random").
    pub name: String,
    /// Address of the first word of [`Self::words`].
    pub base: u64,
    /// The text, one instruction word per element (little-endian words, decoded).
    pub words: Vec<u32>,
    /// The function symbols whose words are probe sites, `(start, size)`.
    pub functions: Vec<(u64, u64)>,
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
            let mut a = start.next_multiple_of(4);
            while a < start + size && a + 4 <= self.end() {
                v.push(a);
                a += 4;
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Reads the `.text` of a loongarch64 vmlinux and its function symbols.
    pub fn from_elf(path: &str) -> Result<Image, String> {
        let f = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let elf = Elf::parse(&f, Some((EM_LOONGARCH, "a LoongArch")))?;
        let text = elf.section(".text").ok_or("no .text")?;
        let mut img = Image {
            name: path.to_string(),
            base: text.addr,
            words: le_words(elf.data(text)?),
            ..Image::default()
        };
        img.functions = elf.text_symbols(text, img.end())?.functions;
        Ok(img)
    }
}

/// A random instruction word, biased towards the classes the decisions treat apart: the
/// branches (every `reg1i21` opcode from `beqz` to `bgeu`, `bceqz`/`bcnez` included), the
/// PC-relative computations (with their `lu12i.w`/`lu32i.d` neighbours), LL/SC (with the
/// `ldptr`/`stptr` neighbours), the atomics and `sc.q` (with the `amcas`/`am*.b/h` and
/// `ldgt`/`stle` neighbours), `llacq`/`screl` (and the opcodes around them) and `break`.
pub fn random_word(rng: &mut Rng) -> u32 {
    let r = rng.next_u32();
    match rng.below(20) {
        0..=4 => (r & 0x03ff_ffff) | ((0x10 + rng.below(12) as u32) << 26),
        5..=6 => (r & 0x01ff_ffff) | ((0x0a + rng.below(6) as u32) << 25),
        7 => (r & 0x00ff_ffff) | ((0x20 + rng.below(8) as u32) << 24),
        8..=9 => (r & 0x7fff) | ((0x70a8 + rng.below(0x48) as u32) << 15),
        10 => (r & 0x3ff) | ((0xe15dc + rng.below(12) as u32) << 10),
        11 => (r & 0x7fff) | (0x54 << 15),
        _ => r,
    }
}

/// A synthetic image of `n` random words (see [`random_word`]), one function of random
/// length after another.
pub fn random_image(n: usize, seed: u64) -> Image {
    let mut rng = Rng::new(seed);
    let base = 0x9000_0000_0020_0000;
    let words = (0..n).map(|_| random_word(&mut rng)).collect();
    let mut img = Image {
        name: format!("random (seed {seed:#x})"),
        base,
        words,
        ..Image::default()
    };
    let end = img.end();
    let mut at = base;
    while at < end {
        let len = (4 * (1 + rng.below(40))).min(end - at);
        img.functions.push((at, len));
        at += len;
    }
    img
}
