// SPDX-License-Identifier: GPL-2.0

//! A small deterministic random generator (xorshift64*), so runs are reproducible.

/// xorshift64* state.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is remapped).
    pub fn new(seed: u64) -> Self {
        Rng(splitmix(seed) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A register value: often an edge (0, 1, all ones, the 32-bit edges, one bit set),
    /// otherwise random.
    pub fn reg_value(&mut self) -> u64 {
        match self.below(10) {
            0 => 0,
            1 => 1u64.wrapping_shl(self.below(64) as u32),
            2 => u64::MAX,
            3 => [
                0xffff_ffff,
                0x1_0000_0000,
                0x8000_0000,
                0xffff_ffff_0000_0000,
            ][self.below(4) as usize],
            4 => self.next_u64() & 0xffff_ffff_0000_0000,
            5 => self.next_u64() & 0xffff_ffff,
            _ => self.next_u64(),
        }
    }
}

/// splitmix64's finaliser: a well-mixed hash of `x`.
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
