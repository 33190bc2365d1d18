//! How the scheduler orders work between runs, on a tiny model.

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
    seen: Option<(Option<Duration>, Option<Duration>)>,
}

impl TokenSink for WaitProbe<'_> {
    fn on_token(&mut self, _id: u32) -> Directive {
        if self.seen.is_none() {
            self.seen = Some((self.engine.expected_wait(64), self.engine.expected_wait(2)));
        }
        Directive::Continue
    }
}

#[test]
fn a_new_prompt_is_told_the_wait_for_the_prompts_ahead_of_it() {
    // No batch window: the long prompt starts at once, and the short one
    // arrives while it is being fed, a chunk of 8 a step (32 steps).
    let engine = tiny_engine(Duration::ZERO);
    assert_eq!(engine.expected_wait(64), None, "no pace before any step");
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
    let (long, short) = probe.seen.unwrap();
    let long = long.expect("a pace once steps ran");
    assert!(
        long > Duration::ZERO,
        "a long prompt waits for the chunks ahead"
    );
    let short = short.expect("a pace once steps ran");
    assert!(short <= long, "{short:?} {long:?}");
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
    }
}

/// On the device (`draw.rs`) and by the host sampler alike, and with the
/// steps overlapped (a GPU's way).
#[test]
fn a_seeded_sampled_generation_draws_the_same_tokens_alone_and_batched() {
    for on_device in [true, false] {
        seeded_draws_alone_and_batched(tiny_engine_drawing(
            Duration::from_millis(200),
            Some(on_device),
        ));
    }
    seeded_draws_alone_and_batched(tiny_engine_overlapping(Duration::from_millis(200), true));
}

fn seeded_draws_alone_and_batched(engine: MlxEngine) {
    let run = |r: &GenerationRequest| {
        let mut sink = Tokens(Vec::new());
        engine.generate(r, &mut sink).unwrap();
        sink.0
    };
    let mine = sampled(vec![5, 6, 7, 8], Some(5));
    let alone = run(&mine);
    assert_eq!(alone.len(), 24);
    assert_eq!(run(&mine), alone, "the same seed, the same draws");
    let greedy = run(&sampled(vec![5, 6, 7, 8], None));
    assert_ne!(alone, greedy, "a draw at temperature 1 is not the argmax");
    // Batched with a greedy generation and another seed's, arriving
    // together (one prefill pass, then batched decode steps).
    let others = [
        sampled(vec![9, 10, 11], None),
        sampled(vec![5, 6, 7, 8], Some(6)),
    ];
    let (batched, theirs) = std::thread::scope(|scope| {
        let handles: Vec<_> = others.iter().map(|r| scope.spawn(move || run(r))).collect();
        let batched = run(&mine);
        let theirs: Vec<Vec<u32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (batched, theirs)
    });
    assert_eq!(batched, alone);
    assert_ne!(theirs[1], alone, "another seed draws other tokens");
}

/// Greedy decoding under a logit bias and penalties, one token at a time
/// on the network with them applied on the host after reading each step's
/// logits: what the scheduler must produce with its steps queued ahead.
fn adjusted_by_hand(prompt: &[u32], params: &SamplingParams, n: usize) -> Vec<u32> {
    adjusted_and_forced_by_hand(prompt, params, n, (usize::MAX, &[]))
}

/// [`adjusted_by_hand`] with `forced` tokens after the `after`-th one, fed
/// with it as the scheduler feeds them; `n` tokens in all, the forced
/// included; returns the generated ones.
fn adjusted_and_forced_by_hand(
    prompt: &[u32],
    params: &SamplingParams,
    n: usize,
    (after, forced): (usize, &[u32]),
) -> Vec<u32> {
    use crate::mlx::model::Segment;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-qwen3");
    let (model, _, _) = crate::mlx::load_network(&path, &LoadOptions::default()).unwrap();
    let mut cache = model.new_cache();
    let mut tokens = prompt.to_vec();
    let mut generated = Vec::new();
    let mut feed = prompt.to_vec();
    while tokens.len() - prompt.len() < n {
        let ids: Vec<i32> = feed.iter().map(|&t| t as i32).collect();
        let mut segment = [Segment {
            len: ids.len() as i32,
            caches: &mut cache,
            fork: None,
        }];
        let logits = model
            .forward(
                &mlx_rs::Array::from_slice(&ids, &[1, ids.len() as i32]),
                &mut segment,
                true,
            )
            .unwrap()
            .unwrap();
        logits.eval().unwrap();
        let mut row = logits.as_slice::<f32>().to_vec();
        super::adjust::tests::reference(&mut row, params, &tokens, prompt.len());
        let next = super::sampler::argmax(&row);
        tokens.push(next);
        generated.push(next);
        feed = vec![next];
        if generated.len() == after {
            tokens.extend_from_slice(forced);
            feed.extend_from_slice(forced);
        }
    }
    generated
}

