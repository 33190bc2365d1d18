//! The MLX engine: loads a GGUF file or a Hugging Face / mlx-community
//! folder, and hands the model to a scheduler that generates for every
//! caller at once (continuous batching, chunked prefill, per-sequence KV
//! caches; see `scheduler`).
//!
//! The folders import one way: `bench` → `scheduler` → `model` → `load` →
//! `kernels` → `error.rs` (the only unsafe code is in `kernels`).
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
//!     logprobs: None,
//! };
//! engine.generate(&request, &mut Print)?;
//! # Ok::<(), thinkwire_engine::EngineError>(())
//! ```

pub mod bench;
mod error;
mod kernels;
mod load;
mod model;
mod scheduler;

use std::path::Path;
use std::time::Duration;

pub use self::kernels::{
    Precision, device_name, int8_isa, kernel_threads, kernel_time, tiles_available,
};
pub use self::load::config;
pub use self::load::{ConvertOptions, ConvertReport, convert_gguf};
use self::model::Network;
use self::scheduler::Scheduler;
pub use self::scheduler::SchedulerOptions;
use crate::{
    Engine, EngineError, EngineLoad, GenerationRequest, GenerationStats, ModelInfo, TokenSink,
    check_request,
};

/// How to load a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Precision policy for the weights.
    pub precision: Precision,
    /// Prompt tokens per prefill step: bounds the memory of the attention
    /// scores, keeps running sequences decoding between a long prompt's
    /// chunks and lets a long prefill report progress and be cancelled
    /// (default: [`default_prefill_chunk`]).
    pub prefill_chunk: usize,
    /// Keep the attention caches of finished generations in memory (a pool
    /// of at most `prefix_cache_bytes`, least recently used out first) and
    /// reuse the one sharing the longest prefix with a new prompt (a
    /// follow-up turn then only prefills what is new). Off by default: it
    /// retains state derived from conversations (their reasoning included)
    /// between requests, and the time to first token tells one client
    /// whether another's prompt shared its prefix. For single-user
    /// processes (the chat REPL).
    pub prefix_cache: bool,
    /// Bytes the prefix-cache pool may keep.
    pub prefix_cache_bytes: usize,
    /// Sequences decoded together at most; more wait in line (default:
    /// [`default_max_batch`]).
    pub max_batch: usize,
    /// Bytes of attention cache running sequences may reserve together;
    /// `None`: [`default_kv_cache_bytes`].
    pub kv_cache_bytes: Option<usize>,
    /// When nothing runs, how long a new request waits at most for others
    /// arriving with it, so a burst is prefilled in one pass (a lone
    /// request waits a quarter of it).
    pub batch_window: Duration,
    /// A request admitted while another's prompt starts like its own (at
    /// least 16 tokens) takes that running sequence's cache for the common
    /// part instead of computing it again. Nothing outlives the runs, but
    /// time to first token then tells one client that a concurrent
    /// request shared its prefix: off by default, for servers whose
    /// clients trust each other.
    pub share_prefixes: bool,
    /// What the attention caches hold.
    pub kv_cache_dtype: KvCacheDtype,
    /// Whether sampled tokens are drawn in the step's graph on MLX's
    /// device (`scheduler/draw.rs`: only token ids reach the host, so
    /// sampled steps are queued ahead; one operation on a CPU) rather than
    /// by the sampler on the host after their logits are read. `None`: on
    /// the device, which is faster on a CPU too (docs/benchmarks.md).
    pub draws_on_device: Option<bool>,
    /// Whether the scheduler reads a step's tokens and builds the next
    /// step while the step runs, as mlx-lm does (the next step taking them
    /// as input before they are read), rather than waiting for the step
    /// and handing out its tokens at once. `None`: where MLX runs on a
    /// GPU; on a CPU the host's work would take the cores the step
    /// computes on, and waiting hands each token out a step sooner
    /// (docs/benchmarks.md).
    pub overlap_steps: Option<bool>,
    /// Whether a one-row input (a decode step of one sequence) is
    /// multiplied by a quantized layer wider than 16,384 outputs in blocks
    /// of at most that many rows, their outputs joined: MLX's CUDA backend
    /// runs one row as a matrix-vector product only up to that width on an
    /// H100/H200, a wider one (a 152k vocabulary's output layer) as its
    /// tiled GEMM. `None`: where that GPU is MLX's device.
    pub split_one_row: Option<bool>,
}

/// What the attention caches hold (`--kv-cache-dtype`). A decode step reads
/// every cached key and value of every sequence, so at a few hundred
/// positions halves cost as much less as the weights' reads would.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KvCacheDtype {
    /// f16 under `--precision int8` (within its stated tolerance), else the
    /// type the model computes in (f32 on a CPU).
    #[default]
    Auto,
    /// Floats, whatever the precision.
    F32,
    /// Halves (llama.cpp's default cache type): half the memory, so
    /// `--kv-cache-mb` holds twice the positions; keys and values keep 11
    /// significant bits.
    F16,
}

impl KvCacheDtype {
    /// The spellings `parse` takes, for error messages.
    pub const NAMES: &'static str = "auto, f32 or f16";

    /// Parses `auto`, `f32` or `f16`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "f32" | "float32" => Some(Self::F32),
            "f16" | "float16" => Some(Self::F16),
            _ => None,
        }
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            precision: Precision::default(),
            prefill_chunk: default_prefill_chunk(),
            prefix_cache: false,
            prefix_cache_bytes: 512 << 20,
            max_batch: default_max_batch(),
            kv_cache_bytes: None,
            batch_window: Duration::from_millis(4),
            share_prefixes: false,
            kv_cache_dtype: KvCacheDtype::Auto,
            draws_on_device: None,
            overlap_steps: None,
            split_one_row: None,
        }
    }
}

