//! A small seeded generator (SplitMix64) of our own, so that a seed names
//! the same arrivals and prompts whatever crate versions the build picks:
//! a load sweep rerun next month, or against another server, sends the
//! same load (`loadtest/open/mix.rs`), and `bench --prompt-tokens` the
//! same token ids (`bench/prompts.rs`).

/// SplitMix64 (Steele, Lea and Flood): one 64-bit state, good enough
/// statistics for arrival times and prompt choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator for item `index` of stream `stream` under `seed`, so
    /// that item `i` is the same however many items came before it.
    pub fn for_item(seed: u64, stream: u64, index: u64) -> Self {
        let mut mix = Self(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let base = mix.next_u64();
        Self(base ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo + 1) as u64;
        lo + (self.next_u64() % span) as usize
    }

    /// One element of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len().saturating_sub(1))]
    }

    /// Exponentially distributed with mean `1 / rate`: the gap between two
    /// arrivals of a Poisson process.
    pub fn exponential(&mut self, rate: f64) -> f64 {
        // 1 - unit() is in (0, 1], so the logarithm is finite.
        -(1.0 - self.unit()).ln() / rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_stream() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut r = Rng::new(7);
        let first = r.next_u64();
        assert_ne!(first, r.next_u64());
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
        assert_eq!(
            Rng::for_item(1, 2, 3).next_u64(),
            Rng::for_item(1, 2, 3).next_u64()
        );
        assert_ne!(
            Rng::for_item(1, 2, 3).next_u64(),
            Rng::for_item(1, 2, 4).next_u64()
        );
    }

    #[test]
    fn exponential_gaps_have_the_right_mean() {
        let mut r = Rng::new(42);
        let n = 200_000;
        let mean = (0..n).map(|_| r.exponential(4.0)).sum::<f64>() / n as f64;
        assert!((mean - 0.25).abs() < 0.005, "{mean}");
        let mut r = Rng::new(3);
        for _ in 0..10_000 {
            let x = r.range(2, 5);
            assert!((2..=5).contains(&x));
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(r.range(5, 5), 5);
    }
}
