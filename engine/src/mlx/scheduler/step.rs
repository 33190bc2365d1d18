//! One step of the scheduler: one pass of the decode rows (one token per
//! sequence) and the prompt chunks under the step's budget, queued, then
//! tokens read and handed out: overlapped (a GPU), the previous pass's,
//! while this one runs; otherwise this pass's own. Decode rows and
//! prompts go through one forward (`model::Split`): the weights are read
//! once and a GPU launches one graph, where two passes did each twice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mlx_rs::Array;

use super::picked::{self, Input};
use super::sequence::{Next, Sequence, Spec};
use super::{Worker, adjust, draw};
use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::model::{Fork, Segment};

/// Which of a step's parts a segment belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// One token per sequence: the batched decode, first in the pass.
    Decode,
    /// Prompt chunks and forced tokens.
    Prefill,
}

/// One sequence's part in a pass: its index in `active`, its input, and
/// whether the pass ends its feed (its logits pick the next token).
struct Part {
    phase: Phase,
    seq: usize,
    input: Input,
    len: usize,
    ends_feed: bool,
    prompt: bool,
    /// Its first `at` prompt tokens come from the cache of the sequence at
    /// index `from` in `active`, which writes them in this pass.
    fork: Option<(usize, usize)>,
    /// The cache length after the pass.
    reach: usize,
}

impl Worker {
    /// One step: the pass of decode rows and prompts, then reading
    /// tokens: overlapped (a GPU), those the previous pass picked, while
    /// this one runs; otherwise this pass's own, once it is done.
    pub(super) fn step(&mut self) {
        self.await_masks();
        for seq in &mut self.active {
            if let Err(e) = seq.resolve_mask() {
                seq.fail(e);
            }
        }
        // Sampled sequences need their logits read before they can feed; a
        // constrained one whose mask is late joins a later step.
        let mut sampled = false;
        for seq in &mut self.active {
            if seq.awaits_mask() {
                continue;
            }
            if let Next::Logits(logits) = &seq.next {
                let logits = logits.clone();
                sampled = true;
                // Evaluated here so the wait is counted apart from the draw.
                if let Err(e) = waited(&self.gauges.device_wait_ns, || logits.eval()) {
                    seq.fail(mlx_err("evaluating a step")(e));
                    continue;
                }
                match seq.sample(&logits) {
                    Ok(token) => seq.deliver(token, None),
                    Err(e) => seq.fail(e),
                }
            }
        }
        if sampled {
            // Their answers decide whether they join this step.
            self.await_answers();
        }
        let overlap = self.options.overlap_steps;
        match overlap {
            true => self.queue_picked_alone(),
            false => {
                // Not overlapped, a pass takes no unread token as input:
                // any left (a token picked on its own, or a pick a run's
                // answer made the next) is read and handed out now.
                let early = self.unread();
                if !early.is_empty() {
                    self.hand_out(early, None);
                    self.await_answers();
                }
            }
        }
        let (decode, prefill) = self.plan();
        let started = Instant::now();
        let decoded = decode.len();
        let fed: usize = prefill.iter().map(|p| p.len).sum();
        if decoded + fed > 0 {
            self.pace.step(started, fed);
            self.publish_pace();
        }
        // The tokens to read this step. Overlapped (a GPU): those the
        // previous pass picked, which this pass takes as input before
        // anyone reads them; reading them waits for that pass only, so the
        // host reads, hands them out and builds the next step while this
        // one runs, as mlx-lm does. Otherwise (the CPU, whose cores that
        // host work would take from the step): this pass's own, read as
        // soon as it is done, a step sooner than the next pass would give
        // them.
        let mut unread = match overlap {
            true => self.unread(),
            false => Vec::new(),
        };
        // Queueing a pass returns only once MLX has all but a few of its
        // tasks under way (it throttles the work in flight), so a token
        // read after it waits for most of the pass. When each unread token
        // is its run's first (runs that arrived alone or together), they
        // are read between building the pass and queueing it: the first
        // tokens come that much sooner, for the device waiting on the hand
        // out once. Runs already streaming keep the pass queued first.
        let first_only = overlap && only_first_tokens(&unread, &self.active);
        let mut parts = decode;
        parts.extend(prefill);
        let (mut specs, built) = self.build_pass(&parts);
        if first_only {
            self.hand_out(std::mem::take(&mut unread), specs.take());
        }
        if let Some(built) = built {
            self.queue(built, &parts);
        }
        if !overlap {
            unread = self.unread();
        }
        self.hand_out(unread, specs);
        if decoded + fed > 0 {
            self.gauges.steps.fetch_add(1, Ordering::Relaxed);
            self.gauges
                .batched_tokens
                .fetch_add(decoded as u64, Ordering::Relaxed);
            tracing::trace!(
                batch = decoded,
                prompt_tokens = fed,
                queued = self.waiting.len(),
                kv_reserved_mb = self.reserved >> 20,
                queue_us = started.elapsed().as_micros() as u64,
                "step"
            );
        }
    }

