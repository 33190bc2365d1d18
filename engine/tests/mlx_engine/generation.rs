//! Generation: chunked prefill, limits, stops, cancellation, forced
//! tokens, seeded sampling, and calls from any thread.

use super::*;

#[test]
fn chunked_prefill_matches_one_shot_and_reports_progress() {
    let whole = load("tiny-qwen3", 512);
    let chunked = load("tiny-qwen3", 5);
    let mut a = Script::default();
    let mut b = Script::default();
    run(&whole, &request(PROMPT.to_vec(), 24), &mut a);
    let stats = run(&chunked, &request(PROMPT.to_vec(), 24), &mut b);
    assert_eq!(a.tokens, b.tokens);
    assert_eq!(stats.prompt_tokens, PROMPT.len());
    assert_eq!(
        b.prefill,
        vec![(5, 23), (10, 23), (15, 23), (20, 23), (23, 23)]
    );
}

/// With the steps waited for (a CPU's way) and overlapped (a GPU's: the
/// next step queued on a token before its run has it).
#[test]
fn max_tokens_stop_and_cancellation() {
    for overlap in [false, true] {
        limits_stop_and_cancellation(Some(overlap));
    }
}

fn limits_stop_and_cancellation(overlap_steps: Option<bool>) {
    let load = |name: &str, chunk: usize| {
        load_with(
            name,
            LoadOptions {
                prefill_chunk: chunk,
                overlap_steps,
                ..LoadOptions::default()
            },
        )
    };
    let e = load("tiny-qwen2", 512);
    let mut s = Script::default();
    let stats = run(&e, &request(PROMPT.to_vec(), 10), &mut s);
    assert_eq!(stats.finish, Finish::Length);
    assert_eq!((s.tokens.len(), stats.generated_tokens), (10, 10));

    // A stop token ends generation and is not handed to the sink.
    let stop = s.tokens[4];
    let first = s.tokens.iter().position(|&t| t == stop).unwrap();
    let mut s2 = Script::default();
    let stats = run(
        &e,
        &GenerationRequest {
            stop_token_ids: vec![stop],
            ..request(PROMPT.to_vec(), 10)
        },
        &mut s2,
    );
    assert_eq!(stats.finish, Finish::StopToken(stop));
    assert_eq!(s2.tokens, s.tokens[..first]);

    let mut s3 = Script {
        stop_at: Some(3),
        ..Script::default()
    };
    let stats = run(&e, &request(PROMPT.to_vec(), 10), &mut s3);
    assert_eq!(stats.finish, Finish::Cancelled);
    assert_eq!(s3.tokens, s.tokens[..3]);

    let mut s4 = Script {
        cancel_prefill_after: Some(1),
        ..Script::default()
    };
    let stats = run(
        &load("tiny-qwen2", 8),
        &request(PROMPT.to_vec(), 10),
        &mut s4,
    );
    assert_eq!(stats.finish, Finish::Cancelled);
    assert!(s4.tokens.is_empty());
}

#[test]
fn forced_tokens_continue_as_if_generated() {
    // On the CPU's fused path, and on MLX's attention (`keep`, a GPU's
    // path), where the forced rows are written into the sequence's batch
    // slot in a pass of their own; there with the steps overlapped too
    // (the step queued on the token the run forces after is dropped).
    for (precision, overlap) in [
        (Precision::Auto, false),
        (Precision::Keep, false),
        (Precision::Keep, true),
    ] {
        let e = load_with(
            "tiny-llama3-untied",
            LoadOptions {
                precision,
                overlap_steps: Some(overlap),
                ..LoadOptions::default()
            },
        );
        let forced = vec![40u32, 41, 42];
        let mut s = Script {
            force_at: Some((2, forced.clone())),
            ..Script::default()
        };
        let stats = run(&e, &request(PROMPT.to_vec(), 12), &mut s);
        assert_eq!(stats.finish, Finish::Length);
        // 2 generated + 3 forced count towards max_tokens: 7 more generated.
        assert_eq!(s.tokens.len(), 9);

        // Same as a prompt that already contains those tokens.
        let mut prompt = PROMPT.to_vec();
        prompt.extend_from_slice(&s.tokens[..2]);
        prompt.extend_from_slice(&forced);
        let mut plain = Script::default();
        run(&e, &request(prompt, 7), &mut plain);
        assert_eq!(
            &s.tokens[2..],
            &plain.tokens[..],
            "{precision:?}, overlapped: {overlap}"
        );
    }
}

#[test]
fn seeded_sampling_is_reproducible() {
    let e = load("tiny-qwen3", 512);
    let sampled = |seed| {
        let mut s = Script::default();
        run(
            &e,
            &GenerationRequest {
                sampling: SamplingParams {
                    temperature: 1.5,
                    top_k: 50,
                    top_p: 0.95,
                    min_p: 0.01,
                    repetition_penalty: 1.1,
                    seed: Some(seed),
                    ..SamplingParams::greedy()
                },
                ..request(PROMPT.to_vec(), 16)
            },
            &mut s,
        );
        s.tokens
    };
    assert_eq!(sampled(1), sampled(1));
    assert_ne!(sampled(1), sampled(2));
}

#[test]
fn generates_from_other_threads_than_the_loading_one() {
    // Servers call `generate` from whichever blocking thread is free.
    let e = std::sync::Arc::new(load("tiny-qwen3", 512));
    let mut here = Script::default();
    run(&e, &request(PROMPT.to_vec(), 8), &mut here);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut s = Script::default();
                run(&e, &request(PROMPT.to_vec(), 8), &mut s);
                s.tokens
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), here.tokens);
    }
}
