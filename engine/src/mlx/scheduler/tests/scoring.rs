//! Scoring a prompt beside a decoding batch: a pass of it after each step,
//! so the batch keeps streaming, and neither changes the other's numbers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;

/// A long prompt: 47 passes of 8 positions on the tiny engine.
fn long_prompt() -> Vec<u32> {
    (0..376).map(|i| 3 + (i * 7) % 250).collect()
}

/// `got` scores every position as `want` does (within f32 rounding).
fn assert_same_scores(got: &[crate::TokenLogprobs], want: &[crate::TokenLogprobs]) {
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a.logprob - b.logprob).abs() < 1e-5, "position {i}");
    }
}

/// Greedy tokens, counting those that arrive while a prompt is scored;
/// at its first token it starts the scoring on another thread.
struct DuringScore<'a> {
    tokens: Vec<u32>,
    start: Option<Box<dyn FnOnce() + Send + 'a>>,
    scoring: &'a AtomicBool,
    during: &'a AtomicUsize,
}

impl TokenSink for DuringScore<'_> {
    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        if self.scoring.load(Ordering::SeqCst) {
            self.during.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(start) = self.start.take() {
            start();
        }
        Directive::Continue
    }
}

#[test]
fn a_prompt_is_scored_between_the_steps_of_a_decoding_batch() {
    let engine = tiny_engine(Duration::ZERO);
    let prompt = long_prompt();
    let alone = engine.score_prompt(&prompt, 3).unwrap();
    assert_eq!(alone.len(), prompt.len() - 1);
    let generation = GenerationRequest {
        max_tokens: 80,
        ..request(vec![5, 6, 7, 8])
    };
    let mut by_itself = Tokens(Vec::new());
    engine.generate(&generation, &mut by_itself).unwrap();

    let (scoring, during) = (AtomicBool::new(false), AtomicUsize::new(0));
    let scored = std::thread::scope(|scope| {
        let (engine, prompt, scoring) = (&engine, &prompt, &scoring);
        let (tx, rx) = std::sync::mpsc::channel();
        let start = move || {
            scoring.store(true, Ordering::SeqCst);
            let handle = scope.spawn(move || {
                let scored = engine.score_prompt(prompt, 3);
                scoring.store(false, Ordering::SeqCst);
                scored
            });
            tx.send(handle).unwrap();
        };
        let mut sink = DuringScore {
            tokens: Vec::new(),
            start: Some(Box::new(start)),
            scoring,
            during: &during,
        };
        engine.generate(&generation, &mut sink).unwrap();
        assert_eq!(sink.tokens, by_itself.0, "the batch's tokens are its own");
        rx.recv().unwrap().join().unwrap().unwrap()
    });
    // Scored all at once between two steps, the prompt's 47 passes would
    // let through only the token or two already in flight.
    let during = during.load(Ordering::SeqCst);
    assert!(during >= 20, "{during} tokens while the prompt was scored");
    assert_eq!(scored.len(), alone.len());
    for (i, (a, b)) in scored.iter().zip(&alone).enumerate() {
        assert!((a.logprob - b.logprob).abs() < 1e-5, "position {i}");
        let ids = |t: &crate::TokenLogprobs| t.top.iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(a), ids(b), "position {i}");
    }
}

/// Scores handed over before any token; its first tokens constrained to
/// one id each (`forced`), when it has any.
#[derive(Default)]
struct Scored {
    prompt: Option<Vec<crate::TokenLogprobs>>,
    tokens: Vec<u32>,
    forced: Vec<u32>,
}

impl TokenSink for Scored {
    fn on_prompt_logprobs(&mut self, scored: Vec<crate::TokenLogprobs>) {
        assert!(self.tokens.is_empty(), "the scores come before any token");
        self.prompt = Some(scored);
    }

    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        Directive::Continue
    }

    fn constrains_next(&self) -> bool {
        self.tokens.len() < self.forced.len()
    }

    fn next_mask(&mut self) -> Option<crate::TokenMask> {
        let mut mask = crate::TokenMask::none(256);
        mask.allow(*self.forced.get(self.tokens.len())?);
        Some(mask)
    }
}

#[test]
fn a_generation_that_scores_its_prompt_computes_it_once() {
    let engine = tiny_engine(Duration::ZERO);
    let prompt = long_prompt();
    let alone = engine.score_prompt(&prompt, 2).unwrap();
    let generation = GenerationRequest {
        max_tokens: 4,
        ..request(prompt.clone())
    };
    let mut plain = Tokens(Vec::new());
    engine.generate(&generation, &mut plain).unwrap();

    let steps = engine.load().steps;
    let mut sink = Scored::default();
    let stats = engine.generate_scored(&generation, 2, &mut sink).unwrap();
    // Its prompt's 47 passes of 8 were the scoring's: the generation ran
    // its last token and its 4 tokens, no prefill chunk of its own.
    let ran = engine.load().steps - steps;
    assert!(ran <= 6, "{ran} steps");
    assert_eq!(
        sink.tokens, plain.0,
        "the tokens of the prompt computed anew"
    );
    assert_eq!(stats.cached_prompt_tokens, 0, "computed for it, not cached");
    assert_eq!(stats.prompt_tokens, prompt.len());
    let scored = sink.prompt.expect("the prompt's scores");
    assert_same_scores(&scored, &alone);
}

