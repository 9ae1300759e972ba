// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: the text and its function symbols.

use crate::kprobes::{insn, is_kernel_addr, KernelText, PAGE_OFFSET};
use crate::rng::Rng;
use rkprobes_difftest_common::elf::{le_words, Elf};

/// `EM_PPC64`.
const EM_PPC64: u16 = 21;

/// A kernel text image.
#[derive(Clone, Debug, Default)]
pub struct Image {
    /// What the image is (a path, or "random").
    pub name: String,
    /// Address of the first word of [`Self::words`].
    pub base: u64,
    /// The text, one word per element (little-endian words, decoded).
    pub words: Vec<u32>,
    /// The function symbols whose words are probe sites, `(start, size)`.
    pub functions: Vec<(u64, u64)>,
}

impl KernelText for Image {
    fn read_word(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        if off % 4 != 0 {
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

    /// Every 4-byte aligned address inside a function symbol with a word before it and two
    /// after it in the image (what `arch_prepare_kprobe()` may read), once, in address order.
    pub fn sites(&self) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for &(start, size) in &self.functions {
            let mut a = start.next_multiple_of(4).max(self.base + 4);
            while a < start + size && a + 12 <= self.end() {
                v.push(a);
                a += 4;
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Reads the `.text` of a ppc64le ELF file (a vmlinux) and its function symbols.
    ///
    /// A stripped file (a user program such as the pipeline's static busybox) has no
    /// symbols: its whole `.text` is then one function, moved by [`PAGE_OFFSET`] so that it
    /// sits at kernel addresses (its offsets in a page, and the branches within it, stay the
    /// same).
    pub fn from_elf(path: &str) -> Result<Image, String> {
        let f = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let elf = Elf::parse(&f, Some((EM_PPC64, "a little-endian ppc64")))?;
        let text = elf.section(".text").ok_or("no .text")?;
        let mut img = Image {
            name: path.to_string(),
            base: text.addr,
            words: le_words(elf.data(text)?),
            ..Image::default()
        };
        img.functions = match elf.text_symbols(text, img.end()) {
            Ok(syms) if !syms.functions.is_empty() => syms.functions,
            _ => {
                if !is_kernel_addr(img.base) {
                    img.base = img.base.wrapping_add(PAGE_OFFSET);
                }
                img.name = format!("{path} (no symbols: the whole .text at {:#x})", img.base);
                vec![(img.base, img.end() - img.base)]
            }
        };
        Ok(img)
    }

    /// The first `n` words of the image (its functions cut there).
    pub fn truncated(mut self, n: usize) -> Image {
        self.words.truncate(n);
        let end = self.end();
        self.functions.retain(|&(start, _)| start < end);
        for f in &mut self.functions {
            f.1 = f.1.min(end - f.0);
        }
        self
    }
}

/// A random word from one of the classes the decisions treat apart: the traps (`twi`,
/// `tdi`, `tw`, `td`, `trap` itself), `sc`/`scv`, the `OP_19` group (the returns from
/// interrupt and power-saving forms `can_single_step()` refuses, the conditional branches to
/// LR/CTR/TAR, and random extended opcodes), the `OP_31` group (`mtmsr`, `mtmsrd`, the trap
/// forms, random ones), prefixes, `bc` and `b`, the ELFv2 global-entry words, or any word.
pub fn random_word(rng: &mut Rng) -> u32 {
    let r = rng.next_u32();
    let op = |o: u32, rest: u32| (o << 26) | (rest & 0x03ff_ffff);
    let xo = |o: u32, x: u32, rest: u32| (o << 26) | (rest & 0x03ff_f801) | ((x & 0x3ff) << 1);
    match rng.below(32) {
        0 => op(insn::OP_TRAP, r),
        1 => op(insn::OP_TRAP_64, r),
        2 => op(insn::OP_SC, r),
        3..=5 => {
            const X19: [u32; 17] = [
                16, 18, 38, 39, 50, 51, 82, 274, 306, 370, 402, 434, 466, 498, 528, 560, 0,
            ];
            let x = if rng.below(4) == 0 {
                rng.next_u32()
            } else {
                X19[rng.below(X19.len() as u64) as usize]
            };
            xo(insn::OP_19, x, r)
        }
        6..=8 => {
            const X31: [u32; 6] = [4, 68, 146, 178, 147, 179];
            let x = if rng.below(4) == 0 {
                rng.next_u32()
            } else {
                X31[rng.below(X31.len() as u64) as usize]
            };
            xo(insn::OP_31, x, r)
        }
        9..=11 => op(insn::OP_PREFIX, r),
        12 => op(insn::OP_BC, r),
        13 => op(insn::OP_B, r),
        14 => crate::kprobes::BREAKPOINT_INSTRUCTION,
        15 => match rng.below(3) {
            0 => insn::ADDIS_R2_R12 | (r & 0xffff),
            1 => insn::LIS_R2 | (r & 0xffff),
            _ => insn::ADDI_R2_R2 | (r & 0xffff),
        },
        // The words the kernel is mostly made of: nop (ori 0,0,0), mflr, std, ld, addi, bl.
        16 => [
            0x6000_0000,
            0x7c08_02a6,
            0xf821_ff91,
            0xe8010010,
            0x3860_0000,
            0x4800_0001,
        ][rng.below(6) as usize],
        _ => r,
    }
}

/// A synthetic image of `n` random words (see [`random_word`]) at a 64 KiB-aligned kernel
/// address, one function of random length after another from the fifth word to the third
/// last (so every site has the words `arch_prepare_kprobe()` reads around it).
pub fn random_image(n: usize, seed: u64) -> Image {
    let mut rng = Rng::new(seed);
    let base = 0xc000_0000_0001_0000;
    let words = (0..n.max(8)).map(|_| random_word(&mut rng)).collect();
    let mut img = Image {
        name: format!("random (seed {seed:#x})"),
        base,
        words,
        ..Image::default()
    };
    let end = img.end() - 8;
    let mut at = base + 16;
    while at < end {
        let len = (4 * (1 + rng.below(40))).min(end - at);
        img.functions.push((at, len));
        at += len;
    }
    img
}
