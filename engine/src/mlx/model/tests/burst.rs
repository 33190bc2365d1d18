//! A burst of prompts in one padded batch (`model/burst.rs`), fresh,
//! after cached rows, sharing a start or cut into pieces, computes what
//! each prompt alone does, and the step after it too.

use mlx_rs::Array;

use super::super::{Network, Segment, join_ids};
use super::{assert_close, decode_after_prompts, decode_step, network, prompt_ids};
use crate::mlx::kernels::Precision;

/// Test prompt `i` of `prompts[i]` tokens after whatever `caches[i]`
/// holds: in one pass for all (`together`) or a pass each; the passes'
/// last logits, `[prompts, vocab]`.
fn prompt_passes(
    model: &Network,
    caches: &mut [Vec<super::super::KvCache>],
    prompts: &[usize],
    together: bool,
) -> Vec<f32> {
    let groups: Vec<Vec<usize>> = match together {
        true => vec![(0..prompts.len()).collect()],
        false => (0..prompts.len()).map(|i| vec![i]).collect(),
    };
    let mut first = Vec::new();
    for group in &groups {
        let ids = join_ids(group.iter().map(|&i| prompt_ids(i, prompts[i])).collect()).unwrap();
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| group.contains(i))
            .map(|(i, c)| Segment {
                len: prompts[i] as i32,
                caches: c,
                fork: None,
            })
            .collect();
        let logits = model.forward(&ids, &mut segments, true).unwrap().unwrap();
        logits.eval().unwrap();
        first.extend_from_slice(logits.as_slice::<f32>());
    }
    first
}

/// The logits of one pass over `segments` and of one decode step after
/// it (a token per segment), each `[segments, vocab]`.
fn pass_then_step(model: &Network, prompts: &[usize], together: bool) -> (Vec<f32>, Vec<f32>) {
    let mut caches: Vec<_> = prompts.iter().map(|_| model.new_cache()).collect();
    let first = prompt_passes(model, &mut caches, prompts, together);
    (first, decode_step(model, &mut caches))
}

#[test]
fn a_burst_of_fresh_prompts_computes_what_each_prompt_alone_does() {
    // Three prompts of different lengths in one pass go as one padded
    // batch on MLX's attention (`burst.rs`): each must get the logits and
    // the cache (read by the decode step after) it gets alone.
    let prompts = [5, 9, 7];
    assert!(
        super::super::Burst::new(&[0; 3], &[5, 9, 7], &[None; 3])
            .unwrap()
            .is_some()
    );
    for name in [
        "tiny-qwen3",
        "tiny-llama3-untied",
        "tiny-qwen3-4bit",
        "tiny-gemma3",
    ] {
        let model = network(name, Precision::Keep);
        assert!(model.blocks.iter().any(|b| b.attn.takes_bursts()), "{name}");
        let (alone_first, alone_step) = pass_then_step(&model, &prompts, false);
        let (first, step) = pass_then_step(&model, &prompts, true);
        assert_close(
            &format!("{name}: the prompts' logits"),
            &alone_first,
            &first,
        );
        assert_close(&format!("{name}: the step after"), &alone_step, &step);
    }
}

/// Caches holding `prefixes[i]` positions (prefilled alone; `decoded`: then
/// one batched decode step, so they sit in the batch slots), then one pass
/// of `prompts[i]` new rows for every sequence (`together`) or a pass per
/// sequence, then a decode step: the pass's last logits and the step's.
fn continue_then_step(
    model: &Network,
    prefixes: &[usize],
    prompts: &[usize],
    decoded: bool,
    together: bool,
) -> (Vec<f32>, Vec<f32>, Vec<Vec<bool>>) {
    let mut caches: Vec<_> = prefixes.iter().map(|_| model.new_cache()).collect();
    for (i, (&len, c)) in prefixes.iter().zip(caches.iter_mut()).enumerate() {
        if len > 0 {
            let mut seg = [Segment {
                len: len as i32,
                caches: c,
                fork: None,
            }];
            model
                .forward(&prompt_ids(i + 7, len), &mut seg, false)
                .unwrap();
        }
    }
    if decoded {
        decode_step(model, &mut caches);
    }
    let first = prompt_passes(model, &mut caches, prompts, together);
    // Which (sequence, layer) caches the pass left in a batch slot.
    let slotted = caches
        .iter()
        .map(|c| c.iter().map(super::super::KvCache::in_batch).collect())
        .collect();
    let step = decode_step(model, &mut caches);
    (first, step, slotted)
}

