//! One sequence in the batch: its cache, how it picks tokens, what it feeds
//! the model next, and the run it answers to. The scheduler moves it
//! through [`Next`]; everything that decides a token's fate (stop ids, the
//! token budget, the context, the run's directive) is here, per sequence.

mod directive;

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mlx_rs::Array;

use super::adjust::{Adjust, AdjustRow, Seen};
use super::draw::Draw;
use super::link::{SeqId, Submission, ToRun};
use super::logprobs::{self, Reported};
use super::picked::{self, Picked};
use super::sampler::Sampler;
use crate::mlx::error::mlx_err;
use crate::mlx::model::KvCache;
use crate::{EngineError, Finish, GenerationRequest, GenerationStats, TokenLogprobs, TokenMask};

/// What the sequence gives the model next.
pub(crate) enum Next {
    /// Known ids: the prompt (fed in chunks), forced tokens after the token
    /// they follow, a token sampled on the host, or one read already
    /// (steps not overlapped).
    Feed(Vec<u32>),
    /// A token picked on the device (greedy or drawn) nobody has read yet.
    /// With the steps overlapped the next step takes it as input before it
    /// is read, so the device never waits for the run; otherwise it is read
    /// once its own pass is done.
    Unread(Picked),
    /// Logits (`[1, vocab]`) to sample from on the CPU.
    Logits(Array),
    /// A constrained token's logits (`[1, vocab]`, lazy), greedy or drawn
    /// on the device: once the run's mask is in, the masked argmax or draw
    /// is queued as the next step's input, still before anyone reads it.
    Masked(Array),
    /// The run has the last token and has not answered yet; `spec` is what
    /// the step that already took that token as input produced (picked
    /// on the device only: greedy or drawn).
    Awaiting { spec: Option<Spec> },
    /// Finished; the scheduler reaps it.
    Done,
}

/// A sequence's first `common` prompt tokens are `leader`'s: part of its
/// state, which `shared.rs` sets when it finds a leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Follow {
    pub leader: SeqId,
    pub common: usize,
}

/// What a queued step produced for a greedy sequence's next token.
pub(crate) enum Spec {
    /// Its pick (a free token).
    Pick(Picked),
    /// Its logits row (a constrained token: the mask is applied later).
    Logits(Array),
}

impl Spec {
    /// The logits row kept with a pick for its log-probabilities.
    pub fn logprob_row(&self) -> Option<&Array> {
        match self {
            Spec::Pick(pick) => pick.logits(),
            Spec::Logits(_) => None,
        }
    }
}

/// How the next token is chosen: on the MLX side (greedy, or drawn on the
/// device, free or under a constraint's mask: lazy, so steps can be
/// queued ahead) or by the sampler on the CPU (`--sample-on host`). Either
/// way from logits already penalized in the step's graph.
enum Picker {
    Greedy,
    Drawn(Draw),
    Sampled,
}

/// A constrained token's mask, which the run computes while the model
/// computes the logits it applies to.
enum Constraint {
    /// The next token is free.
    Free,
    /// The run said the next token is constrained; its mask is on the way.
    Waiting,
    Ready(TokenMask),
}

/// One sequence; see the module docs.
pub(crate) struct Sequence {
    pub id: SeqId,
    request: GenerationRequest,
    to_run: Sender<ToRun>,
    pub caches: Vec<KvCache>,
    picker: Picker,
    sampler: Box<Sampler>,
    /// Its logit bias and penalties on the tokens it has seen, and its
    /// count of them.
    adjust: Option<Adjust>,
    seen: Seen,
    constraint: Constraint,
    /// Prompt, generated and forced tokens: position `i` of the cache
    /// holds `history[i]` once a step has consumed it.
    history: Vec<u32>,
    /// Tokens the sequence may still generate or be forced.
    budget: usize,
    /// Prompt tokens already in the cache.
    prompt_done: usize,
    pub next: Next,
    pub stats: GenerationStats,
    submitted: Instant,
    first_token: Option<Instant>,
    last_token: Instant,
    context: usize,
    /// Missed the last wait for its answer: later steps go on without it
    /// until it answers (a slow client never holds the batch back).
    pub laggard: bool,
    /// Cache positions reserved for this sequence at admission (its
    /// prompt and all its tokens, in the blocks the cache allocates).
    pub reserved: usize,
    /// A running sequence whose cache will give this one its prompt's
    /// first tokens (`shared.rs`); until then it feeds nothing.
    pub follows: Option<Follow>,
    result: Option<Result<(), EngineError>>,
}

