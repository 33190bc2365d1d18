//! The MLX engine: loads a GGUF file or a Hugging Face / mlx-community
//! folder and generates with a KV cache, chunked prefill and a pipelined
//! decode loop.
//!
//! ```no_run
//! use thinkwire_engine::mlx::{LoadOptions, MlxEngine};
//! use thinkwire_engine::{Engine, GenerationRequest, SamplingParams, Directive, TokenSink};
//!
//! struct Print;
//! impl TokenSink for Print {
//!     fn on_token(&mut self, id: u32) -> Directive { println!("{id}"); Directive::Continue }
//! }
//! let engine = MlxEngine::load("model.gguf".as_ref(), &LoadOptions::default())?;
//! let request = GenerationRequest {
//!     prompt: vec![1, 2, 3],
//!     max_tokens: 16,
//!     sampling: SamplingParams::greedy(),
//!     stop_token_ids: engine.stop_token_ids().to_vec(),
//! };
//! engine.generate(&request, &mut Print)?;
//! # Ok::<(), thinkwire_engine::EngineError>(())
//! ```

pub mod bench;
mod cache;
pub mod config;
mod convert;
mod load;
mod model;
// FFI into thinkwire's kernels (mlx-sys/native): the engine's only unsafe code.
#[allow(unsafe_code)]
mod quantized;
mod rope;
mod sampler;
mod weights;

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mlx_rs::Array;

pub use self::convert::{ConvertOptions, ConvertReport, convert_gguf};
use self::model::Model;
pub use self::quantized::kernel_threads;
use self::sampler::Sampler;
pub use self::weights::Precision;
use self::weights::mlx_err;
use crate::{
    Directive, Engine, EngineError, Finish, GenerationRequest, GenerationStats, ModelInfo,
    TokenSink, check_request,
};

/// How to load a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Precision policy for the weights.
    pub precision: Precision,
    /// Prompt tokens per prefill step: bounds the memory of the attention
    /// scores and lets a long prefill report progress and be cancelled.
    pub prefill_chunk: usize,
    /// Keep the attention cache of the last generation in memory and reuse
    /// it for the next prompt's common prefix (a follow-up turn then only
    /// prefills what is new). Off by default: it retains state derived
    /// from a conversation (its reasoning included) between requests, and
    /// the time to first token tells one client whether another's prompt
    /// shared its prefix. For single-user processes (the chat REPL).
    pub prefix_cache: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            precision: Precision::default(),
            prefill_chunk: 512,
            prefix_cache: false,
        }
    }
}

/// The attention cache a generation left behind and the tokens it holds
/// (`LoadOptions::prefix_cache`).
struct KeptPrefix {
    tokens: Vec<u32>,
    caches: Vec<cache::KvCache>,
}

/// A model on MLX, ready to generate. One generation runs at a time.
pub struct MlxEngine {
    info: ModelInfo,
    stop_ids: Vec<u32>,
    options: LoadOptions,
    model: Mutex<Model>,
    /// Locked only while `model` is.
    kept: Mutex<Option<KeptPrefix>>,
}

impl std::fmt::Debug for MlxEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MlxEngine")
            .field("info", &self.info)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl MlxEngine {
    /// Loads `path`: a `.gguf` file or a folder with `config.json` and
    /// safetensors. Every problem (missing or corrupt file, missing tensor,
    /// unsupported architecture, RoPE or quantization) is reported here,
    /// naming the file, tensor or config field.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Self, EngineError> {
        let loaded = if path.is_dir() {
            load::load_hf_dir(path)?
        } else if path.is_file() {
            load::load_gguf(path)?
        } else {
            return Err(EngineError::Load(format!(
                "{}: no such model file or folder",
                path.display()
            )));
        };
        let config = loaded.config;
        let model = Model::build(&config, loaded.weights, options.precision)?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        tracing::info!(
            model = %id,
            architecture = model.architecture.name(),
            precision = options.precision.name(),
            "model loaded"
        );
        Ok(Self {
            info: ModelInfo {
                id,
                architecture: model.architecture.name().into(),
                context_length: config.context_length(),
                vocab_size: model.vocab,
            },
            stop_ids: loaded.stop_ids,
            options: options.clone(),
            model: Mutex::new(model),
            kept: Mutex::new(None),
        })
    }

    /// End-of-turn token ids the model files declare (GGUF eos id,
    /// `eos_token_id` of config.json and generation_config.json).
    pub fn stop_token_ids(&self) -> &[u32] {
        &self.stop_ids
    }

    /// The options the model was loaded with.
    pub fn options(&self) -> &LoadOptions {
        &self.options
    }
}

