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
