//! A served model's warm-up: a few generations before the server takes
//! requests, so that what MLX does on first use (on a GPU, compiling
//! kernels: CUTLASS GEMMs for quantized products of 8 rows or more,
//! gathers and scatters; allocating buffers on any device) is not what
//! the first clients wait for, as llama.cpp's and vLLM's servers warm
//! up before they listen. The pace these steps set is forgotten after
//! (`Engine::forget_pace`): it says nothing of the pace the server will
//! keep, and admission would judge the first requests by it.

use std::time::{Duration, Instant};

use thinkwire_engine::{Directive, Engine, GenerationRequest, SamplingParams, TokenSink};

use super::model::{LocalModel, ModelError};

/// Prompt lengths, on a GPU, in each of the row tiles MLX compiles its
/// quantized GEMM for on an A100-class GPU (16, 32, 64 rows: 8 rows or
/// more, fewer take its matrix-vector kernel), one kernel each per weight
/// type. On an H100/H200 its GEMM takes every product of 2 rows or more,
/// one kernel per weight type whatever the rows: the first covers it.
const GPU_PROMPT_ROWS: [usize; 3] = [12, 24, 48];

/// Which warm-up a model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmUp {
    /// The short prompts alone: what a CPU wants (it compiles nothing;
    /// a longer warm-up would only make a large model slow to start).
    Short,
    /// Those, then a prompt in each of [`GPU_PROMPT_ROWS`].
    Gpu,
}

impl WarmUp {
    /// The warm-up for the device MLX runs this process's models on.
    pub fn for_this_device() -> Self {
        match on_a_gpu() {
            true => Self::Gpu,
            false => Self::Short,
        }
    }
}

/// Takes every token it is given.
struct Discard;

impl TokenSink for Discard {
    fn on_token(&mut self, _id: u32) -> Directive {
        Directive::Continue
    }
}

impl LocalModel {
    /// Generates a few greedy tokens from short prompts of our own: one
    /// alone (a prompt pass, then single-row decode steps), two of other
    /// lengths together (a batch of two prompts, a batched step over
    /// caches of two lengths, then one alone again), and for
    /// [`WarmUp::Gpu`] one prompt in each of [`GPU_PROMPT_ROWS`]; then
    /// forgets their pace.
    /// Each prompt starts at another token, so that none is served from
    /// the prefix cache an earlier one left. Returns how long it took. A
    /// failure here is one every request would meet.
    pub fn warm_up(&self, kind: WarmUp) -> Result<Duration, ModelError> {
        let started = Instant::now();
        let base = self.encode_raw("Hello there, world. How are you today?")?;
        if base.is_empty() {
            return Ok(started.elapsed());
        }
        // The ids of `base` from its `shift`-th on, over again to `len`.
        let prompt = |shift: usize, len: usize| -> Vec<u32> {
            (0..len).map(|j| base[(shift + j) % base.len()]).collect()
        };
        let request = |prompt: Vec<u32>, max_tokens: usize| GenerationRequest {
            prompt,
            // No stop tokens: each runs all its steps.
            max_tokens,
            sampling: SamplingParams::greedy(),
            stop_token_ids: Vec::new(),
            logprobs: None,
        };
        let engine = self.engine();
        together(engine, &[request(prompt(0, 5), 2)])?;
        together(
            engine,
            &[request(prompt(1, 6), 2), request(prompt(2, 3), 4)],
        )?;
        if kind == WarmUp::Gpu {
            for (i, &rows) in GPU_PROMPT_ROWS.iter().enumerate() {
                together(engine, &[request(prompt(3 + i, rows), 1)])?;
            }
        }
        engine.forget_pace();
        Ok(started.elapsed())
    }
}

/// Generates `requests` at once, each on a thread of its own; the first
/// error once all have ended.
fn together(engine: &dyn Engine, requests: &[GenerationRequest]) -> Result<(), ModelError> {
    let ended: Vec<_> = std::thread::scope(|scope| {
        let runs: Vec<_> = (requests.iter())
            .map(|request| scope.spawn(move || engine.generate(request, &mut Discard)))
            .collect();
        runs.into_iter().map(|run| run.join()).collect()
    });
    for result in ended {
        match result {
            Ok(generated) => {
                generated?;
            }
            Err(_) => {
                let panicked = "a warm-up generation panicked".to_owned();
                return Err(ModelError::Engine(thinkwire_engine::EngineError::Backend(
                    panicked,
                )));
            }
        }
    }
    Ok(())
}

/// Whether MLX runs the model on a GPU.
fn on_a_gpu() -> bool {
    #[cfg(feature = "mlx")]
    return thinkwire_engine::mlx::device_name() != "cpu";
    #[cfg(not(feature = "mlx"))]
    return false;
}
