//! A pass that decodes some sequences and prefills others (`Split`)
//! computes what a decode step and a prefill pass compute one after the
//! other, writes the batch buffers in place, and leaves the step after it
//! the same caches.

use mlx_rs::Array;

use super::super::{Fork, KvCache, Network, Segment, decoding_head, join_ids};
use super::{assert_close, decode_step, network, prompt_ids};
use crate::mlx::kernels::Precision;

/// What one sequence feeds in the pass.
#[derive(Clone, Copy)]
enum Feed {
    /// One token after a prompt of this many (prefilled alone, then one
    /// decode step with the others that decode, so it sits in its slot).
    Decode(usize),
    /// As `Decode`, then `len` tokens in the pass: forced tokens of a
    /// constrained answer.
    Forced { prompt: usize, len: usize },
    /// A prompt of `len` tokens after `cached` of its own (prefilled
    /// alone first).
    Prompt { cached: usize, len: usize },
    /// A prompt of `len` tokens whose first `at` are the prompt of the
    /// sequence `from`'s (which writes them in this pass).
    Shared { from: usize, at: usize, len: usize },
}

/// The token ids sequence `i` feeds: its own, or the start it shares
/// followed by its own.
fn ids_of(feeds: &[Feed], i: usize) -> Vec<i32> {
    let own = |seed: usize, len: usize| -> Vec<i32> {
        (0..len as i32)
            .map(|j| (11 + 13 * seed as i32 + 7 * j) % 90)
            .collect()
    };
    match feeds[i] {
        Feed::Decode(_) => vec![(5 + 3 * i as i32) % 90],
        Feed::Forced { len, .. } => own(i + 30, len),
        Feed::Prompt { cached, len } => own(i, cached + len),
        Feed::Shared { from, at, len } => {
            let mut ids = ids_of(feeds, from)[..at].to_vec();
            ids.extend(own(i + 20, len));
            ids
        }
    }
}

/// The caches after the set-up of `feeds`, then the pass: in one forward
/// (`together`) or a decode step of the `Decode` ones and a prefill pass
/// of the rest. Returns the pass's last logits (`[sequences, vocab]`)
/// and the caches.
fn run(model: &Network, feeds: &[Feed], together: bool) -> (Vec<f32>, Vec<Vec<KvCache>>) {
    let mut caches: Vec<_> = feeds.iter().map(|_| model.new_cache()).collect();
    for (i, c) in caches.iter_mut().enumerate() {
        let (seed, len) = match feeds[i] {
            Feed::Decode(prompt) | Feed::Forced { prompt, .. } => (i + 40, prompt),
            Feed::Prompt { cached, .. } => (i, cached),
            Feed::Shared { .. } => continue,
        };
        if len > 0 {
            let ids = match feeds[i] {
                Feed::Prompt { .. } => {
                    Array::from_slice(&ids_of(feeds, i)[..len], &[1, len as i32])
                }
                _ => prompt_ids(seed, len),
            };
            let mut seg = [Segment {
                len: len as i32,
                caches: c,
                fork: None,
            }];
            model.forward(&ids, &mut seg, false).unwrap();
        }
    }
    let decoding: Vec<usize> = (0..feeds.len())
        .filter(|&i| matches!(feeds[i], Feed::Decode(_) | Feed::Forced { .. }))
        .collect();
    let decode_rows: Vec<usize> = (0..feeds.len())
        .filter(|&i| matches!(feeds[i], Feed::Decode(_)))
        .collect();
    {
        // Into their slots, as a decoding sequence is.
        let ids: Vec<i32> = decoding.iter().map(|&i| (7 + i as i32) % 90).collect();
        let ids = Array::from_slice(&ids, &[1, ids.len() as i32]);
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| decoding.contains(i))
            .map(|(_, c)| Segment {
                len: 1,
                caches: c,
                fork: None,
            })
            .collect();
        let logits = model.forward(&ids, &mut segments, true).unwrap().unwrap();
        logits.eval().unwrap();
    }
    let groups: Vec<Vec<usize>> = match together {
        true => vec![(0..feeds.len()).collect()],
        false => {
            let rest = (0..feeds.len())
                .filter(|i| !decode_rows.contains(i))
                .collect();
            vec![decode_rows.clone(), rest]
        }
    };
    let mut logits = vec![Vec::new(); feeds.len()];
    for group in groups {
        let mut segments = Vec::new();
        let mut ids = Vec::new();
        for (i, c) in caches.iter_mut().enumerate() {
            if !group.contains(&i) {
                continue;
            }
            let all = ids_of(feeds, i);
            let (skip, fork) = match feeds[i] {
                Feed::Decode(_) | Feed::Forced { .. } => (0, None),
                Feed::Prompt { cached, .. } => (cached, None),
                Feed::Shared { from, at, .. } => {
                    let from = group.iter().position(|&g| g == from).unwrap();
                    (
                        at,
                        Some(Fork {
                            from,
                            at: at as i32,
                        }),
                    )
                }
            };
            let rest = &all[skip..];
            ids.extend_from_slice(rest);
            segments.push(Segment {
                len: rest.len() as i32,
                caches: c,
                fork,
            });
        }
        let ids = Array::from_slice(&ids, &[1, ids.len() as i32]);
        let out = model.forward(&ids, &mut segments, true).unwrap().unwrap();
        let mut queued = model.batch_arrays();
        queued.push(out.clone());
        mlx_rs::transforms::eval(queued.iter()).unwrap();
        let vocab = out.shape()[1] as usize;
        for (row, &i) in group.iter().enumerate() {
            logits[i] = out.as_slice::<f32>()[row * vocab..(row + 1) * vocab].to_vec();
        }
    }
    (logits.concat(), caches)
}

