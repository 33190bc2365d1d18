//! A served model's warm-up: a few generations before the server takes
//! requests, so that what MLX does on first use (on a GPU, compiling
//! kernels: CUTLASS GEMMs for quantized prompts, gathers and scatters,
//! cuDNN attention graphs; allocating buffers on any device) is not what
//! the first clients wait for, as llama.cpp's and vLLM's servers warm
//! up before they listen.

use std::time::{Duration, Instant};

use thinkwire_engine::{Directive, GenerationRequest, SamplingParams, TokenSink};

use super::model::{LocalModel, ModelError};

/// Takes every token it is given.
struct Discard;

impl TokenSink for Discard {
    fn on_token(&mut self, _id: u32) -> Directive {
        Directive::Continue
    }
}

impl LocalModel {
    /// Generates a few greedy tokens for two short prompts of our own,
    /// first one alone (a prompt pass, then single-row decode steps),
    /// then both at once (a batch of prompts of two lengths, then a
    /// batched step over caches of two lengths, then one alone again);
    /// returns how long that took. A failure here is one every request
    /// would meet.
    pub fn warm_up(&self) -> Result<Duration, ModelError> {
        let started = Instant::now();
        // Raw text, a few tokens each: the kernels MLX compiles for a
        // prompt pass depend on the weights' shapes, not on the prompt's
        // length, and on a CPU a long prompt would only make a large
        // model slow to start.
        let prompts = ["Hello there, world.", "Hi there"];
        let requests = (prompts.iter().enumerate())
            .map(|(i, text)| {
                Ok(GenerationRequest {
                    prompt: self.encode_raw(text)?,
                    // No stop tokens: each runs all its steps.
                    max_tokens: 2 + 2 * i,
                    sampling: SamplingParams::greedy(),
                    stop_token_ids: Vec::new(),
                    logprobs: None,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        let engine = self.engine();
        engine.generate(&requests[0], &mut Discard)?;
        std::thread::scope(|scope| {
            let runs: Vec<_> = (requests.iter())
                .map(|request| scope.spawn(move || engine.generate(request, &mut Discard)))
                .collect();
            for run in runs {
                match run.join() {
                    Ok(result) => {
                        result?;
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
        })?;
        Ok(started.elapsed())
    }
}