fn ids_array(ids: &[u32]) -> Array {
    let v: Vec<i32> = ids.iter().map(|&t| t as i32).collect();
    Array::from_slice(&v, &[1, v.len() as i32])
}

/// How the next token is chosen: on the MLX side (greedy: lazy, so the
/// next step can be queued before the current token is read) or by the
/// sampler on the CPU.
enum Picker {
    Greedy,
    Sampled(Sampler),
}

impl Picker {
    /// The token chosen from `logits` (`[1, vocab]`), as a `[1, 1]` array
    /// (lazy for greedy).
    fn pick(&mut self, logits: &Array, history: &[u32]) -> Result<Array, EngineError> {
        let err = mlx_err("choosing a token");
        match self {
            Picker::Greedy => mlx_rs::ops::indexing::argmax_axis(logits, -1, true)
                .and_then(|a| a.as_dtype(mlx_rs::Dtype::Int32))
                .map_err(err),
            Picker::Sampled(s) => {
                logits.eval().map_err(&err)?;
                let v = logits
                    .try_as_slice::<f32>()
                    .map_err(|e| EngineError::Backend(format!("reading logits: {e}")))?;
                let id = s.sample(v, history);
                Ok(Array::from_slice(&[id as i32], &[1, 1]))
            }
        }
    }
}

struct Run<'a> {
    model: &'a Model,
    caches: Vec<cache::KvCache>,
    context: usize,
}

impl Run<'_> {
    fn step(&mut self, ids: &Array) -> Result<Array, EngineError> {
        self.model
            .forward_last(ids, &mut self.caches)
            .map_err(mlx_err("decoding"))
    }

    fn offset(&self) -> usize {
        self.caches.first().map_or(0, |c| c.offset() as usize)
    }

    fn truncate(&mut self, offset: usize) {
        for c in &mut self.caches {
            c.truncate(offset as i32);
        }
    }

    fn queue(&self, token: &Array) -> Result<(), EngineError> {
        let mut all: Vec<&Array> = vec![token];
        for c in &self.caches {
            all.extend(c.arrays());
        }
        mlx_rs::transforms::async_eval(all).map_err(mlx_err("queueing a step"))
    }
}

/// The kept cache cut to its common prefix with `prompt`, and that length.
/// At least the prompt's last token is always run again: its logits pick
/// the first new token.
fn reuse_prefix(kept: KeptPrefix, prompt: &[u32]) -> (Vec<cache::KvCache>, usize) {
    let common = kept
        .tokens
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count()
        .min(prompt.len().saturating_sub(1));
    let mut caches = kept.caches;
    for c in &mut caches {
        c.truncate(common as i32);
    }
    (caches, common)
}

fn read_token(token: &Array) -> Result<u32, EngineError> {
    token.eval().map_err(mlx_err("evaluating a step"))?;
    let v = token
        .try_as_slice::<i32>()
        .map_err(|e| EngineError::Backend(format!("reading a token: {e}")))?;
    v.first()
        .map(|&t| t as u32)
        .ok_or_else(|| EngineError::Backend("a step produced no token".into()))
}

impl Engine for MlxEngine {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        check_request(&self.info, request)?;
        let model = self
            .model
            .lock()
            .map_err(|_| EngineError::Backend("a previous generation panicked".into()))?;
        let start = Instant::now();
        let prompt = &request.prompt;
        // Always taken, so a generation that fails or is cancelled leaves
        // nothing behind.
        let kept = self.kept.lock().ok().and_then(|mut k| k.take());
        let (caches, reused) = match kept {
            Some(kept) if self.options.prefix_cache => reuse_prefix(kept, prompt),
            _ => (model.new_cache(), 0),
        };
        if reused > 0 {
            tracing::debug!(reused, prompt = prompt.len(), "prefix cache hit");
        }
        let mut run = Run {
            model: &model,
            caches,
            context: self.info.context_length,
        };
        let mut stats = GenerationStats {
            finish: Finish::Length,
            prompt_tokens: prompt.len(),
            generated_tokens: 0,
            prefill_time: Duration::ZERO,
            decode_time: Duration::ZERO,
        };
        let mut picker =
            if request.sampling.is_greedy() && request.sampling.repetition_penalty == 1.0 {
                Picker::Greedy
            } else {
                Picker::Sampled(Sampler::new(&request.sampling))
            };
        let mut history: Vec<u32> = prompt.clone();