/// For each model and precision: `feeds` in one pass computes what the
/// decode step and the prefill pass do, and so does the step after.
fn alike(models: &[(&str, Precision)], feeds: &[Feed]) {
    for &(name, precision) in models {
        let two = network(name, precision);
        let one = network(name, precision);
        let (want, mut want_caches) = run(&two, feeds, false);
        let (got, mut got_caches) = run(&one, feeds, true);
        assert_close(&format!("{name} {precision:?}: the pass"), &want, &got);
        // The prompts went as one padded batch: the layers that take one
        // left every cache in its slot (per segment, a prompt's cache
        // leaves it).
        for (i, c) in got_caches.iter().enumerate() {
            for (l, block) in one.blocks.iter().enumerate() {
                if block.attn.takes_bursts() {
                    assert!(c[l].in_batch(), "{name}: sequence {i}, layer {l}");
                }
            }
        }
        let want = decode_step(&two, &mut want_caches);
        let got = decode_step(&one, &mut got_caches);
        assert_close(
            &format!("{name} {precision:?}: the step after"),
            &want,
            &got,
        );
    }
}

const MODELS: [(&str, Precision); 7] = [
    ("tiny-qwen3", Precision::Keep),
    ("tiny-llama3-untied", Precision::Keep),
    ("tiny-qwen3-4bit", Precision::Keep),
    ("tiny-gemma3", Precision::Keep),
    ("tiny-gpt-oss", Precision::Keep),
    // The CPU's fused path; gemma's windows and gpt-oss's sinks keep MLX's
    // attention on some layers there.
    ("tiny-qwen3", Precision::F32),
    ("tiny-gemma3", Precision::F32),
];

#[test]
fn decode_rows_beside_prompts_compute_what_the_two_passes_do() {
    // Two sequences decode while a fresh prompt starts and another
    // continues rows of its own (a long prompt's next chunk, a prefix-
    // cache hit): one forward reads the weights once for both.
    let feeds = [
        Feed::Decode(5),
        Feed::Decode(9),
        Feed::Prompt { cached: 0, len: 7 },
        Feed::Prompt { cached: 4, len: 6 },
    ];
    alike(&MODELS, &feeds);
    // Fresh prompts only: they enter new slots after the decode rows'
    // write (`enter_burst`), which the decode rows' read leaves out.
    let fresh = [
        Feed::Decode(4),
        Feed::Decode(8),
        Feed::Prompt { cached: 0, len: 7 },
        Feed::Prompt { cached: 0, len: 5 },
    ];
    alike(&MODELS, &fresh);
    // A one-token prompt beside a decode row is a decode step of two.
    alike(
        &MODELS[..3],
        &[Feed::Decode(3), Feed::Prompt { cached: 0, len: 1 }],
    );
}

