//! Log-probabilities reported with the tokens: the picks are those of the
//! same request without them, and each token's value is read from the
//! logits it was picked from, greedy or drawn, free or constrained, on
//! the device or the host, the steps overlapped or not.

use super::*;
use crate::{TokenLogprobs, TokenMask};

/// Tokens, each with what was reported before it; the first `constrained`
/// tokens limited to the ids below 64.
struct Reported {
    vocab: usize,
    constrained: usize,
    tokens: Vec<u32>,
    logprobs: Vec<TokenLogprobs>,
}

impl TokenSink for Reported {
    fn on_logprobs(&mut self, logprobs: TokenLogprobs) {
        assert_eq!(
            self.logprobs.len(),
            self.tokens.len(),
            "one report per token"
        );
        self.logprobs.push(logprobs);
    }

    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        Directive::Continue
    }

    fn constrains_next(&self) -> bool {
        self.tokens.len() < self.constrained
    }

    fn next_mask(&mut self) -> Option<TokenMask> {
        let mut mask = TokenMask::none(self.vocab);
        (0..64).for_each(|id| mask.allow(id));
        Some(mask)
    }
}

fn generate(engine: &MlxEngine, request: &GenerationRequest, constrained: usize) -> Reported {
    let mut sink = Reported {
        vocab: engine.info().vocab_size,
        constrained,
        tokens: Vec::new(),
        logprobs: Vec::new(),
    };
    engine.generate(request, &mut sink).unwrap();
    sink
}

#[test]
fn each_token_comes_with_its_log_probability_and_the_same_pick() {
    let ways = [
        (true, Some(true)),
        (false, Some(true)),
        (false, Some(false)),
    ];
    for (overlap, draws_on_device) in ways {
        let engine = tiny_engine_with(LoadOptions {
            overlap_steps: Some(overlap),
            draws_on_device,
            ..LoadOptions::default()
        });
        for (seed, constrained) in [(None, 0), (Some(5), 0), (None, 3), (Some(9), 3)] {
            let case = format!(
                "overlap {overlap}, device draws {draws_on_device:?}, seed {seed:?}, {constrained} constrained"
            );
            let plain = sampled(vec![5, 6, 7, 8], seed);
            let asking = GenerationRequest {
                logprobs: Some(4),
                ..plain.clone()
            };
            let without = generate(&engine, &plain, constrained);
            let with = generate(&engine, &asking, constrained);
            assert!(without.logprobs.is_empty(), "{case}");
            assert_eq!(with.tokens, without.tokens, "{case}");
            assert_eq!(with.logprobs.len(), with.tokens.len(), "{case}");
            for (token, lp) in with.tokens.iter().zip(&with.logprobs) {
                assert_eq!(lp.top.len(), 4, "{case}");
                assert!(lp.top.windows(2).all(|w| w[0].1 >= w[1].1), "{case}");
                let mass: f32 = lp.top.iter().map(|t| t.1.exp()).sum();
                assert!(lp.logprob <= 0.0 && mass <= 1.0 + 1e-5, "{case}: {lp:?}");
                assert!(lp.logprob <= lp.top[0].1 + 1e-6, "{case}");
                if let Some(&(_, listed)) = lp.top.iter().find(|t| t.0 == *token) {
                    assert!((listed - lp.logprob).abs() < 1e-5, "{case}: {lp:?}");
                }
            }
            if seed.is_none() {
                // Greedy, unconstrained, the token is the most likely one.
                for (token, lp) in with.tokens.iter().zip(&with.logprobs).skip(constrained) {
                    assert_eq!(lp.top[0].0, *token, "{case}");
                }
            }
        }
    }
}

#[test]
fn more_alternatives_than_the_api_allows_are_refused() {
    let engine = tiny_engine(Duration::ZERO);
    let request = GenerationRequest {
        logprobs: Some(crate::MAX_TOP_LOGPROBS + 1),
        ..sampled(vec![5, 6], None)
    };
    let err = engine
        .generate(&request, &mut Tokens(Vec::new()))
        .unwrap_err();
    assert!(err.to_string().contains("logprobs"), "{err}");
}
