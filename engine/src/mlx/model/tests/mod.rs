//! The step off the CPU's fused path: MLX's own rope (one operation,
//! each sequence from its own position) computes what the tables do, a
//! bf16 step stays bf16 end to end. `burst`: prompts in one padded batch
//! compute what each prompt alone does; `in_place`: the batch buffers are
//! written in place; `split`: decode rows and prompts in one pass;
//! `one_row`: one row multiplied by a wide layer's rows in blocks.

mod burst;
mod in_place;
mod one_row;
mod split;

use std::path::{Path, PathBuf};

use mlx_rs::{Array, Dtype};

use super::{Network, Segment};
use crate::mlx::kernels::Precision;

fn tiny(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn network(name: &str, precision: Precision) -> Network {
    let loaded = crate::mlx::load::load_hf_dir(&tiny(name)).unwrap();
    Network::build(&loaded.config, loaded.weights, precision).unwrap()
}

/// Prefills prompts of different lengths (so the sequences sit at
/// different positions), then runs one batched decode step; returns its
/// logits (`[sequences, vocab]`, f32) and the caches.
fn decode_after_prompts(
    model: &Network,
    prompts: &[usize],
) -> (Vec<f32>, Vec<Vec<super::KvCache>>) {
    let mut caches: Vec<_> = prompts.iter().map(|_| model.new_cache()).collect();
    for (i, (&len, c)) in prompts.iter().zip(caches.iter_mut()).enumerate() {
        let mut seg = [Segment {
            len: len as i32,
            caches: c,
            fork: None,
        }];
        model.forward(&prompt_ids(i, len), &mut seg, false).unwrap();
    }
    let logits = decode_step(model, &mut caches);
    (logits, caches)
}

/// One decode step after whatever `caches` hold, a token per sequence:
/// its logits (`[sequences, vocab]`, f32).
fn decode_step(model: &Network, caches: &mut [Vec<super::KvCache>]) -> Vec<f32> {
    let ids: Vec<i32> = (0..caches.len() as i32).map(|i| (3 + 5 * i) % 90).collect();
    let ids = Array::from_slice(&ids, &[1, ids.len() as i32]);
    let mut segments: Vec<Segment<'_>> = caches
        .iter_mut()
        .map(|c| Segment {
            len: 1,
            caches: c,
            fork: None,
        })
        .collect();
    let logits = model.forward(&ids, &mut segments, true).unwrap().unwrap();
    logits.eval().unwrap();
    logits.as_slice::<f32>().to_vec()
}

#[test]
fn mlx_rope_at_each_sequences_position_matches_the_tables() {
    // `F32` runs the CPU's fused path with the tables; `Bf16` would round,
    // so the same f32 weights under `Keep` (no packed weights to keep)
    // take MLX's operations and `fast::rope` from each cache's offset.
    for name in ["tiny-qwen3", "tiny-llama3-untied", "tiny-qwen3-yarn"] {
        let tables = network(name, Precision::F32);
        let rope = network(name, Precision::Keep);
        assert!(tables.blocks[0].attn.fused && !rope.blocks[0].attn.fused);
        let prompts = [5, 9, 2];
        let (want, _) = decode_after_prompts(&tables, &prompts);
        let (got, _) = decode_after_prompts(&rope, &prompts);
        assert_close(&format!("{name}: logits"), &want, &got);
    }
}

#[test]
fn a_bf16_step_keeps_bf16_keys_and_values() {
    // The f32 RoPE tables once widened q and k, and with them the cache
    // and every product after the first layer's attention, to f32.
    let model = network("tiny-qwen3", Precision::Bf16);
    let (logits, caches) = decode_after_prompts(&model, &[4, 7]);
    assert!(logits.iter().all(|l| l.is_finite()));
    for cache in caches.iter().flatten() {
        // In a batch slot: the layer's batch buffers.
        let arrays = cache.arrays();
        assert_eq!(arrays.len(), 2);
        for a in arrays {
            assert_eq!(a.dtype(), Dtype::Bfloat16);
        }
    }
}

/// `got` within 1e-3 of `want`, element by element.
fn assert_close(what: &str, want: &[f32], got: &[f32]) {
    assert_eq!(want.len(), got.len(), "{what}");
    let worst = want
        .iter()
        .zip(got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-3, "{what}: differ by {worst}");
}

/// Token ids of test prompt `i`, `len` long.
fn prompt_ids(i: usize, len: usize) -> Array {
    let ids: Vec<i32> = (0..len as i32)
        .map(|j| (11 + 13 * i as i32 + 7 * j) % 90)
        .collect();
    Array::from_slice(&ids, &[1, len as i32])
}

#[test]
fn a_bf16_mixture_of_experts_keeps_bf16_through_every_layer() {
    // bf16 weights run as stored (a GPU's default, `keep`) and f32 ones
    // asked to run in bf16: the experts, their biases and gpt-oss's clamp
    // constants must not widen a step to f32 after the first expert layer
    // (the cache of every later layer would then hold f32).
    for name in ["tiny-qwen3-moe", "tiny-gpt-oss"] {
        let mut loaded = crate::mlx::load::load_hf_dir(&tiny(name)).unwrap();
        let stored: Network = Network::build(
            &loaded.config,
            clone_weights(&loaded.weights),
            Precision::Bf16,
        )
        .unwrap();
        for t in loaded.weights.tensors.values_mut() {
            if t.dtype() == Dtype::Float32 {
                *t = t.as_dtype(Dtype::Bfloat16).unwrap();
            }
        }
        let kept = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
        for (how, model) in [("bf16", &stored), ("keep on bf16 weights", &kept)] {
            let (logits, caches) = decode_after_prompts(model, &[4, 7]);
            assert!(logits.iter().all(|l| l.is_finite()), "{name} {how}");
            for (layer, cache) in caches[0].iter().enumerate() {
                for a in cache.arrays() {
                    assert_eq!(a.dtype(), Dtype::Bfloat16, "{name} {how}: layer {layer}");
                }
            }
        }
    }
}

/// A second map over the same arrays (an MLX array clone shares its data).
fn clone_weights(w: &crate::mlx::load::WeightMap) -> crate::mlx::load::WeightMap {
    crate::mlx::load::WeightMap {
        tensors: w.tensors.clone(),
        source: w.source.clone(),
        quant: w.quant,
        quant_overrides: w.quant_overrides.clone(),
    }
}

#[test]
fn the_layers_that_keep_rows_in_batch_buffers_are_counted() {
    // The CPU's fused path keeps each sequence's rows in caches of its
    // own while its tables rotate every position; MLX's attention, a
    // sliding window or positions past the tables keep them in the
    // batch buffers, a slot per sequence at the longest one's length.
    let fused = network("tiny-qwen3", Precision::F32);
    let all = fused.cache_bytes_per_token();
    assert!(all > 0);
    assert_eq!(fused.batch_cache_bytes_per_token(512), 0);
    assert_eq!(
        fused.batch_cache_bytes_per_token(513),
        all,
        "past the tables"
    );
    let kept = network("tiny-qwen3", Precision::Keep);
    assert_eq!(
        kept.batch_cache_bytes_per_token(16),
        kept.cache_bytes_per_token()
    );
    let gemma = network("tiny-gemma3", Precision::F32);
    let windowed = gemma
        .blocks
        .iter()
        .filter(|b| b.attn.window.is_some())
        .count();
    assert!(windowed > 0 && windowed < gemma.blocks.len());
    assert_eq!(
        gemma.batch_cache_bytes_per_token(16),
        gemma.cache_bytes_per_token() / gemma.blocks.len() * windowed
    );
}