#[test]
fn prompts_after_cached_rows_in_one_pass_compute_what_each_alone_does() {
    // A prefix-cache hit, a long prompt's next chunk, forced tokens: rows
    // that continue a cache go as one padded batch too, written into the
    // batch slots from each cache's offset and attending them
    // (`BatchCache::prefill`). Each sequence must get the logits and the
    // cache it gets alone: beside a fresh prompt, after caches of their
    // own and after caches already in the batch slots.
    let prompts = [5, 9, 7];
    for (prefixes, decoded) in [([4, 0, 11], false), ([4, 2, 11], true)] {
        for name in [
            "tiny-qwen3",
            "tiny-llama3-untied",
            "tiny-qwen3-4bit",
            "tiny-gemma3",
            "tiny-gpt-oss",
        ] {
            let model = network(name, Precision::Keep);
            let (alone_first, alone_step, _) =
                continue_then_step(&model, &prefixes, &prompts, decoded, false);
            let (first, step, slotted) =
                continue_then_step(&model, &prefixes, &prompts, decoded, true);
            assert_close(
                &format!("{name} {prefixes:?}: the prompts' logits"),
                &alone_first,
                &first,
            );
            assert_close(
                &format!("{name} {prefixes:?}: the step after"),
                &alone_step,
                &step,
            );
            // The pass went as a burst: its layers' caches are in slots
            // (a prompt alone takes its rows out into buffers of its own).
            let bursting: Vec<usize> = (0..model.blocks.len())
                .filter(|&l| model.blocks[l].attn.takes_bursts())
                .collect();
            assert!(!bursting.is_empty(), "{name}");
            for (i, layers) in slotted.iter().enumerate() {
                for &l in &bursting {
                    assert!(layers[l], "{name}: sequence {i}, layer {l}");
                }
            }
        }
    }
}

/// The last logits of each prompt of `prompts` (ids) and of one decode
/// step after: prefilled one by one from empty caches, or in one pass
/// where prompt `i` with `forks[i]` takes its first `at` positions from
/// prompt `from` (and holds only the rest), beside a prompt continuing a
/// cache of its own (`cached[i]` positions prefilled alone first).
fn shared_then_step(
    model: &Network,
    prompts: &[Vec<i32>],
    cached: &[usize],
    forks: &[Option<super::super::Fork>],
    together: bool,
) -> (Vec<f32>, Vec<f32>) {
    let mut caches: Vec<_> = prompts.iter().map(|_| model.new_cache()).collect();
    let ids = |p: &[i32]| Array::from_slice(p, &[1, p.len() as i32]);
    let mut first = Vec::new();
    if !together {
        for (p, c) in prompts.iter().zip(caches.iter_mut()) {
            let mut seg = [Segment {
                len: p.len() as i32,
                caches: c,
                fork: None,
            }];
            let logits = model.forward(&ids(p), &mut seg, true).unwrap().unwrap();
            logits.eval().unwrap();
            first.extend_from_slice(logits.as_slice::<f32>());
        }
        return (first, decode_step(model, &mut caches));
    }
    for ((p, c), &n) in prompts.iter().zip(caches.iter_mut()).zip(cached) {
        if n > 0 {
            let mut seg = [Segment {
                len: n as i32,
                caches: c,
                fork: None,
            }];
            model.forward(&ids(&p[..n]), &mut seg, false).unwrap();
        }
    }
    let mut all = Vec::new();
    let mut segments: Vec<Segment<'_>> = caches
        .iter_mut()
        .enumerate()
        .map(|(i, c)| {
            let skip = forks[i].map_or(cached[i], |f| f.at as usize);
            let rest = &prompts[i][skip..];
            all.extend_from_slice(rest);
            Segment {
                len: rest.len() as i32,
                caches: c,
                fork: forks[i],
            }
        })
        .collect();
    let logits = model
        .forward(&ids(&all), &mut segments, true)
        .unwrap()
        .unwrap();
    logits.eval().unwrap();
    first.extend_from_slice(logits.as_slice::<f32>());
    drop(segments);
    // It went as one padded pass: the layers that take one left every
    // cache in its batch slot.
    for (i, c) in caches.iter().enumerate() {
        for (l, block) in model.blocks.iter().enumerate() {
            if block.attn.takes_bursts() {
                assert!(
                    c[l].in_batch(),
                    "prompt {i}, layer {l}: not in a padded pass"
                );
            }
        }
    }
    (first, decode_step(model, &mut caches))
}

