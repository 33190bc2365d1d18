//! One sampler for every model: top-k, top-p and min-p over the scaled
//! logits, then a seeded draw. No filter sorts more of the vocabulary than
//! the head it keeps (the nucleus is a few dozen tokens, the vocabulary
//! 50-150 thousand).
//!
//! Greedy requests never come here: their argmax stays on the MLX side so
//! decoding can be pipelined. Nor, where MLX draws them on the device
//! (`draw.rs`, the default), do sampled tokens, free or under a
//! constraint's mask: only `--sample-on host` sends logits here.
//! The logits that do come are biased and penalized already, in the step's
//! graph (`adjust.rs`).

use crate::{SamplingParams, TokenMask};

/// A candidate token and its (scaled) logit.
#[derive(Debug, Clone, Copy)]
struct Cand {
    id: u32,
    logit: f32,
}

/// Descending logit, then ascending id: the order the filters see.
fn by_logit(a: &Cand, b: &Cand) -> std::cmp::Ordering {
    b.logit.total_cmp(&a.logit).then(a.id.cmp(&b.id))
}

/// Keeps the `k` best candidates (in no particular order), in linear time.
fn top_k(cands: &mut Vec<Cand>, k: usize) {
    if k > 0 && k < cands.len() {
        cands.select_nth_unstable_by(k - 1, by_logit);
        cands.truncate(k);
    }
}

/// Keeps the smallest head, in descending order, whose probability mass
/// reaches `p`, sorting only as much of the candidates as that head needs:
/// a few dozen tokens usually hold the mass, not the vocabulary.
fn top_p(cands: &mut Vec<Cand>, p: f32) {
    let Some(max) = cands.iter().map(|c| c.logit).max_by(f32::total_cmp) else {
        return;
    };
    let total: f32 = cands.iter().map(|c| (c.logit - max).exp()).sum();
    let mut head = 64.min(cands.len());
    loop {
        if head < cands.len() {
            cands.select_nth_unstable_by(head - 1, by_logit);
        }
        cands[..head].sort_unstable_by(by_logit);
        let mut mass = 0.0;
        for (i, c) in cands[..head].iter().enumerate() {
            mass += (c.logit - max).exp() / total;
            if mass >= p {
                cands.truncate(i + 1);
                return;
            }
        }
        if head == cands.len() {
            return;
        }
        head = (head * 4).min(cands.len());
    }
}

/// Drops tokens less likely than `p` times the most likely one.
fn min_p(cands: &mut Vec<Cand>, p: f32) {
    let Some(best) = cands.iter().map(|c| c.logit).max_by(f32::total_cmp) else {
        return;
    };
    // p_i / p_max = exp(l_i - l_max)
    let floor = p.ln();
    cands.retain(|c| c.logit - best >= floor);
}

/// SplitMix64: small, fast and fully determined by its seed.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The per-request sampler.
pub struct Sampler {
    temperature: f32,
    top_k: usize,
    top_p: f32,
    min_p: f32,
    rng: Rng,
}

impl Sampler {
    /// The sampler for `params` (validated by `check_request`).
    pub fn new(params: &SamplingParams) -> Self {
        let seed = params.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Self {
            temperature: params.temperature,
            top_k: params.top_k,
            top_p: params.top_p,
            min_p: params.min_p,
            rng: Rng(seed),
        }
    }

    /// Picks the next token from `logits` among those `mask` allows (all
    /// without one); `None` when it allows none.
    pub fn sample(&mut self, logits: &[f32], mask: Option<&TokenMask>) -> Option<u32> {
        let mut logits = logits.to_vec();
        if let Some(mask) = mask
            && !mask.apply(&mut logits)
        {
            return None;
        }
        Some(self.pick(logits))
    }

    fn pick(&mut self, logits: Vec<f32>) -> u32 {
        if self.temperature < crate::sampling::GREEDY_BELOW {
            return argmax(&logits);
        }
        let inv_t = 1.0 / self.temperature;
        let mut cands: Vec<Cand> = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(i, &l)| Cand {
                id: i as u32,
                logit: l * inv_t,
            })
            .collect();
        if cands.is_empty() {
            return argmax(&logits);
        }
        // Top-k, then top-p over what it kept, then min-p; none of them
        // sorts more than the head it keeps.
        top_k(&mut cands, self.top_k);
        if self.top_p < 1.0 {
            top_p(&mut cands, self.top_p);
        }
        if self.min_p > 0.0 {
            min_p(&mut cands, self.min_p);
        }
        let max = cands
            .iter()
            .map(|c| c.logit)
            .max_by(f32::total_cmp)
            .unwrap_or(0.0);
        let weights: Vec<f32> = cands.iter().map(|c| (c.logit - max).exp()).collect();
        let r = self.rng.next_f32() * weights.iter().sum::<f32>();
        let mut acc = 0.0;
        for (c, w) in cands.iter().zip(&weights) {
            acc += w;
            if r < acc {
                return c.id;
            }
        }
        cands.last().map_or(0, |c| c.id)
    }
}

