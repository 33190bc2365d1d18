//! MLX operations per decode step: the graph one batched step builds
//! (forward pass, greedy pick, cache writes), counted before it runs. On a
//! GPU each is a kernel launch, so a step whose count grows with the number
//! of sequences N stops scaling; on any machine the count can be read, so
//! it is tracked where no GPU is lent (issue #33: mlx-lm's step is ~3,468
//! operations on SmolLM2-135M whatever N).

use std::collections::BTreeMap;
use std::path::Path;

use mlx_rs::Array;

use super::super::kernels::graph::operation_kinds;
use super::super::model::{Network, Segment, join_ids};
use super::super::{LoadOptions, load_network};
use crate::EngineError;
use crate::mlx::error::mlx_err;

/// Prompt positions each sequence holds before the counted step.
const PROMPT: i32 = 16;

/// Steady steps timed after the one that moves sequences into slots.
const TIMED_STEPS: usize = 4;

/// The operations of one decode step of `batch` sequences.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepOperations {
    /// Sequences in the step (N).
    pub batch: usize,
    /// Operations in all.
    pub operations: usize,
    /// How many of each kind (MLX's primitive names).
    pub kinds: BTreeMap<String, usize>,
    /// Milliseconds the host spends building the step's graph, before
    /// anything runs (median of a few steps): what a GPU waits for when
    /// a step's kernels take less.
    pub build_ms: f64,
}

impl StepOperations {
    fn new(batch: usize, kinds: BTreeMap<String, usize>, build_ms: f64) -> Self {
        Self {
            batch,
            operations: kinds.values().sum(),
            kinds,
            build_ms,
        }
    }
}

/// Operations in a decode step of `n` sequences (their second, each
/// cache at [`PROMPT`] + 1 positions), as the scheduler builds it: the
/// forward pass, the greedy picks and the cache arrays it evaluates with
/// them.
#[cfg(test)]
pub(crate) fn decode_step_operations(model: &Network, n: usize) -> Result<usize, EngineError> {
    Ok(decode_step_kinds(model, n)?.operations)
}

/// [`decode_step_operations`] by kind.
pub(crate) fn decode_step_kinds(model: &Network, n: usize) -> Result<StepOperations, EngineError> {
    decode_step_kinds_after(model, &vec![PROMPT; n])
}

/// [`decode_step_kinds`] of sequences whose prompts were `prompts` tokens
/// long (unequal lengths make the step mask what each slot sees).
pub(crate) fn decode_step_kinds_after(
    model: &Network,
    prompts: &[i32],
) -> Result<StepOperations, EngineError> {
    step_kinds(model, prompts, 1, false)
}

/// The operations of the first decode step after the prompts (prefilled
/// one by one, or `together` in one pass), the one that moves sequences
/// into their batch slots: it runs before their first tokens are read, so
/// a burst's time to first token pays for it.
#[cfg(test)]
pub(crate) fn entering_step_kinds(
    model: &Network,
    prompts: &[i32],
    together: bool,
) -> Result<StepOperations, EngineError> {
    step_kinds(model, prompts, 0, together)
}

