//! One step of the scheduler: one pass of the decode rows (one token per
//! sequence) and the prompt chunks under the step's budget, queued, then
//! tokens read and handed out: overlapped (a GPU), the previous pass's,
//! while this one runs; otherwise this pass's own. Decode rows and
//! prompts go through one forward (`pass.rs`, `model::Split`): the
//! weights are read once and a GPU launches one graph, where two passes
//! did each twice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mlx_rs::Array;

use super::Worker;
use super::logprobs::Reported;
use super::pass::{Part, Phase};
use super::picked::{self, Input};
use super::sequence::{Next, Sequence, Spec};
use crate::EngineError;
use crate::mlx::error::mlx_err;

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
        // Sequences the host samples (`--sample-on host`) need their logits
        // read before they can feed; a constrained one whose mask is late
        // joins a later step.
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
                    Ok((token, logprobs)) => {
                        seq.deliver(token, logprobs.map(Reported::Read), None);
                    }
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
            (self.buffers).after_step(fed, &self.gauges.buffer_cache_bytes);
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
        for (n, (i, picked)) in unread.iter().enumerate() {
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
            // Where the request asked, the logits row kept with its pick,
            // evaluated with it: the run reads how likely the token was.
            let logprobs = match (seq.logprobs(), picked.logits()) {
                (Some(k), Some(row)) => Some(Reported::Row(row.clone(), k)),
                _ => None,
            };
            match id {
                Ok(id) => seq.deliver(id, logprobs, spec),
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
}

/// Whether `unread` holds tokens, each its run's first (by index in
/// `active`).
fn only_first_tokens(unread: &[(usize, picked::Picked)], active: &[Sequence]) -> bool {
    !unread.is_empty()
        && (unread.iter()).all(|(i, _)| active.get(*i).is_some_and(|s| !s.has_delivered()))
}

/// Runs `f` (a wait for the device, or handing it work), adding its time
/// to `total` (ns).
pub(super) fn waited<T>(total: &AtomicU64, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    total.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    out
}
