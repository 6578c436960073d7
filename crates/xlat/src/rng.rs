//! The one random-number generator of the engine: xoshiro256** seeded through SplitMix64.
//!
//! Every component that needs randomness owns its own `Rng`, seeded from the run seed and a
//! component-specific stream id, so that adding randomness to one component never changes the
//! numbers another one draws (docs/architecture.md, "rules").

/// xoshiro256** (Blackman & Vigna), a small fast generator with a 2^256 period.
#[derive(Clone, Debug, PartialEq)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `stream` (a component id) under the run `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut st = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the tiny bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Stream ids, one per component that draws random numbers.
pub mod stream {
    pub const FRAGMENTATION: u64 = 1;
    pub const REPLACEMENT: u64 = 2;
    pub const WORKLOAD: u64 = 3;
    pub const PLACEMENT: u64 = 4;
    /// Fragmentation of a VMM's host memory.
    pub const HOST_FRAGMENTATION: u64 = 5;
    /// The order of a shuffled free list of frames (`os.physmem.frame_order = "shuffled"`).
    pub const FRAME_ORDER: u64 = 6;
    /// Address-space layout randomisation (`os.aslr`).
    pub const LAYOUT: u64 = 7;
    /// The tables of Mosaic's tabulation hash (shared by its allocator, tables and TLB).
    pub const MOSAIC_HASH: u64 = 8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_stream_separated() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7, 1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::new(7, 1).next_u64(), Rng::new(7, 2).next_u64());
        let mut r = Rng::new(1, 1);
        assert!((0..10_000).all(|_| r.below(10) < 10));
        let mean: f64 = (0..10_000).map(|_| r.unit()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02);
    }
}
