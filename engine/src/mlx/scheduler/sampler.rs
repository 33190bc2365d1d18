//! One sampler for every model: a chain of logit filters built once per
//! request from [`SamplingParams`], then a seeded draw.
//!
//! Greedy requests without a repetition penalty never come here, nor do
//! sampled ones without one while their token is free: the engine keeps
//! their argmax, or their draw (`draw.rs`), on the MLX side so decoding
//! can be pipelined. What comes here: repetition penalties, and sampled
//! tokens under a constraint's mask.

use crate::{SamplingParams, TokenMask};

/// A candidate token and its (scaled) logit.
#[derive(Debug, Clone, Copy)]
struct Cand {
    id: u32,
    logit: f32,
}

/// One step of the chain: narrows or reweighs the candidates, which arrive
/// sorted by descending logit.
trait Filter: Send {
    fn apply(&self, cands: &mut Vec<Cand>);
}

struct TopK(usize);
impl Filter for TopK {
    fn apply(&self, cands: &mut Vec<Cand>) {
        cands.truncate(self.0.max(1));
    }
}

/// Keeps the smallest prefix whose probability mass reaches `p`.
struct TopP(f32);
impl Filter for TopP {
    fn apply(&self, cands: &mut Vec<Cand>) {
        let probs = softmax(cands);
        let mut mass = 0.0;
        let mut keep = cands.len();
        for (i, p) in probs.iter().enumerate() {
            mass += p;
            if mass >= self.0 {
                keep = i + 1;
                break;
            }
        }
        cands.truncate(keep.max(1));
    }
}

/// Drops tokens less likely than `p` times the most likely one.
struct MinP(f32);
impl Filter for MinP {
    fn apply(&self, cands: &mut Vec<Cand>) {
        let Some(best) = cands.first().map(|c| c.logit) else {
            return;
        };
        // p_i / p_max = exp(l_i - l_max)
        let floor = self.0.ln();
        cands.retain(|c| c.logit - best >= floor);
    }
}

fn softmax(cands: &[Cand]) -> Vec<f32> {
    let max = cands.first().map_or(0.0, |c| c.logit);
    let exps: Vec<f32> = cands.iter().map(|c| (c.logit - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
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
    penalty: f32,
    penalty_window: usize,
    filters: Vec<Box<dyn Filter>>,
    rng: Rng,
}

impl Sampler {
    /// Builds the chain for `params` (validated by `check_request`).
    pub fn new(params: &SamplingParams) -> Self {
        let mut filters: Vec<Box<dyn Filter>> = Vec::new();
        if params.top_k > 0 {
            filters.push(Box::new(TopK(params.top_k)));
        }
        if params.top_p < 1.0 {
            filters.push(Box::new(TopP(params.top_p)));
        }
        if params.min_p > 0.0 {
            filters.push(Box::new(MinP(params.min_p)));
        }
        let seed = params.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Self {
            temperature: params.temperature,
            top_k: params.top_k,
            penalty: params.repetition_penalty,
            penalty_window: params.repetition_context,
            filters,
            rng: Rng(seed),
        }
    }

    /// Picks the next token from `logits`, given the tokens so far, among
    /// those `mask` allows (all without one); `None` when it allows none.
    pub fn sample(
        &mut self,
        logits: &[f32],
        history: &[u32],
        mask: Option<&TokenMask>,
    ) -> Option<u32> {
        let mut logits = logits.to_vec();
        if let Some(mask) = mask
            && !mask.apply(&mut logits)
        {
            return None;
        }
        Some(self.pick(logits, history))
    }

    fn pick(&mut self, mut logits: Vec<f32>, history: &[u32]) -> u32 {
        if self.penalty != 1.0 {
            let start = history.len().saturating_sub(self.penalty_window);
            let mut seen = history[start..].to_vec();
            seen.sort_unstable();
            seen.dedup();
            for id in seen {
                if let Some(l) = logits.get_mut(id as usize) {
                    *l = if *l > 0.0 {
                        *l / self.penalty
                    } else {
                        *l * self.penalty
                    };
                }
            }
        }
        if self.temperature == 0.0 {
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
        // Sorting 150k candidates costs about a millisecond; a top-k first
        // narrows it with a linear-time selection.
        let by_logit = |a: &Cand, b: &Cand| b.logit.total_cmp(&a.logit).then(a.id.cmp(&b.id));
        if self.top_k > 0 && self.top_k < cands.len() {
            cands.select_nth_unstable_by(self.top_k - 1, by_logit);
            cands.truncate(self.top_k);
        }
        cands.sort_unstable_by(by_logit);
        for f in &self.filters {
            f.apply(&mut cands);
        }
        let probs = softmax(&cands);
        let r = self.rng.next_f32();
        let mut acc = 0.0;
        for (c, p) in cands.iter().zip(&probs) {
            acc += p;
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
                .map(|_| s.sample(&logits, &[], None).unwrap())
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
        assert!((0..20).all(|_| s.sample(&logits, &[], None).unwrap() == 1));
        let mut s = Sampler::new(&SamplingParams {
            min_p: 0.5,
            ..params()
        });
        let picks: Vec<u32> = (0..200)
            .map(|_| s.sample(&logits, &[], None).unwrap())
            .collect();
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
        assert!((0..200).all(|_| s.sample(&logits, &[], None).unwrap() < 2));
    }

    #[test]
    fn repetition_penalty_discourages_seen_tokens() {
        let logits = vec![2.0, 1.9, -1.0];
        let mut s = Sampler::new(&SamplingParams {
            temperature: 0.0,
            repetition_penalty: 1.5,
            ..SamplingParams::greedy()
        });
        assert_eq!(s.sample(&logits, &[], None).unwrap(), 0);
        assert_eq!(s.sample(&logits, &[0], None).unwrap(), 1);
    }

    #[test]
    fn a_mask_keeps_only_its_tokens_greedy_or_sampled() {
        let logits = vec![2.0, 1.9, -1.0, 0.5];
        let mut mask = TokenMask::none(4);
        mask.allow(1);
        mask.allow(3);
        let mut greedy = Sampler::new(&SamplingParams::greedy());
        assert_eq!(greedy.sample(&logits, &[], Some(&mask)), Some(1));
        let mut s = Sampler::new(&params());
        let picks: Vec<u32> = (0..200)
            .map(|_| s.sample(&logits, &[], Some(&mask)).unwrap())
            .collect();
        assert!(picks.iter().all(|&t| t == 1 || t == 3));
        assert!(picks.contains(&3));
        assert_eq!(s.sample(&logits, &[], Some(&TokenMask::none(4))), None);
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, f32::NAN.copysign(-1.0)]), 1);
    }
}
