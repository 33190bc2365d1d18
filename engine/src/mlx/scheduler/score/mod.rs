//! Scoring a prompt ([`crate::Engine::score_prompt`]): each token's
//! log-probability after those before it, and its position's most likely
//! tokens, as OpenAI's `echo` with `logprobs` reports them. It runs on
//! the scheduler's thread, on caches of its own (no prefix pool, no batch
//! slot: every position is computed, the cache counted against the KV
//! budget while it is held), a chunk of positions per pass, one pass
//! after each step: the batch keeps decoding meanwhile, as it does beside
//! a long prompt's chunks. Only the picked values cross to the host
//! (`picks`), a pass's read at the next pass, so the host builds and
//! queues the step between them while the device runs it.
//!
//! Prompts asked together are scored one after another, but those asking
//! for the same prompt with the same alternatives (a request's `n`
//! choices) share one scoring. A generation asked to score its prompt
//! first (`Engine::generate_scored`) then starts from the scoring's
//! caches, so its prompt is computed once (`answer`).

mod answer;
mod picks;

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::Ordering;

use mlx_rs::Array;

pub(crate) use self::answer::Answer;
use self::answer::{fail_all, only_scores};
use self::picks::Queued;
use super::link::{Scored, Submission, ToRun};
use super::{Worker, in_blocks};
use crate::mlx::error::mlx_err;
use crate::mlx::model::{KvCache, Segment};
use crate::{EngineError, TokenLogprobs};

/// Positions per scoring pass at most: its logits are this many rows of
/// the vocabulary in f32 (78 MB at Qwen3's 151,936); fewer where the
/// engine prefills in smaller chunks.
const SCORE_CHUNK: usize = 128;

/// A prompt to score and where its scores go.
pub(crate) struct ScoreJob {
    ids: Vec<u32>,
    top: usize,
    /// Everyone who asked for these scores, in the order they asked.
    answers: Vec<Answer>,
}

impl ScoreJob {
    /// `ids` scored with `top` alternatives a position, for `answer`.
    pub(crate) fn new(ids: Vec<u32>, top: usize, answer: Answer) -> Self {
        Self {
            ids,
            top,
            answers: vec![answer],
        }
    }

    /// Whether `other` asks for the same scores.
    fn same(&self, other: &ScoreJob) -> bool {
        self.top == other.top && self.ids == other.ids
    }
}

/// A prompt being scored: the passes left, and what those done found.
pub(super) struct Scoring {
    job: ScoreJob,
    caches: Vec<KvCache>,
    passes: VecDeque<Range<usize>>,
    out: Vec<TokenLogprobs>,
    /// The last pass's picks, queued with it and read at the next pass:
    /// the host builds the step between them while the device runs this.
    queued: Option<Queued>,
    /// Cache positions it holds (in the cache's blocks).
    pub positions: usize,
}

impl Worker {
    /// Takes `job`: answered at once when there is nothing to score;
    /// joined to the scoring of the same prompt where one is under way or
    /// waits; otherwise scored a pass after each step, once those asked
    /// before it are done.
    pub(super) fn take_score(&mut self, job: ScoreJob) {
        if job.ids.len() < 2 {
            for answer in job.answers {
                self.unscored(answer);
            }
            return;
        }
        // Joining one under way loses nothing: the answer is every
        // position's, and those done are kept.
        let started = self.scoring.as_mut().map(|s| &mut s.job);
        let same = (started.into_iter())
            .chain(self.scores_waiting.iter_mut())
            .find(|j| j.same(&job) && !j.answers.is_empty());
        match same {
            Some(same) => same.answers.extend(job.answers),
            None => self.scores_waiting.push_back(job),
        }
    }

