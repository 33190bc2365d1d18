//! The model flags every model-loading subcommand shares, and the loading
//! itself, so `serve`, `chat`, `inspect` and `bench` resolve a model alike.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use thinkwire_reasoning::Registry;

use crate::agent::LocalModel;

/// Which model to load and how.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// A GGUF file or a Hugging Face / mlx-community folder (default: the
    /// model `scripts/setup` installed).
    #[arg(long, short = 'm', env = "THINKWIRE_MODEL")]
    pub model: Option<PathBuf>,
    /// Weight precision at load: `auto` (on a CPU, 4/8-bit weights stay
    /// packed and run on thinkwire's kernels, the rest f32), `int8` (as
    /// auto, with activations quantized to 8 bits for integer dot products:
    /// faster decoding, logits within a stated tolerance), `f32` (dequantize everything;
    /// BLAS), `bf16`, or `keep` (MLX's own quantized kernels).
    #[arg(long, default_value = "auto")]
    pub precision: String,
    /// A reasoning-formats file merged over the built-in registry.
    #[arg(long, env = "THINKWIRE_FORMATS")]
    pub formats: Option<PathBuf>,
    /// Keep the last generation's attention cache in memory so a follow-up
    /// turn only prefills what is new. It retains conversation-derived state
    /// between requests and lets time-to-first-token, and the usage's
    /// cached-token count to the token, reveal shared prefixes across
    /// clients: leave it off for zero-data-retention or multi-user servers.
    /// (`thinkwire chat`'s REPL always uses it.)
    #[arg(long)]
    pub prefix_cache: bool,
    /// Most megabytes the prefix-cache pool keeps (least recently used
    /// caches go first).
    #[arg(long, default_value_t = 512)]
    pub prefix_cache_mb: usize,
    /// Generations decoded together in one batch; more wait in line.
    /// Default: 32 where MLX runs on a GPU (as mlx-lm's server), 8 on a CPU.
    #[arg(long)]
    pub max_batch: Option<usize>,
    /// Prompt tokens computed per pass: longer prompts are cut into chunks,
    /// one a step beside the decoding generations, so these keep streaming
    /// and a long prefill can be cancelled. Default: 2048 where MLX runs on a GPU
    /// (as mlx-lm), 512 on a CPU.
    #[arg(long)]
    pub prefill_chunk: Option<usize>,
    /// Megabytes of attention cache the batch may reserve (each generation
    /// reserves room for its prompt and all its tokens; where MLX's
    /// attention keeps the batch in one buffer per layer, a GPU, every
    /// generation reserves the longest one's room; one that does not fit
    /// waits). Default: a quarter of the machine's memory, or of the GPU's
    /// where MLX runs on one with less.
    #[arg(long)]
    pub kv_cache_mb: Option<usize>,
    /// When nothing is generating, how many milliseconds a new request
    /// waits at most for others arriving with it, so a burst is prefilled
    /// in one pass (a lone request waits a quarter of it; 0: never waits).
    #[arg(long, default_value_t = 4)]
    pub batch_window_ms: u64,
    /// Generations whose prompts start alike (a shared system prompt or
    /// document, at least 16 tokens) compute the common part once while
    /// they run together. Nothing is kept after the runs, but time to
    /// first token and the usage's cached-token count then reveal to one
    /// client that a concurrent request shared its prefix, and how much:
    /// for servers whose clients trust each other.
    #[arg(long)]
    pub share_prefixes: bool,
    /// What the attention caches hold: `auto` (f16 under `--precision
    /// int8`, else f32), `f32`, or `f16` (half the memory and reads;
    /// keys and values rounded to 11 significant bits).
    #[arg(long, default_value = "auto")]
    pub kv_cache_dtype: String,
    /// Where sampled tokens are drawn: `device` (in the step's graph on
    /// MLX's device, one operation on a CPU: only token ids reach the
    /// host, and sampled steps are queued ahead like greedy ones), `host`
    /// (the sampler on the CPU, after the step's logits are read), or
    /// `auto` (the device, the faster on a GPU and on a CPU alike). Seeded
    /// draws differ between the two.
    #[arg(long, default_value = "auto")]
    pub sample_on: String,
    /// Whether the host reads a step's tokens and builds the next step
    /// while the step runs (`on`, as mlx-lm does), or waits for the step
    /// and hands its tokens out at once (`off`); `auto`: on where MLX runs
    /// on a GPU, off on a CPU (whose cores that host work would take from
    /// the step).
    #[arg(long, default_value = "auto")]
    pub overlap_steps: String,
    /// Whether one sequence's decode step multiplies a quantized layer
    /// wider than 16,384 outputs (a 152k vocabulary's output layer) in
    /// blocks of at most that many rows (`on`), which MLX's CUDA backend
    /// runs as matrix-vector products, or in one call (`off`), which it
    /// runs as its tiled GEMM on an H100/H200; `auto`: on there, off
    /// elsewhere.
    #[arg(long, default_value = "auto")]
    pub split_one_row: String,
}

impl ModelArgs {
    /// The model path: the flag, or the default model.
    pub fn path(&self) -> Result<PathBuf> {
        match &self.model {
            Some(path) => Ok(path.clone()),
            None => {
                let path = thinkwire_chat::assets::default_model();
                if !path.exists() {
                    bail!(
                        "the default model is not installed at {} — run scripts/setup, or pass --model",
                        path.display()
                    );
                }
                Ok(path)
            }
        }
    }

    /// `--max-batch`, or the default for the device MLX runs on.
    pub fn max_batch(&self) -> Result<usize> {
        match self.max_batch {
            Some(0) => bail!("--max-batch must be at least 1"),
            Some(n) => Ok(n),
            #[cfg(feature = "mlx")]
            None => Ok(thinkwire_engine::mlx::default_max_batch()),
            #[cfg(not(feature = "mlx"))]
            None => Ok(8),
        }
    }

