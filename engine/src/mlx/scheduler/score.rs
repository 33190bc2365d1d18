//! Scoring a prompt ([`crate::Engine::score_prompt`]): each token's
//! log-probability after those before it, and its position's most likely
//! tokens, as OpenAI's `echo` with `logprobs` reports them. It runs on
//! the scheduler's thread, on caches of its own (no prefix pool, no batch
//! slot: every position is computed, the cache counted against the KV
//! budget while it is held), a chunk of positions per pass, one pass
//! after each step: the batch keeps decoding meanwhile, as it does beside
//! a long prompt's chunks. Only the picked values cross to the host, a
//! pass's read at the next pass, so the host builds that one (and a step)
//! while the device runs it, as it does a step's.
//! Prompts asked together are scored one after another. A generation
//! asked to score its prompt first (`Engine::generate_scored`) then starts
//! from the scoring's caches, so its prompt is computed once.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::mpsc::Sender;
use std::time::Duration;

use mlx_rs::Array;
use mlx_rs::ops::argpartition_axis;
use mlx_rs::ops::indexing::TryIndexOp;

use super::link::{Submission, ToRun};
use super::{Worker, in_blocks};
use crate::mlx::error::mlx_err;
use crate::mlx::model::{KvCache, Segment};
use crate::{EngineError, Finish, GenerationStats, TokenLogprobs};

/// Positions per scoring pass at most: its logits are this many rows of
/// the vocabulary in f32 (78 MB at Qwen3's 151,936); fewer where the
/// engine prefills in smaller chunks.
const SCORE_CHUNK: usize = 128;

/// A prompt to score and where its answer goes.
pub(crate) struct ScoreJob {
    pub ids: Vec<u32>,
    pub top: usize,
    pub reply: Answer,
}

/// Where a prompt's scores go.
pub(crate) enum Answer {
    /// To [`super::Scheduler::score`]'s caller.
    Alone(Sender<Result<Vec<TokenLogprobs>, EngineError>>),
    /// To the run of a generation of the same prompt, which then starts
    /// from the scoring's caches (its last token left to run, for the
    /// logits its first token is picked from).
    Then(Box<Submission>),
}

impl Answer {
    /// A generation stopped while its prompt was scored ends cancelled,
    /// as one stopped in its prefill does.
    fn cancelled(self, prompt_tokens: usize) {
        if let Answer::Then(sub) = self {
            let _ = (sub.to_run).send(ToRun::Done(Ok(ended(
                &sub,
                prompt_tokens,
                Finish::Cancelled,
            ))));
        }
    }

    fn fail(self, e: EngineError) {
        // A caller gone has nothing to be told.
        let _ = match self {
            Answer::Alone(reply) => reply.send(Err(e)).is_ok(),
            Answer::Then(sub) => sub.to_run.send(ToRun::Done(Err(e))).is_ok(),
        };
    }
}

/// The figures of a generation that ended with its prompt scored and no
/// token generated.
fn ended(sub: &Submission, prompt_tokens: usize, finish: Finish) -> GenerationStats {
    GenerationStats {
        finish,
        prompt_tokens,
        cached_prompt_tokens: 0,
        generated_tokens: 0,
        prefill_time: sub.submitted.elapsed(),
        decode_time: Duration::ZERO,
    }
}

/// A prompt being scored: the passes left, and what those done found.
pub(super) struct Scoring {
    job: ScoreJob,
    caches: Vec<KvCache>,
    passes: VecDeque<Range<usize>>,
    out: Vec<TokenLogprobs>,
    /// The last pass's picks, queued with it and read at the next pass:
    /// the host builds that one (and a step) while the device runs this.
    queued: Option<Queued>,
    /// Cache positions it holds (in the cache's blocks).
    pub positions: usize,
    /// The generation that asked for it was stopped (its run went away).
    stopped: bool,
}

impl Worker {
    /// Takes `job`: answered at once when there is nothing to score or
    /// the cache has no room for it beside the batch; otherwise scored a
    /// pass after each step, once those asked before it are done.
    pub(super) fn take_score(&mut self, job: ScoreJob) {
        match job.reply {
            _ if job.ids.len() >= 2 => self.scores_waiting.push_back(job),
            Answer::Alone(reply) => {
                let _ = reply.send(Ok(Vec::new()));
            }
            Answer::Then(sub) => {
                let _ = sub.to_run.send(ToRun::PromptLogprobs(Vec::new()));
                self.waiting.push_back(*sub);
            }
        }
    }

