//! The scheduler owns the model: one thread runs every step, and runs
//! submit requests to it and get their tokens back through their sinks.
//!
//! Each step decodes one token for every sequence that has one to decode
//! and feeds waiting prompts in chunks under a per-step token budget, all
//! in a single forward pass (the weights are read once for all of them),
//! so a long prompt delays the others' next token by at most one chunk. Sequences join between steps in arrival
//! order (up to `max_batch`, and only while the KV budget has room) and
//! leave as soon as they finish, are stopped, or their run is gone.
//!
//! Greedy steps, and sampled ones drawn on the device (`draw.rs`), are
//! pipelined on a GPU, logit bias and penalties on seen tokens included
//! (`adjust.rs`): a step takes the previous step's tokens as lazy inputs
//! (`picked.rs`) and is queued before those tokens are read and handed to
//! the runs, whose sinks then work while the model computes. On a CPU a
//! step waits for its own pass and hands out its tokens at once
//! (`SchedulerOptions::overlap_steps`). A run that answers
//! late is not waited for again until it answers (`laggard`), so a slow
//! client never slows its neighbours.

mod adjust;
mod buffers;
mod draw;
mod link;
mod logprobs;
mod pace;
mod pass;
mod picked;
mod pool;
mod sampler;
mod score;
mod sequence;
mod settle;
mod shared;
mod step;
mod worker;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use self::link::{Inbox, Submission};
use self::pool::PrefixPool;
use self::sequence::Sequence;
use crate::mlx::model::Network;
use crate::{EngineError, EngineLoad, GenerationRequest, GenerationStats, TokenSink};

/// Cache positions are allocated in blocks of this many (see `model/cache.rs`).
const CACHE_BLOCK: usize = 256;

/// `positions` rounded up to the blocks the cache allocates.
fn in_blocks(positions: usize) -> usize {
    positions.div_ceil(CACHE_BLOCK) * CACHE_BLOCK
}

/// How the scheduler shares the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerOptions {
    /// Sequences decoded together at most; more wait in line.
    pub max_batch: usize,
    /// Prompt tokens per prefill chunk (as `LoadOptions::prefill_chunk`).
    pub prefill_chunk: usize,
    /// Prompt tokens fed per step across all prefilling sequences (at least
    /// one chunk is always fed): bounds how long a long prompt holds the
    /// others' next token.
    pub step_prompt_tokens: usize,
    /// Prompt tokens per step set aside, on top of `step_prompt_tokens`,
    /// for prompts whose whole rest is this short: a chat turn arriving
    /// while a long document is prefilled starts at the next step instead
    /// of after the document's last chunk.
    pub short_prompt_tokens: usize,
    /// Bytes of attention cache the running sequences may reserve
    /// together (each reserves room for its prompt and `max_tokens`).
    pub kv_budget: usize,
    /// Bytes the prefix-cache pool may keep (0: no pool).
    pub prefix_pool: usize,
    /// How long a step waits for the runs' answers on its tokens.
    pub reply_wait: Duration,
    /// When nothing runs, how long the first request waits for others
    /// arriving with it (each arrival within `gather / 4` of the last
    /// extends the wait, up to `gather`), so a burst is prefilled in one
    /// pass instead of one prompt after another.
    pub gather: Duration,
    /// Sequences admitted while another's prompt starts like theirs take
    /// its cache for the common part (`shared.rs`).
    pub share_prefixes: bool,
    /// Sampled tokens are drawn in the step's graph (`draw.rs`), not by
    /// the host sampler (`LoadOptions::draws_on_device`).
    pub draws_on_device: bool,
    /// The host reads a step's tokens and builds the next step while the
    /// step runs (a GPU); otherwise it waits for the step and hands its
    /// tokens out at once (the CPU, whose cores that work would take from
    /// the step).
    pub overlap_steps: bool,
}

/// Figures shared with [`crate::Engine::load`] readers.
#[derive(Default)]
struct Gauges {
    active: AtomicUsize,
    queued: AtomicUsize,
    kv_bytes: AtomicUsize,
    pool_bytes: AtomicUsize,
    buffer_cache_bytes: AtomicUsize,
    steps: AtomicU64,
    batched_tokens: AtomicU64,
    shared_prompt_tokens: AtomicU64,
    scored_prompt_tokens: AtomicU64,
    /// Nanoseconds spent waiting for steps to finish (`EngineLoad::device_wait_us`).
    device_wait_ns: AtomicU64,
    /// Nanoseconds spent handing steps to MLX (`EngineLoad::queue_us`).
    queue_ns: AtomicU64,
    /// `pace::Backlog`'s figures, as of the last step.
    prompt_backlog: AtomicU64,
    short_backlog: AtomicU64,
    step_us: AtomicU64,
    prompt_per_sec: AtomicU64,
}

