//! When a step hands its tokens out: at once (steps waited for, a
//! CPU's way) or while the next runs (overlapped, a GPU's), constrained
//! tokens included, greedy or drawn.

use super::*;

/// Stops its run at its `n`th token.
struct StopAt {
    n: usize,
    seen: usize,
}

impl TokenSink for StopAt {
    fn on_token(&mut self, _id: u32) -> Directive {
        self.seen += 1;
        match self.seen >= self.n {
            true => Directive::Stop,
            false => Directive::Continue,
        }
    }
}

/// Waiting for each step (the CPU's way), a step's tokens are handed out
/// as soon as it is done: a run that stops at a token has no decode row
/// queued after it. Overlapped (a GPU's way), the next step is built on
/// a token before it is read, and dropped.
#[test]
fn a_step_hands_out_its_own_tokens_unless_steps_overlap() {
    for (overlap, n, rows) in [(false, 1, 0), (false, 2, 1), (true, 1, 1), (true, 2, 2)] {
        let engine = tiny_engine_overlapping(Duration::ZERO, overlap);
        let request = GenerationRequest {
            max_tokens: 8,
            ..request(vec![5, 6, 7, 8])
        };
        let stats = engine
            .generate(&request, &mut StopAt { n, seen: 0 })
            .unwrap();
        assert_eq!(stats.generated_tokens, n);
        assert_eq!(
            engine.load().batched_tokens,
            rows,
            "overlapped: {overlap}, stopped at token {n}: decode rows queued"
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

/// A seeded sampled generation under masks, drawn on the device (the
/// default), the steps overlapped or not: a mask that allows every token
/// changes nothing (a constrained token gets the draw a free one would,
/// keyed by seed and position); under narrower masks each token is one
/// its mask allows, the same alone and batched, and the free tokens after
/// them are what the same seed draws when the prompt holds them.
#[test]
fn constrained_draws_keep_to_their_masks_and_their_seed() {
    let prompt = vec![5, 6, 7, 8];
    let narrow = vec![
        vec![7, 11, 13, 17],
        vec![20, 21, 22],
        vec![5],
        vec![30, 40, 50],
    ];
    let mut got = Vec::new();
    for overlap in [false, true] {
        let engine = tiny_engine_overlapping(Duration::from_millis(200), overlap);
        let vocab = engine.info().vocab_size;
        let run = |masks: &[Vec<u32>], seed| {
            let mut sink = Constrained {
                vocab,
                masks: masks.to_vec(),
                tokens: Vec::new(),
            };
            let r = GenerationRequest {
                max_tokens: 12,
                ..sampled(prompt.clone(), Some(seed))
            };
            engine.generate(&r, &mut sink).unwrap();
            sink.tokens
        };
        let free = run(&[], 5);
        let everything: Vec<u32> = (0..vocab as u32).collect();
        assert_eq!(run(&vec![everything; 4], 5), free, "overlapped: {overlap}");

        let alone = run(&narrow, 5);
        assert_eq!(alone.len(), 12);
        for (token, allowed) in alone.iter().zip(&narrow) {
            assert!(allowed.contains(token), "overlapped: {overlap}: {token}");
        }
        let batched = std::thread::scope(|scope| {
            let greedy = scope.spawn(|| {
                let mut sink = Tokens(Vec::new());
                engine
                    .generate(&request(vec![9, 10, 11]), &mut sink)
                    .unwrap();
            });
            let other = scope.spawn(|| run(&narrow, 6));
            let batched = run(&narrow, 5);
            greedy.join().unwrap();
            other.join().unwrap();
            batched
        });
        assert_eq!(batched, alone, "overlapped: {overlap}");

        let mut held = prompt.clone();
        held.extend_from_slice(&alone[..narrow.len()]);
        let mut rest = Tokens(Vec::new());
        let r = GenerationRequest {
            max_tokens: 12 - narrow.len(),
            ..sampled(held, Some(5))
        };
        engine.generate(&r, &mut rest).unwrap();
        assert_eq!(&alone[narrow.len()..], &rest.0[..], "overlapped: {overlap}");
        got.push(alone);
    }
    assert_eq!(got[0], got[1]);
}