/// A constrained generation's first mask, sent while its prompt is being
/// scored, is kept for it: its first tokens are those its masks allow.
#[test]
fn a_constrained_generation_keeps_its_mask_while_its_prompt_is_scored() {
    let engine = tiny_engine(Duration::ZERO);
    let generation = GenerationRequest {
        max_tokens: 5,
        ..request(long_prompt())
    };
    let mut sink = Scored {
        forced: vec![7, 9, 11],
        ..Scored::default()
    };
    engine.generate_scored(&generation, 1, &mut sink).unwrap();
    assert!(sink.prompt.is_some());
    assert_eq!(sink.tokens[..3], [7, 9, 11], "{:?}", sink.tokens);
    assert_eq!(sink.tokens.len(), 5);
}

/// Stops at the first progress report.
#[derive(Default)]
struct LeavesAtOnce {
    reports: usize,
    scored: bool,
}

impl TokenSink for LeavesAtOnce {
    fn on_prompt_logprobs(&mut self, _scored: Vec<crate::TokenLogprobs>) {
        self.scored = true;
    }

    fn on_token(&mut self, _id: u32) -> Directive {
        Directive::Stop
    }

    fn on_prefill(&mut self, _done: usize, _total: usize) -> ControlFlow<()> {
        self.reports += 1;
        ControlFlow::Break(())
    }
}

/// A generation whose run stops it while its prompt is scored ends
/// cancelled, as in its prefill: the scoring's progress is reported a pass
/// at a time, and it ends within a pass or two of the answer, not at the
/// 47th.
#[test]
fn a_generation_stopped_while_its_prompt_is_scored_ends_there() {
    let engine = tiny_engine(Duration::ZERO);
    let generation = GenerationRequest {
        max_tokens: 4,
        ..request(long_prompt())
    };
    let mut sink = LeavesAtOnce::default();
    let stats = engine.generate_scored(&generation, 1, &mut sink).unwrap();
    assert_eq!(stats.finish, crate::Finish::Cancelled);
    assert_eq!(stats.generated_tokens, 0);
    assert!(!sink.scored, "no scores for a stopped generation");
    assert!(
        (1..10).contains(&sink.reports),
        "{} progress reports",
        sink.reports
    );
}

/// A generation of no tokens that scores its prompt (`max_tokens: 0` with
/// `echo` and `logprobs`) is its scores: they come, it ends at its limit
/// with nothing generated and no step run for it, and a prompt that fills
/// the whole context is scored too (no room is needed for a token).
#[test]
fn a_scored_generation_of_no_tokens_is_its_prompts_scores() {
    let engine = tiny_engine(Duration::ZERO);
    let context = engine.info().context_length;
    let prompt: Vec<u32> = (0..context as u32).map(|i| 3 + (i * 11) % 250).collect();
    let alone = engine.score_prompt(&prompt, 2).unwrap();
    let generation = GenerationRequest {
        max_tokens: 0,
        ..request(prompt.clone())
    };
    let steps = engine.load().steps;
    let mut sink = Scored::default();
    let stats = engine.generate_scored(&generation, 2, &mut sink).unwrap();
    assert_eq!(
        engine.load().steps,
        steps,
        "no step for nothing to generate"
    );
    assert_eq!(stats.finish, crate::Finish::Length);
    assert_eq!((stats.prompt_tokens, stats.generated_tokens), (context, 0));
    assert!(sink.tokens.is_empty());
    let scored = sink.prompt.expect("the prompt's scores");
    assert_same_scores(&scored, &alone);
}

/// A generation of no tokens stopped while its prompt is scored ends
/// cancelled within a pass or two, with no scores; one of a one-token
/// prompt (nothing to score) ends at once at its limit, with no step.
#[test]
fn a_scored_generation_of_no_tokens_can_be_stopped() {
    let engine = tiny_engine(Duration::ZERO);
    let generation = GenerationRequest {
        max_tokens: 0,
        ..request(long_prompt())
    };
    let mut sink = LeavesAtOnce::default();
    let stats = engine.generate_scored(&generation, 1, &mut sink).unwrap();
    assert_eq!(stats.finish, crate::Finish::Cancelled);
    assert!(!sink.scored, "no scores for a stopped generation");
    assert!((1..10).contains(&sink.reports), "{}", sink.reports);

    let steps = engine.load().steps;
    let one = GenerationRequest {
        max_tokens: 0,
        ..request(vec![5])
    };
    let mut sink = Scored::default();
    let stats = engine.generate_scored(&one, 1, &mut sink).unwrap();
    assert_eq!(stats.finish, crate::Finish::Length);
    assert_eq!(sink.prompt.map(|p| p.len()), Some(0));
    assert_eq!(
        engine.load().steps,
        steps,
        "no step for nothing to generate"
    );
}

