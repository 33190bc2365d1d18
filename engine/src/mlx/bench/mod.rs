//! The figures `thinkwire bench` prints: load time, time to first token,
//! prefill and decode tokens/s, peak RSS; and the same figures from mlx-lm
//! on the same weights (`mlx_lm`).
//!
//! Its test modules are the engine's own benchmarks and checks on the
//! default model: `step_bench` (one batched decode step), `quantized` (the
//! kernels' per-call time) and `precision_parity` (what `int8` promises).

mod mlx_lm;
mod ops;
#[cfg(test)]
mod precision_parity;
#[cfg(test)]
mod quantized;
#[cfg(test)]
mod step_bench;

use std::time::{Duration, Instant};

pub use self::mlx_lm::{MlxLmBatchReport, MlxLmReference};
pub use self::ops::{StepOperations, decode_step_operations_of};
use super::{LoadOptions, MlxEngine};
use crate::{Directive, Engine, EngineError, GenerationRequest, SamplingParams, TokenSink};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Prompt token ids (chat template applied by the caller).
    pub prompt: Vec<u32>,
    /// Tokens to decode; stop tokens are ignored so every run decodes
    /// exactly this many (as mlx-lm's `generate_step` does).
    pub max_tokens: usize,
    /// Timed runs after one warm-up; the best decode rate is reported.
    pub runs: usize,
    /// How tokens are picked (greedy, or drawn with a seed).
    pub sampling: SamplingParams,
    /// How to load the model.
    pub load: LoadOptions,
}

/// Measured figures of one engine.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchReport {
    /// `thinkwire` or `mlx-lm`.
    pub engine: String,
    /// Seconds to load the model (weights materialized).
    pub load_s: f64,
    /// Seconds from request to the first generated token.
    pub ttft_s: f64,
    /// Prompt tokens per second during prefill.
    pub prefill_tok_s: f64,
    /// Generated tokens per second after the first one.
    pub decode_tok_s: f64,
    /// Prompt length.
    pub prompt_tokens: usize,
    /// Tokens generated per run.
    pub generated_tokens: usize,
    /// Peak resident memory of the process in MiB, where the OS tells it.
    pub peak_rss_mb: Option<f64>,
    /// Per decoded token: milliseconds in all, and in thinkwire's quantized
    /// matmul kernels (the rest is MLX graph building and evaluation of the
    /// other operations, thread hand-offs, sampling). thinkwire only.
    #[serde(default)]
    pub decode_breakdown_ms: Option<(f64, f64)>,
}

/// Counts tokens and notes the kernels' time at the first one.
struct Count {
    tokens: usize,
    kernels_at_first: Duration,
}
impl TokenSink for Count {
    fn on_token(&mut self, _id: u32) -> Directive {
        self.tokens += 1;
        if self.tokens == 1 {
            self.kernels_at_first = super::kernel_time().0;
        }
        Directive::Continue
    }
}

/// The CPU's model name (`/proc/cpuinfo`), so figures say where they ran.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Peak resident set size (Linux `VmHWM`), in MiB.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Measures generation on a loaded `engine` (`load_s`: what loading it
/// took), so `bench --pairs` can time it again between mlx-lm's runs
/// without loading it again.
pub fn measure(
    engine: &MlxEngine,
    load_s: f64,
    options: &BenchOptions,
) -> Result<BenchReport, EngineError> {
    let request = GenerationRequest {
        prompt: options.prompt.clone(),
        max_tokens: options.max_tokens,
        sampling: options.sampling.clone(),
        stop_token_ids: Vec::new(),
        logprobs: None,
    };
    let mut best: Option<BenchReport> = None;
    for run in 0..=options.runs.max(1) {
        let mut sink = Count {
            tokens: 0,
            kernels_at_first: Duration::ZERO,
        };
        let stats = engine.generate(&request, &mut sink)?;
        let kernels = super::kernel_time().0.saturating_sub(sink.kernels_at_first);
        if run == 0 {
            continue; // warm-up: first-use allocations and caches
        }
        let secs = |d: Duration| d.as_secs_f64().max(1e-9);
        let report = BenchReport {
            engine: "thinkwire".into(),
            load_s,
            ttft_s: stats.prefill_time.as_secs_f64(),
            prefill_tok_s: stats.prompt_tokens as f64 / secs(stats.prefill_time),
            decode_tok_s: stats.generated_tokens.saturating_sub(1) as f64 / secs(stats.decode_time),
            prompt_tokens: stats.prompt_tokens,
            generated_tokens: stats.generated_tokens,
            peak_rss_mb: None,
            decode_breakdown_ms: (stats.generated_tokens > 1).then(|| {
                let n = stats.generated_tokens.saturating_sub(1) as f64;
                (
                    stats.decode_time.as_secs_f64() * 1e3 / n,
                    kernels.as_secs_f64() * 1e3 / n,
                )
            }),
        };
        if best
            .as_ref()
            .is_none_or(|b| report.decode_tok_s > b.decode_tok_s)
        {
            best = Some(report);
        }
    }
    let mut best = best.ok_or_else(|| EngineError::Backend("no benchmark run".into()))?;
    best.peak_rss_mb = peak_rss_mb();
    Ok(best)
}