impl Sequence {
    /// A sequence for `sub`, its cache already holding `reused` prompt
    /// tokens (a prefix-cache hit) or none, in a context of `context`
    /// positions, `reserved` cache positions set aside for it; its sampled
    /// tokens drawn in the step's graph when `draws_on_device`.
    pub fn new(
        sub: Submission,
        caches: Vec<KvCache>,
        (reused, context, reserved): (usize, usize, usize),
        draws_on_device: bool,
    ) -> Self {
        let request = sub.request;
        let picker = if request.sampling.is_greedy() {
            Picker::Greedy
        } else if let Some(draw) = Draw::of(&request.sampling).filter(|_| draws_on_device) {
            Picker::Drawn(draw)
        } else {
            Picker::Sampled
        };
        let sampler = Box::new(Sampler::new(&request.sampling));
        let adjust = Adjust::of(&request.sampling);
        let constraint = match (sub.constrained, sub.mask) {
            (false, _) | (true, Some(None)) => Constraint::Free,
            (true, Some(Some(mask))) => Constraint::Ready(mask),
            (true, None) => Constraint::Waiting,
        };
        let stats = GenerationStats {
            finish: Finish::Length,
            prompt_tokens: request.prompt.len(),
            cached_prompt_tokens: reused,
            generated_tokens: 0,
            prefill_time: Duration::ZERO,
            decode_time: Duration::ZERO,
        };
        Self {
            id: sub.id,
            history: request.prompt.clone(),
            budget: request.max_tokens,
            next: Next::Feed(request.prompt[reused..].to_vec()),
            prompt_done: reused,
            request,
            to_run: sub.to_run,
            caches,
            sampler,
            adjust,
            seen: Seen::default(),
            picker,
            constraint,
            stats,
            submitted: sub.submitted,
            first_token: None,
            last_token: sub.submitted,
            context,
            laggard: false,
            reserved,
            follows: None,
            result: None,
        }
    }

    /// The tokens its cache held at the start were computed for it (its
    /// prompt scored first), not reused from a cache.
    pub fn computed_its_prompt(&mut self) {
        self.stats.cached_prompt_tokens = 0;
    }

    /// Cache length: the position the next fed token takes.
    pub fn offset(&self) -> usize {
        self.caches.first().map_or(0, |c| c.offset() as usize)
    }

    /// What to keep of row `row` of pass `pass`'s output for the next
    /// token: its pick (greedy or drawn, free), its logits (greedy or
    /// drawn, constrained: masked later), or nothing (sampled on the CPU
    /// from `Next::Logits`).
    pub fn spec(
        &self,
        (picks, pass): (&Array, u64),
        logits: &Array,
        row: i32,
    ) -> Option<Result<Spec, EngineError>> {
        use mlx_rs::ops::indexing::TryIndexOp;
        let err = mlx_err("choosing a token");
        Some(match (&self.picker, &self.constraint) {
            (Picker::Greedy | Picker::Drawn(_), Constraint::Free) => {
                let pick = Picked::row_of(picks, pass, row);
                match self.request.logprobs {
                    None => Ok(Spec::Pick(pick)),
                    Some(_) => logits
                        .try_index(row..row + 1)
                        .map(|row| Spec::Pick(pick.with_logits(row)))
                        .map_err(err),
                }
            }
            (Picker::Greedy | Picker::Drawn(_), _) => logits
                .try_index(row..row + 1)
                .map(Spec::Logits)
                .map_err(err),
            _ => return None,
        })
    }

    /// How the step's picks choose its token at `position` when they draw
    /// it on the device (a free token of a sampled sequence); `None`:
    /// their argmax, or not theirs to choose.
    pub fn draw_at(&self, position: usize) -> Option<(Draw, usize)> {
        match (&self.picker, &self.constraint) {
            (Picker::Drawn(d), Constraint::Free) => Some((*d, position)),
            _ => None,
        }
    }

