//! Latency samples and their percentiles (nearest rank, as load tools
//! usually report them).

use std::fmt;
use std::time::Duration;

/// Samples of one latency, in seconds.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// Adds one sample.
    pub fn push(&mut self, d: Duration) {
        self.0.push(d.as_secs_f64());
    }

    /// Adds every sample of `other`.
    pub fn extend(&mut self, other: &Samples) {
        self.0.extend_from_slice(&other.0);
    }

    /// Their summary.
    pub fn summary(&self) -> Summary {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        let pick = |q: f64| -> f64 {
            if sorted.is_empty() {
                return 0.0;
            }
            // Nearest rank: the smallest sample with at least q of them at
            // or below it.
            let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
            sorted[rank.min(sorted.len()) - 1]
        };
        Summary {
            count: sorted.len(),
            p50: pick(0.50),
            p95: pick(0.95),
            p99: pick(0.99),
            max: sorted.last().copied().unwrap_or(0.0),
        }
    }
}

/// Percentiles of one latency, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// How many samples.
    pub count: usize,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |s: f64| s * 1000.0;
        write!(
            f,
            "p50 {:9.2} ms  p95 {:9.2} ms  p99 {:9.2} ms  max {:9.2} ms  (n={})",
            ms(self.p50),
            ms(self.p95),
            ms(self.p99),
            ms(self.max),
            self.count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s = Samples::default();
        for ms in 1..=100 {
            s.push(Duration::from_millis(ms));
        }
        let sum = s.summary();
        assert_eq!(sum.count, 100);
        assert!((sum.p50 - 0.050).abs() < 1e-9);
        assert!((sum.p95 - 0.095).abs() < 1e-9);
        assert!((sum.p99 - 0.099).abs() < 1e-9);
        assert!((sum.max - 0.100).abs() < 1e-9);
        assert_eq!(Samples::default().summary().count, 0);
    }
}