/// Scores handed over, at the first progress report `start` run (once),
/// and at each token `at_token`.
struct StartsAnother<'a> {
    scored: Scored,
    start: Option<Box<dyn FnOnce() + Send + 'a>>,
    at_token: Option<Box<dyn FnMut() + Send + 'a>>,
}

impl TokenSink for StartsAnother<'_> {
    fn on_prompt_logprobs(&mut self, scored: Vec<crate::TokenLogprobs>) {
        self.scored.on_prompt_logprobs(scored);
    }

    fn on_token(&mut self, id: u32) -> Directive {
        if let Some(at_token) = &mut self.at_token {
            at_token();
        }
        self.scored.on_token(id)
    }

    fn on_prefill(&mut self, _done: usize, _total: usize) -> ControlFlow<()> {
        if let Some(start) = self.start.take() {
            start();
        }
        ControlFlow::Continue(())
    }
}

/// Two generations asking for the same prompt's scores (a request's `n`
/// choices), the second while the first's are under way, share one
/// scoring: the prompt's positions are computed once, and each gets
/// every score and its own tokens.
#[test]
fn generations_asking_for_the_same_scores_share_one_scoring() {
    let engine = tiny_engine(Duration::ZERO);
    let prompt: Vec<u32> = (0..500).map(|i| 3 + (i * 13) % 250).collect();
    let alone = engine.score_prompt(&prompt, 2).unwrap();
    let first = GenerationRequest {
        max_tokens: 3,
        ..request(prompt.clone())
    };
    let mut plain = Tokens(Vec::new());
    engine.generate(&first, &mut plain).unwrap();
    let second = GenerationRequest {
        max_tokens: 0,
        ..request(prompt.clone())
    };

    let before = engine.load().scored_prompt_tokens;
    let (first_sink, second_sink) = std::thread::scope(|scope| {
        let (engine, second) = (&engine, &second);
        let (tx, rx) = std::sync::mpsc::channel();
        let start = move || {
            let handle = scope.spawn(move || {
                let mut sink = Scored::default();
                let stats = engine.generate_scored(second, 2, &mut sink).unwrap();
                assert_eq!(stats.finish, crate::Finish::Length);
                sink
            });
            tx.send(handle).unwrap();
        };
        let mut sink = StartsAnother {
            scored: Scored::default(),
            start: Some(Box::new(start)),
            at_token: None,
        };
        engine.generate_scored(&first, 2, &mut sink).unwrap();
        (sink.scored, rx.recv().unwrap().join().unwrap())
    });
    let scored = engine.load().scored_prompt_tokens - before;
    assert_eq!(scored, prompt.len() as u64, "the prompt scored once");
    assert_eq!(first_sink.tokens, plain.0);
    assert!(second_sink.tokens.is_empty());
    for sink in [&first_sink, &second_sink] {
        let got = sink.prompt.as_ref().expect("the prompt's scores");
        assert_same_scores(got, &alone);
    }
}

/// Generations that one scoring leaves waiting for the batch (of one
/// here) start from views of its caches, one set of buffers: the cache
/// reservation counts it once, however many wait.
#[test]
fn the_views_one_scoring_leaves_waiting_count_once() {
    let prompt: Vec<u32> = (0..200).map(|i| 3 + (i * 11) % 250).collect();
    let reserved_with = |askers: usize| {
        let engine = tiny_engine_with(LoadOptions {
            max_batch: 1,
            ..LoadOptions::default()
        });
        // The first decodes long enough to be read while the rest wait.
        let first = GenerationRequest {
            max_tokens: 64,
            ..request(prompt.clone())
        };
        let rest = request(prompt.clone());
        let most = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let (engine, rest, most) = (&engine, &rest, &most);
            let start = move || {
                for _ in 1..askers {
                    scope.spawn(move || {
                        let mut sink = Scored::default();
                        engine.generate_scored(rest, 1, &mut sink).unwrap();
                        assert!(sink.prompt.is_some());
                    });
                }
            };
            let at_token = move || {
                most.fetch_max(engine.load().kv_reserved_bytes, Ordering::SeqCst);
            };
            let mut sink = StartsAnother {
                scored: Scored::default(),
                start: Some(Box::new(start)),
                at_token: Some(Box::new(at_token)),
            };
            engine.generate_scored(&first, 1, &mut sink).unwrap();
        });
        let scored = engine.load().scored_prompt_tokens;
        assert_eq!(scored, prompt.len() as u64, "one scoring for all");
        most.into_inner()
    };
    let (two, three) = (reserved_with(2), reserved_with(3));
    assert!(two > 0);
    assert_eq!(two, three, "a second waiting view adds nothing");
}