    /// How the step adjusts its logits to pick its token at `position`
    /// (`None`: not at all).
    pub fn adjust_at(&mut self, position: usize) -> Option<AdjustRow> {
        let adjust = self.adjust.as_ref()?;
        let prompt = self.request.prompt.len();
        Some(self.seen.row(adjust, &self.history, prompt, position))
    }

    /// Whether it has logits to pick from but its mask has not arrived.
    pub fn awaits_mask(&self) -> bool {
        matches!(self.next, Next::Logits(_) | Next::Masked(_))
            && matches!(self.constraint, Constraint::Waiting)
    }

    /// Turns masked logits into the next step's lazy input once the mask
    /// is in (the argmax of the allowed tokens, as the CPU sampler would
    /// pick it, or their draw).
    pub fn resolve_mask(&mut self) -> Result<(), EngineError> {
        let Next::Masked(logits) = &self.next else {
            return Ok(());
        };
        let pick = match &self.constraint {
            Constraint::Waiting => return Ok(()),
            Constraint::Free => self.pick_from(logits, None)?,
            Constraint::Ready(mask) => self.pick_from(logits, Some(mask))?,
        };
        self.next = Next::Unread(pick);
        // Until the run answers on this token, the next is taken to be
        // constrained too, so the step keeps its logits.
        self.constraint = Constraint::Waiting;
        Ok(())
    }

    /// The token `logits` give under `mask`, picked on its own: their
    /// argmax, or a sampled sequence's draw for the token the cache takes
    /// next (the position a free token's draw is keyed by, so a seeded
    /// draw is the same constrained or not, alone or batched).
    fn pick_from(&self, logits: &Array, mask: Option<&TokenMask>) -> Result<Picked, EngineError> {
        let draw = match &self.picker {
            Picker::Drawn(d) => Some((*d, self.offset())),
            Picker::Greedy | Picker::Sampled => None,
        };
        let pick = picked::pick(logits, mask, draw)?;
        Ok(match self.request.logprobs {
            Some(_) => pick.with_logits(logits.clone()),
            None => pick,
        })
    }

    /// How many alternatives to report with each token's log-probability
    /// (`None`: none).
    pub fn logprobs(&self) -> Option<usize> {
        self.request.logprobs
    }

    /// The run's mask for the next token (`None`: free after all).
    pub fn masked(&mut self, mask: Option<TokenMask>) {
        if matches!(self.constraint, Constraint::Waiting) {
            self.constraint = mask.map_or(Constraint::Free, Constraint::Ready);
        }
    }

    /// Prompt tokens not yet in the cache.
    pub fn prompt_left(&self) -> usize {
        self.request.prompt.len().saturating_sub(self.prompt_done)
    }

    pub fn in_prompt(&self) -> bool {
        self.prompt_done < self.request.prompt.len()
    }

    pub fn prompt(&self) -> &[u32] {
        &self.request.prompt
    }

    /// Its first `n` prompt tokens are in the cache already (forked from
    /// the sequence it follows): they are not fed.
    pub fn skip_prompt(&mut self, n: usize) {
        if let Next::Feed(ids) = &mut self.next {
            ids.drain(..n.min(ids.len()));
        }
        self.stats.cached_prompt_tokens += n;
        self.fed_prompt(n);
        self.follows = None;
    }

    pub fn prompt_len(&self) -> usize {
        self.request.prompt.len()
    }

    /// Whether a step may take the unread token as input ahead of the
    /// run's answer: only if another token could follow it.
    pub fn may_continue(&self) -> bool {
        self.budget > 1 && self.offset() < self.context
    }

    /// The run's answer to a prefill report.
    pub fn send_prefill(&mut self, done: usize, total: usize) {
        if self.to_run.send(ToRun::Prefill { done, total }).is_err() {
            self.finish(Finish::Cancelled);
        }
    }

    /// Prompt tokens fed by a step.
    pub fn fed_prompt(&mut self, n: usize) {
        self.prompt_done = (self.prompt_done + n).min(self.request.prompt.len());
    }

