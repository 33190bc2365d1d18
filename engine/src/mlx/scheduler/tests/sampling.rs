//! Sampled and adjusted tokens, alone and batched, drawn on the device
//! or by the host sampler.

use super::*;

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
        super::super::adjust::tests::reference(&mut row, params, &tokens, prompt.len());
        let next = super::super::sampler::argmax(&row);
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
