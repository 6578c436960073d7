//! Popularity distributions and scatter permutations shared by the workload generators.
//!
//! Real request streams (embedding lookups, key-value gets) follow a Zipf law over item ranks
//! (DLRM's published embedding-access skew; YCSB's default `zipfian` with exponent 0.99). The
//! sampler here draws a Zipf rank in O(1) time and O(1) memory for any support size, so a
//! 2^32-item table needs no CDF array. [`Scatter`] then maps ranks to item positions with a
//! seeded bijection, so the hot items are spread over the structure instead of packed at its
//! start (which would make them share a few pages and hide the translation cost).

use crate::rng::Rng;

/// Zipf distribution over ranks `0..n` (rank 0 most popular): `P(k) ∝ 1/(k+1)^alpha`.
///
/// Sampled by rejection-inversion (Hörmann & Derflinger, "Rejection-inversion to generate
/// variates from monotone discrete distributions", ACM TOMACS 1996): invert the integral of the
/// continuous hat `x^-alpha`, accept the rounded point when it falls under the discrete
/// probability. Expected iterations are close to 1 for every `alpha >= 0`.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    alpha: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// `n >= 1` items, exponent `alpha >= 0` (0 is uniform). Callers validate their parameters
    /// first; out-of-range values here are engine bugs.
    pub fn new(n: u64, alpha: f64) -> Zipf {
        assert!(n >= 1, "Zipf over an empty support");
        assert!(alpha.is_finite() && alpha >= 0.0, "Zipf exponent {alpha}");
        let mut z = Zipf {
            n,
            alpha,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// A rank in `0..n`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.unit() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n as f64);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
    }

    /// The hat density `x^-alpha`.
    fn h(&self, x: f64) -> f64 {
        (-self.alpha * x.ln()).exp()
    }

    /// `∫_1^x t^-alpha dt`, written to stay exact as `alpha -> 1`.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        exp_m1_over_x((1.0 - self.alpha) * log_x) * log_x
    }

    fn h_integral_inverse(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.alpha)).max(-1.0);
        (ln_1p_over_x(t) * y).exp()
    }
}

/// `(e^x - 1) / x`, continuous at 0.
fn exp_m1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
}

/// `ln(1 + x) / x`, continuous at 0.
fn ln_1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// MurmurHash3's 64-bit finaliser: a bijective mixing function with full avalanche. Used as the
/// hash of k-mers and keys, and as the round function of [`Scatter`].
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A seeded bijection of `0..n` in O(1) memory: a 4-round Feistel network over the smallest
/// even-bit-width power of two holding `n`, with cycle-walking to stay inside `0..n`.
#[derive(Clone, Debug)]
pub struct Scatter {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Scatter {
    pub fn new(n: u64, rng: &mut Rng) -> Scatter {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        Scatter {
            n,
            half_bits: bits.div_ceil(2),
            keys: [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ],
        }
    }

    /// The image of `i < n`.
    #[inline]
    pub fn apply(&self, mut i: u64) -> u64 {
        debug_assert!(i < self.n);
        loop {
            i = self.permute_domain(i);
            if i < self.n {
                return i;
            }
        }
    }

    /// The preimage of `j < n`: `invert(apply(i)) == i`.
    #[inline]
    pub fn invert(&self, mut j: u64) -> u64 {
        debug_assert!(j < self.n);
        loop {
            j = self.unpermute_domain(j);
            if j < self.n {
                return j;
            }
        }
    }

    fn unpermute_domain(&self, y: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (y >> self.half_bits, y & mask);
        for k in self.keys.iter().rev() {
            let f = mix64(l ^ k) & mask;
            (l, r) = (r ^ f, l);
        }
        (l << self.half_bits) | r
    }

    fn permute_domain(&self, x: u64) -> u64 {
        self.permute_lanes([x])[0]
    }

    /// [`Scatter::permute_domain`] of `L` values at once, each round over all of them before
    /// the next: one value's rounds wait on each other's multiplies, several values' overlap.
    #[inline(always)]
    fn permute_lanes<const L: usize>(&self, x: [u64; L]) -> [u64; L] {
        let mask = (1u64 << self.half_bits) - 1;
        let mut l = x.map(|x| x >> self.half_bits);
        let mut r = x.map(|x| x & mask);
        for k in self.keys {
            for i in 0..L {
                let f = mix64(r[i] ^ k) & mask;
                (l[i], r[i]) = (r[i], l[i] ^ f);
            }
        }
        std::array::from_fn(|i| (l[i] << self.half_bits) | r[i])
    }