/// Figures of N generations run at once (`thinkwire bench --concurrency`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConcurrencyRow {
    /// Generations started together.
    pub concurrency: usize,
    /// Tokens generated by all of them.
    pub generated_tokens: usize,
    /// Tokens after each one's first, over the time from the earliest
    /// first token to the last token: the batch's decode rate.
    pub aggregate_decode_tok_s: f64,
    /// Mean of each generation's own decode rate.
    pub per_sequence_decode_tok_s: f64,
    /// Time to first token from the moment all were submitted: median.
    pub ttft_p50_s: f64,
    /// And 95th percentile.
    pub ttft_p95_s: f64,
    /// From submission to the last token.
    pub wall_s: f64,
    /// Scheduler steps over the run (prefill passes included).
    #[serde(default)]
    pub steps: u64,
    /// Wall time per step, in ms.
    #[serde(default)]
    pub step_ms: f64,
    /// Time per step in the quantized matmul kernels, in ms (the rest is
    /// attention, the other operations and the graph around them).
    #[serde(default)]
    pub kernel_ms_per_step: f64,
    /// Time per step the scheduler waited for the device to finish a
    /// step, in ms; the rest of `step_ms` is the host building and
    /// queueing steps (a step bound by the host waits near zero).
    #[serde(default)]
    pub wait_ms_per_step: f64,
    /// Time per step in MLX's `async_eval` (walking the step's graph and
    /// launching its operations), in ms; the rest of the host's share
    /// builds the graph and hands tokens to the runs.
    #[serde(default)]
    pub queue_ms_per_step: f64,
}

/// Records when tokens arrive.
struct Timed {
    first: Option<Instant>,
    last: Option<Instant>,
    count: usize,
}

impl TokenSink for Timed {
    fn on_token(&mut self, _id: u32) -> Directive {
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.count += 1;
        Directive::Continue
    }
}

/// The value at quantile `q` (nearest rank) of `values`.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let k = ((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1);
    v[k]
}

/// Runs `concurrency` generations at once on `engine`, generation `i` on
/// `prompts[i % len]` with `sampling`'s seed + i, each exactly
/// `max_tokens` long (no stop tokens).
pub fn concurrent(
    engine: &MlxEngine,
    prompts: &[Vec<u32>],
    max_tokens: usize,
    concurrency: usize,
    sampling: &SamplingParams,
) -> Result<ConcurrencyRow, EngineError> {
    if prompts.is_empty() || concurrency == 0 {
        return Err(EngineError::InvalidRequest(
            "no prompts or no concurrency".into(),
        ));
    }
    let before = crate::Engine::load(engine);
    let kernels_before = super::kernel_time().0;
    let start = Instant::now();
    let results: Vec<Result<Timed, EngineError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..concurrency)
            .map(|i| {
                let request = GenerationRequest {
                    prompt: prompts[i % prompts.len()].clone(),
                    max_tokens,
                    sampling: SamplingParams {
                        seed: sampling.seed.map(|s| s.wrapping_add(i as u64)),
                        ..sampling.clone()
                    },
                    stop_token_ids: Vec::new(),
                    logprobs: None,
                };
                scope.spawn(move || {
                    let mut sink = Timed {
                        first: None,
                        last: None,
                        count: 0,
                    };
                    engine.generate(&request, &mut sink).map(|_| sink)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(EngineError::Backend("a generation panicked".into())))
            })
            .collect()
    });
    let timed = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let wall = start.elapsed();
    let kernels = super::kernel_time().0.saturating_sub(kernels_before);
    let after = crate::Engine::load(engine);
    let steps = after.steps.saturating_sub(before.steps).max(1);
    let waited_us = after.device_wait_us.saturating_sub(before.device_wait_us);
    let queued_us = after.queue_us.saturating_sub(before.queue_us);
    let firsts: Vec<Instant> = timed.iter().filter_map(|t| t.first).collect();
    let lasts: Vec<Instant> = timed.iter().filter_map(|t| t.last).collect();
    let (Some(&earliest), Some(&end)) = (firsts.iter().min(), lasts.iter().max()) else {
        return Err(EngineError::Backend("no tokens generated".into()));
    };
    let decoded: usize = timed.iter().map(|t| t.count.saturating_sub(1)).sum();
    let span = (end - earliest).as_secs_f64().max(1e-9);
    let per_seq: Vec<f64> = timed
        .iter()
        .filter_map(|t| match (t.first, t.last) {
            (Some(f), Some(l)) if l > f => Some((t.count - 1) as f64 / (l - f).as_secs_f64()),
            _ => None,
        })
        .collect();
    let ttft: Vec<f64> = firsts.iter().map(|f| (*f - start).as_secs_f64()).collect();
    Ok(ConcurrencyRow {
        concurrency,
        generated_tokens: timed.iter().map(|t| t.count).sum(),
        aggregate_decode_tok_s: decoded as f64 / span,
        per_sequence_decode_tok_s: per_seq.iter().sum::<f64>() / per_seq.len().max(1) as f64,
        ttft_p50_s: percentile(&ttft, 0.5),
        ttft_p95_s: percentile(&ttft, 0.95),
        wall_s: (end - start).as_secs_f64(),
        steps,
        step_ms: wall.as_secs_f64() * 1e3 / steps as f64,
        kernel_ms_per_step: kernels.as_secs_f64() * 1e3 / steps as f64,
        wait_ms_per_step: waited_us as f64 / 1e3 / steps as f64,
        queue_ms_per_step: queued_us as f64 / 1e3 / steps as f64,
    })
}
