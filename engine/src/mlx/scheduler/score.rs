//! Scoring a prompt ([`crate::Engine::score_prompt`]): each token's
//! log-probability after those before it, and its position's most likely
//! tokens, as OpenAI's `echo` with `logprobs` reports them. It runs on
//! the scheduler's thread between steps, on caches of its own (no prefix
//! pool, no batch slot: every position is computed), a chunk of
//! positions per pass; only the picked values cross to the host.

use std::sync::mpsc::Sender;

use mlx_rs::Array;
use mlx_rs::ops::argpartition_axis;
use mlx_rs::ops::indexing::TryIndexOp;

use super::Worker;
use crate::mlx::error::mlx_err;
use crate::mlx::model::Segment;
use crate::{EngineError, TokenLogprobs};

/// Positions per scoring pass: its logits are this many rows of the
/// vocabulary in f32 (39 MB at Qwen3's 151,936).
const SCORE_CHUNK: usize = 64;

/// A prompt to score and where its answer goes.
pub(crate) struct ScoreJob {
    pub ids: Vec<u32>,
    pub top: usize,
    pub reply: Sender<Result<Vec<TokenLogprobs>, EngineError>>,
}

impl Worker {
    /// Scores `job`'s prompt and answers it.
    pub(super) fn score(&mut self, job: ScoreJob) {
        let scored = self.score_ids(&job.ids, job.top);
        if let Err(e) = &scored {
            tracing::error!(error = %e, "scoring a prompt failed");
        }
        let _ = job.reply.send(scored);
    }

    fn score_ids(&mut self, ids: &[u32], top: usize) -> Result<Vec<TokenLogprobs>, EngineError> {
        let mut out = Vec::with_capacity(ids.len().saturating_sub(1));
        // Each position predicts the next: the last token's prediction
        // follows the prompt and is no part of it.
        let Some((_, inputs)) = ids.split_last() else {
            return Ok(out);
        };
        let mut caches = self.model.new_cache();
        for (chunk, inputs) in inputs.chunks(SCORE_CHUNK).enumerate() {
            let start = chunk * SCORE_CHUNK;
            let next = &ids[start + 1..start + 1 + inputs.len()];
            let len = inputs.len() as i32;
            let input: Vec<i32> = inputs.iter().map(|&id| id as i32).collect();
            let input = Array::from_slice(&input, &[1, len]);
            let mut segments = [Segment {
                len,
                caches: caches.as_mut_slice(),
                fork: None,
            }];
            let logits = self
                .model
                .forward_every_row(&input, &mut segments)
                .map_err(mlx_err("scoring a prompt"))?;
            out.extend(picked(&logits, next, top).map_err(mlx_err("scoring a prompt"))?);
        }
        Ok(out)
    }
}

/// Each row's log-probability of its `next` token and its `top` most
/// likely tokens, most likely first (ties: the lower id), from `[n,
/// vocab]` f32 logits.
fn picked(logits: &Array, next: &[u32], top: usize) -> mlx_rs::error::Result<Vec<TokenLogprobs>> {
    let n = next.len() as i32;
    let vocab = logits.shape()[1];
    let total = logits.logsumexp_axis(-1, true)?;
    let next: Vec<i32> = next.iter().map(|&id| id as i32).collect();
    let chosen = logits
        .take_along_axis(Array::from_slice(&next, &[n, 1]), -1)?
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
    let mut all = vec![&chosen];
    if let Some((ids, values)) = &best {
        all.extend([ids, values]);
    }
    mlx_rs::transforms::eval(all)?;
    let chosen = chosen.as_slice::<f32>();
    let best =
        (best.as_ref()).map(|(ids, values)| (ids.as_slice::<i32>(), values.as_slice::<f32>()));
    let k = k as usize;
    Ok((0..next.len())
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

/// NaN counts as impossible, as the generated tokens' reports count it.
fn finite(x: f32) -> f32 {
    if x.is_nan() { f32::NEG_INFINITY } else { x }
}