/// Sequences decoded together unless told: 32 where MLX runs on a GPU,
/// whose step barely grows with the batch (mlx-lm's server decodes 32 at
/// once too), 8 on a CPU, whose step grows with every sequence so that a
/// larger batch mostly lengthens each one's wait between tokens.
pub fn default_max_batch() -> usize {
    if kernels::default_device_is_cpu() {
        8
    } else {
        32
    }
}

/// Prompt tokens per prefill pass unless told: 2048 where MLX runs on a
/// GPU, where a pass of 512 tokens costs little more than the host's work
/// to build it, so cutting long prompts finer mostly adds passes (mlx-lm
/// prefills 2048 at a time); 512 on a CPU, where a pass takes seconds and
/// running sequences wait for it.
pub fn default_prefill_chunk() -> usize {
    if kernels::default_device_is_cpu() {
        512
    } else {
        2048
    }
}

/// A quarter of the memory the caches live in: the machine's (Linux
/// `MemTotal`), or a GPU's where MLX runs on one with less (an NVIDIA
/// card beside a host of more memory); else 2 GiB.
pub fn default_kv_cache_bytes() -> usize {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    });
    let total = match (total, kernels::device_memory()) {
        (Some(host), Some(device)) => Some(host.min(device)),
        (host, device) => host.or(device),
    };
    total.map_or(2 << 30, |t| t / 4)
}

/// A model on MLX, ready to generate for many callers at once.
pub struct MlxEngine {
    info: ModelInfo,
    stop_ids: Vec<u32>,
    options: LoadOptions,
    scheduler: Scheduler,
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
        let (model, config, stop_ids) = load_network(path, options)?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        kernels::wire_for_generation(model.weight_bytes());
        let kv_budget = options
            .kv_cache_bytes
            .unwrap_or_else(default_kv_cache_bytes);
        tracing::info!(
            model = %id,
            architecture = model.architecture.name(),
            precision = options.precision.name(),
            kv_cache = model.cache_dtype_name(),
            kv_budget_mb = kv_budget >> 20,
            max_batch = options.max_batch,
            "model loaded"
        );
        let info = ModelInfo {
            id,
            architecture: model.architecture.name().into(),
            context_length: config.context_length(),
            vocab_size: model.vocab,
            quantization: Some(model.weight_summary()),
        };
        let scheduler = Scheduler::start(
            model,
            info.context_length,
            SchedulerOptions {
                max_batch: options.max_batch.max(1),
                prefill_chunk: options.prefill_chunk.max(1),
                step_prompt_tokens: options.prefill_chunk.max(1),
                short_prompt_tokens: options.prefill_chunk.max(1) / 2,
                kv_budget,
                prefix_pool: if options.prefix_cache {
                    options.prefix_cache_bytes
                } else {
                    0
                },
                reply_wait: Duration::from_millis(50),
                gather: options.batch_window,
                share_prefixes: options.share_prefixes,
                draws_on_device: options.draws_on_device.unwrap_or(true),
                overlap_steps: options
                    .overlap_steps
                    .unwrap_or_else(|| !kernels::default_device_is_cpu()),
            },
        )?;
        Ok(Self {
            info,
            stop_ids,
            options: options.clone(),
            scheduler,
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

/// The network of `path` as `options` asks for it (precision, cache
/// type), its config and its stop ids, without a scheduler.
pub(crate) fn load_network(
    path: &Path,
    options: &LoadOptions,
) -> Result<(Network, load::config::ModelConfig, Vec<u32>), EngineError> {
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
    let mut model = Network::build(&config, loaded.weights, options.precision)?;
    let one_row = match options.split_one_row {
        None => kernels::one_row_gemv_outputs(),
        Some(true) => Some(kernels::ONE_ROW_GEMV_OUTPUTS),
        Some(false) => None,
    };
    if let Some(limit) = one_row {
        model.split_one_row(limit)?;
    }
    match options.kv_cache_dtype {
        KvCacheDtype::Auto => {}
        KvCacheDtype::F32 => model.set_cache_dtype(Some(mlx_rs::Dtype::Float32)),
        KvCacheDtype::F16 => model.set_cache_dtype(Some(mlx_rs::Dtype::Float16)),
    }
    Ok((model, config, loaded.stop_ids))
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
        self.scheduler.generate(request, sink)
    }

    fn load(&self) -> EngineLoad {
        self.scheduler.load()
    }

    fn expected_wait(&self, prompt_tokens: usize, ahead: &[usize]) -> Option<std::time::Duration> {
        self.scheduler.expected_wait(prompt_tokens, ahead)
    }

    fn forget_pace(&self) {
        self.scheduler.forget_pace();
    }

    fn scores_prompts(&self) -> bool {
        true
    }

    fn score_prompt(
        &self,
        prompt: &[u32],
        top: usize,
    ) -> Result<Vec<crate::TokenLogprobs>, EngineError> {
        let vocab = self.info.vocab_size;
        if let Some(bad) = prompt.iter().find(|&&id| id as usize >= vocab) {
            return Err(EngineError::InvalidRequest(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        if prompt.len() > self.info.context_length {
            return Err(EngineError::ContextOverflow {
                prompt: prompt.len(),
                context: self.info.context_length,
            });
        }
        self.scheduler
            .score(prompt.to_vec(), top.min(crate::MAX_TOP_LOGPROBS))
    }

    /// The prompt is scored on the caches its generation then continues
    /// from: computed once.
    fn generate_scored(
        &self,
        request: &GenerationRequest,
        top: usize,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        check_request(&self.info, request)?;
        let top = top.min(crate::MAX_TOP_LOGPROBS);
        self.scheduler.submit(request, sink, Some(top))
    }
}