/// Forces tokens after its `after`-th token; keeps every token told.
struct Forcing {
    after: usize,
    forced: Vec<u32>,
    tokens: Vec<u32>,
}

impl TokenSink for Forcing {
    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        match self.tokens.len() == self.after {
            true => Directive::Force(self.forced.clone()),
            false => Directive::Continue,
        }
    }
}

/// Forced tokens count as generated for the frequency and presence
/// penalties, and the step dropped for them is built again with the
/// same counts.
#[test]
fn penalties_count_forced_tokens_as_generated() {
    let engine = tiny_engine(Duration::from_millis(20));
    let prompt = vec![5, 6, 7, 8, 5, 6];
    // Repeats favoured, so each count decides the next pick.
    let params = SamplingParams {
        frequency_penalty: -0.7,
        presence_penalty: -0.7,
        repetition_penalty: 1.2,
        ..SamplingParams::greedy()
    };
    let plain = adjusted_by_hand(&prompt, &params, 24);
    // Force the token the sequence would pick next, twice: the next pick
    // then sees it three times.
    let forced = vec![plain[3], plain[3]];
    let want = adjusted_and_forced_by_hand(&prompt, &params, 24, (3, &forced));
    let request = GenerationRequest {
        sampling: params,
        ..sampled(prompt, None)
    };
    let mut sink = Forcing {
        after: 3,
        forced,
        tokens: Vec::new(),
    };
    engine.generate(&request, &mut sink).unwrap();
    assert_eq!(sink.tokens.len(), 22);
    assert_eq!(sink.tokens, want);
}

/// Greedy decoding under a logit bias and penalties, pipelined and
/// batched, picks what picking by hand on the host picks, the steps
/// overlapped (a GPU's way) or not.
#[test]
fn adjustments_in_the_step_pick_what_the_host_would_alone_and_batched() {
    for overlap in [true, false] {
        adjusted_alone_and_batched(&tiny_engine_overlapping(
            Duration::from_millis(200),
            overlap,
        ));
    }
}

