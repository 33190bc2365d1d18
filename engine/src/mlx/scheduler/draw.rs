//! Sampled tokens drawn on the device, in the step's graph: the same
//! filters as the CPU sampler (temperature, top-k, then top-p over what
//! top-k kept, then min-p), then one argmax over the kept logits plus
//! Gumbel noise, which draws from their softmax. Only token ids cross to
//! the host, so a sampled sequence's steps are queued ahead like a greedy
//! one's (on a GPU the step no longer waits for its logits to be copied
//! and sorted on the host).
//!
//! Each row's noise is keyed by the sequence's seed and the position of
//! the token drawn (`kernels::compiled::gumbel_noise`), so a seeded
//! sequence draws the same tokens alone or batched, and a step dropped and
//! run again (forced tokens) draws the same token from the same logits.
//! A token under a constraint is drawn the same way, on its own from its
//! masked logits once the run's mask is in (`picked::pick`), keyed by the
//! same position.
//! A request's logit bias and penalties on seen tokens apply before either
//! (`adjust.rs`).
//!
//! On the CPU the whole draw is one operation (`kernels::draw`, the same
//! filters and noise), since MLX's CPU sort and a dozen passes over the
//! vocabulary cost more than the step that queueing ahead overlaps.
//!
//! Ties differ from the CPU sampler's: top-k keeps every token tied with
//! the k-th, where the CPU keeps the lowest ids.

use mlx_rs::Array;
use mlx_rs::ops::indexing::{argmax_axis, take_along_axis};

use crate::SamplingParams;
use crate::mlx::kernels::compiled::gumbel_noise;
use crate::mlx::kernels::draw::RowDraw;
use crate::mlx::kernels::{self, default_device_is_cpu};

type R<T> = mlx_rs::error::Result<T>;

/// How one sequence's free tokens are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Draw {
    inv_temperature: f32,
    /// 0: off.
    top_k: usize,
    /// 1: off.
    top_p: f32,
    /// 0: off.
    min_p: f32,
    seed: u64,
}

impl Draw {
    /// The draw for `params`, or `None` for greedy sequences (an argmax).
    pub fn of(params: &SamplingParams) -> Option<Self> {
        if params.is_greedy() {
            return None;
        }
        let seed = params.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Some(Self {
            inv_temperature: 1.0 / params.temperature,
            top_k: params.top_k,
            top_p: params.top_p,
            min_p: params.min_p,
            seed,
        })
    }

    /// How the token at `position` is drawn: these filters, and the noise
    /// keyed by seed and position.
    fn row(&self, position: usize) -> RowDraw {
        RowDraw {
            inv_temperature: self.inv_temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            key: self.key(position),
        }
    }

