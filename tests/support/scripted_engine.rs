//! A test double for [`Engine`]: replays scripted token sequences instead of
//! running a model, and records every prompt it was given.
//!
//! It honours the engine contract exactly as the MLX engine does — stop
//! tokens, `max_tokens`, `Directive::Stop` and `Directive::Force`, context
//! checks, and asking a constrained sink for its mask before each token —
//! so the agent loop and transports are tested against the same behaviour
//! they get in production. A replay cannot pick another token, so a
//! scripted token a mask refuses is recorded instead. Tests only: it never
//! ships.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use thinkwire_engine::{
    Directive, Engine, EngineError, Finish, GenerationRequest, GenerationStats, ModelInfo,
    SamplingParams, TokenLogprobs, TokenSink, check_request,
};

/// What the engine saw and did, shared with the test that owns it.
#[derive(Debug, Default)]
pub struct Observed {
    /// Every prompt, in order.
    pub prompts: Mutex<Vec<Vec<u32>>>,
    /// Every generation's sampling parameters, in order.
    pub sampling: Mutex<Vec<SamplingParams>>,
    /// Decode steps taken over all generations.
    pub steps: AtomicUsize,
    /// Generations that ended because the sink said stop.
    pub cancelled: AtomicUsize,
    /// Generations that have ended, however they ended.
    pub finished: AtomicUsize,
    /// Every `Directive::Force` the engine obeyed, in order.
    pub forced: Mutex<Vec<Forced>>,
    /// Masks the sinks gave (constrained tokens).
    pub masks: AtomicUsize,
    /// Scripted tokens a mask did not allow: (generation, token index).
    pub refused: Mutex<Vec<(usize, usize)>>,
}

impl Observed {
    /// The generations in which a mask refused a scripted token, in order
    /// (a generation once per refused token).
    pub fn refused_generations(&self) -> Vec<usize> {
        let refused = self.refused.lock().expect("refused lock");
        refused.iter().map(|&(generation, _)| generation).collect()
    }
}

/// One forced injection (a reasoning budget closing reasoning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forced {
    /// The generation it happened in (0-based, the index of its prompt).
    pub generation: usize,
    /// Tokens of that generation handed to the sink before it, the one
    /// whose directive forced included.
    pub after: usize,
    /// The forced tokens.
    pub tokens: Vec<u32>,
}

/// Replays one scripted token sequence per generation, in order; once the
/// scripts run out it repeats the last one.
pub struct ScriptedEngine {
    info: ModelInfo,
    scripts: Mutex<VecDeque<Vec<u32>>>,
    last: Mutex<Vec<u32>>,
    after_force: Mutex<VecDeque<Vec<u32>>>,
    step_delay: Duration,
    /// Panic once, after this many tokens of a generation, with this
    /// message (`with_panic`).
    panic: Mutex<Option<(usize, String)>>,
    /// What `expected_wait` reports, for every prompt length, and what
    /// it adds for each token of the prompts ahead of it in its request.
    expected_wait: Option<(Duration, Duration)>,
    /// What the engine saw.
    pub observed: Arc<Observed>,
}

impl ScriptedEngine {
    /// An engine whose generations produce `scripts` in turn.
    pub fn new(info: ModelInfo, scripts: Vec<Vec<u32>>) -> Self {
        Self {
            info,
            scripts: Mutex::new(scripts.into()),
            last: Mutex::new(Vec::new()),
            after_force: Mutex::new(VecDeque::new()),
            step_delay: Duration::ZERO,
            panic: Mutex::new(None),
            expected_wait: None,
            observed: Arc::default(),
        }
    }

    /// Sleeps this long per decode step, like a slow model, so tests can
    /// disconnect or cancel in the middle of a run.
    #[must_use]
    pub fn with_step_delay(mut self, delay: Duration) -> Self {
        self.step_delay = delay;
        self
    }

    /// What the model says after each forced injection, in turn: the rest
    /// of the script being replayed is replaced by the next of these, as a
    /// real model continues from what it was fed rather than from what it
    /// would have said. Once they run out (or without any), the script
    /// simply goes on after the forced tokens.
    #[must_use]
    pub fn with_after_force(self, continuations: Vec<Vec<u32>>) -> Self {
        *self.after_force.lock().expect("after_force lock") = continuations.into();
        self
    }

    /// Panics once, `after` tokens into the next generation, with
    /// `message` — a bug in the engine, as the server would meet it (the
    /// scripted engine runs on the run's own thread).
    #[must_use]
    pub fn with_panic(self, after: usize, message: String) -> Self {
        *self.panic.lock().expect("panic lock") = Some((after, message));
        self
    }

