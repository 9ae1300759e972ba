// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: the text and its function symbols.

use crate::kprobes::opcodes::OPCODE_GROUPS;
use crate::kprobes::{insn_length, KernelText, BREAKPOINT_INSTRUCTION};
use crate::rng::Rng;

/// A kernel text image, in halfwords.
#[derive(Clone, Debug, Default)]
pub struct Image {
    /// What the image is.
    pub name: String,
    /// Address of the first halfword of [`Self::halfwords`].
    pub base: u64,
    /// The text, one halfword per element, as s390 reads it.
    pub halfwords: Vec<u16>,
    /// The function symbols whose halfwords are probe sites, `(start, size)`.
    pub functions: Vec<(u64, u64)>,
}

impl KernelText for Image {
    fn read_halfword(&self, addr: u64) -> Option<u16> {
        let off = addr.checked_sub(self.base)?;
        if off % 2 != 0 {
            return None;
        }
        self.halfwords.get(usize::try_from(off / 2).ok()?).copied()
    }
}

impl Image {
    /// The end of the text.
    pub fn end(&self) -> u64 {
        self.base + 2 * self.halfwords.len() as u64
    }

    /// Every 2-byte aligned address inside a function symbol with the longest instruction's
    /// room after it, with the start of its function, in address order.
    pub fn sites(&self) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for &(start, size) in &self.functions {
            let mut a = start;
            while a < start + size && a + 6 <= self.end() {
                v.push((a, start));
                a += 2;
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// `EM_S390`.
const EM_S390: u16 = 22;

/// Instructions per pseudo-function of a stripped text.
const PSEUDO_FUNCTION_INSNS: usize = 64;

fn be16(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(f.get(at..at + 2)?.try_into().ok()?))
}
fn be32(f: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(f.get(at..at + 4)?.try_into().ok()?))
}
fn be64(f: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(f.get(at..at + 8)?.try_into().ok()?))
}

/// The address and bytes of the `.text` of a big-endian s390x ELF64 file.
fn elf_text(f: &[u8]) -> Option<(u64, &[u8])> {
    if f.get(..6)? != b"\x7fELF\x02\x02" || be16(f, 0x12)? != EM_S390 {
        return None;
    }
    let shoff = usize::try_from(be64(f, 0x28)?).ok()?;
    let shentsize = usize::from(be16(f, 0x3a)?);
    let shnum = usize::from(be16(f, 0x3c)?);
    let shstrndx = usize::from(be16(f, 0x3e)?);
    let sh = |i: usize| -> Option<(u32, u64, usize, usize)> {
        let at = shoff + i * shentsize;
        Some((
            be32(f, at)?,
            be64(f, at + 0x10)?,
            usize::try_from(be64(f, at + 0x18)?).ok()?,
            usize::try_from(be64(f, at + 0x20)?).ok()?,
        ))
    };
    let (_, _, stroff, _) = sh(shstrndx)?;
    (0..shnum).find_map(|i| {
        let (name, addr, off, size) = sh(i)?;
        let name_at = stroff + name as usize;
        (f.get(name_at..name_at + 6)? == b".text\0").then_some((addr, f.get(off..off + size)?))
    })
}

impl Image {
    /// The `.text` of a stripped s390x ELF file (such as the pipeline's static busybox), at
    /// `base` (page-aligned) plus its offset in a 4 KiB page: the text's halfwords, decoded
    /// from its start by instruction length into pseudo-functions of 64 instructions (the
    /// symbols `can_probe()` walks from).
    pub fn from_stripped_elf(path: &str, base: u64) -> Result<Image, String> {
        let f = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let (addr, text) =
            elf_text(&f).ok_or_else(|| format!("{path}: not an s390x ELF with a .text"))?;
        let pad = (addr & 0xfff) as usize / 2;
        let mut img = Image {
            name: format!(
                "{path} (.text, pseudo-functions of {PSEUDO_FUNCTION_INSNS} instructions)"
            ),
            base,
            halfwords: vec![0x0707; pad],
            ..Image::default()
        };
        img.halfwords.extend(
            text.chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]])),
        );
        let end = img.end();
        let mut at = base + 2 * pad as u64;
        while at < end {
            let start = at;
            for _ in 0..PSEUDO_FUNCTION_INSNS {
                let Some(h) = img.read_halfword(at) else {
                    break;
                };
                at += insn_length((h >> 8) as u8);
            }
            img.functions.push((start, at.min(end) - start));
        }
        img.halfwords.extend([0x0707; 3]);
        Ok(img)
    }

    /// The first `n` halfwords of the image (its functions cut there).
    pub fn truncated(mut self, n: usize) -> Image {
        self.halfwords.truncate(n);
        let end = self.end();
        self.functions.retain(|&(start, _)| start < end);
        for f in &mut self.functions {
            f.1 = f.1.min(end - f.0);
        }
        self.halfwords.extend([0x0707; 3]);
        self
    }
}