    /// Reads `unread` (one wait for all of them, not one per sequence)
    /// and hands each to its run with the step already queued on it
    /// (`specs`, by index in `active`).
    fn hand_out(
        &mut self,
        unread: Vec<(usize, picked::Picked)>,
        mut specs: Option<Vec<(usize, Spec)>>,
    ) {
        let tokens: Vec<&picked::Picked> = unread.iter().map(|(_, t)| t).collect();
        let ids = waited(&self.gauges.device_wait_ns, || picked::read(&tokens));
        for (n, (i, _)) in unread.iter().enumerate() {
            let spec = specs.as_mut().and_then(|out| {
                let at = out.iter().position(|(s, _)| s == i)?;
                Some(out.swap_remove(at).1)
            });
            let seq = &mut self.active[*i];
            if seq.is_done() {
                continue;
            }
            let id = match &ids {
                Ok(ids) => ids
                    .get(n)
                    .copied()
                    .ok_or_else(|| EngineError::Backend("a token without its id".into())),
                Err(e) => Err(EngineError::Backend(e.clone())),
            };
            match id {
                Ok(id) => seq.deliver(id, spec),
                Err(e) => seq.fail(e),
            }
        }
    }

    /// Queues the tokens picked on their own (a constrained token's
    /// masked argmax): reading them then waits for them, not for the pass
    /// that takes them as input.
    fn queue_picked_alone(&mut self) {
        let alone: Vec<(usize, Array)> = (self.active.iter().enumerate())
            .filter_map(|(i, s)| match &s.next {
                Next::Unread(p) => p.unqueued().map(|a| (i, a.clone())),
                _ => None,
            })
            .collect();
        if let Err(e) = mlx_rs::transforms::async_eval(alone.iter().map(|(_, a)| a)) {
            for (i, _) in &alone {
                self.active[*i].fail(EngineError::Backend(format!(
                    "queueing a token picked alone: {e}"
                )));
            }
        }
    }

    /// The tokens picked and not yet read, by index in `active`.
    fn unread(&self) -> Vec<(usize, picked::Picked)> {
        (self.active.iter().enumerate())
            .filter_map(|(i, seq)| match &seq.next {
                Next::Unread(token) => Some((i, token.clone())),
                _ => None,
            })
            .collect()
    }

