//! The scheduler thread's loop: it takes submissions and replies, admits
//! waiting requests while the batch and the KV budget have room, runs a
//! step (`step.rs`), waits briefly for the runs' answers, and reaps
//! finished sequences.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::Instant;

use super::link::{Inbox, Reply, SeqId, Submission};
use super::score::{Answer, ScoreJob};
use super::sequence::{Next, Sequence};
use super::{Worker, in_blocks, shared};
use crate::mlx::model::KvCache;

/// How often a scheduler waiting on its runs looks whether the process is
/// exiting.
const EXIT_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

impl Worker {
    pub(super) fn run(mut self) {
        loop {
            if !self.settle.claim() {
                // The process is exiting: no further step; its exit
                // handler waits for this one's queued work.
                self.stop_for_exit();
            }
            if !self.has_work() {
                if self.active.is_empty() {
                    // Idle: what it queued is done, its buffers go back,
                    // and an exit need not wait for it while it blocks.
                    self.settle.wait();
                    self.buffers.idle(&self.gauges.buffer_cache_bytes);
                    if self.closing {
                        break;
                    }
                    self.settle.release();
                }
                self.pace.idle();
                let got = self.wait_for_message();
                if !self.settle.claim() {
                    self.stop_for_exit();
                }
                match got {
                    Ok(msg) => self.handle(msg),
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => self.closing = true,
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
            self.score_pass();
            self.reap();
            self.await_answers();
            self.reap();
            self.publish();
        }
    }

    /// Lets the claim go and never touches MLX again: the process exits.
    fn stop_for_exit(&mut self) -> ! {
        self.settle.release();
        loop {
            std::thread::park();
        }
    }

    /// Blocks for the next message. Sequences still running (their runs
    /// owe an answer or a mask) may keep a step queued (overlapped, so
    /// that the next one is built while it runs) and the claim with it;
    /// the wait then wakes now and then to see whether the process is
    /// exiting (`settle.rs`).
    fn wait_for_message(&mut self) -> Result<Inbox, RecvTimeoutError> {
        match self.active.is_empty() {
            true => self
                .inbox
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
            false => self.inbox.recv_timeout(EXIT_CHECK),
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
        let scoring = self.scoring.is_some() || self.score_can_start();
        busy || scoring || (self.can_admit() && !self.waiting.is_empty())
    }

    fn can_admit(&self) -> bool {
        self.active.len() < self.options.max_batch.max(1)
    }

    fn handle(&mut self, msg: Inbox) {
        match msg {
            Inbox::Submit(sub) => match sub.score {
                Some(top) => {
                    let ids = sub.request.prompt.clone();
                    self.take_score(ScoreJob::new(ids, top, Answer::Then(sub)));
                }
                None => self.waiting.push_back(*sub),
            },
            Inbox::Close => self.closing = true,
            Inbox::Score(job) => self.take_score(job),
            Inbox::ForgetPace => {
                self.pace = super::pace::Pace::default();
                self.publish_pace();
            }
            Inbox::Reply(id, Reply::Mask(mask)) => {
                if let Some(seq) = self.active.iter_mut().find(|s| s.id == id) {
                    seq.masked(mask);
                } else if let Some(sub) = self.waiting.iter_mut().find(|s| s.id == id) {
                    sub.mask = Some(mask);
                } else if let Some(sub) = self.scored_submission(id) {
                    sub.mask = Some(mask);
                }
            }
            Inbox::Reply(id, reply) => {
                let Some(seq) = self.active.iter_mut().find(|s| s.id == id) else {
                    // Stopped while its prompt is scored, or it already ended.
                    if matches!(reply, Reply::Prefill(flow) if flow.is_break()) {
                        self.score_stopped(id);
                    }
                    return;
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

    /// Cache positions a request reserves: its prompt and all its tokens,
    /// in the blocks the cache allocates.
    fn reservation(&self, sub: &Submission) -> usize {
        in_blocks((sub.request.prompt.len() + sub.request.max_tokens).min(self.context))
    }

    /// Gives up the batch slots kept for newcomers when `over` says the
    /// cache has no room otherwise (before a sequence or a scoring waits
    /// for room).
    pub(super) fn give_up_spare_slots_if(&mut self, over: impl Fn(&Self) -> bool) {
        if over(self)
            && self.model.batch_slots_held() > self.active.len()
            && let Err(e) = self.model.drop_spare_batch_slots()
        {
            tracing::warn!(error = %e, "giving up spare batch slots failed");
        }
    }

    /// Cache positions held now: each sequence's reservation, the caches
    /// of a prompt being scored, and those a scored prompt's generations
    /// hold while they wait to be admitted (once for all of one scoring:
    /// their views share its buffers).
    pub(super) fn held(&self) -> impl Iterator<Item = usize> + '_ {
        self.held_but(None)
    }

    /// [`Self::held`], leaving out the waiting submission `but` (about to
    /// be admitted with a reservation of its own).
    fn held_but(&self, but: Option<SeqId>) -> impl Iterator<Item = usize> + '_ {
        let scoring = self.scoring.as_ref().map(|s| s.positions);
        let mut scored: Vec<(u64, usize)> = (self.waiting.iter())
            .filter(|s| Some(s.id) != but)
            .filter_map(|s| s.cached.as_ref())
            .map(|c| (c.scoring, in_blocks(c.held + 1)))
            .collect();
        // One scoring's views hold one prompt: the same positions each.
        scored.sort_unstable();
        scored.dedup_by_key(|&mut (scoring, _)| scoring);
        (self.active.iter().map(|s| s.reserved))
            .chain(scoring)
            .chain(scored.into_iter().map(|(_, positions)| positions))
    }

    /// Cache bytes sequences holding `reserved` positions each take at
    /// most: a sequence's own caches its positions, the layers' batch
    /// buffers (`Network::batch_cache_bytes_per_token`) a slot for each
    /// at the longest one's length, and for the slots they keep past the
    /// batch's (where the next sequences join). One long sequence among
    /// many short ones then counts for what it makes the buffers hold.
    pub(super) fn footprint(&self, reserved: impl Iterator<Item = usize>) -> usize {
        let (mut sum, mut longest, mut n) = (0usize, 0usize, 0usize);
        for positions in reserved {
            sum += positions;
            longest = longest.max(positions);
            n += 1;
        }
        // Reservations round up to blocks; no position passes the context.
        let batch = self
            .model
            .batch_cache_bytes_per_token(longest.min(self.context));
        let own = self.kv_per_token.saturating_sub(batch);
        let slots = n.max(self.model.batch_slots_held());
        own * sum + batch * slots * longest
    }

    /// Moves waiting requests into the batch, in arrival order, while the
    /// batch and the KV budget have room.
    fn admit(&mut self) {
        while self.can_admit() {
            let Some(front) = self.waiting.front() else {
                break;
            };
            let (need, id) = (self.reservation(front), front.id);
            // Its own scored caches are in its reservation.
            let after = |w: &Self| w.footprint(w.held_but(Some(id)).chain([need]));
            let budget = self.options.kv_budget;
            // Slots the batch buffers keep for newcomers go first.
            self.give_up_spare_slots_if(|w| after(w) > budget);
            let after = after(self);
            if after > budget && !self.active.is_empty() {
                break; // waits for room
            }
            let Some(mut sub) = self.waiting.pop_front() else {
                break;
            };
            let scored = sub.cached.take().map(|c| (c.caches, c.held));
            let computed_here = scored.is_some();
            let (caches, reused) = match scored.or_else(|| self.pool.prefix(&sub.request.prompt)) {
                Some((caches, reused)) => {
                    tracing::debug!(reused, computed_here, "starts from a cache");
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
            self.reserved = after;
            let mut seq = Sequence::new(
                sub,
                caches,
                (reused, self.context, need),
                self.options.draws_on_device,
            );
            seq.follows = follows;
            if computed_here {
                // Its scoring computed them for it: none came from a cache.
                seq.computed_its_prompt();
            }
            self.active.push(seq);
        }
    }

    /// Waits (briefly) for the masks of constrained sequences whose logits
    /// are due: the runs compute them while the step runs, so they are
    /// usually in by the time its logits are.
    pub(super) fn await_masks(&mut self) {
        let mut due = self.active.iter().filter(|s| s.awaits_mask()).peekable();
        if due.peek().is_none() {
            return;
        }
        for seq in due {
            // Those the host samples (`--sample-on host`) read their
            // logits anyway; masked ones picked on the device (greedy or
            // drawn) only wait for the mask, their logits stay lazy.
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
    pub(super) fn await_answers(&mut self) {
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
        self.reserved = self.footprint(self.held());
        self.publish();
        for seq in done {
            let failed = seq.failed();
            let (tokens, mut caches) = seq.into_outcome();
            // A kept cache leaves its batch slot: the slot is for the next
            // sequence, the pool holds rows of its own.
            if self.options.prefix_pool > 0 && !failed && KvCache::detach_all(&mut caches).is_ok() {
                let bytes = in_blocks(tokens.len()) * self.kv_per_token;
                self.pool.put(tokens, caches, bytes);
            }
        }
        // `publish` above ran before these entries were kept.
        let pool = self.pool.bytes();
        self.gauges.pool_bytes.store(pool, Ordering::Relaxed);
    }

    fn publish(&self) {
        let g = &self.gauges;
        g.active.store(self.active.len(), Ordering::Relaxed);
        g.queued.store(self.waiting.len(), Ordering::Relaxed);
        g.kv_bytes.store(self.reserved, Ordering::Relaxed);
        g.pool_bytes.store(self.pool.bytes(), Ordering::Relaxed);
        let lane = self.options.short_prompt_tokens;
        let (mut all, mut short) = (0, 0);
        let left =
            |sub: &Submission| sub.request.prompt.len() - sub.cached.as_ref().map_or(0, |c| c.held);
        let rests =
            (self.waiting.iter().map(left)).chain(self.active.iter().map(Sequence::prompt_left));
        for rest in rests {
            all += rest as u64;
            if rest <= lane {
                short += rest as u64;
            }
        }
        // A prompt being scored is computed in passes of its own, between
        // the steps: it delays every prompt as a long one would.
        all += self.score_backlog() as u64;
        g.prompt_backlog.store(all, Ordering::Relaxed);
        g.short_backlog.store(short, Ordering::Relaxed);
    }

    /// The pace, stored where a step measures it (`Pace::step`, the only
    /// change to it) rather than in `publish`: a token that step computes
    /// then reaches its run after the pace that counted the step.
    pub(super) fn publish_pace(&self) {
        let g = &self.gauges;
        g.step_us.store(self.pace.step_us(), Ordering::Relaxed);
        g.prompt_per_sec
            .store(self.pace.prompt_tokens_per_sec(), Ordering::Relaxed);
    }
}