/// First halfwords of the classes the decisions treat apart: the prohibited opcodes
/// (`bassm`, `bsm`, `diag`, `ex`, `stnsm`, `stosm`, `exrl`, `pr`, `bsa`, `bakr`, `bsg`, `pc`,
/// `pt`, `epsw`, `tbegin`, `tbeginc`, `tend`), the branches of every fix-up type (`balr`,
/// `basr` with R2 0 and not, `bctr`, `bcr`, `bal`, `bas`, `bc`, `bct`, `bxh`, `bxle`, `lpsw`,
/// `lpswe`, `bras`, `brasl`, `bxhg`/`bxleg`, `bctg` and the compare-and-branch forms by their
/// last byte), the relative-long forms (`larl`, `c4x`, `c6x`), and the breakpoint.
const FIRST: &[u16] = &[
    0x0c12,
    0x0b12,
    0x8312,
    0x4412,
    0xac12,
    0xad12,
    0xc610,
    0x0101,
    0xb25a,
    0xb240,
    0xb258,
    0xb218,
    0xb228,
    0xb98d,
    0xe560,
    0xe561,
    0xb2f8,
    0x05e0,
    0x05ef,
    0x0de0,
    0x0d1e,
    0x06e1,
    0x07fe,
    0x07f0,
    0x45e0,
    0x4de0,
    0x47f0,
    0x4610,
    0x8612,
    0x8712,
    0x8200,
    0xb2b2,
    0xb2b3,
    0xa7e5,
    0xa7f4,
    0xa7e4,
    0xc0e5,
    0xc0e4,
    0xc0e0,
    0xeb12,
    0xe312,
    0xec12,
    0xc4e2,
    0xc4e8,
    0xc4e1,
    0xc6e2,
    0xc6e1,
    0xc6e9,
    0xc6eb,
    BREAKPOINT_INSTRUCTION,
];

/// The last bytes that make a six-byte `eb`, `e3` or `ec` instruction a branch.
const LAST: &[u16] = &[
    0x44, 0x45, 0x46, 0xe4, 0xe5, 0xf6, 0xf7, 0xfc, 0xfd, 0xfe, 0xff, 0x04,
];

/// Appends a random instruction: from [`FIRST`], one the disassembler knows (from the opcode
/// groups), any, or one time in 64 a stray 0x00xx halfword (which ends `can_probe()`'s walk
/// through the rest of its function).
fn push_random_insn(rng: &mut Rng, out: &mut Vec<u16>) {
    let mut bytes: [u8; 6] = std::array::from_fn(|_| rng.next_u32() as u8);
    match rng.below(64) {
        0 => bytes[0] = 0,
        1..=24 => {
            let [a, b] = FIRST[rng.below(FIRST.len() as u64) as usize].to_be_bytes();
            bytes[0] = a;
            bytes[1] = b;
            if rng.below(2) == 0 {
                bytes[5] = LAST[rng.below(LAST.len() as u64) as usize] as u8;
            }
        }
        25..=48 => {
            // An instruction the disassembler knows.
            let g = &OPCODE_GROUPS[rng.below(OPCODE_GROUPS.len() as u64) as usize];
            let frag = g.opfrags[rng.below(g.opfrags.len() as u64) as usize];
            let at = usize::from(g.byte);
            if at == 0 {
                bytes[0] = frag;
            } else {
                bytes[0] = g.opcode;
                bytes[at] = (bytes[at] & !g.mask) | frag;
            }
        }
        _ => {}
    }
    let len = insn_length(bytes[0]) as usize / 2;
    for i in 0..len {
        out.push(u16::from_be_bytes([bytes[2 * i], bytes[2 * i + 1]]));
    }
}

/// A synthetic image of about `n` halfwords of random instructions at `base`, one function
/// of 1 to 30 instructions after another, and three spare halfwords at the end.
pub fn random_image(n: usize, seed: u64, base: u64) -> Image {
    let mut rng = Rng::new(seed);
    let mut img = Image {
        name: format!("random (seed {seed:#x})"),
        base,
        ..Image::default()
    };
    while img.halfwords.len() < n {
        let start = img.end();
        for _ in 0..1 + rng.below(30) {
            push_random_insn(&mut rng, &mut img.halfwords);
        }
        img.functions.push((start, img.end() - start));
    }
    img.halfwords.extend([0x0707; 3]);
    img
}
