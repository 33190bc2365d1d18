//! GGUF → Hugging Face / MLX folder, so that mlx-lm (or transformers) runs
//! on exactly the weights thinkwire runs: the same dequantization, the Q/K
//! permutation undone, Hugging Face tensor names.
//!
//! The weights, `config.json` and `generation_config.json` are written here;
//! `tokenizer.json` and `tokenizer_config.json` come from the chat crate
//! (`ChatModel::tokenizer_json` / `tokenizer_config_json`), which owns
//! tokenizers and templates, and are passed in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mlx_rs::{Array, Dtype};

use super::config::{Architecture, QuantizationConfig};
use super::gguf::load_gguf;
use super::weights::Weight;
use crate::EngineError;
use crate::mlx::kernels::{Precision, Quant};
use thinkwire_gguf::GgufFile;

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// `Auto` (default) writes GGUF Q4_0/Q4_1/Q8_0 tensors as MLX-quantized
    /// ones with f32 scales (exact; a `quantization` entry in config.json,
    /// groups of 32, per-module entries where widths differ) and the rest as
    /// f32; `Keep` does the same with the scales and dense tensors as
    /// stored; `F32` or `Bf16` write every weight dense.
    pub precision: Precision,
    /// The `tokenizer.json` to write, if the caller has one.
    pub tokenizer_json: Option<serde_json::Value>,
    /// The `tokenizer_config.json` to write (chat template, special
    /// tokens), if the caller has one; `model_max_length` is added.
    pub tokenizer_config: Option<serde_json::Value>,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct ConvertReport {
    /// Files written, in order.
    pub files: Vec<PathBuf>,
    /// Tensors in `model.safetensors`.
    pub tensors: usize,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> EngineError {
    EngineError::Load(format!("{}: {e}", path.display()))
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<(), EngineError> {
    let text = serde_json::to_string_pretty(v).map_err(|e| io_err(path, e))?;
    std::fs::write(path, text + "\n").map_err(|e| io_err(path, e))
}

/// The `quantization` entry of config.json: the most common format for the
/// folder, per-module entries (as mlx-lm reads them) for the others, e.g. a
/// Q8_0 embedding among Q4_1 layers.
fn quantization_entry(packed: &[(String, Quant)]) -> Option<QuantizationConfig> {
    let mut counts: Vec<(Quant, usize)> = Vec::new();
    for (_, q) in packed {
        match counts.iter_mut().find(|(c, _)| c == q) {
            Some((_, n)) => *n += 1,
            None => counts.push((*q, 1)),
        }
    }
    let (common, _) = counts.iter().max_by_key(|(_, n)| *n)?;
    let mut entry = QuantizationConfig {
        group_size: common.group_size,
        bits: common.bits,
        mode: "affine".into(),
        extra: Default::default(),
    };
    for (module, q) in packed {
        if q != common {
            entry = entry.with_module(module, q.group_size, q.bits);
        }
    }
    Some(entry)
}

/// Converts the GGUF file `src` into the folder `out` (created if needed).
pub fn convert_gguf(
    src: &Path,
    out: &Path,
    options: &ConvertOptions,
) -> Result<ConvertReport, EngineError> {
    let loaded = load_gguf(src)?;
    std::fs::create_dir_all(out).map_err(|e| io_err(out, e))?;
    let mut config = loaded.config;
    let mut weights = loaded.weights;
    let mut names: Vec<String> = weights
        .tensors
        .keys()
        .filter_map(|k| k.strip_suffix(".weight").map(str::to_string))
        .collect();
    names.sort();
    let cast_err = |name: &str| {
        let name = name.to_string();
        move |e: mlx_rs::error::Exception| EngineError::Backend(format!("converting `{name}`: {e}"))
    };
    let mut arrays: HashMap<String, Array> = HashMap::new();
    // (module, quantization) of every tensor written packed.
    let mut packed: Vec<(String, Quant)> = Vec::new();
    for name in names {
        let w = weights.take_weight(&name)?;
        match (options.precision, w) {
            (
                Precision::Keep | Precision::Auto,
                Weight::Quantized {
                    w,
                    scales,
                    biases,
                    q,
                    ..
                },
            ) => {
                let (scales, biases) = if options.precision == Precision::Auto {
                    // f16 → f32 is exact; MLX then keeps activations in f32.
                    (
                        scales.as_dtype(Dtype::Float32).map_err(cast_err(&name))?,
                        biases.as_dtype(Dtype::Float32).map_err(cast_err(&name))?,
                    )
                } else {
                    (scales, biases)
                };
                arrays.insert(format!("{name}.weight"), w);
                arrays.insert(format!("{name}.scales"), scales);
                arrays.insert(format!("{name}.biases"), biases);
                packed.push((name, q));
            }
            (Precision::Bf16, w) => {
                arrays.insert(format!("{name}.weight"), w.dense(Dtype::Bfloat16)?);
            }
            (_, w) => {
                arrays.insert(format!("{name}.weight"), w.dense(Dtype::Float32)?);
            }
        }
    }
    for (name, a) in weights.tensors.drain() {
        let a = if a.dtype() == Dtype::Float32 || options.precision == Precision::Keep {
            a
        } else {
            a.as_dtype(Dtype::Bfloat16).map_err(cast_err(&name))?
        };
        arrays.insert(name, a);
    }
    config.quantization = quantization_entry(&packed);
    let mut files = Vec::new();
    let st = out.join("model.safetensors");
    let meta: HashMap<String, String> = [("format".to_string(), "mlx".to_string())].into();
    Array::save_safetensors(arrays.iter().map(|(k, v)| (k.as_str(), v)), &meta, &st)
        .map_err(|e| io_err(&st, format!("writing weights: {e}")))?;
    files.push(st);

    let arch = config.architecture()?;
    let mut cfg = serde_json::to_value(&config).map_err(|e| io_err(out, e))?;
    let class = match arch {
        Architecture::Llama => "LlamaForCausalLM",
        Architecture::Qwen2 => "Qwen2ForCausalLM",
        Architecture::Qwen3 => "Qwen3ForCausalLM",
        Architecture::SmolLm3 => "SmolLM3ForCausalLM",
        Architecture::Phi3 => "Phi3ForCausalLM",
        Architecture::Qwen3Moe => "Qwen3MoeForCausalLM",
        Architecture::Gemma3Text => "Gemma3ForCausalLM",
        Architecture::GptOss => "GptOssForCausalLM",
    };
    if let Some(obj) = cfg.as_object_mut() {
        obj.insert("architectures".into(), serde_json::json!([class]));
        obj.insert("head_dim".into(), config.head_dim().into());
        obj.insert("num_key_value_heads".into(), config.kv_heads().into());
        obj.insert("attention_bias".into(), config.qkv_bias().into());
        obj.insert("hidden_act".into(), "silu".into());
        obj.insert(
            "torch_dtype".into(),
            if options.precision == Precision::Bf16 {
                "bfloat16"
            } else {
                "float32"
            }
            .into(),
        );
        obj.retain(|_, v| !v.is_null());
    }
    let path = out.join("config.json");
    write_json(&path, &cfg)?;
    files.push(path);

    if let Some(tc) = &options.tokenizer_config {
        let mut tc = tc.clone();
        if let Some(obj) = tc.as_object_mut() {
            obj.entry("model_max_length")
                .or_insert_with(|| config.context_length().into());
        }
        let path = out.join("tokenizer_config.json");
        write_json(&path, &tc)?;
        files.push(path);
    }

    let gguf = GgufFile::open(src).map_err(|e| EngineError::Load(e.to_string()))?;
    let meta_err = |e: thinkwire_gguf::GgufError| EngineError::Load(e.to_string());
    let mut gen_cfg = serde_json::json!({});
    if let Some(obj) = gen_cfg.as_object_mut() {
        if let Some(b) = gguf
            .opt_u64("tokenizer.ggml.bos_token_id")
            .map_err(meta_err)?
        {
            obj.insert("bos_token_id".into(), b.into());
        }
        if !loaded.stop_ids.is_empty() {
            obj.insert("eos_token_id".into(), loaded.stop_ids.clone().into());
        }
    }
    let path = out.join("generation_config.json");
    write_json(&path, &gen_cfg)?;
    files.push(path);

    if let Some(t) = &options.tokenizer_json {
        let path = out.join("tokenizer.json");
        write_json(&path, t)?;
        files.push(path);
    }
    Ok(ConvertReport {
        files,
        tensors: arrays.len(),
    })
}
