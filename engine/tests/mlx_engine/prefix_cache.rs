//! The prefix-cache pool: a kept start serves the prompts that begin
//! with it and changes no token.

use super::*;

#[test]
fn prefix_cache_reuses_a_common_prefix_and_changes_no_token() {
    let cached = MlxEngine::load(
        &tiny("tiny-qwen3"),
        &LoadOptions {
            prefill_chunk: 4,
            prefix_cache: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let fresh = load("tiny-qwen3", 4);
    let mut first = Script::default();
    let stats = run(&cached, &request(PROMPT.to_vec(), 6), &mut first);
    assert_eq!(stats.cached_prompt_tokens, 0);
    // A follow-up turn: the first prompt, its answer, then something new.
    let mut follow = PROMPT.to_vec();
    follow.extend(&first.tokens);
    follow.extend([44, 45, 46, 47, 48, 49]);
    let (mut a, mut b) = (Script::default(), Script::default());
    let reused = run(&cached, &request(follow.clone(), 8), &mut a);
    let computed = run(&fresh, &request(follow.clone(), 8), &mut b);
    assert_eq!(a.tokens, b.tokens);
    // Only the new part was prefilled: progress starts past the old prompt,
    // and the stats count what was reused.
    assert!(a.prefill[0].0 > PROMPT.len(), "{:?}", a.prefill);
    assert_eq!(b.prefill[0].0, 4);
    assert_eq!(reused.cached_prompt_tokens, a.prefill[0].0 - 4);
    assert_eq!(computed.cached_prompt_tokens, 0);
    // A prompt that parts early from the kept one, and the same prompt
    // again (all but its last token reused): still the fresh tokens.
    let mut other = PROMPT[..3].to_vec();
    other.extend([1, 2, 3, 4, 5, 6, 7]);
    for prompt in [other.clone(), other] {
        let (mut c, mut d) = (Script::default(), Script::default());
        run(&cached, &request(prompt.clone(), 8), &mut c);
        run(&fresh, &request(prompt, 8), &mut d);
        assert_eq!(c.tokens, d.tokens);
    }
}

#[test]
fn a_kept_prefix_serves_every_prompt_that_starts_alike_at_once() {
    // A system prompt or document in the pool: prompts arriving together
    // that start with it each start from it (the entry is lent as views,
    // not handed to the first), under `keep` in one padded pass, and pick
    // the tokens they pick from scratch.
    let options = LoadOptions {
        precision: thinkwire_engine::mlx::Precision::Keep,
        batch_window: std::time::Duration::from_millis(400),
        // Progress then tells what was reused: 4 tokens a pass.
        prefill_chunk: 4,
        ..LoadOptions::default()
    };
    let cached = MlxEngine::load(
        &tiny("tiny-qwen3"),
        &LoadOptions {
            prefix_cache: true,
            ..options.clone()
        },
    )
    .unwrap();
    let fresh = MlxEngine::load(&tiny("tiny-qwen3"), &options).unwrap();
    run(
        &cached,
        &request(PROMPT.to_vec(), 2),
        &mut Script::default(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while cached.load().prefix_cache_bytes == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing kept");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let prompts: Vec<Vec<u32>> = (0..4u32)
        .map(|i| {
            let mut p = PROMPT[..20].to_vec();
            p.extend((0..5 + i).map(|j| 30 + 17 * i + 3 * j));
            p
        })
        .collect();
    let runs: Vec<Script> = std::thread::scope(|s| {
        let handles: Vec<_> = prompts
            .iter()
            .map(|p| {
                let (engine, req) = (&cached, request(p.clone(), 8));
                s.spawn(move || {
                    let mut sink = Script::default();
                    run(engine, &req, &mut sink);
                    sink
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (p, got) in prompts.iter().zip(&runs) {
        // Only the part after the kept 20 tokens was prefilled.
        assert_eq!(got.prefill[0].0, 24, "{:?}", got.prefill);
        let mut want = Script::default();
        run(&fresh, &request(p.clone(), 8), &mut want);
        assert_eq!(got.tokens, want.tokens);
    }
}
