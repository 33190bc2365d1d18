//! A scoring pass's picks: each position's log-probability of the next
//! prompt token and its most likely tokens, built into the pass's graph
//! and queued with it, then read (waited for) at the next pass.

use mlx_rs::Array;
use mlx_rs::ops::argpartition_axis;
use mlx_rs::ops::indexing::TryIndexOp;

use crate::mlx::error::mlx_err;
use crate::{EngineError, TokenLogprobs};

/// A pass's picks, queued for the device: each row's log-probability of
/// its next token and its most likely tokens, read (waited for) later.
pub(super) struct Queued {
    chosen: Array,
    /// The best `k` ids of each row and their log-probabilities.
    best: Option<(Array, Array)>,
    rows: usize,
    k: usize,
}

impl Queued {
    /// Builds and queues the picks of `[n, vocab]` f32 `logits`: row i's
    /// log-probability of `next[i]` and its `top` most likely tokens.
    pub(super) fn new(logits: &Array, next: &[u32], top: usize) -> mlx_rs::error::Result<Self> {
        let n = next.len() as i32;
        let vocab = logits.shape()[1];
        // The last chunk's last row is past the prompt: not read.
        let logits = &logits.try_index((..n, ..))?;
        let total = logits.logsumexp_axis(-1, true)?;
        let ids: Vec<i32> = next.iter().map(|&id| id as i32).collect();
        let chosen = logits
            .take_along_axis(Array::from_slice(&ids, &[n, 1]), -1)?
            .subtract(&total)?;
        let k = (top as i32).min(vocab);
        let best = match k {
            0 => None,
            _ => {
                let ids = argpartition_axis(logits, -k, -1)?.try_index((.., vocab - k..))?;
                let values = logits.take_along_axis(&ids, -1)?.subtract(&total)?;
                Some((ids.as_dtype(mlx_rs::Dtype::Int32)?, values))
            }
        };
        let queued = Queued {
            chosen,
            best,
            rows: next.len(),
            k: k as usize,
        };
        mlx_rs::transforms::async_eval(queued.arrays())?;
        Ok(queued)
    }

    fn arrays(&self) -> Vec<&Array> {
        let mut all = vec![&self.chosen];
        if let Some((ids, values)) = &self.best {
            all.extend([ids, values]);
        }
        all
    }

    /// The picks, most likely first in each row (ties: the lower id).
    pub(super) fn read(self) -> Result<Vec<TokenLogprobs>, EngineError> {
        mlx_rs::transforms::eval(self.arrays()).map_err(mlx_err("scoring a prompt"))?;
        let unread = |e| EngineError::Backend(format!("reading a prompt's scores: {e}"));
        let chosen = self.chosen.try_as_slice::<f32>().map_err(unread)?;
        let best = match &self.best {
            Some((ids, values)) => Some((
                ids.try_as_slice::<i32>().map_err(unread)?,
                values.try_as_slice::<f32>().map_err(unread)?,
            )),
            None => None,
        };
        let k = self.k;
        Ok((0..self.rows)
            .map(|row| {
                let mut top: Vec<(u32, f32)> = match best {
                    Some((ids, values)) => (row * k..(row + 1) * k)
                        .map(|i| (ids[i] as u32, finite(values[i])))
                        .collect(),
                    None => Vec::new(),
                };
                top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                TokenLogprobs {
                    logprob: finite(chosen[row]),
                    top,
                }
            })
            .collect())
    }
}

/// NaN counts as impossible, as the generated tokens' reports count it.
fn finite(x: f32) -> f32 {
    if x.is_nan() { f32::NEG_INFINITY } else { x }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_the_chosen_token_and_the_best_of_each_row() {
        let picked = |logits: &Array, next: &[u32], top: usize| {
            Queued::new(logits, next, top).unwrap().read()
        };
        let logits = Array::from_slice(&[0.0f32, 1.0, 2.0, 0.5, 3.0, 0.0], &[2, 3]);
        let got = picked(&logits, &[1, 0], 5).unwrap();
        let total = |row: [f32; 3]| row.iter().map(|x| x.exp()).sum::<f32>().ln();
        assert!((got[0].logprob - (1.0 - total([0.0, 1.0, 2.0]))).abs() < 1e-5);
        let best: Vec<u32> = got[0].top.iter().map(|t| t.0).collect();
        assert_eq!(best, [2, 1, 0], "k past the vocabulary: all of it");
        assert!((got[1].logprob - (0.5 - total([0.5, 3.0, 0.0]))).abs() < 1e-5);
        assert_eq!(got[1].top[0].0, 1);
        // No alternatives asked: none; a row past `next` is not read.
        let none = picked(&logits, &[2], 0).unwrap();
        assert_eq!(none.len(), 1);
        assert!(none[0].top.is_empty());
    }
}