/// Index of the largest value (first on ties), NaN-safe.
pub fn argmax(v: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, x) in v.iter().enumerate() {
        if x.total_cmp(&v[best]).is_gt() {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> SamplingParams {
        SamplingParams {
            temperature: 1.0,
            seed: Some(7),
            ..SamplingParams::greedy()
        }
    }

    #[test]
    fn same_seed_same_tokens() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        let run = |p: &SamplingParams| {
            let mut s = Sampler::new(p);
            (0..20)
                .map(|_| s.sample(&logits, None).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(&params()), run(&params()));
        let other = SamplingParams {
            seed: Some(8),
            ..params()
        };
        assert_ne!(run(&params()), run(&other));
    }

    #[test]
    fn top_k_one_is_greedy_and_min_p_drops_unlikely_tokens() {
        let logits = vec![0.0, 5.0, 4.9, -3.0];
        let mut s = Sampler::new(&SamplingParams {
            top_k: 1,
            ..params()
        });
        assert!((0..20).all(|_| s.sample(&logits, None).unwrap() == 1));
        let mut s = Sampler::new(&SamplingParams {
            min_p: 0.5,
            ..params()
        });
        let picks: Vec<u32> = (0..200).map(|_| s.sample(&logits, None).unwrap()).collect();
        assert!(picks.iter().all(|&t| t == 1 || t == 2));
        assert!(picks.contains(&1) && picks.contains(&2));
    }

    #[test]
    fn top_p_keeps_the_head_of_the_distribution() {
        let logits = vec![10.0, 9.0, 0.0, 0.0, 0.0];
        let mut s = Sampler::new(&SamplingParams {
            top_p: 0.9,
            ..params()
        });
        assert!((0..200).all(|_| s.sample(&logits, None).unwrap() < 2));
    }

    #[test]
    fn a_mask_keeps_only_its_tokens_greedy_or_sampled() {
        let logits = vec![2.0, 1.9, -1.0, 0.5];
        let mut mask = TokenMask::none(4);
        mask.allow(1);
        mask.allow(3);
        let mut greedy = Sampler::new(&SamplingParams::greedy());
        assert_eq!(greedy.sample(&logits, Some(&mask)), Some(1));
        let mut s = Sampler::new(&params());
        let picks: Vec<u32> = (0..200)
            .map(|_| s.sample(&logits, Some(&mask)).unwrap())
            .collect();
        assert!(picks.iter().all(|&t| t == 1 || t == 3));
        assert!(picks.contains(&3));
        assert_eq!(s.sample(&logits, Some(&TokenMask::none(4))), None);
    }

    /// A positive temperature too small to divide by is greedy, as 0 is:
    /// the argmax every time, whatever the seed.
    #[test]
    fn a_temperature_under_the_greedy_bound_is_the_argmax() {
        let logits = vec![0.1, 0.3, 0.2, 0.3 - 1e-4];
        for temperature in [1e-40, 1e-20, crate::sampling::GREEDY_BELOW / 2.0] {
            let p = SamplingParams {
                temperature,
                ..params()
            };
            assert!(p.is_greedy(), "{temperature}");
            for seed in 0..20 {
                let mut s = Sampler::new(&SamplingParams {
                    seed: Some(seed),
                    ..p.clone()
                });
                assert_eq!(s.sample(&logits, None), Some(1), "{temperature}");
            }
        }
        assert!(!params().is_greedy());
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, f32::NAN.copysign(-1.0)]), 1);
    }

    /// Every token of `logits` as a candidate, in id order.
    fn candidates(logits: &[f32]) -> Vec<Cand> {
        logits
            .iter()
            .enumerate()
            .map(|(i, &logit)| Cand {
                id: i as u32,
                logit,
            })
            .collect()
    }

    /// What top-p keeps, as a full sort in descending order keeps it.
    fn nucleus_by_sorting(logits: &[f32], p: f32) -> Vec<u32> {
        let mut c = candidates(logits);
        // The total in the candidates' first order, as `top_p` sums it
        // (f32 sums depend on the order).
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = c.iter().map(|c| (c.logit - max).exp()).sum();
        c.sort_unstable_by(by_logit);
        let mut mass = 0.0;
        let mut keep = c.len();
        for (i, x) in c.iter().enumerate() {
            mass += (x.logit - max).exp() / total;
            if mass >= p {
                keep = i + 1;
                break;
            }
        }
        c.truncate(keep);
        c.iter().map(|x| x.id).collect()
    }

    #[test]
    fn top_p_keeps_what_a_full_sort_keeps() {
        let mut rng = Rng(3);
        for (vocab, spread) in [(50, 1.0), (5_000, 0.5), (5_000, 8.0), (49_152, 3.0)] {
            let logits: Vec<f32> = (0..vocab).map(|_| rng.next_f32() * spread * 10.0).collect();
            for p in [0.1, 0.5, 0.9, 0.95, 0.999] {
                let mut c = candidates(&logits);
                top_p(&mut c, p);
                let ids: Vec<u32> = c.iter().map(|x| x.id).collect();
                let want = nucleus_by_sorting(&logits, p);
                assert!(
                    ids == want,
                    "vocab {vocab} p {p}: {} kept, {} by sorting",
                    ids.len(),
                    want.len()
                );
            }
        }
    }
}
