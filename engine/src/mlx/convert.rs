//! GGUF → Hugging Face / MLX folder, so that mlx-lm (or transformers) runs
//! on exactly the weights thinkwire runs: the same dequantization, the Q/K
//! permutation undone, Hugging Face tensor names.
//!
//! The weights, `config.json`, `generation_config.json` and
//! `tokenizer_config.json` (chat template and special tokens from the GGUF
//! metadata) are written here; `tokenizer.json` is synthesized by the chat
//! crate (`thinkwire_chat::tokenizer_json_from_gguf`) and passed in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mlx_rs::{Array, Dtype};

use super::load::load_gguf;
use super::weights::{Precision, Weight};
use crate::EngineError;
use crate::gguf::GgufFile;

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// `F32` (default) or `Bf16` write dense weights; `Keep` writes GGUF
    /// Q4_0/Q4_1/Q8_0 tensors as MLX-quantized ones (with a
    /// `quantization` entry in config.json, groups of 32).
    pub precision: Precision,
    /// The `tokenizer.json` to write, if the caller has one.
    pub tokenizer_json: Option<serde_json::Value>,
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
    let names: Vec<String> = weights
        .tensors
        .keys()
        .filter_map(|k| k.strip_suffix(".weight").map(str::to_string))
        .collect();
    let mut arrays: HashMap<String, Array> = HashMap::new();
    let mut quantized = None;
    for name in names {
        let w = weights.take_weight(&name)?;
        match (options.precision, w) {
            (
                Precision::Keep,
                Weight::Quantized {
                    w,
                    scales,
                    biases,
                    q,
                },
            ) => {
                if quantized.is_some_and(|prev| prev != q.bits) {
                    // One `quantization` entry covers the folder; mixed
                    // widths (Q4 layers, Q8 embedding) dequantize the rest.
                    let d = Weight::Quantized {
                        w,
                        scales,
                        biases,
                        q,
                    }
                    .dense(Dtype::Float32)?;
                    arrays.insert(format!("{name}.weight"), d);
                    continue;
                }
                quantized = Some(q.bits);
                arrays.insert(format!("{name}.weight"), w);
                arrays.insert(format!("{name}.scales"), scales);
                arrays.insert(format!("{name}.biases"), biases);
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
            a.as_dtype(Dtype::Bfloat16)
                .map_err(|e| EngineError::Backend(format!("casting `{name}`: {e}")))?
        };
        arrays.insert(name, a);
    }
    if let Some(bits) = quantized {
        config.quantization = Some(super::config::QuantizationConfig {
            group_size: 32,
            bits,
            mode: "affine".into(),
        });
    }
    let mut files = Vec::new();
    let st = out.join("model.safetensors");
    let meta: HashMap<String, String> = [("format".to_string(), "mlx".to_string())].into();
    Array::save_safetensors(arrays.iter().map(|(k, v)| (k.as_str(), v)), &meta, &st)
        .map_err(|e| io_err(&st, format!("writing weights: {e}")))?;
    files.push(st);

    let arch = config.architecture()?;
    let mut cfg = serde_json::to_value(&config).map_err(|e| io_err(out, e))?;
    let class = match arch {
        super::config::Architecture::Llama => "LlamaForCausalLM",
        super::config::Architecture::Qwen2 => "Qwen2ForCausalLM",
        super::config::Architecture::Qwen3 => "Qwen3ForCausalLM",
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

    let gguf = GgufFile::open(src).map_err(|e| EngineError::Load(e.to_string()))?;
    let meta_err = |e: crate::gguf::GgufError| EngineError::Load(e.to_string());
    let tokens = gguf
        .get_str_array("tokenizer.ggml.tokens")
        .map_err(meta_err)?;
    let token = |key: &str| -> Result<Option<String>, EngineError> {
        Ok(gguf
            .opt_u64(key)
            .map_err(meta_err)?
            .and_then(|id| tokens.get(id as usize).map(|s| s.to_string())))
    };
    let bos = token("tokenizer.ggml.bos_token_id")?;
    let eos = token("tokenizer.ggml.eos_token_id")?;
    let mut tc = serde_json::json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": config.context_length(),
        "add_bos_token": gguf.opt_bool("tokenizer.ggml.add_bos_token").map_err(meta_err)?.unwrap_or(false),
        "clean_up_tokenization_spaces": false,
    });
    if let Some(obj) = tc.as_object_mut() {
        if let Some(b) = bos {
            obj.insert("bos_token".into(), b.into());
        }
        if let Some(e) = eos {
            obj.insert("eos_token".into(), e.into());
        }
        if let Some(p) = token("tokenizer.ggml.padding_token_id")? {
            obj.insert("pad_token".into(), p.into());
        }
        if let Some(t) = gguf.opt_str("tokenizer.chat_template").map_err(meta_err)? {
            obj.insert("chat_template".into(), t.into());
        }
    }
    let path = out.join("tokenizer_config.json");
    write_json(&path, &tc)?;
    files.push(path);

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