    /// Row `row` of pass `pass` produced this sequence's next-token
    /// source: a lazy pick or its logits row.
    pub fn produced(
        &mut self,
        picks: (&Array, u64),
        logits: &Array,
        row: i32,
    ) -> Result<(), EngineError> {
        use mlx_rs::ops::indexing::TryIndexOp;
        let err = mlx_err("choosing a token");
        self.next = match self.spec(picks, logits, row) {
            Some(Ok(Spec::Pick(pick))) => Next::Unread(pick),
            Some(Ok(Spec::Logits(row))) => Next::Masked(row),
            Some(Err(e)) => return Err(e),
            None => Next::Logits(logits.try_index(row..row + 1).map_err(err)?),
        };
        Ok(())
    }

    /// Samples from logits (reading them waits for their step), under
    /// the mask when the token is constrained; with the token's
    /// log-probabilities when the request asked.
    pub fn sample(&mut self, logits: &Array) -> Result<(u32, Option<TokenLogprobs>), EngineError> {
        let mask = match &self.constraint {
            Constraint::Free => None,
            Constraint::Ready(mask) => Some(mask),
            Constraint::Waiting => {
                return Err(EngineError::Backend("sampling before the mask".into()));
            }
        };
        logits.eval().map_err(mlx_err("evaluating a step"))?;
        let v = logits
            .try_as_slice::<f32>()
            .map_err(|e| EngineError::Backend(format!("reading logits: {e}")))?;
        let token = self.sampler.sample(v, mask).ok_or_else(|| {
            EngineError::InvalidRequest("the output constraint allows no token".into())
        })?;
        let logprobs = (self.request.logprobs)
            .map(|k| logprobs::of_scores(v, token, k))
            .transpose()?;
        Ok((token, logprobs))
    }

    /// Hands a generated token to the run, with how likely it was when
    /// the request asked; `spec` is the step already queued on it, if any.
    pub fn deliver(&mut self, token: u32, logprobs: Option<Reported>, spec: Option<Spec>) {
        let now = Instant::now();
        if self.first_token.is_none() {
            self.first_token = Some(now);
        }
        self.last_token = now;
        self.history.push(token);
        self.budget = self.budget.saturating_sub(1);
        if self.request.stop_token_ids.contains(&token) {
            self.finish(Finish::StopToken(token));
            return;
        }
        self.stats.generated_tokens += 1;
        if self.to_run.send(ToRun::Token(token, logprobs)).is_err() {
            self.finish(Finish::Cancelled);
            return;
        }
        self.next = Next::Awaiting { spec };
    }

    /// The run stopped it during prefill.
    pub fn prefill_stopped(&mut self) {
        self.finish(Finish::Cancelled);
    }

    /// Ends the sequence; the scheduler reaps it and tells the run.
    pub fn finish(&mut self, finish: Finish) {
        if matches!(self.next, Next::Done) {
            return;
        }
        self.stats.finish = finish;
        self.next = Next::Done;
        self.result.get_or_insert(Ok(()));
    }

    /// Ends the sequence with an error.
    pub fn fail(&mut self, err: EngineError) {
        if !matches!(self.next, Next::Done) {
            self.next = Next::Done;
            self.result = Some(Err(err));
        }
    }

    /// Whether no token may be generated at all (`max_tokens: 0`).
    pub fn out_of_budget(&self) -> bool {
        self.budget == 0
    }

    /// Whether it ended with an error (its cache is not worth keeping).
    pub fn failed(&self) -> bool {
        matches!(self.result, Some(Err(_)))
    }

    /// Whether the run has had a token.
    pub fn has_delivered(&self) -> bool {
        self.first_token.is_some()
    }

    pub fn is_done(&self) -> bool {
        matches!(self.next, Next::Done)
    }

    /// Tells the run how it ended and returns what the cache holds (the
    /// tokens at its positions, and the cache) for the prefix pool.
    pub fn into_outcome(mut self) -> (Vec<u32>, Vec<KvCache>) {
        match self.first_token {
            Some(first) => {
                self.stats.prefill_time = first - self.submitted;
                self.stats.decode_time = self.last_token - first;
            }
            None => self.stats.prefill_time = self.submitted.elapsed(),
        }
        let result = match self.result.take() {
            Some(Err(e)) => Err(e),
            _ => Ok(self.stats),
        };
        let _ = self.to_run.send(ToRun::Done(result));
        let held = self.offset().min(self.history.len());
        self.history.truncate(held);
        (self.history, self.caches)
    }
}