        // Chunked prefill: all chunks but the last only fill the cache.
        let chunk = self.options.prefill_chunk.max(1);
        let mut done = reused;
        while prompt.len() - done > chunk {
            let ids = ids_array(&prompt[done..done + chunk]);
            let x = model
                .forward_fill(&ids, &mut run.caches)
                .map_err(mlx_err("prefilling"))?;
            let mut all = vec![&x];
            for c in &run.caches {
                all.extend(c.arrays());
            }
            mlx_rs::transforms::eval(all).map_err(mlx_err("prefilling"))?;
            done += chunk;
            if sink.on_prefill(done, prompt.len()) == ControlFlow::Break(()) {
                stats.finish = Finish::Cancelled;
                stats.prefill_time = start.elapsed();
                return Ok(stats);
            }
        }
        let logits = run.step(&ids_array(&prompt[done..]))?;
        let mut token = picker.pick(&logits, &history)?;
        run.queue(&token)?;
        if sink.on_prefill(prompt.len(), prompt.len()) == ControlFlow::Break(()) {
            stats.finish = Finish::Cancelled;
            stats.prefill_time = start.elapsed();
            return Ok(stats);
        }
        if request.max_tokens == 0 {
            stats.prefill_time = start.elapsed();
            return Ok(stats);
        }

        let mut first = true;
        let mut decode_start = start;
        let mut budget = request.max_tokens;
        loop {
            // Queue the next step before reading this token (greedy only:
            // the sampler needs the token itself).
            let room = run.offset() < run.context;
            let next = if matches!(picker, Picker::Greedy) && budget > 1 && room {
                let logits = run.step(&token)?;
                let next = picker.pick(&logits, &history)?;
                run.queue(&next)?;
                Some(next)
            } else {
                None
            };
            let id = read_token(&token)?;
            if first {
                first = false;
                decode_start = Instant::now();
                stats.prefill_time = decode_start - start;
            }
            budget -= 1;
            history.push(id);
            if request.stop_token_ids.contains(&id) {
                stats.finish = Finish::StopToken(id);
                break;
            }
            stats.generated_tokens += 1;
            let directive = sink.on_token(id);
            let forced = match directive {
                Directive::Continue => None,
                Directive::Stop => {
                    stats.finish = Finish::Cancelled;
                    break;
                }
                Directive::Force(tokens) => Some(tokens),
            };
            if budget == 0 {
                stats.finish = Finish::Length;
                break;
            }
            // Position of the token just read: its cache entry is written by
            // the step that consumes it.
            let consumed_at = history.len() - 1;
            if let Some(forced) = forced.filter(|f| !f.is_empty()) {
                // Drop the speculative step and feed the forced tokens
                // after the token just read.
                run.truncate(consumed_at);
                let take = forced.len().min(budget);
                let mut ids = vec![id];
                ids.extend_from_slice(&forced[..take]);
                if consumed_at + ids.len() > run.context {
                    stats.finish = Finish::Length;
                    break;
                }
                history.extend_from_slice(&forced[..take]);
                budget -= take;
                if budget == 0 {
                    stats.finish = Finish::Length;
                    break;
                }
                let logits = run.step(&ids_array(&ids))?;
                token = picker.pick(&logits, &history)?;
                run.queue(&token)?;
                continue;
            }
            token = match next {
                Some(n) => n,
                None => {
                    if run.offset() >= run.context {
                        stats.finish = Finish::Length;
                        break;
                    }
                    let logits = run.step(&token)?;
                    let n = picker.pick(&logits, &history)?;
                    run.queue(&n)?;
                    n
                }
            };
        }
        if first {
            stats.prefill_time = start.elapsed();
        } else {
            stats.decode_time = decode_start.elapsed();
        }
        if self.options.prefix_cache {
            // Position i of the cache holds history[i]; a queued speculative
            // step wrote at most the last token read.
            let held = run.offset().min(history.len());
            history.truncate(held);
            if let Ok(mut k) = self.kept.lock() {
                *k = Some(KeptPrefix {
                    tokens: history,
                    caches: run.caches,
                });
            }
        }
        Ok(stats)
    }
}