fn adjusted_alone_and_batched(engine: &MlxEngine) {
    let run = |r: &GenerationRequest| {
        let mut sink = Tokens(Vec::new());
        engine.generate(r, &mut sink).unwrap();
        sink.0
    };
    let prompt = vec![5, 6, 7, 8, 5, 6];
    let plain = run(&sampled(prompt.clone(), None));
    for params in [
        SamplingParams {
            repetition_penalty: 1.5,
            repetition_context: 16,
            ..SamplingParams::greedy()
        },
        // Negative: repeats are favoured, so each count decides.
        SamplingParams {
            frequency_penalty: -0.8,
            presence_penalty: -0.5,
            ..SamplingParams::greedy()
        },
        // The plain answer's first token banned, another raised.
        SamplingParams {
            logit_bias: vec![(plain[0], -100.0), (plain[5], 4.0)],
            repetition_penalty: 1.1,
            ..SamplingParams::greedy()
        },
    ] {
        let mine = GenerationRequest {
            sampling: params.clone(),
            ..sampled(prompt.clone(), None)
        };
        let want = adjusted_by_hand(&prompt, &params, 24);
        assert_ne!(want, plain, "{params:?} changes nothing here");
        assert_eq!(run(&mine), want, "{params:?} alone");
        // Beside a plain greedy generation and a penalized sampled one,
        // arriving together: its row among theirs.
        let others = [
            sampled(vec![9, 10, 11], None),
            GenerationRequest {
                sampling: SamplingParams {
                    frequency_penalty: 1.0,
                    repetition_penalty: 1.2,
                    ..sampled(vec![], Some(3)).sampling
                },
                ..sampled(vec![9, 3, 4, 5, 6, 7, 8], None)
            },
        ];
        let batched = std::thread::scope(|scope| {
            let handles: Vec<_> = others.iter().map(|r| scope.spawn(move || run(r))).collect();
            let batched = run(&mine);
            for h in handles {
                assert_eq!(h.join().unwrap().len(), 24);
            }
            batched
        });
        assert_eq!(batched, want, "{params:?} batched");
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

/// Stops its run at the first token.
struct StopAtFirst;

impl TokenSink for StopAtFirst {
    fn on_token(&mut self, _id: u32) -> Directive {
        Directive::Stop
    }
}

/// Waiting for each step (the CPU's way), a step's tokens are handed out
/// as soon as it is done: a run that stops at its first token has no
/// decode row queued after it. Overlapped (a GPU's way), the next step
/// is queued on that token before it is read, and dropped.
#[test]
fn a_step_hands_out_its_own_tokens_unless_steps_overlap() {
    for (overlap, rows) in [(false, 0), (true, 1)] {
        let engine = tiny_engine_overlapping(Duration::ZERO, overlap);
        let request = GenerationRequest {
            max_tokens: 8,
            ..request(vec![5, 6, 7, 8])
        };
        let stats = engine.generate(&request, &mut StopAtFirst).unwrap();
        assert_eq!(stats.generated_tokens, 1);
        assert_eq!(
            engine.load().batched_tokens,
            rows,
            "overlapped: {overlap}: decode rows queued"
        );
    }
}

/// Constrains its first `masks.len()` tokens to the ids each allows,
/// then lets the model go free.
struct Constrained {
    vocab: usize,
    masks: Vec<Vec<u32>>,
    tokens: Vec<u32>,
}

impl TokenSink for Constrained {
    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        Directive::Continue
    }

    fn constrains_next(&self) -> bool {
        self.tokens.len() < self.masks.len()
    }

    fn next_mask(&mut self) -> Option<crate::TokenMask> {
        let allowed = self.masks.get(self.tokens.len())?;
        let mut mask = crate::TokenMask::none(self.vocab);
        for &id in allowed {
            mask.allow(id);
        }
        Some(mask)
    }
}

/// Constrained tokens, then free ones once the constraint lifts, the
/// steps overlapped (a GPU's way) or not: each constrained token is one
/// its mask allows, and the free ones continue as greedy decoding of the
/// prompt and those tokens does.
#[test]
fn constrained_then_free_tokens_agree_overlapped_or_not() {
    let masks = vec![vec![7, 11, 13], vec![20, 21], vec![5], vec![30, 40, 50, 60]];
    let mut got = Vec::new();
    for overlap in [false, true] {
        let engine = tiny_engine_overlapping(Duration::ZERO, overlap);
        let mut sink = Constrained {
            vocab: engine.info().vocab_size,
            masks: masks.clone(),
            tokens: Vec::new(),
        };
        let constrained = GenerationRequest {
            max_tokens: 12,
            ..request(vec![5, 6, 7, 8])
        };
        engine.generate(&constrained, &mut sink).unwrap();
        assert_eq!(sink.tokens.len(), 12, "overlapped: {overlap}");
        for (token, allowed) in sink.tokens.iter().zip(&masks) {
            assert!(allowed.contains(token), "overlapped: {overlap}: {token}");
        }
        let mut prompt = vec![5, 6, 7, 8];
        prompt.extend_from_slice(&sink.tokens[..masks.len()]);
        let mut free = Tokens(Vec::new());
        let rest = GenerationRequest {
            max_tokens: 12 - masks.len(),
            ..request(prompt)
        };
        engine.generate(&rest, &mut free).unwrap();
        assert_eq!(
            &sink.tokens[masks.len()..],
            &free.0[..],
            "overlapped: {overlap}"
        );
        got.push(sink.tokens);
    }
    assert_eq!(got[0], got[1]);
}
