//! How the scheduler orders work between runs, on a tiny model; how it
//! samples and adjusts (`sampling`) and when it hands tokens out
//! (`reading`).

mod logprobs;
mod reading;
mod sampling;
mod scoring;

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::mlx::{LoadOptions, MlxEngine, Precision};
use crate::{Directive, Engine, GenerationRequest, SamplingParams, TokenSink};

/// Notes its name in a shared list at its first token.
struct FirstToken {
    name: &'static str,
    order: Arc<Mutex<Vec<&'static str>>>,
    seen: bool,
}

impl TokenSink for FirstToken {
    fn on_token(&mut self, _id: u32) -> Directive {
        if !self.seen {
            self.seen = true;
            self.order.lock().unwrap().push(self.name);
        }
        Directive::Continue
    }
}

/// Takes every token.
struct Taking;

impl TokenSink for Taking {
    fn on_token(&mut self, _id: u32) -> Directive {
        Directive::Continue
    }
}

/// The tiny Qwen3 in prompt chunks of 8 (a short lane of 4), requests
/// arriving into an idle batch waiting `batch_window` for others.
fn tiny_engine(batch_window: Duration) -> MlxEngine {
    tiny_engine_drawing(batch_window, None)
}

/// [`tiny_engine`], its sampled tokens drawn on the device or not.
fn tiny_engine_drawing(batch_window: Duration, draws_on_device: Option<bool>) -> MlxEngine {
    tiny_engine_with(LoadOptions {
        batch_window,
        draws_on_device,
        ..LoadOptions::default()
    })
}

/// The tiny Qwen3 in prompt chunks of 8 under `options`.
fn tiny_engine_with(options: LoadOptions) -> MlxEngine {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-qwen3");
    let options = LoadOptions {
        prefill_chunk: 8,
        ..options
    };
    MlxEngine::load(&path, &options).unwrap()
}

/// [`tiny_engine`] with its steps overlapped (`LoadOptions::overlap_steps`)
/// or waited for, whatever the device.
fn tiny_engine_overlapping(batch_window: Duration, overlap: bool) -> MlxEngine {
    tiny_engine_with(LoadOptions {
        batch_window,
        overlap_steps: Some(overlap),
        ..LoadOptions::default()
    })
}

/// Two greedy tokens after `prompt`.
fn request(prompt: Vec<u32>) -> GenerationRequest {
    GenerationRequest {
        prompt,
        max_tokens: 2,
        sampling: SamplingParams::greedy(),
        stop_token_ids: Vec::new(),
        logprobs: None,
    }
}

#[test]
fn a_short_prompt_is_not_held_behind_a_long_prompts_chunks() {
    // The long prompt needs 8 steps of prefill, each filling the step's
    // prompt budget; the short one fits the short lane.
    let engine = tiny_engine(Duration::from_millis(200));
    let order = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for (name, prompt, delay) in [
            (
                "long",
                (0..64).map(|i| 3 + i % 200).collect::<Vec<u32>>(),
                0,
            ),
            ("short", vec![5, 6, 7], 20),
        ] {
            let (engine, order) = (&engine, Arc::clone(&order));
            scope.spawn(move || {
                std::thread::sleep(Duration::from_millis(delay));
                let mut sink = FirstToken {
                    name,
                    order,
                    seen: false,
                };
                engine.generate(&request(prompt), &mut sink).unwrap();
            });
        }
    });
    // Without the lane the short prompt waited for the long one's last
    // chunk, so its first token came after the long one's.
    assert_eq!(*order.lock().unwrap(), ["short", "long"]);
}

/// Reads what the engine expects a new prompt to wait, at its first token.
struct WaitProbe<'a> {
    engine: &'a MlxEngine,
    /// A long prompt's wait, a short one's, and a long one's behind two
    /// more of its request's.
    seen: Option<[Option<Duration>; 3]>,
}

impl TokenSink for WaitProbe<'_> {
    fn on_token(&mut self, _id: u32) -> Directive {
        if self.seen.is_none() {
            let wait = |tokens, ahead: &[usize]| self.engine.expected_wait(tokens, ahead);
            self.seen = Some([wait(64, &[]), wait(2, &[]), wait(64, &[256, 256])]);
        }
        Directive::Continue
    }
}

#[test]
fn a_new_prompt_is_told_the_wait_for_the_prompts_ahead_of_it() {
    // No batch window: the long prompt starts at once, and the short one
    // arrives while it is being fed, a chunk of 8 a step (32 steps).
    let engine = tiny_engine(Duration::ZERO);
    assert_eq!(
        engine.expected_wait(64, &[]),
        None,
        "no pace before any step"
    );
    let mut probe = WaitProbe {
        engine: &engine,
        seen: None,
    };
    std::thread::scope(|scope| {
        let (fed, first_chunk) = std::sync::mpsc::channel();
        scope.spawn(|| {
            let long: Vec<u32> = (0..256).map(|i| 3 + i % 200).collect();
            engine
                .generate(&request(long), &mut FirstChunk(Some(fed)))
                .unwrap();
        });
        first_chunk.recv().unwrap();
        // The short prompt's first token comes while the long one still
        // has most of its chunks to feed (the lane test above).
        engine
            .generate(&request(vec![5, 6, 7]), &mut probe)
            .unwrap();
    });
    let [long, short, behind] = probe.seen.unwrap();
    let long = long.expect("a pace once steps ran");
    assert!(
        long > Duration::ZERO,
        "a long prompt waits for the chunks ahead"
    );
    let short = short.expect("a pace once steps ran");
    assert!(short <= long, "{short:?} {long:?}");
    // Its request's prompts submitted before it count as queued ahead.
    let behind = behind.expect("a pace once steps ran");
    assert!(behind > long, "{behind:?} {long:?}");
}