#[test]
fn forced_tokens_and_decode_rows_among_prompts_compute_what_the_two_passes_do() {
    // Forced tokens continue a cache in its batch slot (on gemma's window
    // layers the prompts' part takes it out of its slot), and a decode
    // row after them goes with the prompts.
    let feeds = [
        Feed::Decode(5),
        Feed::Forced { prompt: 6, len: 3 },
        Feed::Decode(9),
        Feed::Prompt { cached: 0, len: 7 },
    ];
    alike(&MODELS, &feeds);
}

#[test]
fn decode_rows_beside_prompts_that_share_a_start_compute_what_the_two_passes_do() {
    // `--share-prefixes`: the prompts' forks are numbered in the whole
    // pass, after the decode rows.
    let feeds = [
        Feed::Decode(6),
        Feed::Prompt { cached: 0, len: 12 },
        Feed::Shared {
            from: 1,
            at: 8,
            len: 5,
        },
        Feed::Decode(4),
    ];
    alike(&MODELS, &feeds);
}

#[test]
fn forced_tokens_beside_decode_rows_write_the_batch_buffers_in_place() {
    // A constrained sequence's forced tokens continue its cache in its
    // slot while the others decode: the decode rows' writes, then the
    // forced rows' write, then the reads. Were the decode rows read
    // before the forced rows were written, MLX would copy every layer's
    // buffers whole to write them.
    use crate::mlx::kernels::indexed::buffer_address;
    let model = network("tiny-qwen3", Precision::Keep);
    let feeds = [Feed::Decode(5), Feed::Decode(9), Feed::Decode(3)];
    let (_, mut caches) = run(&model, &feeds, true);
    let addresses = |model: &Network| -> Vec<usize> {
        model.batch_arrays().iter().map(buffer_address).collect()
    };
    let before = addresses(&model);
    assert!(before.iter().all(|&a| a != 0));
    let (first, rest) = caches.split_at_mut(2);
    let (a, b) = first.split_at_mut(1);
    let mut segments = [
        Segment {
            len: 1,
            caches: &mut a[0],
            fork: None,
        },
        Segment {
            len: 1,
            caches: &mut b[0],
            fork: None,
        },
        Segment {
            len: 4,
            caches: &mut rest[0],
            fork: None,
        },
    ];
    let ids = join_ids(vec![
        Array::from_slice(&[4], &[1, 1]),
        Array::from_slice(&[8], &[1, 1]),
        prompt_ids(2, 4),
    ])
    .unwrap();
    let logits = model.forward(&ids, &mut segments, true).unwrap().unwrap();
    let mut queued = model.batch_arrays();
    queued.push(logits);
    mlx_rs::transforms::eval(queued.iter()).unwrap();
    drop(queued);
    assert_eq!(addresses(&model), before);
    assert!(caches.iter().flatten().all(KvCache::in_batch));
}

#[test]
fn the_decode_rows_are_those_before_the_prompts_and_their_sources() {
    let mut caches: Vec<Vec<KvCache>> = (0..5).map(|_| Vec::new()).collect();
    let heads = |lens: &[i32], forks: &[Option<usize>], caches: &mut [Vec<KvCache>]| {
        let segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .zip(lens.iter().zip(forks))
            .map(|(c, (&len, &from))| Segment {
                len,
                caches: c,
                fork: from.map(|from| Fork { from, at: 2 }),
            })
            .collect();
        decoding_head(&segments)
    };
    assert_eq!(heads(&[1, 1, 5, 3, 1], &[None; 5], &mut caches), 2);
    // Only decode rows, or only prompts: no split.
    assert_eq!(heads(&[1, 1, 1, 1, 1], &[None; 5], &mut caches), 0);
    assert_eq!(heads(&[4, 1, 1, 1, 1], &[None; 5], &mut caches), 0);
    // A prompt that shares the start of a one-row segment: that segment
    // goes with the prompts.
    let forks = [None, None, None, Some(1), None];
    assert_eq!(heads(&[1, 1, 1, 3, 2], &forks, &mut caches), 1);
    let forks = [None, None, Some(1), Some(2), None];
    assert_eq!(heads(&[1, 1, 4, 3, 2], &forks, &mut caches), 1);
}
