//! Reading a model: a GGUF file (`gguf.rs`: metadata through the crate's
//! own GGUF reader, which validates the file; tensors through MLX's GGUF
//! reader) or a Hugging Face / mlx-community folder (`hf.rs`: config.json +
//! safetensors). Both end as a [`ModelConfig`] and weights under Hugging
//! Face names ([`WeightMap`]); `convert.rs` writes a GGUF file out as such
//! a folder.

pub mod config;
mod convert;
mod gguf;
mod gguf_quants;
mod gguf_tensors;
mod hf;
pub(crate) mod rope_config;
mod weights;

use std::path::Path;

use self::config::ModelConfig;
pub use self::convert::{ConvertOptions, ConvertReport, convert_gguf};
pub(crate) use self::gguf::load_gguf;
pub(crate) use self::hf::load_hf_dir;
pub(crate) use self::weights::{Weight, WeightMap};
use crate::EngineError;

/// A model read from disk, before the precision policy.
pub(crate) struct Loaded {
    pub config: ModelConfig,
    pub weights: WeightMap,
    /// End-of-turn ids the files declare (generation_config.json, config,
    /// GGUF `tokenizer.ggml.eos_token_id`).
    pub stop_ids: Vec<u32>,
}

fn load_err(path: &Path, what: impl std::fmt::Display) -> EngineError {
    EngineError::Load(format!("{}: {what}", path.display()))
}