    /// Prompt positions the scoring jobs have yet to compute.
    pub(super) fn score_backlog(&self) -> usize {
        let started = (self.scoring.iter()).map(|s| s.passes.iter().map(Range::len).sum::<usize>());
        let waiting = self.scores_waiting.iter().map(|j| j.ids.len());
        started.chain(waiting).sum()
    }

    /// The submission of a generation whose prompt is being scored or
    /// waits to be (a mask its run sends meanwhile is kept with it).
    pub(super) fn scored_submission(&mut self, id: u64) -> Option<&mut Submission> {
        let jobs = self.scoring.iter_mut().map(|s| &mut s.job);
        let mut all = jobs.chain(self.scores_waiting.iter_mut());
        all.find_map(|job| match &mut job.reply {
            Answer::Then(sub) if sub.id == id => Some(&mut **sub),
            _ => None,
        })
    }

    /// The run of the generation whose prompt is being scored stopped it
    /// (its answer to a progress report): the scoring ends at its next
    /// pass.
    pub(super) fn score_stopped(&mut self, id: u64) {
        if let Some(scoring) = &mut self.scoring
            && matches!(&scoring.job.reply, Answer::Then(sub) if sub.id == id)
        {
            scoring.stopped = true;
        }
    }

    /// Whether the next prompt to score can start now: the cache has room
    /// for it, or nothing holds any (it is then refused). One waiting for
    /// room is no work: the worker blocks until a message comes.
    pub(super) fn score_can_start(&self) -> bool {
        let Some(job) = self.scores_waiting.front() else {
            return false;
        };
        self.held().next().is_none() || !self.no_room_to_score(job)
    }

    /// Whether the cache has no room for `job`'s beside what is held.
    fn no_room_to_score(&self, job: &ScoreJob) -> bool {
        let positions = in_blocks(job.ids.len());
        self.footprint(self.held().chain([positions])) > self.options.kv_budget
    }

    /// One pass of the prompt being scored, started if none is; a prompt
    /// scored to its end is answered.
    pub(super) fn score_pass(&mut self) {
        if self.scoring.is_none() {
            let Some(job) = self.scores_waiting.pop_front() else {
                return;
            };
            // Its cache counts against the budget the batch's
            // reservations share, as a sequence's would: spare batch
            // slots go first, and it waits for the batch to make room, as
            // a new sequence does. Only a prompt the budget cannot hold
            // beside nothing else is refused.
            self.give_up_spare_slots_if(|w| w.no_room_to_score(&job));
            if self.no_room_to_score(&job) {
                if self.held().next().is_some() {
                    self.scores_waiting.push_front(job);
                } else {
                    job.reply.fail(EngineError::InvalidRequest(
                        "the attention cache has no room to score this prompt".into(),
                    ));
                }
                return;
            }
            let size = self.options.prefill_chunk.clamp(2, SCORE_CHUNK);
            self.scoring = Some(Scoring {
                passes: chunks(job.ids.len(), size).into(),
                out: Vec::with_capacity(job.ids.len() - 1),
                queued: None,
                caches: self.model.new_cache(),
                positions: in_blocks(job.ids.len()),
                job,
                stopped: false,
            });
            self.reserved = self.footprint(self.held());
        }
        let Some(mut scoring) = self.scoring.take() else {
            return;
        };
        let len = scoring.job.ids.len();
        let ran = match scoring.stopped {
            true => Ok(()),
            false => self.score_next(&mut scoring),
        };
        if let Err(e) = ran {
            tracing::error!(error = %e, "scoring a prompt failed");
            scoring.job.reply.fail(e);
        } else if scoring.stopped {
            scoring.job.reply.cancelled(len);
        } else if scoring.passes.is_empty() && scoring.queued.is_none() {
            self.scored(scoring.job.reply, scoring.out, &scoring.caches);
        } else {
            self.scoring = Some(scoring);
            return;
        }
        // Ended: its logits are freed, and its caches but for the views a
        // generation took; MLX's buffers go back.
        drop(scoring.caches);
        self.reserved = self.footprint(self.held());
        (self.buffers).after_step(len, &self.gauges.buffer_cache_bytes);
    }

