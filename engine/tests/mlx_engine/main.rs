//! Behaviour of the MLX engine on the tiny random models of
//! `tests/golden/` (no download needed): chunked prefill, directives,
//! stop tokens, limits, seeded sampling, the prefix cache, and load
//! errors. The tests are grouped by concept in the modules below.
#![cfg(feature = "mlx")]
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
use thinkwire_engine::{
    Directive, Engine, EngineError, Finish, GenerationRequest, SamplingParams, TokenSink,
};

mod buffers;
mod generation;
mod prefix_cache;
mod refusals;
mod weights;

fn tiny(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn load(name: &str, chunk: usize) -> MlxEngine {
    load_with(
        name,
        LoadOptions {
            prefill_chunk: chunk,
            ..LoadOptions::default()
        },
    )
}

fn load_with(name: &str, options: LoadOptions) -> MlxEngine {
    MlxEngine::load(&tiny(name), &options).unwrap()
}

fn request(prompt: Vec<u32>, max_tokens: usize) -> GenerationRequest {
    GenerationRequest {
        prompt,
        max_tokens,
        sampling: SamplingParams::greedy(),
        stop_token_ids: vec![],
        logprobs: None,
    }
}

/// Records tokens and prefill progress; scripted directives by position.
#[derive(Default)]
struct Script {
    tokens: Vec<u32>,
    prefill: Vec<(usize, usize)>,
    force_at: Option<(usize, Vec<u32>)>,
    stop_at: Option<usize>,
    cancel_prefill_after: Option<usize>,
}

impl TokenSink for Script {
    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        let n = self.tokens.len();
        if self.stop_at == Some(n) {
            return Directive::Stop;
        }
        match &self.force_at {
            Some((at, forced)) if *at == n => Directive::Force(forced.clone()),
            _ => Directive::Continue,
        }
    }

    fn on_prefill(&mut self, done: usize, total: usize) -> ControlFlow<()> {
        self.prefill.push((done, total));
        match self.cancel_prefill_after {
            Some(n) if self.prefill.len() >= n => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    }
}

fn run(
    engine: &MlxEngine,
    req: &GenerationRequest,
    sink: &mut Script,
) -> thinkwire_engine::GenerationStats {
    engine.generate(req, sink).unwrap()
}

const PROMPT: [u32; 23] = [
    5, 17, 99, 3, 250, 7, 31, 64, 128, 200, 11, 42, 77, 90, 13, 8, 150, 19, 23, 180, 66, 2, 9,
];