    /// Splits what the sequences have to feed into the decode rows (one
    /// token each) and the prompt parts (chunks, as a lone prompt would be
    /// cut, under the step's prompt budget; prompts whose rest is short
    /// take their own lane first, so long ones never hold them back).
    fn plan(&mut self) -> (Vec<Part>, Vec<Part>) {
        self.share_prefixes();
        let (mut decode, mut prefill): (Vec<Part>, Vec<Part>) = (Vec::new(), Vec::new());
        let chunk = self.options.prefill_chunk.max(1);
        let mut budget = self.options.step_prompt_tokens.max(chunk);
        let mut lane = self.options.short_prompt_tokens;
        for (i, seq) in self.active.iter().enumerate() {
            match &seq.next {
                Next::Unread(token) if seq.may_continue() => decode.push(Part {
                    phase: Phase::Decode,
                    seq: i,
                    input: Input::Picked(token.clone()),
                    len: 1,
                    ends_feed: true,
                    prompt: false,
                    fork: None,
                    reach: seq.offset() + 1,
                }),
                Next::Feed(ids) if ids.len() == 1 && !seq.in_prompt() => decode.push(Part {
                    phase: Phase::Decode,
                    seq: i,
                    input: Input::Known(ids.clone()),
                    len: 1,
                    ends_feed: true,
                    prompt: false,
                    fork: None,
                    reach: seq.offset() + 1,
                }),
                Next::Feed(ids) => {
                    // A follower whose leader has not written the shared
                    // prefix yet joins the pass that writes it, or waits.
                    let (skip, fork) = match seq.follows {
                        None => (0, None),
                        Some(f) => match prefill.iter().find(|p| self.active[p.seq].id == f.leader)
                        {
                            Some(lead) if lead.reach >= f.common => {
                                (f.common, Some((lead.seq, f.common)))
                            }
                            _ => continue,
                        },
                    };
                    let ids = &ids[skip.min(ids.len())..];
                    // A prompt is cut where it would be cut alone, so a
                    // batched prefill computes the same numbers.
                    let take = if seq.in_prompt() && ids.len() > chunk {
                        chunk
                    } else {
                        ids.len()
                    };
                    if seq.in_prompt() && take == ids.len() && take <= lane {
                        lane -= take;
                    } else if take > budget && !prefill.is_empty() {
                        continue;
                    } else {
                        budget = budget.saturating_sub(take);
                    }
                    prefill.push(Part {
                        phase: Phase::Prefill,
                        seq: i,
                        input: Input::Known(ids[..take].to_vec()),
                        len: take,
                        ends_feed: take == ids.len(),
                        prompt: seq.in_prompt(),
                        fork,
                        reach: fork.map_or(seq.offset(), |f| f.1) + take,
                    });
                }
                _ => {}
            }
        }
        (decode, prefill)
    }

    /// Builds one pass, for [`Worker::queue`]; returns each decoding
    /// sequence's next-token source (a lazy pick for greedy ones) by
    /// index in `active`. The decode rows and the prompts share the pass:
    /// the decode rows' tokens are read once the prompts' chunk is
    /// computed too (a chunk later than a pass of their own would give
    /// them), and a pass that fails fails every sequence in it.
    fn build_pass(&mut self, parts: &[Part]) -> (Option<Vec<(usize, Spec)>>, Option<Built>) {
        if parts.is_empty() {
            return (None, None);
        }
        let logits = parts.iter().any(|p| p.ends_feed);
        self.passes += 1;
        let pass = self.passes;
        let result = self.forward(parts, logits);
        let (logits, picks, built) = match result {
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
                        Some(Ok(spec)) => out.push((p.seq, spec)),
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
                    }
                }
            }
        }
        (Some(out), Some(built))
    }

    /// Hands `built` to MLX to run.
    fn queue(&mut self, built: Built, parts: &[Part]) {
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
        // take the argmax.
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
struct Built(Vec<Array>);

/// Whether `unread` holds tokens, each its run's first (by index in
/// `active`).
fn only_first_tokens(unread: &[(usize, picked::Picked)], active: &[Sequence]) -> bool {
    !unread.is_empty()
        && (unread.iter()).all(|(i, _)| active.get(*i).is_some_and(|s| !s.has_delivered()))
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

/// Runs `f` (a wait for the device, or handing it work), adding its time
/// to `total` (ns).
fn waited<T>(total: &AtomicU64, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    total.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    out
}