/// The handle runs use; dropping it finishes what runs and stops the
/// thread.
pub(crate) struct Scheduler {
    inbox: Mutex<Sender<Inbox>>,
    next_id: AtomicU64,
    gauges: Arc<Gauges>,
    options: SchedulerOptions,
    kv_per_token: usize,
    context: usize,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Starts the thread that owns `model`.
    pub fn start(
        model: Network,
        context: usize,
        options: SchedulerOptions,
    ) -> Result<Self, EngineError> {
        let (tx, rx) = mpsc::channel();
        let gauges = Arc::new(Gauges::default());
        let kv_per_token = model.cache_bytes_per_token();
        let worker = Worker {
            pool: PrefixPool::new(options.prefix_pool),
            model,
            options: options.clone(),
            inbox: rx,
            waiting: VecDeque::new(),
            active: Vec::new(),
            gauges: Arc::clone(&gauges),
            reserved: 0,
            kv_per_token,
            context,
            closing: false,
            pace: pace::Pace::default(),
            scoring: None,
            scores_waiting: VecDeque::new(),
            scorings: 0,
            settle: settle::Settle::default(),
            passes: 0,
            buffers: buffers::BufferCache::default(),
        };
        // MLX's statics exist now (the weights were evaluated).
        settle::wait_for_schedulers_at_exit();
        let thread = std::thread::Builder::new()
            .name("thinkwire-scheduler".into())
            .spawn(move || worker.run())
            .map_err(|e| EngineError::Backend(format!("starting the scheduler thread: {e}")))?;
        Ok(Self {
            inbox: Mutex::new(tx),
            next_id: AtomicU64::new(1),
            gauges,
            options,
            kv_per_token,
            context,
            thread: Some(thread),
        })
    }

    /// Cache bytes a request reserves: room for its prompt and all its
    /// tokens, in the blocks the cache allocates.
    fn reservation(&self, request: &GenerationRequest) -> usize {
        let positions = (request.prompt.len() + request.max_tokens).min(self.context);
        in_blocks(positions) * self.kv_per_token
    }

