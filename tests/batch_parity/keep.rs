//! Under `keep` (MLX's own operations, a GPU's path): prompts that
//! continue pooled caches, share a start or join a decoding batch give the
//! ids they give alone.

use super::*;

/// Under `keep` (MLX's own operations, a GPU's path) with the prefix cache
/// on: prompts that find their first two thirds in the pool continue those
/// caches in one padded pass together (`model/burst.rs`), written into the
/// batch slots from each cache's offset, and must give the ids they give
/// alone without the pool.
#[test]
fn prefix_cache_hits_prefilled_together_give_the_ids_they_give_alone() {
    let dir: PathBuf = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    let (max_tokens, cases) = cases("tiny-qwen3-chat-thinking-off.json", 4);
    let options = LoadOptions {
        precision: Precision::Keep,
        max_batch: 8,
        batch_window: std::time::Duration::from_millis(400),
        // Progress then tells what was reused: 4 tokens a pass.
        prefill_chunk: 4,
        ..LoadOptions::default()
    };
    let want = alone(
        &MlxEngine::load(&dir, &options).unwrap(),
        &cases,
        max_tokens,
    );
    let pooled = MlxEngine::load(
        &dir,
        &LoadOptions {
            prefix_cache: true,
            ..options
        },
    )
    .unwrap();
    let starts: Vec<Case> = cases
        .iter()
        .map(|c| Case {
            prompt_ids: c.prompt_ids[..c.prompt_ids.len() * 2 / 3].to_vec(),
            ..c.clone()
        })
        .collect();
    // Together, they finish in one step, kept after their runs are told.
    together(&pooled, &starts, 1, false);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pooled.load().prefix_cache_bytes == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the pool kept nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Each prompt's first progress: its kept start and a chunk.
    let runs: Vec<(Vec<u32>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|case| {
                let (engine, req) = (&pooled, request(&pooled, case, max_tokens));
                s.spawn(move || {
                    let mut sink = Progress::default();
                    engine.generate(&req, &mut sink).unwrap();
                    (sink.ids, sink.first.unwrap_or(0))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((case, start), (_, first)) in cases.iter().zip(&starts).zip(&runs) {
        assert!(
            *first > 4 && *first <= start.prompt_ids.len() + 4,
            "{}: first progress {first}: the pool was not used",
            case.name
        );
    }
    let got: Vec<Vec<u32>> = runs.into_iter().map(|(ids, _)| ids).collect();
    let mut compared = 0;
    for ((case, a), b) in cases.iter().zip(&want).zip(&got) {
        let limit = case.tie_free(NEAR_TIE).min(a.len());
        assert_eq!(
            &b[..limit.min(b.len())],
            &a[..limit],
            "{}: ids differ before the first near-tie (step {limit})",
            case.name
        );
        compared += limit;
    }
    assert!(compared >= 100, "only {compared} steps compared");
}

/// Under `keep` with `share_prefixes`: prompts with a common start of 24
/// tokens admitted together take it from the first one's rows in the same
/// padded pass (`model/burst.rs`, a fork read from the leader's slot), and
/// arriving later, copy it from the slot (`KvCache::fork_all`); they must
/// give the ids they give alone, without sharing, up to where the two runs
/// first part (these prompts have no reference gaps), over 90 % of their
/// tokens.
#[test]
fn shared_starts_prefilled_together_give_the_ids_they_give_alone() {
    let dir: PathBuf = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    let (max_tokens, mut cases) = cases("tiny-qwen3-chat-thinking-off.json", 4);
    let start: Vec<u32> = (0..24u32).map(|j| 200 + 37 * j).collect();
    for c in &mut cases {
        c.prompt_ids.splice(0..0, start.iter().copied());
    }
    let options = LoadOptions {
        precision: Precision::Keep,
        max_batch: 8,
        batch_window: std::time::Duration::from_millis(400),
        ..LoadOptions::default()
    };
    let want = alone(
        &MlxEngine::load(&dir, &options).unwrap(),
        &cases,
        max_tokens,
    );
    // The steps waited for (a CPU's way) and overlapped (a GPU's).
    for overlap in [false, true] {
        let sharing = MlxEngine::load(
            &dir,
            &LoadOptions {
                share_prefixes: true,
                overlap_steps: Some(overlap),
                ..options.clone()
            },
        )
        .unwrap();
        for (round, staggered) in [false, true].into_iter().enumerate() {
            let got = together(&sharing, &cases, max_tokens, staggered);
            let shared = sharing.load().shared_prompt_tokens;
            assert!(
                shared >= 3 * 24 * (round as u64 + 1),
                "only {shared} shared"
            );
            let same: Vec<usize> = want
                .iter()
                .zip(&got)
                .map(|(a, b)| a.iter().zip(b).take_while(|(x, y)| x == y).count())
                .collect();
            eprintln!(
                "overlapped {overlap}, staggered {staggered}: steps equal to the run alone: {same:?}"
            );
            let all = cases.len() * max_tokens;
            assert!(same.iter().sum::<usize>() * 10 >= all * 9, "{same:?}");
        }
    }
}

/// Under `keep` with the steps overlapped as on a GPU (the host reads a
/// step's tokens and builds the next step while the step runs): alone as
/// without, and in batches of 4 and 8 as alone (sharing prefixes so:
/// below).
#[test]
fn steps_overlapped_as_on_a_gpu_give_the_ids_they_give_alone() {
    let dir: PathBuf = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    // Each alone, overlapped or not: the same ids.
    let (max_tokens, cases) = cases("tiny-qwen3-chat-thinking-off.json", 4);
    let alone_with = |overlap| {
        let options = LoadOptions {
            precision: Precision::Keep,
            overlap_steps: Some(overlap),
            ..LoadOptions::default()
        };
        alone(
            &MlxEngine::load(&dir, &options).unwrap(),
            &cases,
            max_tokens,
        )
    };
    assert_eq!(alone_with(true), alone_with(false));
    check_with_sharing(
        &dir,
        "tiny-qwen3-chat-thinking-off.json",
        150,
        Some(NEAR_TIE),
        LoadOptions {
            precision: Precision::Keep,
            overlap_steps: Some(true),
            ..LoadOptions::default()
        },
        false,
    );
}

/// Under `keep` (a GPU's path), prompts joining a running batch are
/// prefilled in the pass that decodes it (`Split`): every generation, the
/// running one too, gives the ids it gives alone.
#[test]
fn prompts_joining_a_decoding_batch_under_keep_give_the_ids_they_give_alone() {
    let dir: PathBuf = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    let (max_tokens, cases) = cases("tiny-qwen3-chat-thinking-off.json", 4);
    let options = LoadOptions {
        precision: Precision::Keep,
        ..LoadOptions::default()
    };
    let engine = MlxEngine::load(&dir, &options).unwrap();
    let want = alone(&engine, &cases, max_tokens);
    let got = together(&engine, &cases, max_tokens, true);
    let mut compared = 0;
    for ((case, a), b) in cases.iter().zip(&want).zip(&got) {
        let limit = case.tie_free(NEAR_TIE).min(a.len());
        assert_eq!(&b[..limit.min(b.len())], &a[..limit], "{}", case.name);
        compared += limit;
    }
    assert!(compared >= 150, "only {compared} steps compared");
}