/// For each model of `names` under `keep`: [`shared_then_step`] in one
/// pass computes what it does prompt by prompt.
fn shared_alike(
    names: &[&str],
    prompts: &[Vec<i32>],
    cached: &[usize],
    forks: &[Option<super::super::Fork>],
) {
    for name in names {
        let model = network(name, Precision::Keep);
        let (want_first, want_step) = shared_then_step(&model, prompts, cached, forks, false);
        let (first, step) = shared_then_step(&model, prompts, cached, forks, true);
        assert_close(&format!("{name}: the prompts' logits"), &want_first, &first);
        assert_close(&format!("{name}: the step after"), &want_step, &step);
    }
}

#[test]
fn a_long_prompt_cut_into_pieces_computes_what_it_does_alone() {
    // A prompt of 200 rows beside three of 40 would pad them all to 200:
    // it goes as pieces of 100 (`Burst::new`), the second attending the
    // first's keys from the batch slot. Here the others share its first
    // 190 positions (`--share-prefixes` behind a long system prompt) or
    // continue a cache of their own.
    let long: Vec<i32> = (0..200).map(|j| (3 + 7 * j) % 90).collect();
    let own = |seed: i32, len: i32| (0..len).map(move |j| (seed + 11 * j) % 90);
    let follower = |seed| long[..190].iter().copied().chain(own(seed, 40)).collect();
    let prompts = [
        long.clone(),
        follower(5),
        follower(9),
        own(30, 52).collect(),
    ];
    let fork = |from, at| Some(super::super::Fork { from, at });
    let forks = [None, fork(0, 190), fork(0, 190), None];
    let cached = [0, 0, 0, 12];
    let lens = [200, 40, 40, 40];
    let burst = super::super::Burst::new(&[0, 190, 190, 12], &lens, &forks)
        .unwrap()
        .unwrap();
    assert!(burst.cut() && burst.pieces.len() == 5);
    shared_alike(
        &["tiny-qwen3", "tiny-qwen3-4bit", "tiny-gemma3"],
        &prompts,
        &cached,
        &forks,
    );
}

#[test]
fn shared_starts_in_one_pass_compute_what_each_prompt_alone_does() {
    // `--share-prefixes`: prompts admitted together take their common
    // start from the one that writes it in this pass. On MLX's attention
    // the pass stays one padded batch: prompt 1 shares prompt 0's first 8
    // positions, prompt 2 prompt 1's first 10 (8 of them prompt 0's),
    // prompt 3 continues a cache of its own, prompt 4 is fresh.
    let base: Vec<i32> = (0..14).map(|j| (5 + 7 * j) % 90).collect();
    let own = |seed: i32, len: i32| (0..len).map(move |j| (seed + 11 * j) % 90);
    let p1: Vec<i32> = base[..8].iter().copied().chain(own(3, 6)).collect();
    let p2: Vec<i32> = p1[..10].iter().copied().chain(own(8, 3)).collect();
    let prompts = [
        base.clone(),
        p1,
        p2,
        own(21, 12).collect(),
        own(40, 9).collect(),
    ];
    let fork = |from, at| Some(super::super::Fork { from, at });
    let forks = [None, fork(0, 8), fork(1, 10), None, None];
    let cached = [0, 0, 0, 5, 0];
    shared_alike(
        &[
            "tiny-qwen3",
            "tiny-llama3-untied",
            "tiny-qwen3-4bit",
            "tiny-gemma3",
            "tiny-gpt-oss",
        ],
        &prompts,
        &cached,
        &forks,
    );
}

