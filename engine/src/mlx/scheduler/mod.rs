//! The scheduler owns the model: one thread runs every step, and runs
//! submit requests to it and get their tokens back through their sinks.
//!
//! Each step decodes one token for every sequence that has one to decode,
//! in a single forward pass (the weights are read once for all of them),
//! and feeds waiting prompts in chunks under a per-step token budget, in a
//! second pass queued behind it, so a long prompt delays the others' next
//! token by at most one chunk. Sequences join between steps in arrival
//! order (up to `max_batch`, and only while the KV budget has room) and
//! leave as soon as they finish, are stopped, or their run is gone.
//!
//! Greedy steps are pipelined as a lone sequence's were: a step takes the
//! previous step's tokens as lazy inputs and is queued before those tokens
//! are read and handed to the runs, whose sinks then work while the model
//! computes. A run that answers late is not waited for again until it
//! answers (`laggard`), so a slow client never slows its neighbours.

mod link;
mod pool;
mod sequence;
mod shared;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mlx_rs::Array;

use self::link::{Inbox, Reply, Submission};
use self::pool::PrefixPool;
use self::sequence::{Next, Sequence, Spec};
use super::model::{Fork, Model, Segment};
use super::weights::mlx_err;
use crate::{EngineError, EngineLoad, GenerationRequest, GenerationStats, TokenSink};

/// Cache positions are allocated in blocks of this many (see `cache.rs`).
const CACHE_BLOCK: usize = 256;

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
}

/// Figures shared with [`crate::Engine::load`] readers.
#[derive(Default)]
struct Gauges {
    active: AtomicUsize,
    queued: AtomicUsize,
    kv_bytes: AtomicUsize,
    pool_bytes: AtomicUsize,
    steps: AtomicU64,
    batched_tokens: AtomicU64,
    shared_prompt_tokens: AtomicU64,
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
        model: Model,
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
        };
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
        positions.div_ceil(CACHE_BLOCK) * CACHE_BLOCK * self.kv_per_token
    }

    /// Generates `request` in the batch, serving `sink` on this thread.
    pub fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
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
        };
        to_scheduler
            .send(Inbox::Submit(submission))
            .map_err(|_| EngineError::Backend("the scheduler is gone".into()))?;
        link::serve_sink(id, &from_scheduler, &to_scheduler, sink)
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
            steps: g.steps.load(Ordering::Relaxed),
            batched_tokens: g.batched_tokens.load(Ordering::Relaxed),
            shared_prompt_tokens: g.shared_prompt_tokens.load(Ordering::Relaxed),
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

/// The scheduler thread's state.
struct Worker {
    model: Model,
    options: SchedulerOptions,
    inbox: Receiver<Inbox>,
    waiting: VecDeque<Submission>,
    active: Vec<Sequence>,
    pool: PrefixPool,
    gauges: Arc<Gauges>,
    /// Cache bytes reserved by active sequences.
    reserved: usize,
    kv_per_token: usize,
    context: usize,
    closing: bool,
}

/// Which of a step's two passes a segment goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// One token per sequence: the batched decode.
    Decode,
    /// Prompt chunks and forced tokens.
    Prefill,
}