    /// The noise key of the token at `position` (SplitMix64's finalizer
    /// over seed and position, folded to 32 bits).
    fn key(&self, position: usize) -> u32 {
        let mut z = self
            .seed
            .wrapping_add((position as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z ^ (z >> 32)) as u32
    }
}

/// The next token of each row of `logits` (`[rows, vocab]`), `[rows, 1]`
/// int32: the argmax where `draws[row]` is `None`, else a draw for the
/// token at the given position. On the CPU a draw is one operation
/// (`kernels::draw`), elsewhere MLX's operations ([`picks_by_operations`]);
/// both keep the same tokens and add the same noise.
pub(crate) fn picks(logits: &Array, draws: &[Option<(Draw, usize)>]) -> R<Array> {
    if draws.iter().all(Option::is_none) {
        return argmax(logits);
    }
    let rows = rows_of(draws);
    match default_device_is_cpu() {
        true => picks_in_one_operation(logits, &rows),
        false => picks_by_operations(logits, &rows),
    }
}

/// Each row's draw (`None`: its argmax).
fn rows_of(draws: &[Option<(Draw, usize)>]) -> Vec<Option<RowDraw>> {
    draws.iter().map(|d| d.map(|(d, at)| d.row(at))).collect()
}

fn argmax(scores: &Array) -> R<Array> {
    argmax_axis(scores, -1, true)?.as_dtype(mlx_rs::Dtype::Int32)
}

/// [`picks`] as one operation (the CPU's).
fn picks_in_one_operation(logits: &Array, rows: &[Option<RowDraw>]) -> R<Array> {
    let rows: Vec<RowDraw> = rows.iter().map(|r| r.unwrap_or(RowDraw::GREEDY)).collect();
    let logits = match logits.dtype() {
        mlx_rs::Dtype::Float32 => logits.clone(),
        _ => logits.as_dtype(mlx_rs::Dtype::Float32)?,
    };
    kernels::draw::draw(&logits, &rows)
}

/// [`picks`] built from MLX's operations (a GPU's: one fused noise kernel,
/// the sort on the device).
fn picks_by_operations(logits: &Array, draws: &[Option<RowDraw>]) -> R<Array> {
    let rows = draws.len() as i32;
    let vocab = logits.shape().last().copied().unwrap_or(0);
    if logits.shape() != [rows, vocab] {
        return Err(mlx_rs::error::Exception::custom(
            "a draw's logits and rows disagree",
        ));
    }
    // Per row: greedy rows pass through every filter untouched.
    let column = |f: &dyn Fn(&RowDraw) -> f32| -> Array {
        let v: Vec<f32> = draws.iter().map(|d| d.map_or(1.0, |d| f(&d))).collect();
        Array::from_slice(&v, &[rows, 1])
    };
    let drawn: Vec<bool> = draws.iter().map(Option::is_some).collect();
    let drawn = Array::from_slice(&drawn, &[rows, 1]);
    let keys: Vec<u32> = draws.iter().map(|d| d.map_or(0, |d| d.key)).collect();
    let keys = Array::from_slice(&keys, &[rows, 1]);
    let raw = logits.as_dtype(mlx_rs::Dtype::Float32)?;
    let scaled = raw.multiply(column(&|d| d.inv_temperature))?;
    let neg_inf = Array::from_f32(f32::NEG_INFINITY);
    let mut keep: Option<Array> = None;
    let some = |f: &dyn Fn(&RowDraw) -> bool| draws.iter().flatten().any(f);
    if some(&|d| d.top_k > 0 || d.top_p < 1.0) {
        // Descending order, and each row's k (the whole row when off).
        let sorted = mlx_rs::ops::sort_axis(scaled.negative()?, -1)?.negative()?;
        let ks: Vec<i32> = draws
            .iter()
            .map(|d| match d {
                Some(d) if d.top_k > 0 => d.top_k.min(vocab as usize) as i32,
                _ => vocab,
            })
            .collect();
        let ks = Array::from_slice(&ks, &[rows, 1]);
        let mut kept = ks;
        if some(&|d| d.top_p < 1.0) {
            // The smallest head of what top-k kept whose mass reaches p:
            // the tokens whose mass before them is under p.
            let ranks = mlx_rs::ops::arange::<_, i32>(0, vocab, None)?.reshape(&[1, vocab])?;
            let in_k = ranks.lt(&kept)?;
            let head = mlx_rs::ops::select(&in_k, &sorted, &neg_inf)?;
            let probs = mlx_rs::ops::softmax_axis(&head, -1, true)?;
            let before = probs.cumsum(-1, false, false)?;
            let under = before.lt(column(&|d| d.top_p))?.logical_and(&in_k)?;
            let count = under.as_dtype(mlx_rs::Dtype::Int32)?.sum_axis(-1, true)?;
            kept = mlx_rs::ops::maximum(&count, Array::from_int(1))?;
        }
        let last = take_along_axis(&sorted, &kept.subtract(Array::from_int(1))?, -1)?;
        keep = Some(scaled.ge(&last)?);
    }
    if some(&|d| d.min_p > 0.0) {
        // p / p_max >= min_p, as logits: l - l_max >= ln(min_p).
        let floor = column(&|d| match d.min_p {
            p if p > 0.0 => p.ln(),
            _ => f32::NEG_INFINITY,
        });
        let best = scaled.max_axis(-1, true)?;
        let likely = scaled.subtract(&best)?.ge(&floor)?;
        keep = Some(match keep {
            Some(k) => k.logical_and(&likely)?,
            None => likely,
        });
    }
    let filtered = match keep {
        Some(k) => mlx_rs::ops::select(&k, &scaled, &neg_inf)?,
        None => scaled,
    };
    let noisy = filtered.add(gumbel_noise(&keys, vocab)?)?;
    argmax(&mlx_rs::ops::select(&drawn, &noisy, &raw)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Picks = fn(&Array, &[Option<(Draw, usize)>]) -> R<Array>;

    fn one_operation(logits: &Array, draws: &[Option<(Draw, usize)>]) -> R<Array> {
        picks_in_one_operation(logits, &rows_of(draws))
    }

    fn operations(logits: &Array, draws: &[Option<(Draw, usize)>]) -> R<Array> {
        picks_by_operations(logits, &rows_of(draws))
    }

    /// Both ways of drawing, each tested on this machine.
    const WAYS: [(&str, Picks); 2] = [("one operation", one_operation), ("operations", operations)];

    fn params(temperature: f32) -> SamplingParams {
        SamplingParams {
            temperature,
            seed: Some(11),
            ..SamplingParams::greedy()
        }
    }

    fn ids(picks: &Array) -> Vec<u32> {
        picks.eval().unwrap();
        picks.as_slice::<i32>().iter().map(|&t| t as u32).collect()
    }

    /// `n` draws from `logits` (one row), at positions 0..n.
    fn draw_many(way: Picks, logits: &[f32], p: &SamplingParams, n: usize) -> Vec<u32> {
        let d = Draw::of(p).unwrap();
        let rows = n as i32;
        let vocab = logits.len() as i32;
        let all: Vec<f32> = (0..n).flat_map(|_| logits.iter().copied()).collect();
        let l = Array::from_slice(&all, &[rows, vocab]);
        let draws: Vec<_> = (0..n).map(|at| Some((d, at))).collect();
        ids(&way(&l, &draws).unwrap())
    }

    fn frequencies(picks: &[u32], vocab: usize) -> Vec<f64> {
        let mut f = vec![0.0; vocab];
        for &t in picks {
            f[t as usize] += 1.0 / picks.len() as f64;
        }
        f
    }

    #[test]
    fn draws_follow_the_softmax_of_the_logits_over_the_temperature() {
        let logits = [1.0f32, 2.0, 0.5, -1.0, 1.5];
        let n = 20_000;
        for ((way, picks), t) in WAYS.iter().flat_map(|w| [(w, 1.0f32), (w, 0.5)]) {
            let f = frequencies(&draw_many(*picks, &logits, &params(t), n), logits.len());
            let exps: Vec<f64> = logits.iter().map(|&l| ((l / t) as f64).exp()).collect();
            let sum: f64 = exps.iter().sum();
            for (i, e) in exps.iter().enumerate() {
                let p = e / sum;
                // Four standard errors of a frequency over n draws.
                let tol = 4.0 * (p * (1.0 - p) / n as f64).sqrt() + 1e-3;
                assert!(
                    (f[i] - p).abs() < tol,
                    "{way}, t={t} token {i}: {} vs {p}",
                    f[i]
                );
            }
        }
    }

    #[test]
    fn top_k_top_p_and_min_p_keep_what_the_cpu_sampler_keeps() {
        let logits = [3.0f32, 2.9, 2.0, 0.0, -1.0, 2.5];
        let n = 4_000;
        for (way, picks) in WAYS {
            let seen = |p: SamplingParams| {
                let f = frequencies(&draw_many(picks, &logits, &p, n), logits.len());
                (0..logits.len())
                    .filter(|&i| f[i] > 0.0)
                    .collect::<Vec<_>>()
            };
            let top_k = SamplingParams {
                top_k: 2,
                ..params(1.0)
            };
            assert_eq!(seen(top_k), vec![0, 1], "{way}");
            // Probabilities 0.34, 0.31, 0.21 (token 5), ...: 0.5 needs two.
            let top_p = SamplingParams {
                top_p: 0.5,
                ..params(1.0)
            };
            assert_eq!(seen(top_p), vec![0, 1], "{way}");
            // Top-p over what top-k kept: of the first three, 0.9 needs all.
            let both = SamplingParams {
                top_k: 3,
                top_p: 0.9,
                ..params(1.0)
            };
            assert_eq!(seen(both), vec![0, 1, 5], "{way}");
            // exp(2.0 - 3.0) = 0.37 >= 0.3; exp(0 - 3) = 0.05 is not.
            let min_p = SamplingParams {
                min_p: 0.3,
                ..params(1.0)
            };
            assert_eq!(seen(min_p), vec![0, 1, 2, 5], "{way}");
        }
    }

    #[test]
    fn a_seeded_row_draws_the_same_alone_or_batched_and_greedy_rows_argmax() {
        let logits = [0.3f32, 0.1, 0.2, 0.25];
        let p = params(1.0);
        let d = Draw::of(&p).unwrap();
        let other = Draw::of(&SamplingParams {
            seed: Some(12),
            ..p.clone()
        })
        .unwrap();
        let l = Array::from_slice(&[logits, logits, logits].concat(), &[3, 4]);
        for (way, picks) in WAYS {
            let alone: Vec<u32> = (0..16).map(|at| draw_at(picks, &logits, d, at)).collect();
            // Row 1 of a batch with a greedy row and another seed's row.
            for (at, &want) in alone.iter().enumerate() {
                let got = ids(&picks(&l, &[None, Some((d, at)), Some((other, at))]).unwrap());
                assert_eq!(got[0], 0, "{way}: greedy row");
                assert_eq!(got[1], want, "{way}: position {at}");
            }
            // Another seed draws another sequence.
            let theirs: Vec<u32> = (0..16)
                .map(|at| draw_at(picks, &logits, other, at))
                .collect();
            assert_ne!(alone, theirs, "{way}");
        }
    }

    fn draw_at(way: Picks, logits: &[f32], d: Draw, at: usize) -> u32 {
        let l = Array::from_slice(logits, &[1, logits.len() as i32]);
        ids(&way(&l, &[Some((d, at))]).unwrap())[0]
    }

    /// The CPU's one operation draws the tokens MLX's operations draw (the
    /// same filters, the same noise), over a vocabulary of a model's spread
    /// of logits, with each filter and none, in bf16 and f32. Exact here:
    /// on Linux MLX's CPU log is the C library's, and no top-p boundary of
    /// these logits lies within rounding of p (the operations sum the mass
    /// in f32, the one operation in f64).
    #[test]
    fn one_operation_draws_what_the_operations_draw() {
        let vocab = 3_000;
        let mut state = 0x2545_f491_u32;
        let logits: Vec<f32> = (0..vocab)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 20_000) as f32 / 1_000.0 - 12.0
            })
            .collect();
        let settings = [
            params(0.7),
            SamplingParams {
                top_k: 40,
                ..params(1.0)
            },
            SamplingParams {
                top_p: 0.9,
                ..params(0.8)
            },
            SamplingParams {
                top_k: 200,
                top_p: 0.5,
                ..params(1.3)
            },
            SamplingParams {
                min_p: 0.05,
                ..params(1.0)
            },
            // Past any vocabulary (and past i32): every token kept.
            SamplingParams {
                top_k: (1 << 31) + 5,
                ..params(1.0)
            },
        ];
        let positions = 64;
        for dtype in [mlx_rs::Dtype::Float32, mlx_rs::Dtype::Bfloat16] {
            for p in &settings {
                let d = Draw::of(p).unwrap();
                let all: Vec<f32> = (0..positions)
                    .flat_map(|_| logits.iter().copied())
                    .collect();
                let l = Array::from_slice(&all, &[positions, vocab])
                    .as_dtype(dtype)
                    .unwrap();
                let draws: Vec<_> = (0..positions as usize)
                    .map(|at| (at % 5 != 4).then_some((d, at)))
                    .collect();
                let one = ids(&one_operation(&l, &draws).unwrap());
                let many = ids(&operations(&l, &draws).unwrap());
                assert_eq!(one, many, "{dtype:?} {p:?}");
                let distinct: std::collections::BTreeSet<_> = one.iter().collect();
                assert!(distinct.len() > 4, "{p:?}: {distinct:?}");
            }
        }
    }

    #[test]
    fn greedy_sequences_are_not_drawn_and_penalized_ones_are() {
        assert!(Draw::of(&SamplingParams::greedy()).is_none());
        let penalized = SamplingParams {
            repetition_penalty: 1.2,
            frequency_penalty: 0.5,
            ..params(0.7)
        };
        assert!(Draw::of(&penalized).is_some());
        assert!(Draw::of(&params(0.7)).is_some());
    }
}