    /// [`Scatter::apply`] to every value of `xs` (each `< n`, and `n <= 2^32`), in place: four
    /// values' rounds at a time ([`Scatter::permute_lanes`]), then again for those the
    /// permutation left outside `0..n` (the cycle walk), until none is.
    pub fn apply_all(&self, xs: &mut [u32]) {
        const LANES: usize = 4;
        // Every value of the domain fits 32 bits: it is the smallest even-bit-width power of
        // two holding n <= 2^32.
        debug_assert!(self.half_bits <= 16);
        // The first step of every value, then steps for the values still outside `0..n`,
        // gathered four at a time; a last partial group walks to the end one by one.
        let mut chunks = xs.chunks_exact_mut(LANES);
        for c in &mut chunks {
            let y = self.permute_lanes([0, 1, 2, 3].map(|i| u64::from(c[i])));
            for (x, y) in c.iter_mut().zip(y) {
                *x = y as u32;
            }
        }
        for x in chunks.into_remainder() {
            *x = self.permute_domain(u64::from(*x)) as u32;
        }
        loop {
            let mut group = [0usize; LANES];
            let mut held = 0;
            let mut walked = false;
            for i in 0..xs.len() {
                if u64::from(xs[i]) < self.n {
                    continue;
                }
                walked = true;
                group[held] = i;
                held += 1;
                if held == LANES {
                    let y = self.permute_lanes(group.map(|i| u64::from(xs[i])));
                    for (&i, y) in group.iter().zip(y) {
                        xs[i] = y as u32;
                    }
                    held = 0;
                }
            }
            for &i in &group[..held] {
                let mut y = u64::from(xs[i]);
                while y >= self.n {
                    y = self.permute_domain(y);
                }
                xs[i] = y as u32;
            }
            if !walked {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_applied_to_many_values_at_once_maps_each_as_alone() {
        // Odd and even bit widths (an odd one walks half its values), and lengths around the
        // groups of four.
        for n in [1u64, 2, 7, 1000, 1 << 13, (1 << 13) + 5, 1 << 25] {
            let s = Scatter::new(n, &mut Rng::new(9, 4));
            let mut rng = Rng::new(10, 4);
            for len in [0usize, 1, 3, 4, 5, 8, 63, 64, 257] {
                let mut xs: Vec<u32> = (0..len).map(|_| rng.below(n) as u32).collect();
                let want: Vec<u32> = xs.iter().map(|&x| s.apply(x.into()) as u32).collect();
                s.apply_all(&mut xs);
                assert_eq!(xs, want, "n {n} len {len}");
            }
        }
    }

    #[test]
    fn scatter_invert_undoes_apply() {
        for n in [1u64, 2, 7, 1000, 1 << 13] {
            let s = Scatter::new(n, &mut Rng::new(3, 4));
            for i in 0..n {
                assert_eq!(s.invert(s.apply(i)), i, "n {n}");
            }
        }
    }

    fn counts(n: u64, alpha: f64, draws: usize) -> Vec<u64> {
        let z = Zipf::new(n, alpha);
        let mut rng = Rng::new(11, 5);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            c[z.sample(&mut rng) as usize] += 1;
        }
        c
    }

    #[test]
    fn rank_ratios_follow_the_power_law() {
        for alpha in [0.5, 0.99, 1.0, 1.05, 1.5] {
            let c = counts(1000, alpha, 400_000);
            let ratio = c[0] as f64 / c[1] as f64;
            let want = 2f64.powf(alpha);
            assert!(
                (ratio - want).abs() / want < 0.05,
                "alpha {alpha}: rank1/rank2 = {ratio}, want {want}"
            );
            let ratio13 = c[0] as f64 / c[2] as f64;
            assert!((ratio13 - 3f64.powf(alpha)).abs() / 3f64.powf(alpha) < 0.08);
        }
    }

    #[test]
    fn matches_exact_probabilities_on_a_small_support() {
        let (n, alpha) = (5u64, 1.2);
        let c = counts(n, alpha, 500_000);
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-alpha)).sum();
        for k in 0..n {
            let p = ((k + 1) as f64).powf(-alpha) / norm;
            let got = c[k as usize] as f64 / 500_000.0;
            assert!((got - p).abs() < 0.005, "rank {k}: {got} vs {p}");
        }
    }

    #[test]
    fn stays_in_support_for_huge_and_tiny_n() {
        let mut rng = Rng::new(3, 3);
        for (n, alpha) in [
            (1u64, 1.0),
            (2, 0.0),
            (3, 2.0),
            (1 << 32, 1.05),
            (u64::MAX, 0.8),
        ] {
            let z = Zipf::new(n, alpha);
            for _ in 0..20_000 {
                assert!(z.sample(&mut rng) < n);
            }
        }
        // Uniform at alpha = 0: every rank of a small support appears about equally often.
        let c = counts(4, 0.0, 100_000);
        assert!(
            c.iter().all(|&x| (x as f64 - 25_000.0).abs() < 1000.0),
            "{c:?}"
        );
    }

    #[test]
    fn scatter_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let s = Scatter::new(n, &mut Rng::new(1, n));
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = s.apply(i);
                assert!(j < n && !seen[j as usize], "n {n}: {i} -> {j}");
                seen[j as usize] = true;
            }
        }
        // Seeded: another seed gives another permutation.
        let a = Scatter::new(1000, &mut Rng::new(1, 1));
        let b = Scatter::new(1000, &mut Rng::new(2, 1));
        assert!((0..1000).any(|i| a.apply(i) != b.apply(i)));
    }
}