/// One sequence's part in a pass: its index in `active`, its input, and
/// whether the pass ends its feed (its logits pick the next token).
struct Part {
    seq: usize,
    ids: Array,
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
    fn run(mut self) {
        loop {
            if !self.has_work() {
                if self.closing && self.active.is_empty() {
                    break;
                }
                match self.inbox.recv() {
                    Ok(msg) => self.handle(msg),
                    Err(_) => self.closing = true,
                }
                if self.active.is_empty() {
                    self.gather();
                }
            }
            loop {
                match self.inbox.try_recv() {
                    Ok(msg) => self.handle(msg),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.closing = true;
                        break;
                    }
                }
            }
            self.reap();
            self.admit();
            self.step();
            self.reap();
            self.await_answers();
            self.reap();
            self.publish();
        }
    }

    /// Waits for requests arriving together with the first one into an
    /// idle batch (see `SchedulerOptions::gather`).
    fn gather(&mut self) {
        if self.waiting.is_empty() || self.options.gather.is_zero() {
            return;
        }
        let start = Instant::now();
        let end = start + self.options.gather;
        let quiet = self.options.gather / 4;
        while self.waiting.len() < self.options.max_batch && !self.closing {
            let now = Instant::now();
            let left = end.saturating_duration_since(now).min(quiet);
            if left.is_zero() {
                break;
            }
            match self.inbox.recv_timeout(left) {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => self.closing = true,
            }
        }
        tracing::trace!(
            arrived = self.waiting.len(),
            waited_us = start.elapsed().as_micros() as u64,
            "gathered"
        );
    }

    /// Whether a step could do anything now.
    fn has_work(&self) -> bool {
        let busy = self
            .active
            .iter()
            .any(|s| !matches!(s.next, Next::Awaiting { .. }) && !s.awaits_mask());
        busy || (self.can_admit() && !self.waiting.is_empty())
    }

    fn can_admit(&self) -> bool {
        self.active.len() < self.options.max_batch.max(1)
    }

    fn handle(&mut self, msg: Inbox) {
        match msg {
            Inbox::Submit(sub) => self.waiting.push_back(sub),
            Inbox::Close => self.closing = true,
            Inbox::Reply(id, Reply::Mask(mask)) => {
                if let Some(seq) = self.active.iter_mut().find(|s| s.id == id) {
                    seq.masked(mask);
                } else if let Some(sub) = self.waiting.iter_mut().find(|s| s.id == id) {
                    sub.mask = Some(mask);
                }
            }
            Inbox::Reply(id, reply) => {
                let Some(seq) = self.active.iter_mut().find(|s| s.id == id) else {
                    return; // it already ended
                };
                match reply {
                    Reply::Token(directive, constrained) => seq.directed(directive, constrained),
                    Reply::Mask(_) => {}
                    Reply::Prefill(flow) if flow.is_break() => seq.prefill_stopped(),
                    Reply::Prefill(_) => {}
                }
            }
        }
    }

    fn reservation(&self, sub: &Submission) -> usize {
        let positions = (sub.request.prompt.len() + sub.request.max_tokens).min(self.context);
        positions.div_ceil(CACHE_BLOCK) * CACHE_BLOCK * self.kv_per_token
    }

    /// Moves waiting requests into the batch, in arrival order, while the
    /// batch and the KV budget have room.
    fn admit(&mut self) {
        while self.can_admit() {
            let Some(front) = self.waiting.front() else {
                break;
            };
            let need = self.reservation(front);
            if self.reserved + need > self.options.kv_budget && !self.active.is_empty() {
                break; // waits for room
            }
            let Some(sub) = self.waiting.pop_front() else {
                break;
            };
            let (caches, reused) = match self.pool.take(&sub.request.prompt) {
                Some((caches, reused, _)) => {
                    tracing::debug!(reused, "prefix cache hit");
                    (caches, reused)
                }
                None => (self.model.new_cache(), 0),
            };
            let follows = match reused {
                0 if self.options.share_prefixes => {
                    shared::leader_for(&self.active, &sub.request.prompt)
                }
                _ => None,
            };
            if let Some(f) = follows {
                tracing::debug!(
                    common = f.common,
                    "shares a running sequence's prompt prefix"
                );
            }
            self.reserved += need;
            let mut seq = Sequence::new(sub, caches, reused, self.context, need);
            seq.follows = follows;
            self.active.push(seq);
        }
    }

    /// One step: the decode pass, the prefill pass, then reading the
    /// tokens the previous step picked.
    fn step(&mut self) {
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
        let (decode, prefill) = self.plan();
        let started = Instant::now();
        let decoded = decode.len();
        let fed: usize = prefill.iter().map(|p| p.len).sum();
        // Tokens that a queued step took as input, read after queueing.
        let mut unread: Vec<(usize, Array)> = Vec::new();
        for (i, seq) in self.active.iter().enumerate() {
            if let Next::Unread(token) = &seq.next {
                unread.push((i, token.clone()));
            }
        }
        let mut decode_out = self.run_pass(&decode, Pass::Decode);
        let _prefill_out = self.run_pass(&prefill, Pass::Prefill);
        // Read the previous step's tokens while this one computes.
        for (i, token) in unread {
            let spec = decode_out.as_mut().and_then(|out| {
                let at = out.iter().position(|(s, _)| *s == i)?;
                Some(out.swap_remove(at).1)
            });
            let seq = &mut self.active[i];
            if seq.is_done() {
                continue;
            }
            match read_token(&token) {
                Ok(id) => seq.deliver(id, spec),
                Err(e) => seq.fail(e),
            }
        }
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

    /// Splits what the sequences have to feed into the decode pass (one
    /// token each) and the prefill pass (chunks, as a lone prompt would be
    /// cut, under the step's prompt budget).
    fn plan(&mut self) -> (Vec<Part>, Vec<Part>) {
        self.share_prefixes();
        let (mut decode, mut prefill): (Vec<Part>, Vec<Part>) = (Vec::new(), Vec::new());
        let chunk = self.options.prefill_chunk.max(1);
        let mut budget = self.options.step_prompt_tokens.max(chunk);
        for (i, seq) in self.active.iter().enumerate() {
            match &seq.next {
                Next::Unread(token) if seq.may_continue() => decode.push(Part {
                    seq: i,
                    ids: token.clone(),
                    len: 1,
                    ends_feed: true,
                    prompt: false,
                    fork: None,
                    reach: seq.offset() + 1,
                }),
                Next::Feed(ids) if ids.len() == 1 && !seq.in_prompt() => decode.push(Part {
                    seq: i,
                    ids: ids_array(ids),
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
                    if take > budget && !prefill.is_empty() {
                        continue;
                    }
                    budget = budget.saturating_sub(take);
                    prefill.push(Part {
                        seq: i,
                        ids: ids_array(&ids[..take]),
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

    /// Runs one pass and queues it; returns each sequence's next-token
    /// source (a lazy pick for greedy ones) by index in `active`.
    fn run_pass(&mut self, parts: &[Part], pass: Pass) -> Option<Vec<(usize, Spec)>> {
        if parts.is_empty() {
            return None;
        }
        let logits = parts.iter().any(|p| p.ends_feed);
        let result = self.forward(parts, logits);
        let (logits, picks) = match result {
            Ok(out) => out,
            Err(e) => {
                tracing::error!(error = %e, "a batched step failed");
                for p in parts {
                    self.active[p.seq].fail(EngineError::Backend(e.to_string()));
                }
                return None;
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
            match pass {
                // The decode pass's picks are the *next* step's inputs; the
                // token they follow is read by the caller.
                Pass::Decode if matches!(seq.next, Next::Unread(_)) => {
                    match seq.spec(picks, logits, row as i32) {
                        Some(Ok(spec)) => out.push((p.seq, spec)),
                        Some(Err(e)) => seq.fail(e),
                        None => {}
                    }
                }
                _ => {
                    if seq.out_of_budget() {
                        // `max_tokens: 0`: the prompt only.
                        seq.finish(crate::Finish::Length);
                    } else if let Err(e) = seq.produced(picks, logits, row as i32) {
                        seq.fail(e);
                    }
                }
            }
        }
        Some(out)
    }

    /// The forward pass over `parts`, queued for evaluation; with
    /// `logits`, the last rows' logits and their greedy picks.
    fn forward(
        &mut self,
        parts: &[Part],
        logits: bool,
    ) -> Result<(Option<Array>, Option<Array>), EngineError> {
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
                ids: p.ids.clone(),
                len: p.len as i32,
                caches: c.as_mut_slice(),
                fork,
            });
        }
        let out = self
            .model
            .forward(&mut segments, logits)
            .map_err(mlx_err("decoding"))?;
        let picks = match &out {
            Some(l) => Some(
                mlx_rs::ops::indexing::argmax_axis(l, -1, true)
                    .and_then(|a| a.as_dtype(mlx_rs::Dtype::Int32))
                    .map_err(mlx_err("choosing a token"))?,
            ),
            None => None,
        };
        let mut eval: Vec<&Array> = Vec::new();
        eval.extend(picks.iter());
        eval.extend(out.iter());
        for s in &segments {
            for c in s.caches.iter() {
                eval.extend(c.arrays());
            }
        }
        mlx_rs::transforms::async_eval(eval).map_err(mlx_err("queueing a step"))?;
        Ok((out, picks))
    }

    /// Waits (briefly) for the masks of constrained sequences whose logits
    /// are due: the runs compute them while the step runs, so they are
    /// usually in by the time its logits are.
    fn await_masks(&mut self) {
        let mut due = self.active.iter().filter(|s| s.awaits_mask()).peekable();
        if due.peek().is_none() {
            return;
        }
        for seq in due {
            // Sampled ones read their logits anyway; masked greedy ones
            // only wait for the mask, their logits stay lazy.
            if let Next::Logits(logits) = &seq.next {
                let _ = logits.eval();
            }
        }
        let deadline = Instant::now() + self.options.reply_wait;
        while self.active.iter().any(Sequence::awaits_mask) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => return,
                Err(RecvTimeoutError::Disconnected) => {
                    self.closing = true;
                    return;
                }
            }
        }
    }

    /// Waits (briefly) for the runs' answers on the tokens just handed out.
    fn await_answers(&mut self) {
        let deadline = Instant::now() + self.options.reply_wait;
        loop {
            let pending = self
                .active
                .iter()
                .any(|s| matches!(s.next, Next::Awaiting { .. }) && !s.laggard);
            if !pending {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {
                    for s in &mut self.active {
                        if matches!(s.next, Next::Awaiting { .. }) {
                            s.laggard = true;
                        }
                    }
                    return;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.closing = true;
                    return;
                }
            }
        }
    }

    /// Removes finished sequences, tells their runs (after the gauges
    /// stop counting them), and keeps their caches in the prefix pool
    /// (when there is one).
    fn reap(&mut self) {
        if !self.active.iter().any(Sequence::is_done) {
            return;
        }
        let (done, active): (Vec<Sequence>, Vec<Sequence>) = std::mem::take(&mut self.active)
            .into_iter()
            .partition(Sequence::is_done);
        self.active = active;
        for seq in &done {
            self.reserved = self.reserved.saturating_sub(seq.reserved);
        }
        self.publish();
        for seq in done {
            let failed = seq.failed();
            let (tokens, caches) = seq.into_outcome();
            if self.options.prefix_pool > 0 && !failed {
                let bytes = tokens.len().div_ceil(CACHE_BLOCK) * CACHE_BLOCK * self.kv_per_token;
                self.pool.put(tokens, caches, bytes);
            }
        }
    }

    fn publish(&self) {
        let g = &self.gauges;
        g.active.store(self.active.len(), Ordering::Relaxed);
        g.queued.store(self.waiting.len(), Ordering::Relaxed);
        g.kv_bytes.store(self.reserved, Ordering::Relaxed);
        g.pool_bytes.store(self.pool.bytes(), Ordering::Relaxed);
    }
}

fn ids_array(ids: &[u32]) -> Array {
    let v: Vec<i32> = ids.iter().map(|&t| t as i32).collect();
    Array::from_slice(&v, &[1, v.len() as i32])
}

fn read_token(token: &Array) -> Result<u32, EngineError> {
    token.eval().map_err(mlx_err("evaluating a step"))?;
    let v = token
        .try_as_slice::<i32>()
        .map_err(|e| EngineError::Backend(format!("reading a token: {e}")))?;
    v.first()
        .map(|&t| t as u32)
        .ok_or_else(|| EngineError::Backend("a step produced no token".into()))
}
