//! One pass of a step: its parts (the decode rows, then the prompt
//! chunks) through one forward, built apart from being queued, so a step
//! can hand out tokens between the two (`step.rs`).

use std::sync::atomic::Ordering;

use mlx_rs::Array;

use super::picked::{self, Input};
use super::sequence::{Next, Spec};
use super::step::waited;
use super::{Worker, adjust, draw};
use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::model::{Fork, Segment};

/// Which of a step's parts a segment belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// One token per sequence: the batched decode, first in the pass.
    Decode,
    /// Prompt chunks and forced tokens.
    Prefill,
}

/// One sequence's part in a pass: its index in `active`, its input, and
/// whether the pass ends its feed (its logits pick the next token).
pub(super) struct Part {
    pub phase: Phase,
    pub seq: usize,
    pub input: Input,
    pub len: usize,
    pub ends_feed: bool,
    pub prompt: bool,
    /// Its first `at` prompt tokens come from the cache of the sequence at
    /// index `from` in `active`, which writes them in this pass.
    pub fork: Option<(usize, usize)>,
    /// The cache length after the pass.
    pub reach: usize,
}

impl Worker {
    /// Builds one pass, for [`Worker::queue`]; returns each decoding
    /// sequence's next-token source (a lazy pick for greedy ones) by
    /// index in `active`. The decode rows and the prompts share the pass:
    /// the decode rows' tokens are read once the prompts' chunk is
    /// computed too (a chunk later than a pass of their own would give
    /// them), and a pass that fails fails every sequence in it.
    pub(super) fn build_pass(
        &mut self,
        parts: &[Part],
    ) -> (Option<Vec<(usize, Spec)>>, Option<Built>) {
        if parts.is_empty() {
            return (None, None);
        }
        let logits = parts.iter().any(|p| p.ends_feed);
        self.passes += 1;
        let pass = self.passes;
        let result = self.forward(parts, logits);
        let (logits, picks, mut built) = match result {
            Ok(out) => out,
            Err(e) => {
                self.fail_pass(parts, &e);
                return (None, None);
            }
        };
        let mut out = Vec::new();
        for (row, p) in parts.iter().enumerate() {
            let seq = &mut self.active[p.seq];
            if let Some((_, at)) = p.fork {
                seq.skip_prompt(at);
                self.gauges
                    .shared_prompt_tokens
                    .fetch_add(at as u64, Ordering::Relaxed);
            }
            if let Next::Feed(ids) = &mut seq.next {
                ids.drain(..p.len);
            }
            if p.prompt {
                seq.fed_prompt(p.len);
            }
            if !p.ends_feed {
                let total = seq.prompt_len();
                let done = total.min(seq.offset());
                seq.send_prefill(done, total);
                continue;
            }
            if p.prompt {
                let total = seq.prompt_len();
                seq.send_prefill(total, total);
                if seq.is_done() {
                    continue;
                }
            }
            let (Some(logits), Some(picks)) = (&logits, &picks) else {
                continue;
            };
            match p.phase {
                // The decode rows' picks are the *next* step's inputs; the
                // token they follow is read by the caller.
                Phase::Decode if matches!(seq.next, Next::Unread(_)) => {
                    match seq.spec((picks, pass), logits, row as i32) {
                        Some(Ok(spec)) => {
                            built.keep(spec.logprob_row());
                            out.push((p.seq, spec));
                        }
                        Some(Err(e)) => seq.fail(e),
                        None => {}
                    }
                }
                _ => {
                    if seq.out_of_budget() {
                        // `max_tokens: 0`: the prompt only.
                        seq.finish(crate::Finish::Length);
                    } else if let Err(e) = seq.produced((picks, pass), logits, row as i32) {
                        seq.fail(e);
                    } else if let Next::Unread(pick) = &seq.next {
                        built.keep(pick.logits());
                    }
                }
            }
        }
        (Some(out), Some(built))
    }

    /// Hands `built` to MLX to run.
    pub(super) fn queue(&mut self, built: Built, parts: &[Part]) {
        let queued = waited(&self.gauges.queue_ns, || {
            mlx_rs::transforms::async_eval(built.0.iter())
        });
        if let Err(e) = queued {
            self.fail_pass(parts, &mlx_err("queueing a step")(e));
        }
    }

