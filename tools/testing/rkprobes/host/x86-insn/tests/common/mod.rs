// SPDX-License-Identifier: GPL-2.0

//! Seeded instruction-like random input shared by the property and differential tests.

/// splitmix64: small, seedable and good enough to spread inputs.
pub struct Rng(u64);

impl Rng {
    /// Starts the sequence at `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// Returns the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Returns a random number below `n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Bytes that steer the decoder into its less common paths.
const INTERESTING: [u8; 24] = [
    0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x2e, 0x3e, 0x26, 0x64, 0x65, 0x36, 0x40, 0x48, 0x4f, 0xc4, 0xc5,
    0x62, 0xd5, 0x8f, 0x0f, 0x38, 0x3a, 0x9a, 0xea,
];

/// Fills `buf` with instruction-like bytes: a random mix of prefixes, escapes and VEX/EVEX
/// lead bytes up front, then uniform bytes. Returns how many bytes of `buf` to pass to the
/// decoder (sometimes fewer than 15, to exercise truncation).
pub fn instruction_like(rng: &mut Rng, buf: &mut [u8; 16]) -> usize {
    let r = rng.next_u64();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (rng.next_u64() >> 24) as u8;
        let lead = i < 6 && (r >> (i * 3)) & 7 < 3;
        if lead {
            *b = INTERESTING[rng.below(INTERESTING.len() as u64) as usize];
        }
    }
    match r >> 60 {
        0 => rng.below(16) as usize,
        _ => 16,
    }
}

/// Default number of random inputs; `RKPROBES_INSN_RANDOM` overrides it.
pub fn input_count(default: u64) -> u64 {
    std::env::var("RKPROBES_INSN_RANDOM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