    /// `--prefill-chunk`, or the default for the device MLX runs on.
    #[cfg(feature = "mlx")]
    pub fn prefill_chunk(&self) -> Result<usize> {
        match self.prefill_chunk {
            Some(0) => bail!("--prefill-chunk must be at least 1"),
            Some(n) => Ok(n),
            None => Ok(thinkwire_engine::mlx::default_prefill_chunk()),
        }
    }

    /// The reasoning-format registry: built-in, with the user's file over it.
    pub fn registry(&self) -> Result<Registry> {
        let builtin = Registry::builtin();
        match &self.formats {
            Some(path) => builtin
                .with_user_file(path)
                .with_context(|| format!("loading reasoning formats from {}", path.display())),
            None => Ok(builtin),
        }
    }

    /// Loads engine, tokenizer, template and reasoning format.
    pub fn load(&self) -> Result<LocalModel> {
        let path = self.path()?;
        let engine = load_engine(&path, self)?;
        let chat = LocalModel::load_chat(&path).with_context(|| {
            format!(
                "loading the tokenizer and chat template of {}",
                path.display()
            )
        })?;
        Ok(LocalModel::new(engine, chat, &self.registry()?)?)
    }
}

/// A flag's value through its type's `parse`; every such flag is refused
/// alike, naming itself and what it takes.
#[cfg(feature = "mlx")]
fn flag_value<T>(flag: &str, name: &str, parse: fn(&str) -> Option<T>, names: &str) -> Result<T> {
    parse(name).ok_or_else(|| anyhow::anyhow!("{flag}: expected {names}, not {name:?}"))
}

/// A `--kv-cache-dtype` value.
#[cfg(feature = "mlx")]
pub(super) fn parse_kv_cache_dtype(name: &str) -> Result<thinkwire_engine::mlx::KvCacheDtype> {
    use thinkwire_engine::mlx::KvCacheDtype;
    flag_value(
        "--kv-cache-dtype",
        name,
        KvCacheDtype::parse,
        KvCacheDtype::NAMES,
    )
}

/// A `--sample-on` value: whether sampled tokens are drawn on MLX's device
/// (`None`: auto).
#[cfg(feature = "mlx")]
pub(super) fn parse_sample_on(name: &str) -> Result<Option<bool>> {
    auto_or("--sample-on", name, ("device", "host"))
}

/// An `--overlap-steps` value (`None`: auto).
#[cfg(feature = "mlx")]
pub(super) fn parse_overlap_steps(name: &str) -> Result<Option<bool>> {
    auto_or("--overlap-steps", name, ("on", "off"))
}

/// A `--split-one-row` value (`None`: auto).
#[cfg(feature = "mlx")]
pub(super) fn parse_split_one_row(name: &str) -> Result<Option<bool>> {
    auto_or("--split-one-row", name, ("on", "off"))
}

/// A flag of three values: `auto` (`None`), `yes` and `no`'s words.
#[cfg(feature = "mlx")]
fn auto_or(flag: &str, name: &str, (yes, no): (&str, &str)) -> Result<Option<bool>> {
    match name {
        "auto" => Ok(None),
        n if n == yes => Ok(Some(true)),
        n if n == no => Ok(Some(false)),
        _ => anyhow::bail!("{flag}: expected auto, {yes} or {no}, not {name:?}"),
    }
}

/// A `--precision` value; shared so every subcommand rejects a bad one alike.
#[cfg(feature = "mlx")]
pub(super) fn parse_precision(name: &str) -> Result<thinkwire_engine::mlx::Precision> {
    use thinkwire_engine::mlx::Precision;
    flag_value("--precision", name, Precision::parse, Precision::NAMES)
}

/// The engine's options from the model flags, at `precision`: one place,
/// so `serve`, `chat` and `bench` honour every flag alike.
#[cfg(feature = "mlx")]
pub(super) fn load_options(
    args: &ModelArgs,
    precision: thinkwire_engine::mlx::Precision,
) -> Result<thinkwire_engine::mlx::LoadOptions> {
    Ok(thinkwire_engine::mlx::LoadOptions {
        precision,
        prefix_cache: args.prefix_cache,
        prefix_cache_bytes: args.prefix_cache_mb << 20,
        max_batch: args.max_batch()?,
        prefill_chunk: args.prefill_chunk()?,
        kv_cache_bytes: args.kv_cache_mb.map(|mb| mb << 20),
        batch_window: std::time::Duration::from_millis(args.batch_window_ms),
        share_prefixes: args.share_prefixes,
        kv_cache_dtype: parse_kv_cache_dtype(&args.kv_cache_dtype)?,
        draws_on_device: parse_sample_on(&args.sample_on)?,
        overlap_steps: parse_overlap_steps(&args.overlap_steps)?,
        split_one_row: parse_split_one_row(&args.split_one_row)?,
    })
}

#[cfg(feature = "mlx")]
fn load_engine(path: &Path, args: &ModelArgs) -> Result<Arc<dyn thinkwire_engine::Engine>> {
    use thinkwire_engine::mlx::MlxEngine;
    let options = load_options(args, parse_precision(&args.precision)?)?;
    let engine =
        MlxEngine::load(path, &options).with_context(|| format!("loading {}", path.display()))?;
    Ok(Arc::new(engine))
}

#[cfg(not(feature = "mlx"))]
fn load_engine(_path: &Path, _args: &ModelArgs) -> Result<Arc<dyn thinkwire_engine::Engine>> {
    bail!("this thinkwire was built without the `mlx` feature, so it has no engine to load")
}