#[test]
fn a_burst_into_free_slots_computes_what_each_prompt_alone_does() {
    // A sequence that finished leaves a free slot: a burst of fresh
    // prompts then writes its rows into it (and a new one) in the pass
    // itself (`BatchCache::prefill`), beside sequences still decoding.
    // One that finished in the last slot leaves it in the buffers,
    // unattended, for the burst's first prompt (`enter_burst`).
    for (name, leaving) in [
        ("tiny-qwen3", 1),
        ("tiny-qwen3-4bit", 1),
        ("tiny-gemma3", 1),
        ("tiny-qwen3", 2),
    ] {
        let busy = network(name, Precision::Keep);
        let (_, mut others) = decode_after_prompts(&busy, &[4, 6, 5]);
        drop(others.remove(leaving));
        let clean = network(name, Precision::Keep);
        let prompts = [5, 9, 7];
        let (want_first, want_step) = pass_then_step(&clean, &prompts, false);
        let (first, step) = pass_then_step(&busy, &prompts, true);
        let case = format!("{name}, slot {leaving} left");
        assert_close(&format!("{case}: the prompts' logits"), &want_first, &first);
        assert_close(&format!("{case}: the step after"), &want_step, &step);
        // The others decode on as they would have without the burst.
        let quiet = network(name, Precision::Keep);
        let (_, mut alone) = decode_after_prompts(&quiet, &[4, 6, 5]);
        drop(alone.remove(leaving));
        let want = decode_step(&quiet, &mut alone);
        let got = decode_step(&busy, &mut others);
        assert_close(&format!("{case}: the others' step"), &want, &got);
    }
}

#[test]
fn prompts_after_cached_rows_beside_a_slot_left_at_the_end_compute_what_each_alone_does() {
    // The buffers keep the slot a finished sequence left at the end: the
    // burst then reads its prompts' slots `0..N` as a slice of them.
    let model = network("tiny-qwen3", Precision::Keep);
    let (_, mut caches) = decode_after_prompts(&model, &[4, 6, 5]);
    drop(caches.pop());
    let first = prompt_passes(&model, &mut caches, &[5, 9], true);
    let step = decode_step(&model, &mut caches);
    let quiet = network("tiny-qwen3", Precision::Keep);
    let (_, mut alone) = decode_after_prompts(&quiet, &[4, 6, 5]);
    drop(alone.pop());
    let want_first = prompt_passes(&quiet, &mut alone, &[5, 9], false);
    let want_step = decode_step(&quiet, &mut alone);
    assert_close("the prompts' logits", &want_first, &first);
    assert_close("the step after", &want_step, &step);
}

#[test]
fn a_lone_prompt_after_a_cache_in_its_slot_computes_what_it_does_outside() {
    // Forced tokens of a decoding sequence: rows after a cache held in a
    // batch slot, alone in their pass. They go as a burst of one and the
    // cache stays in its slot; taken out of it first, they go per
    // segment. Both must give the same logits, and so must the decode
    // step after, for that sequence and the one beside it.
    // gpt-oss's sink layers take MLX's attention on the CPU's fused path
    // too.
    for (name, precision) in [
        ("tiny-qwen3", Precision::Keep),
        ("tiny-llama3-untied", Precision::Keep),
        ("tiny-qwen3-4bit", Precision::Keep),
        ("tiny-gemma3", Precision::Keep),
        ("tiny-gpt-oss", Precision::Keep),
        ("tiny-gpt-oss", Precision::F32),
    ] {
        let model = network(name, precision);
        let bursting: Vec<usize> = (0..model.blocks.len())
            .filter(|&l| model.blocks[l].attn.takes_bursts())
            .collect();
        assert!(!bursting.is_empty(), "{name}");
        let run = |taken_out: bool| -> (Vec<f32>, Vec<f32>, bool) {
            let (_, mut caches) = decode_after_prompts(&model, &[6, 9]);
            if taken_out {
                for c in caches[1].iter_mut() {
                    c.detach().unwrap();
                }
            }
            let mut pass = [Segment {
                len: 5,
                caches: &mut caches[1],
                fork: None,
            }];
            let logits = model
                .forward(&prompt_ids(3, 5), &mut pass, true)
                .unwrap()
                .unwrap();
            logits.eval().unwrap();
            let first = logits.as_slice::<f32>().to_vec();
            let slotted = bursting.iter().all(|&l| caches[1][l].in_batch());
            (first, decode_step(&model, &mut caches), slotted)
        };
        let (alone_first, alone_step, left) = run(true);
        let (first, step, stayed) = run(false);
        assert!(!left && stayed, "{name}: the cache stays in its slot");
        assert_close(&format!("{name}: the rows' logits"), &alone_first, &first);
        assert_close(&format!("{name}: the step after"), &alone_step, &step);
    }
}
