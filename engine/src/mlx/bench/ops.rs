//! MLX operations per decode step: the graph one batched step builds
//! (forward pass, greedy pick, cache writes), counted before it runs. On a
//! GPU each is a kernel launch, so a step whose count grows with the number
//! of sequences N stops scaling; on any machine the count can be read, so
//! it is tracked where no GPU is lent (issue #33: mlx-lm's step is ~3,468
//! operations on SmolLM2-135M whatever N).

use std::path::Path;

use mlx_rs::Array;

use super::super::kernels::graph::count_operations;
use super::super::model::{Network, Segment};
use super::super::{LoadOptions, load_network};
use crate::EngineError;
use crate::mlx::error::mlx_err;

/// Prompt positions each sequence holds before the counted step.
const PROMPT: i32 = 16;

/// Operations in a decode step of `n` sequences (their second, each
/// cache at [`PROMPT`] + 1 positions), as the scheduler builds it: the
/// forward pass, the greedy picks and the cache arrays it evaluates with
/// them.
pub(crate) fn decode_step_operations(model: &Network, n: usize) -> Result<usize, EngineError> {
    let mut caches: Vec<_> = (0..n).map(|_| model.new_cache()).collect();
    for (i, c) in caches.iter_mut().enumerate() {
        let prompt: Vec<i32> = (0..PROMPT)
            .map(|j| (17 + 31 * i as i32 + 7 * j) % 100)
            .collect();
        let mut seg = [Segment {
            ids: Array::from_slice(&prompt, &[1, PROMPT]),
            len: PROMPT,
            caches: c,
            fork: None,
        }];
        model
            .forward(&mut seg, false)
            .map_err(mlx_err("prefilling"))?;
        let arrays: Vec<Array> = c.iter().flat_map(|k| k.arrays()).collect();
        mlx_rs::transforms::eval(&arrays).map_err(mlx_err("prefilling"))?;
    }
    // The first step moves each sequence into its batch slot (a copy
    // once per sequence); the second is what every later step builds.
    let mut count = 0;
    for step in 0..2 {
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .enumerate()
            .map(|(i, c)| Segment {
                ids: Array::from_slice(&[(5 + 3 * i as i32 + step) % 100], &[1, 1]),
                len: 1,
                caches: c,
                fork: None,
            })
            .collect();
        let logits = model
            .forward(&mut segments, true)
            .map_err(mlx_err("decoding"))?
            .ok_or_else(|| EngineError::Backend("a decode step without logits".into()))?;
        let picks = mlx_rs::ops::indexing::argmax_axis(&logits, -1, true)
            .and_then(|a| a.as_dtype(mlx_rs::Dtype::Int32))
            .map_err(mlx_err("choosing a token"))?;
        let cached: Vec<Array> = segments
            .iter()
            .flat_map(|s| s.caches.iter().flat_map(|c| c.arrays()))
            .collect();
        let mut outputs = vec![&picks, &logits];
        outputs.extend(cached.iter());
        count = count_operations(&outputs).map_err(mlx_err("counting operations"))?;
        mlx_rs::transforms::eval(outputs).map_err(mlx_err("decoding"))?;
    }
    Ok(count)
}

/// [`decode_step_operations`] of `path` loaded as `options` asks, at each
/// batch size of `batches`: `(N, operations)`.
pub fn decode_step_operations_of(
    path: &Path,
    options: &LoadOptions,
    batches: &[usize],
) -> Result<Vec<(usize, usize)>, EngineError> {
    let (model, _, _) = load_network(path, options)?;
    batches
        .iter()
        .map(|&n| Ok((n, decode_step_operations(&model, n)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx::kernels::Precision;
    use crate::mlx::load::load_gguf;

    fn tiny(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name)
    }

    /// A step's graph does not grow with the batch: on the fused CPU path
    /// (llama, f32) and on MLX's own operations (qwen3's q/k norms, `keep`
    /// on 4-bit weights), the path a GPU runs. A batch of two or more
    /// gathers its ids and table rows (a few operations more than one).
    #[test]
    fn a_decode_step_has_as_many_operations_for_8_sequences_as_for_2() {
        let mut counts = Vec::new();
        for (name, precision) in [
            ("tiny-llama3-untied", Precision::F32),
            ("tiny-qwen3", Precision::F32),
            ("tiny-qwen3-4bit", Precision::Keep),
            ("tiny-gemma3", Precision::F32),
        ] {
            let loaded = crate::mlx::load::load_hf_dir(&tiny(name)).unwrap();
            let model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
            let ops: Vec<usize> = [1, 2, 8]
                .iter()
                .map(|&n| decode_step_operations(&model, n).unwrap())
                .collect();
            eprintln!(
                "{name} {}: operations at N=1, 2, 8: {ops:?}",
                precision.name()
            );
            counts.push((name, ops));
        }
        for (name, ops) in counts {
            assert_eq!(ops[1], ops[2], "{name}");
            assert!(ops[2] * 10 <= ops[0] * 11, "{name}: {ops:?}");
        }
    }

    /// The figures, printed (`--nocapture`): the default model under
    /// `auto` and `keep` (MLX's own operations, a GPU's path).
    #[test]
    #[ignore = "a measurement: run it with --nocapture"]
    fn operations_per_decode_step() {
        let path = super::super::precision_parity::default_model();
        for precision in [Precision::Auto, Precision::Keep] {
            let loaded = load_gguf(&path).unwrap();
            let model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
            for n in [1, 8, 32] {
                let ops = decode_step_operations(&model, n).unwrap();
                eprintln!(
                    "{} N={n}: {ops} operations per decode step",
                    precision.name()
                );
            }
        }
    }
}