/// Prefills `prompts` (one pass each, or `together` in one), then
/// decodes: the kinds of step `counted` (0: the one that moves sequences
/// into slots) and the median time to build the steady ones after it.
fn step_kinds(
    model: &Network,
    prompts: &[i32],
    counted: i32,
    together: bool,
) -> Result<StepOperations, EngineError> {
    let n = prompts.len();
    let mut caches: Vec<_> = (0..n).map(|_| model.new_cache()).collect();
    let passes: Vec<Vec<usize>> = match together {
        true => vec![(0..n).collect()],
        false => (0..n).map(|i| vec![i]).collect(),
    };
    for pass in passes {
        let ids = join_ids(pass.iter().map(|&i| prompt_ids(i, prompts[i])).collect())
            .map_err(mlx_err("prefilling"))?;
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| pass.contains(i))
            .map(|(i, c)| Segment {
                len: prompts[i],
                caches: c,
                fork: None,
            })
            .collect();
        model
            .forward(&ids, &mut segments, false)
            .map_err(mlx_err("prefilling"))?;
        let arrays: Vec<Array> = model
            .batch_arrays()
            .into_iter()
            .chain(
                segments
                    .iter()
                    .flat_map(|s| s.caches.iter().flat_map(|k| k.arrays())),
            )
            .collect();
        mlx_rs::transforms::eval(&arrays).map_err(mlx_err("prefilling"))?;
    }
    // The first step moves each sequence into its batch slot (a copy
    // once per sequence); the second is what every later step builds.
    // Each step after the first takes the one before's picks as its
    // input, as the scheduler does: one view of them, unread.
    let mut kinds = BTreeMap::new();
    let mut build_ms = Vec::new();
    let mut picks: Option<Array> = None;
    for step in 0..=TIMED_STEPS as i32 {
        let start = std::time::Instant::now();
        let ids = match &picks {
            Some(p) => p.reshape(&[1, n as i32]),
            None => {
                let ids: Vec<i32> = (0..n as i32).map(|i| (5 + 3 * i) % 100).collect();
                Ok(Array::from_slice(&ids, &[1, n as i32]))
            }
        }
        .map_err(mlx_err("decoding"))?;
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .map(|c| Segment {
                len: 1,
                caches: c,
                fork: None,
            })
            .collect();
        let outputs = pass_outputs(model, &ids, &mut segments)?;
        picks = outputs.first().cloned();
        if step > 0 {
            build_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let outputs: Vec<&Array> = outputs.iter().collect();
        if step == counted {
            kinds = operation_kinds(&outputs).map_err(mlx_err("counting operations"))?;
        }
        mlx_rs::transforms::eval(outputs).map_err(mlx_err("decoding"))?;
    }
    build_ms.sort_by(f64::total_cmp);
    let median = build_ms.get(build_ms.len() / 2).copied().unwrap_or(0.0);
    Ok(StepOperations::new(n, kinds, median))
}

/// Operations of one pass over fresh prompts of `lens` tokens (a burst
/// arriving together, first tokens picked): what a GPU launches before
/// their first tokens.
#[cfg(test)]
pub(crate) fn prefill_operations(model: &Network, lens: &[i32]) -> Result<usize, EngineError> {
    let fresh = vec![0; lens.len()];
    continuing_operations(model, &fresh, false, lens)
}

/// As [`prefill_operations`], for prompts that continue caches of
/// `prefixes[i]` positions (a prefix-cache hit, a long prompt's next
/// chunk), prefilled one by one beforehand; `decoded`: then one decode
/// step, so the caches sit in the batch slots (forced tokens).
#[cfg(test)]
pub(crate) fn continuing_operations(
    model: &Network,
    prefixes: &[i32],
    decoded: bool,
    lens: &[i32],
) -> Result<usize, EngineError> {
    let mut caches: Vec<_> = lens.iter().map(|_| model.new_cache()).collect();
    for (i, (c, &len)) in caches.iter_mut().zip(prefixes).enumerate() {
        if len > 0 {
            let mut one = [Segment {
                len,
                caches: c,
                fork: None,
            }];
            mlx_rs::transforms::eval(&pass_outputs(model, &prompt_ids(i + 50, len), &mut one)?)
                .map_err(mlx_err("a prefix"))?;
        }
    }
    if decoded {
        let ids = join_ids((0..caches.len()).map(|i| prompt_ids(i + 90, 1)).collect())
            .map_err(mlx_err("a step"))?;
        let mut all: Vec<Segment<'_>> = caches
            .iter_mut()
            .map(|c| Segment {
                len: 1,
                caches: c,
                fork: None,
            })
            .collect();
        mlx_rs::transforms::eval(&pass_outputs(model, &ids, &mut all)?)
            .map_err(mlx_err("a step"))?;
    }
    let ids = prompts_ids(lens)?;
    pass_operations(model, &ids, &mut prompt_segments(&mut caches, lens))
}