    /// Fails every sequence in a pass that could not be built or queued.
    fn fail_pass(&mut self, parts: &[Part], e: &EngineError) {
        tracing::error!(error = %e, "a batched step failed");
        for p in parts {
            self.active[p.seq].fail(EngineError::Backend(e.to_string()));
        }
    }

    /// The forward pass over `parts`, built; with `logits`, the last
    /// rows' logits and their greedy picks.
    fn forward(
        &mut self,
        parts: &[Part],
        logits: bool,
    ) -> Result<(Option<Array>, Option<Array>, Built), EngineError> {
        // Free sampled tokens are drawn in the graph (`draw.rs`); the rest
        // take the argmax, unused where a constrained token is picked from
        // its masked logits later (`picked::pick`).
        let draws: Vec<_> = parts
            .iter()
            .map(|p| {
                let seq = &self.active[p.seq];
                p.ends_feed.then(|| seq.draw_at(p.reach)).flatten()
            })
            .collect();
        let adjustments: Vec<_> = parts
            .iter()
            .map(|p| {
                let seq = &mut self.active[p.seq];
                p.ends_feed.then(|| seq.adjust_at(p.reach)).flatten()
            })
            .collect();
        let mut caches: Vec<Option<&mut Vec<_>>> = self
            .active
            .iter_mut()
            .map(|s| Some(&mut s.caches))
            .collect();
        let mut segments = Vec::with_capacity(parts.len());
        for p in parts {
            let Some(c) = caches[p.seq].take() else {
                return Err(EngineError::Backend("a sequence twice in one pass".into()));
            };
            // The leader's part comes earlier in the same pass (`plan`).
            let fork = match p.fork {
                Some((from, at)) => Some(Fork {
                    from: parts.iter().position(|q| q.seq == from).ok_or_else(|| {
                        EngineError::Backend("a shared prefix without its leader".into())
                    })?,
                    at: at as i32,
                }),
                None => None,
            };
            segments.push(Segment {
                len: p.len as i32,
                caches: c.as_mut_slice(),
                fork,
            });
        }
        let ids = picked::join(parts.iter().map(|p| &p.input)).map_err(mlx_err("decoding"))?;
        let mut out = self
            .model
            .forward(&ids, &mut segments, logits)
            .map_err(mlx_err("decoding"))?;
        if let Some(l) = &out
            && adjustments.iter().any(Option::is_some)
        {
            // Every pick, and the logits kept for a mask or the host
            // sampler, sees the adjusted logits.
            let adjusted = last_inputs(&ids, parts)
                .and_then(|inputs| adjust::adjust(l, &adjustments, &inputs))
                .map_err(mlx_err("adjusting the logits"))?;
            out = Some(adjusted);
        }
        let picks = match &out {
            Some(l) => Some(draw::picks(l, &draws).map_err(mlx_err("choosing a token"))?),
            None => None,
        };
        // The batch buffers once, not once per sequence in a slot (at 32
        // sequences that was 64 entries per layer for MLX to walk).
        let mut cached: Vec<Array> = self.model.batch_arrays();
        for s in &segments {
            for c in s.caches.iter().filter(|c| !c.in_batch()) {
                cached.extend(c.arrays());
            }
        }
        let mut eval: Vec<Array> = Vec::new();
        eval.extend(picks.iter().cloned());
        eval.extend(out.iter().cloned());
        eval.extend(cached);
        Ok((out, picks, Built(eval)))
    }
}

/// A pass built and not queued yet: the arrays MLX is to evaluate.
pub(super) struct Built(Vec<Array>);

impl Built {
    /// Evaluates `row` (a logits row kept for a token's log-probabilities)
    /// with the pass: read later, it then waits for nothing, where a row
    /// evaluated on its own would queue behind whatever pass followed.
    fn keep(&mut self, row: Option<&Array>) {
        self.0.extend(row.cloned());
    }
}

/// Each part's last input token, `[parts, 1]` int32, from the pass's
/// joined inputs `ids` (lazy where it is a token nobody has read yet).
fn last_inputs(ids: &Array, parts: &[Part]) -> mlx_rs::error::Result<Array> {
    let rows = parts.len() as i32;
    if parts.iter().all(|p| p.len == 1) {
        return ids.reshape(&[rows, 1]);
    }
    let mut end = 0;
    let last: Vec<i32> = parts
        .iter()
        .map(|p| {
            end += p.len as i32;
            end - 1
        })
        .collect();
    ids.take_axis(Array::from_slice(&last, &[rows]), 1)?
        .reshape(&[rows, 1])
}