    /// Reports `wait` as the time a new prompt would wait for the work
    /// queued ahead of it, as a busy scheduler does.
    #[must_use]
    pub fn with_expected_wait(self, wait: Duration) -> Self {
        self.with_expected_wait_behind(wait, Duration::ZERO)
    }

    /// [`Self::with_expected_wait`], adding `per_token` for each prompt
    /// token its request submits ahead of a prompt.
    #[must_use]
    pub fn with_expected_wait_behind(mut self, wait: Duration, per_token: Duration) -> Self {
        self.expected_wait = Some((wait, per_token));
        self
    }

    fn next_script(&self) -> Vec<u32> {
        let mut scripts = self.scripts.lock().expect("scripts lock");
        let mut last = self.last.lock().expect("last lock");
        if let Some(next) = scripts.pop_front() {
            *last = next;
        }
        last.clone()
    }
}

impl Engine for ScriptedEngine {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn expected_wait(&self, _prompt_tokens: usize, ahead: &[usize]) -> Option<Duration> {
        let (wait, per_token) = self.expected_wait?;
        Some(wait + per_token * ahead.iter().sum::<usize>() as u32)
    }

    fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        check_request(&self.info, request)?;
        let generation = {
            let mut prompts = self.observed.prompts.lock().expect("prompts lock");
            prompts.push(request.prompt.clone());
            let mut sampling = self.observed.sampling.lock().expect("sampling lock");
            sampling.push(request.sampling.clone());
            prompts.len() - 1
        };
        let started = Instant::now();
        let script = self.next_script();
        let mut produced = 0usize;
        let mut handed = 0usize;
        let mut finish = Finish::Length;
        let mut prefill_time = Duration::ZERO;
        // Forced tokens replace the script from where they are injected: a
        // real model continues from what it was fed. The continuation is the
        // next `with_after_force` script if there is one, else the rest of
        // this script (written as the continuation after the forced tokens).
        let mut tokens = script.into_iter();
        let mut mask = sink.constrains_next().then(|| sink.next_mask()).flatten();
        while produced < request.max_tokens {
            let Some(id) = tokens.next() else {
                break;
            };
            if let Some(m) = mask.take() {
                self.observed.masks.fetch_add(1, Ordering::SeqCst);
                if !m.allows(id) {
                    let mut refused = self.observed.refused.lock().expect("refused lock");
                    refused.push((generation, produced));
                }
            }
            if !self.step_delay.is_zero() {
                std::thread::sleep(self.step_delay);
            }
            self.observed.steps.fetch_add(1, Ordering::SeqCst);
            if produced == 0 {
                prefill_time = started.elapsed();
            }
            produced += 1;
            if request.stop_token_ids.contains(&id) {
                finish = Finish::StopToken(id);
                break;
            }
            handed += 1;
            let panic_now = {
                let mut panic = self.panic.lock().expect("panic lock");
                match panic.as_ref() {
                    Some((after, _)) if handed > *after => panic.take(),
                    _ => None,
                }
            };
            if let Some((_, message)) = panic_now {
                panic!("{message}");
            }
            if let Some(k) = request.logprobs {
                // A replay is certain of its token.
                let top = [(id, 0.0)].into_iter().take(k).collect();
                sink.on_logprobs(TokenLogprobs { logprob: 0.0, top });
            }
            let directive = sink.on_token(id);
            if directive != Directive::Stop && sink.constrains_next() {
                mask = sink.next_mask();
            }
            match directive {
                Directive::Continue => {}
                Directive::Stop => {
                    finish = Finish::Cancelled;
                    self.observed.cancelled.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                Directive::Force(forced) => {
                    produced += forced.len();
                    self.observed
                        .forced
                        .lock()
                        .expect("forced lock")
                        .push(Forced {
                            generation,
                            after: handed,
                            tokens: forced,
                        });
                    if let Some(next) = self
                        .after_force
                        .lock()
                        .expect("after_force lock")
                        .pop_front()
                    {
                        tokens = next.into_iter();
                    }
                }
            }
        }
        self.observed.finished.fetch_add(1, Ordering::SeqCst);
        Ok(GenerationStats {
            finish,
            prompt_tokens: request.prompt.len(),
            cached_prompt_tokens: 0,
            generated_tokens: handed,
            prefill_time,
            decode_time: started.elapsed().saturating_sub(prefill_time),
        })
    }
}