    /// Answers one who asked for the scores of a prompt of one token (it
    /// has none: the first token follows nothing).
    fn unscored(&mut self, answer: Answer) {
        match answer {
            Answer::Alone(reply) => {
                let _ = reply.send(Ok(Vec::new()));
            }
            Answer::Then(sub) if sub.request.max_tokens == 0 => only_scores(&sub, Vec::new()),
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
        let all = jobs.chain(self.scores_waiting.iter_mut());
        all.flat_map(|job| job.answers.iter_mut())
            .find_map(|answer| match answer {
                Answer::Then(sub) if sub.id == id => Some(&mut **sub),
                _ => None,
            })
    }

    /// The run of the generation whose prompt is being scored stopped it
    /// (its answer to a progress report): it ends cancelled, and the
    /// scoring ends at its next pass once no one is left waiting for it.
    pub(super) fn score_stopped(&mut self, id: u64) {
        let Some(scoring) = &mut self.scoring else {
            return;
        };
        let answers = &mut scoring.job.answers;
        if let Some(at) = answers.iter().position(|a| a.is(id)) {
            answers.remove(at).cancelled(scoring.job.ids.len());
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
                    let e = EngineError::InvalidRequest(
                        "the attention cache has no room to score this prompt".into(),
                    );
                    fail_all(job.answers, &e);
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
            });
            self.reserved = self.footprint(self.held());
        }
        let Some(mut scoring) = self.scoring.take() else {
            return;
        };
        let len = scoring.job.ids.len();
        let ran = match scoring.job.answers.is_empty() {
            true => Ok(()),
            false => self.score_next(&mut scoring),
        };
        if let Err(e) = ran {
            tracing::error!(error = %e, "scoring a prompt failed");
            fail_all(std::mem::take(&mut scoring.job.answers), &e);
        } else if scoring.job.answers.is_empty() {
            // Everyone who asked stopped (each was told at once).
        } else if scoring.passes.is_empty() && scoring.queued.is_none() {
            let answers = std::mem::take(&mut scoring.job.answers);
            self.scored(answers, scoring.out, &scoring.caches);
        } else {
            self.scoring = Some(scoring);
            return;
        }
        // Ended: its logits are freed, and its caches but for the views
        // the generations took; MLX's buffers go back.
        drop(scoring.caches);
        self.reserved = self.footprint(self.held());
        (self.buffers).after_step(len, &self.gauges.buffer_cache_bytes);
    }

    /// Answers everyone who asked for a prompt scored to its end; each
    /// generation of it joins the front of the queue, from views of
    /// `caches` holding all but its last token.
    fn scored(&mut self, answers: Vec<Answer>, out: Vec<TokenLogprobs>, caches: &[KvCache]) {
        self.scorings += 1;
        let scoring = self.scorings;
        for answer in answers {
            let mut sub = match answer {
                Answer::Alone(reply) => {
                    let _ = reply.send(Ok(out.clone()));
                    continue;
                }
                Answer::Then(sub) => sub,
            };
            if sub.request.max_tokens == 0 {
                only_scores(&sub, out.clone());
                continue;
            }
            let held = sub.request.prompt.len() - 1;
            let views = caches.iter().map(|c| c.fork(held as i32));
            match views.collect::<Result<Vec<_>, _>>() {
                Ok(views) => {
                    let _ = sub.to_run.send(ToRun::PromptLogprobs(out.clone()));
                    sub.cached = Some(Scored {
                        caches: views,
                        held,
                        scoring,
                    });
                    // First in line, behind any scored before it.
                    let at = (self.waiting.iter())
                        .take_while(|s| s.cached.is_some())
                        .count();
                    self.waiting.insert(at, *sub);
                }
                Err(e) => Answer::Then(sub).fail(mlx_err("starting from a scored prompt")(e)),
            }
        }
    }

    /// Reads the pass `scoring` queued last (it ran beside the step since)
    /// and queues its next.
    fn score_next(&mut self, scoring: &mut Scoring) -> Result<(), EngineError> {
        let ids = &scoring.job.ids;
        if let Some(queued) = scoring.queued.take() {
            scoring.out.extend(queued.read()?);
            // The generations waiting on it hear of its progress, as of
            // their own prefill's, and can stop (`Worker::score_stopped`);
            // one whose run went away is dropped.
            let (done, total) = (scoring.out.len() + 1, ids.len());
            scoring.job.answers.retain(|answer| match answer {
                Answer::Then(sub) => sub.to_run.send(ToRun::Prefill { done, total }).is_ok(),
                Answer::Alone(_) => true,
            });
            if scoring.job.answers.is_empty() {
                return Ok(());
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
        (self.gauges.scored_prompt_tokens).fetch_add(len as u64, Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use super::chunks;

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