/// Test prompt `i` with `lens[i]` tokens, for each `i`, joined.
#[cfg(test)]
fn prompts_ids(lens: &[i32]) -> Result<Array, EngineError> {
    join_ids(
        lens.iter()
            .enumerate()
            .map(|(i, &l)| prompt_ids(i, l))
            .collect(),
    )
    .map_err(mlx_err("a pass"))
}

/// A segment of `lens[i]` tokens for each cache `i`.
#[cfg(test)]
fn prompt_segments<'a>(
    caches: &'a mut [Vec<crate::mlx::model::KvCache>],
    lens: &[i32],
) -> Vec<Segment<'a>> {
    caches
        .iter_mut()
        .zip(lens)
        .map(|(c, &len)| Segment {
            len,
            caches: c,
            fork: None,
        })
        .collect()
}

/// Operations of one pass where prompt 0 is `common` + `lens[0]` tokens
/// and every later prompt `i` shares its first `common` (a fork of prompt
/// 0, `--share-prefixes`) and adds `lens[i]` of its own.
#[cfg(test)]
pub(crate) fn shared_operations(
    model: &Network,
    common: i32,
    lens: &[i32],
) -> Result<usize, EngineError> {
    let mut caches: Vec<_> = lens.iter().map(|_| model.new_cache()).collect();
    let mut ids = Vec::new();
    let mut segments: Vec<Segment<'_>> = caches
        .iter_mut()
        .zip(lens)
        .enumerate()
        .map(|(i, (c, &len))| {
            let (len, fork) = match i {
                0 => (common + len, None),
                _ => (
                    len,
                    Some(crate::mlx::model::Fork {
                        from: 0,
                        at: common,
                    }),
                ),
            };
            ids.push(prompt_ids(i, len));
            Segment {
                len,
                caches: c,
                fork,
            }
        })
        .collect();
    let ids = join_ids(ids).map_err(mlx_err("a pass"))?;
    pass_operations(model, &ids, &mut segments)
}

/// The operations of one pass over `segments` ([`pass_outputs`]).
#[cfg(test)]
fn pass_operations(
    model: &Network,
    ids: &Array,
    segments: &mut [Segment<'_>],
) -> Result<usize, EngineError> {
    let outputs = pass_outputs(model, ids, segments)?;
    let outputs: Vec<&Array> = outputs.iter().collect();
    operation_kinds(&outputs)
        .map(|k| k.values().sum())
        .map_err(mlx_err("counting operations"))
}

/// Test prompt `i`'s ids, `len` of them (`[1, len]`).
fn prompt_ids(i: usize, len: i32) -> Array {
    let ids: Vec<i32> = (0..len)
        .map(|j| (17 + 31 * i as i32 + 7 * j) % 100)
        .collect();
    Array::from_slice(&ids, &[1, len])
}

/// What the scheduler evaluates after a pass of `ids` over `segments`:
/// the greedy picks, the logits and every cache array, not yet run.
fn pass_outputs(
    model: &Network,
    ids: &Array,
    segments: &mut [Segment<'_>],
) -> Result<Vec<Array>, EngineError> {
    let logits = model
        .forward(ids, segments, true)
        .map_err(mlx_err("a pass"))?
        .ok_or_else(|| EngineError::Backend("a pass without logits".into()))?;
    let picks = mlx_rs::ops::indexing::argmax_axis(&logits, -1, true)
        .and_then(|a| a.as_dtype(mlx_rs::Dtype::Int32))
        .map_err(mlx_err("choosing a token"))?;
    let mut outputs = vec![picks, logits];
    outputs.extend(
        segments
            .iter()
            .flat_map(|s| s.caches.iter().flat_map(|c| c.arrays())),
    );
    Ok(outputs)
}

/// [`decode_step_kinds`] of `path` loaded as `options` asks, at each
/// batch size of `batches`.
pub fn decode_step_operations_of(
    path: &Path,
    options: &LoadOptions,
    batches: &[usize],
) -> Result<Vec<StepOperations>, EngineError> {
    let (model, _, _) = load_network(path, options)?;
    batches
        .iter()
        .map(|&n| decode_step_kinds(&model, n))
        .collect()
}

#[cfg(test)]
mod tests;
