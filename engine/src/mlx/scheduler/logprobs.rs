//! A generated token's log-probability and its most likely alternatives,
//! for a request that asks ([`GenerationRequest::logprobs`]): from the
//! logits row the token was picked from (biased and penalized, before
//! temperature and filters), kept with its pick (`picked.rs`), evaluated
//! with the pass (`pass::Built::keep`; a token picked on its own, with its
//! pick, the row being the pick's input) and read on the run's thread once
//! the token is handed over ([`Reported`]): no wait of its own, no scan of
//! the vocabulary on the scheduler's thread, and the pick stays where it
//! was made.
//!
//! [`GenerationRequest::logprobs`]: crate::GenerationRequest::logprobs

use mlx_rs::Array;

use crate::mlx::error::mlx_err;
use crate::{EngineError, TokenLogprobs};

/// A token's log-probabilities as the scheduler hands them to its run.
#[derive(Debug)]
pub(crate) enum Reported {
    /// Read already: the host's sampler had the scores.
    Read(TokenLogprobs),
    /// The `[1, vocab]` logits row the token was picked from, evaluated
    /// with its pass or its pick, and the alternatives asked for: read on the run's
    /// own thread ([`Reported::read`]), so a batch of runs asking costs the
    /// scheduler's thread a handle each, not a scan of the vocabulary.
    Row(Array, usize),
}

impl Reported {
    /// The log-probabilities of `token`.
    pub fn read(self, token: u32) -> Result<TokenLogprobs, EngineError> {
        match self {
            Reported::Read(logprobs) => Ok(logprobs),
            Reported::Row(row, k) => of_row(&row, token, k),
        }
    }
}

/// [`of_scores`] for a `[1, vocab]` f32 logits row (a step's logits are
/// f32 at every precision), evaluated with its pass.
pub(crate) fn of_row(row: &Array, token: u32, k: usize) -> Result<TokenLogprobs, EngineError> {
    row.eval()
        .map_err(mlx_err("reading the logits for logprobs"))?;
    let scores = row
        .try_as_slice::<f32>()
        .map_err(|e| EngineError::Backend(format!("reading the logits for logprobs: {e}")))?;
    of_scores(scores, token, k)
}

/// `token`'s log-softmax of `scores` and the `k` highest, most likely
/// first (ties: the lower id). NaN counts as impossible.
pub(crate) fn of_scores(
    scores: &[f32],
    token: u32,
    k: usize,
) -> Result<TokenLogprobs, EngineError> {
    let chosen = *scores.get(token as usize).ok_or_else(|| {
        EngineError::Backend(format!("token {token} is outside the logits it came from"))
    })?;
    let score = |x: f32| if x.is_nan() { f32::NEG_INFINITY } else { x };
    let max = scores
        .iter()
        .copied()
        .map(score)
        .fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return Err(EngineError::Backend("logits with no possible token".into()));
    }
    let sum: f64 = scores
        .iter()
        .map(|&x| f64::from(score(x) - max).exp())
        .sum();
    let log_total = max + sum.ln() as f32;
    // The k best in one pass: a short sorted list, most likely first.
    let mut top: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    if k > 0 {
        for (id, &x) in scores.iter().enumerate() {
            let x = score(x);
            if top.len() == k && top.last().is_some_and(|&(_, worst)| x <= worst) {
                continue;
            }
            let at = top.partition_point(|&(_, better)| better >= x);
            top.insert(at, (id as u32, x));
            top.truncate(k);
        }
    }
    Ok(TokenLogprobs {
        logprob: score(chosen) - log_total,
        top: top.into_iter().map(|(id, x)| (id, x - log_total)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_probabilities_sum_to_one_and_the_top_come_first() {
        let scores = [1.0f32, 3.0, 2.0, 3.0, f32::NAN, f32::NEG_INFINITY];
        let lp = of_scores(&scores, 2, 3).unwrap();
        let total: f32 = [1.0f32, 3.0, 2.0, 3.0].iter().map(|x| x.exp()).sum();
        assert!((lp.logprob - (2.0 - total.ln())).abs() < 1e-6);
        // Ties: the lower id first.
        let ids: Vec<u32> = lp.top.iter().map(|t| t.0).collect();
        assert_eq!(ids, [1, 3, 2]);
        assert!((lp.top[2].1 - lp.logprob).abs() < 1e-6);
        let all = of_scores(&scores, 0, 6).unwrap();
        let mass: f32 = all.top.iter().map(|t| t.1.exp()).sum();
        assert!((mass - 1.0).abs() < 1e-6, "{mass}");
        assert_eq!(all.top[5].1, f32::NEG_INFINITY);
        assert!(of_scores(&scores, 0, 0).unwrap().top.is_empty());
    }

    #[test]
    fn what_cannot_be_read_is_an_error() {
        assert!(of_scores(&[0.0, 1.0], 2, 1).is_err());
        assert!(of_scores(&[f32::NAN, f32::NEG_INFINITY], 0, 1).is_err());
    }

    #[test]
    fn a_row_on_the_device_reads_as_its_scores() {
        let scores = [0.5f32, -1.0, 2.0, 0.0];
        let row = Array::from_slice(&scores, &[1, 4]);
        assert_eq!(
            of_row(&row, 0, 2).unwrap(),
            of_scores(&scores, 0, 2).unwrap()
        );
        // A step's logits are f32; any other type is an error, not a cast.
        let half = row.as_dtype(mlx_rs::Dtype::Bfloat16).unwrap();
        assert!(of_row(&half, 0, 2).is_err());
    }
}