    /// Answers a prompt scored to its end; a generation of it joins the
    /// front of the queue, from views of `caches` holding all but its last
    /// token.
    fn scored(&mut self, reply: Answer, out: Vec<TokenLogprobs>, caches: &[KvCache]) {
        let mut sub = match reply {
            Answer::Alone(reply) => {
                let _ = reply.send(Ok(out));
                return;
            }
            Answer::Then(sub) => sub,
        };
        if sub.request.max_tokens == 0 {
            // Nothing to generate: the scores are the whole answer, and
            // the last position needs no pass of its own.
            let stats = ended(&sub, sub.request.prompt.len(), Finish::Length);
            let _ = sub.to_run.send(ToRun::PromptLogprobs(out));
            let _ = sub.to_run.send(ToRun::Done(Ok(stats)));
            return;
        }
        let held = sub.request.prompt.len() - 1;
        let views = caches.iter().map(|c| c.fork(held as i32));
        match views.collect::<Result<Vec<_>, _>>() {
            Ok(views) => {
                let _ = sub.to_run.send(ToRun::PromptLogprobs(out));
                sub.cached = Some((views, held));
                // First in line, behind any scored before it.
                let at = (self.waiting.iter())
                    .take_while(|s| s.cached.is_some())
                    .count();
                self.waiting.insert(at, *sub);
            }
            Err(e) => Answer::Then(sub).fail(mlx_err("starting from a scored prompt")(e)),
        }
    }

    /// Reads the pass `scoring` queued last (it ran beside the step since)
    /// and queues its next.
    fn score_next(&mut self, scoring: &mut Scoring) -> Result<(), EngineError> {
        let ids = &scoring.job.ids;
        if let Some(queued) = scoring.queued.take() {
            scoring.out.extend(queued.read()?);
            // A generation waiting on it hears of its progress, as of its
            // own prefill's, and can stop it (`Worker::score_stopped`).
            if let Answer::Then(sub) = &scoring.job.reply {
                let (done, total) = (scoring.out.len() + 1, ids.len());
                if (sub.to_run.send(ToRun::Prefill { done, total })).is_err() {
                    scoring.stopped = true;
                    return Ok(());
                }
            }
        }
        let Some(range) = scoring.passes.pop_front() else {
            return Ok(());
        };
        // Position i's logits score token i + 1; the last position's (past
        // the prompt) is computed with its chunk and not read.
        let next = &ids[range.start + 1..(range.end + 1).min(ids.len())];
        let len = range.len() as i32;
        let input: Vec<i32> = ids[range].iter().map(|&id| id as i32).collect();
        let input = Array::from_slice(&input, &[1, len]);
        let mut segments = [Segment {
            len,
            caches: scoring.caches.as_mut_slice(),
            fork: None,
        }];
        let logits = self
            .model
            .forward_every_row(&input, &mut segments)
            .map_err(mlx_err("scoring a prompt"))?;
        let top = scoring.job.top;
        let queued = Queued::new(&logits, next, top).map_err(mlx_err("scoring a prompt"))?;
        scoring.queued = Some(queued);
        // Computed between two steps: the pace counts it in their interval.
        self.pace.fed_beside(len as usize);
        Ok(())
    }
}

/// The passes over `n` positions, `size` at most each and never one alone
/// (a one-position pass would be taken for a decode step and its cache
/// put into the batch's slots): a last one left over joins the pass
/// before it.
fn chunks(n: usize, size: usize) -> Vec<std::ops::Range<usize>> {
    let mut all = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = (start + size).min(n);
        if n - end == 1 {
            end = n;
        }
        all.push(start..end);
        start = end;
    }
    all
}

/// A pass's picks, queued for the device: each row's log-probability of
/// its next token and its most likely tokens, read (waited for) later.
struct Queued {
    chosen: Array,
    /// The best `k` ids of each row and their log-probabilities.
    best: Option<(Array, Array)>,
    rows: usize,
    k: usize,
}

impl Queued {
    /// Builds and queues the picks of `[n, vocab]` f32 `logits`: row i's
    /// log-probability of `next[i]` and its `top` most likely tokens.
    fn new(logits: &Array, next: &[u32], top: usize) -> mlx_rs::error::Result<Self> {
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
    fn read(self) -> Result<Vec<TokenLogprobs>, EngineError> {
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
    use super::chunks;

    #[test]
    fn picks_are_the_chosen_token_and_the_best_of_each_row() {
        use super::{Array, Queued};
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

    #[test]
    fn no_pass_holds_one_position_alone() {
        let one = |n: usize| vec![std::ops::Range { start: 0, end: n }];
        assert_eq!(chunks(2, 128), one(2));
        assert_eq!(chunks(129, 128), one(129));
        assert_eq!(chunks(130, 128), [0..128, 128..130]);
        assert_eq!(chunks(256, 128), [0..128, 128..256]);
        assert_eq!(chunks(5, 2), [0..2, 2..5]);
        for n in 2..300 {
            for size in [2, 3, 64, 128] {
                let all = chunks(n, size);
                assert!(all.iter().all(|r| r.len() >= 2), "{n} {size}: {all:?}");
                assert_eq!(all.last().map(|r| r.end), Some(n));
            }
        }
    }
}