#[test]
fn a_forgotten_pace_is_unknown_until_steps_run_again() {
    let engine = tiny_engine(Duration::ZERO);
    let prompt: Vec<u32> = (0..40).map(|i| 3 + i % 200).collect();
    engine
        .generate(&request(prompt.clone()), &mut Taking)
        .unwrap();
    assert!(
        engine.expected_wait(64, &[]).is_some(),
        "a pace once steps ran"
    );
    engine.forget_pace();
    assert_eq!(engine.expected_wait(64, &[]), None);
    assert_eq!(engine.expected_wait(2, &[]), None);
    // Measured again from the next steps.
    engine.generate(&request(prompt), &mut Taking).unwrap();
    assert!(engine.expected_wait(64, &[]).is_some());
}

/// Says when its prompt's first chunk is in the cache.
struct FirstChunk(Option<std::sync::mpsc::Sender<()>>);

impl TokenSink for FirstChunk {
    fn on_token(&mut self, _id: u32) -> Directive {
        Directive::Continue
    }

    fn on_prefill(&mut self, _done: usize, _total: usize) -> ControlFlow<()> {
        if let Some(fed) = self.0.take() {
            let _ = fed.send(());
        }
        ControlFlow::Continue(())
    }
}

/// Every token of a generation.
struct Tokens(Vec<u32>);

impl TokenSink for Tokens {
    fn on_token(&mut self, id: u32) -> Directive {
        self.0.push(id);
        Directive::Continue
    }
}

/// 24 tokens after `prompt`, drawn at temperature 1 with `seed` (greedy
/// without one).
fn sampled(prompt: Vec<u32>, seed: Option<u64>) -> GenerationRequest {
    let sampling = match seed {
        Some(seed) => SamplingParams {
            temperature: 1.0,
            top_p: 0.95,
            seed: Some(seed),
            ..SamplingParams::greedy()
        },
        None => SamplingParams::greedy(),
    };
    GenerationRequest {
        prompt,
        max_tokens: 24,
        sampling,
        stop_token_ids: Vec::new(),
        logprobs: None,
    }
}

/// At each token: the most sequences it saw in the batch, and whether
/// the reserved cache ever passed the budget; stops after `stop` tokens.
struct Watching<'a> {
    engine: &'a MlxEngine,
    most: usize,
    over_budget: bool,
    tokens: usize,
    stop: usize,
}

impl TokenSink for Watching<'_> {
    fn on_token(&mut self, _id: u32) -> Directive {
        let load = self.engine.load();
        self.most = self.most.max(load.active_sequences);
        self.over_budget |= load.kv_reserved_bytes > load.kv_budget_bytes;
        self.tokens += 1;
        match self.tokens >= self.stop {
            true => Directive::Stop,
            false => Directive::Continue,
        }
    }
}

/// The tiny Qwen3 holds 512 bytes a position (f32) in a context of 512;
/// the budget is 1,024 positions. The long request reserves 512, each
/// short one 256. On the CPU's fused path each sequence holds its own
/// rows: all three fit. On MLX's attention (`keep`, a GPU's path) the
/// batch buffers give every slot the longest sequence's 512: beside the
/// long one only one short one fits, and the budget still bounds what
/// the buffers hold.
#[test]
fn a_long_request_counts_for_what_it_makes_the_batch_buffers_hold() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-qwen3");
    for (precision, together) in [(Precision::F32, 3), (Precision::Keep, 2)] {
        let options = LoadOptions {
            precision,
            kv_cache_bytes: Some(1024 * 512),
            batch_window: Duration::from_millis(200),
            ..LoadOptions::default()
        };
        let engine = MlxEngine::load(&path, &options).unwrap();
        let runs = [(490, 30), (20, 20), (20, 20)];
        let seen: Vec<(usize, bool)> = std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .iter()
                .enumerate()
                .map(|(i, &(max_tokens, stop))| {
                    let engine = &engine;
                    scope.spawn(move || {
                        let request = GenerationRequest {
                            max_tokens,
                            ..request((0..10).map(|t| 5 + t + i as u32).collect())
                        };
                        let mut sink = Watching {
                            engine,
                            most: 0,
                            over_budget: false,
                            tokens: 0,
                            stop,
                        };
                        engine.generate(&request, &mut sink).unwrap();
                        (sink.most, sink.over_budget)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let most = seen.iter().map(|s| s.0).max();
        assert_eq!(most, Some(together), "{precision:?}");
        assert!(seen.iter().all(|s| !s.1), "{precision:?}: over the budget");
    }
}