    /// Generates `request` in the batch, serving `sink` on this thread.
    pub fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        self.submit(request, sink, None)
    }

    /// [`Self::generate`]; with `score`, the prompt is scored first with
    /// that many alternatives a position (`score.rs`), handed to the sink,
    /// and the generation continues from the scoring's caches.
    pub fn submit(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
        score: Option<usize>,
    ) -> Result<GenerationStats, EngineError> {
        let need = self.reservation(request);
        if need > self.options.kv_budget {
            return Err(EngineError::InvalidRequest(format!(
                "the request needs {} MiB of attention cache, more than the server's KV budget of {} MiB",
                need.div_ceil(1 << 20),
                self.options.kv_budget >> 20
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (to_run, from_scheduler) = mpsc::channel();
        let to_scheduler = self
            .inbox
            .lock()
            .map_err(|_| EngineError::Backend("the scheduler is gone".into()))?
            .clone();
        let submission = Submission {
            id,
            request: request.clone(),
            to_run,
            submitted: Instant::now(),
            constrained: sink.constrains_next(),
            mask: None,
            score,
            cached: None,
        };
        to_scheduler
            .send(Inbox::Submit(Box::new(submission)))
            .map_err(|_| EngineError::Backend("the scheduler is gone".into()))?;
        link::serve_sink(id, &from_scheduler, &to_scheduler, sink)
    }

    /// [`crate::Engine::score_prompt`]: a pass after each step on the
    /// scheduler's thread (`score.rs`), the caller waiting.
    pub fn score(
        &self,
        ids: Vec<u32>,
        top: usize,
    ) -> Result<Vec<crate::TokenLogprobs>, EngineError> {
        let (reply, answer) = mpsc::channel();
        self.inbox
            .lock()
            .map_err(|_| EngineError::Backend("the scheduler is gone".into()))?
            .send(Inbox::Score(score::ScoreJob::new(
                ids,
                top,
                score::Answer::Alone(reply),
            )))
            .map_err(|_| EngineError::Backend("the scheduler is gone".into()))?;
        answer
            .recv()
            .map_err(|_| EngineError::Backend("the scheduler is gone".into()))?
    }

    /// How long a prompt of `tokens` submitted now would wait for the
    /// prompts ahead of it, those queued and those of `ahead`, about to be
    /// (`pace::expected_wait`).
    pub fn expected_wait(&self, tokens: usize, ahead: &[usize]) -> Option<Duration> {
        let g = &self.gauges;
        let lane = self.options.short_prompt_tokens;
        let sum = |short: bool| -> u64 {
            let counted = ahead.iter().filter(|&&t| !short || (lane > 0 && t <= lane));
            counted.map(|&t| t as u64).fold(0, u64::saturating_add)
        };
        let backlog = pace::Backlog {
            prompt_tokens: (g.prompt_backlog.load(Ordering::Relaxed)).saturating_add(sum(false)),
            short_prompt_tokens: (g.short_backlog.load(Ordering::Relaxed))
                .saturating_add(sum(true)),
            step_us: g.step_us.load(Ordering::Relaxed),
            prompt_per_sec: g.prompt_per_sec.load(Ordering::Relaxed),
        };
        pace::expected_wait(backlog, tokens, lane)
    }

    /// Forgets the pace measured so far: its figures are unknown at once,
    /// for [`Self::expected_wait`] on any thread, and the scheduler starts
    /// its means again at its next steps.
    pub fn forget_pace(&self) {
        let g = &self.gauges;
        g.step_us.store(0, Ordering::Relaxed);
        g.prompt_per_sec.store(0, Ordering::Relaxed);
        if let Ok(tx) = self.inbox.lock() {
            let _ = tx.send(Inbox::ForgetPace);
        }
    }

    /// What the scheduler holds now.
    pub fn load(&self) -> EngineLoad {
        let g = &self.gauges;
        EngineLoad {
            active_sequences: g.active.load(Ordering::Relaxed),
            queued_sequences: g.queued.load(Ordering::Relaxed),
            kv_reserved_bytes: g.kv_bytes.load(Ordering::Relaxed),
            kv_budget_bytes: self.options.kv_budget,
            prefix_cache_bytes: g.pool_bytes.load(Ordering::Relaxed),
            buffer_cache_bytes: g.buffer_cache_bytes.load(Ordering::Relaxed),
            steps: g.steps.load(Ordering::Relaxed),
            batched_tokens: g.batched_tokens.load(Ordering::Relaxed),
            shared_prompt_tokens: g.shared_prompt_tokens.load(Ordering::Relaxed),
            scored_prompt_tokens: g.scored_prompt_tokens.load(Ordering::Relaxed),
            device_wait_us: g.device_wait_ns.load(Ordering::Relaxed) / 1_000,
            queue_us: g.queue_ns.load(Ordering::Relaxed) / 1_000,
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        if let Ok(tx) = self.inbox.lock() {
            let _ = tx.send(Inbox::Close);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The scheduler thread's state; its loop is `worker.rs`, its step
/// `step.rs`.
struct Worker {
    model: Network,
    options: SchedulerOptions,
    inbox: Receiver<Inbox>,
    waiting: VecDeque<Submission>,
    active: Vec<Sequence>,
    pool: PrefixPool,
    gauges: Arc<Gauges>,
    /// Cache bytes the active sequences' reservations take
    /// (`Worker::footprint`).
    reserved: usize,
    kv_per_token: usize,
    context: usize,
    closing: bool,
    pace: pace::Pace,
    /// The prompt being scored a pass at a time, and those asked after it
    /// (`score.rs`).
    scoring: Option<score::Scoring>,
    scores_waiting: VecDeque<score::ScoreJob>,
    /// Scorings ended with generations to start: names the views each
    /// leaves them (`link::Scored`).
    scorings: u64,
    /// Its claim on MLX, which an exit waits for (`settle.rs`); declared
    /// after the model and caches, so it is let go after they are dropped.
    settle: settle::Settle,
    /// Passes queued so far: names each pass's picks (`picked.rs`).
    passes: u64,
    /// When MLX's cached buffers are handed back (`buffers.rs`).
    buffers: buffers::BufferCache,
}

#[cfg(test)]
mod tests;
