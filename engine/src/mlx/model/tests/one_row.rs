//! A one-row input multiplied by a wide quantized layer's rows in blocks
//! (`Linear::split_one_row`, what MLX's CUDA backend runs as
//! matrix-vector products) computes what one call does.

use super::*;

/// The tiny 4-bit Qwen3 under `keep` (MLX's quantized matmul), its
/// layers wider than 64 rows split for one row: q/k/v (64 + 32 + 32) at
/// its parts, gate/up (64 + 64) at gate's end, the tied output layer's
/// 256 rows in four.
#[test]
fn one_sequence_decodes_through_row_blocks_as_through_one_call() {
    let whole = network("tiny-qwen3-4bit", Precision::Keep);
    let mut split = network("tiny-qwen3-4bit", Precision::Keep);
    split.split_one_row(64).unwrap();
    let summary = split.weight_summary();
    for blocks in [
        "one row in 3 blocks",
        "one row in 2 blocks",
        "one row in 4 blocks",
    ] {
        assert!(summary.contains(blocks), "{blocks}: {summary}");
    }
    assert!(!whole.weight_summary().contains("blocks"));
    // One sequence: each decode step is one row; its prompt is not.
    for prompt in [1, 6] {
        let (want, mut want_caches) = decode_after_prompts(&whole, &[prompt]);
        let (got, mut got_caches) = decode_after_prompts(&split, &[prompt]);
        assert_close(&format!("after {prompt}: logits"), &want, &got);
        let (want, got) = (
            decode_step(&whole, &mut want_caches),
            decode_step(&split, &mut got_caches),
        );
        assert_close(&format!("after {prompt}, a step on: logits"), &want, &got);
    }
    // Several rows take the one call.
    let (want, _) = decode_after_prompts(&whole, &[3, 5]);
    let (got, _) = decode_after_prompts(&split, &[3, 5]);
    assert_eq!(want, got);
}

/// The tiny 4-bit gpt-oss: its attention's biased q/k/v and output
/// projections split with their biases' columns (the experts take their
/// own gathered product, not split).
#[test]
fn biased_layers_split_with_their_biases() {
    let whole = network("tiny-gpt-oss-4bit", Precision::Keep);
    let mut split = network("tiny-gpt-oss-4bit", Precision::Keep);
    split.split_one_row(64).unwrap();
    let summary = split.weight_summary();
    assert!(summary.contains("blocks"), "{summary}");
    let (want, mut want_caches) = decode_after_prompts(&whole, &[5]);
    let (got, mut got_caches) = decode_after_prompts(&split, &[5]);
    assert_close("gpt-oss logits", &want, &got);
    let want = decode_step(&whole, &mut want_caches);
    let got = decode_step(&split, &mut got_caches);
    assert_close("gpt-oss logits, a step on", &want, &got);
}

/// Only layers wider than the limit are split, and only those on MLX's
/// quantized matmul.
#[test]
fn narrow_and_dense_layers_stay_one_call() {
    let mut narrow = network("tiny-qwen3-4bit", Precision::Keep);
    narrow.split_one_row(256).unwrap();
    assert!(!narrow.weight_summary().contains("blocks"));
    let mut dense = network("tiny-qwen3", Precision::Keep);
    dense.split_one_row(64).unwrap();
    assert!(!dense.weight_summary().contains("blocks"));
}
