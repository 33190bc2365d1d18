//! Reading a GGUF file: its metadata through the crate's own GGUF reader
//! (which validates the file) as a [`ModelConfig`], its tensors through
//! MLX's GGUF reader, or thinkwire's (`gguf_tensors`) for MXFP4.

use std::collections::HashMap;
use std::path::Path;

use mlx_rs::Array;
use thinkwire_gguf::{GgmlType, GgufFile};

use super::config::{Architecture, ModelConfig};
use super::weights::WeightMap;
use super::{Loaded, gguf_tensors, load_err};
use crate::EngineError;

/// Tensor types MLX's GGUF reader turns into arrays (others it refuses).
fn mlx_reads(t: GgmlType) -> bool {
    matches!(
        t,
        GgmlType::F32
            | GgmlType::F16
            | GgmlType::BF16
            | GgmlType::Q4_0
            | GgmlType::Q4_1
            | GgmlType::Q8_0
    )
}

/// GGUF tensor name → Hugging Face name (`None` for tensors the decoder
/// does not use, e.g. `rope_freqs`).
fn hf_name(gguf: &str) -> Option<String> {
    let (stem, suffix) = gguf.rsplit_once('.')?;
    let suffix = match suffix {
        "weight" | "bias" | "scales" | "biases" => suffix,
        _ => return None,
    };
    let top = match stem {
        "token_embd" => Some("model.embed_tokens".to_string()),
        "output_norm" => Some("model.norm".to_string()),
        "output" => Some("lm_head".to_string()),
        _ => None,
    };
    if let Some(t) = top {
        return Some(format!("{t}.{suffix}"));
    }
    let rest = stem.strip_prefix("blk.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let part = match part {
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{part}.{suffix}"))
}

/// Undoes llama.cpp's row permutation of llama Q/K projections (it stores
/// them for interleaved RoPE): rows `(heads, head_dim/2, 2)` → `(heads, 2,
/// head_dim/2)`.
fn unpermute_rows(a: &Array, heads: i32) -> mlx_rs::error::Result<Array> {
    let shape = a.shape().to_vec();
    let rows = shape[0];
    let half = rows / heads / 2;
    let mut s = vec![heads, half, 2];
    s.extend_from_slice(&shape[1..]);
    let mut axes: Vec<i32> = vec![0, 2, 1];
    axes.extend((3..s.len() as i32).collect::<Vec<_>>());
    a.reshape(&s)?.transpose_axes(&axes)?.reshape(&shape)
}

/// gpt-oss's SwiGLU clamp from `{arch}.swiglu_clamp_exp`, llama.cpp's key
/// for an expert SwiGLU clamped per layer (a number or one per layer, 0
/// for none). llama.cpp's gpt-oss converter writes no key (its graph fixes
/// 7.0), so absent is `None`, which the model reads as 7. The engine has
/// one limit for all layers: layers that differ are an error.
fn gguf_swiglu_limit(
    file: &GgufFile,
    arch: &str,
    layers: usize,
) -> Result<Option<f32>, EngineError> {
    let key = format!("{arch}.swiglu_clamp_exp");
    let Some(v) = file.get(&key) else {
        return Ok(None);
    };
    let err = |what: String| load_err(file.path(), format!("metadata `{key}`: {what}"));
    let values: Vec<f64> = match v.as_array() {
        Some(items) => items
            .iter()
            .map(|x| x.as_f64().ok_or_else(|| err("holds a non-number".into())))
            .collect::<Result<_, _>>()?,
        None => vec![
            v.as_f64()
                .ok_or_else(|| err(format!("is {}, not a number or an array", v.type_name())))?,
        ],
    };
    if values.len() != 1 && values.len() != layers {
        return Err(err(format!("{} values for {layers} layers", values.len())));
    }
    let first = values
        .first()
        .copied()
        .ok_or_else(|| err("is empty".into()))?;
    if values.iter().any(|&x| x != first) {
        return Err(err(format!(
            "differs between layers ({values:?}); one limit for all layers is supported"
        )));
    }
    if !first.is_finite() || first < 0.0 {
        return Err(err(format!("{first} is not a limit")));
    }
    // 0 turns the clamp off; f32::MAX (not infinity) survives config.json.
    Ok(Some(if first == 0.0 { f32::MAX } else { first as f32 }))
}

/// Reads a GGUF file: config from its metadata, weights through MLX's
/// GGUF reader, or through thinkwire's (`gguf_tensors`) when the file holds
/// MXFP4 tensors, which MLX's reader refuses.
pub(crate) fn load_gguf(path: &Path) -> Result<Loaded, EngineError> {
    let file = GgufFile::open(path).map_err(|e| EngineError::Load(e.to_string()))?;
    let meta_err = |e: thinkwire_gguf::GgufError| EngineError::Load(e.to_string());
    let arch = file.architecture().map_err(meta_err)?.to_string();
    let model_type = gguf_tensors::model_type(&arch).to_string();
    let architecture = Architecture::parse(
        &model_type,
        &format!("{} metadata `general.architecture`", path.display()),
    )?;
    let gpt_oss = architecture == Architecture::GptOss;
    let name_of = |gguf: &str| match gpt_oss {
        true => gguf_tensors::gpt_oss_name(gguf),
        false => hf_name(gguf),
    };
    // MLX's reader takes the whole file or nothing: with an MXFP4 tensor
    // in it, every tensor is read by thinkwire's reader instead.
    let own_reader = file
        .tensors()
        .iter()
        .any(|t| t.ggml_type == GgmlType::MXFP4);
    for t in file.tensors() {
        if name_of(&t.name).is_none() {
            continue;
        }
        let readable = match own_reader {
            true => gguf_tensors::reads(t.ggml_type),
            false => mlx_reads(t.ggml_type),
        };
        if !readable {
            return Err(load_err(
                path,
                format!(
                    "tensor `{}` uses unsupported quantization {} (supported: {})",
                    t.name,
                    t.ggml_type,
                    gguf_tensors::SUPPORTED
                ),
            ));
        }
        // Bounds-checks the tensor's bytes against the file length, so a
        // truncated file is reported here, naming the tensor.
        file.tensor_range(t).map_err(meta_err)?;
    }
    let u = |suffix: &str| -> Result<usize, EngineError> {
        Ok(file.get_arch_u64(suffix).map_err(meta_err)? as usize)
    };
    let heads = u("attention.head_count")?;
    let hidden = u("embedding_length")?;
    let vocab = match file.opt_arch_u64("vocab_size").map_err(meta_err)? {
        Some(v) => v as usize,
        None => match file.tensor("token_embd.weight") {
            Some(t) => t.shape().first().copied().unwrap_or(0) as usize,
            None => return Err(load_err(path, "tensor `token_embd.weight` is missing")),
        },
    };
    let mut rope_scaling = None;
    if let Some(kind) = file
        .opt_str(&format!("{arch}.rope.scaling.type"))
        .map_err(meta_err)?
    {
        let mut m = serde_json::Map::new();
        m.insert("rope_type".into(), kind.into());
        if let Some(f) = file.opt_arch_f64("rope.scaling.factor").map_err(meta_err)? {
            m.insert("factor".into(), f.into());
        }
        if let Some(n) = file
            .opt_arch_u64("rope.scaling.original_context_length")
            .map_err(meta_err)?
        {
            m.insert("original_max_position_embeddings".into(), n.into());
        }
        for (key, field) in [
            ("rope.scaling.yarn_beta_fast", "beta_fast"),
            ("rope.scaling.yarn_beta_slow", "beta_slow"),
        ] {
            if let Some(v) = file.opt_arch_f64(key).map_err(meta_err)? {
                m.insert(field.into(), v.into());
            }
        }
        if kind != "none" {
            rope_scaling = Some(m);
        }
    }
    let eos = file
        .opt_u64("tokenizer.ggml.eos_token_id")
        .map_err(meta_err)?;
    let config = ModelConfig {
        model_type: model_type.clone(),
        hidden_size: hidden,
        num_hidden_layers: u("block_count")?,
        // gpt-oss: the experts' width (llama.cpp writes both keys).
        intermediate_size: match file
            .opt_arch_u64("expert_feed_forward_length")
            .map_err(meta_err)?
        {
            Some(v) if gpt_oss => v as usize,
            _ => u("feed_forward_length")?,
        },
        num_attention_heads: heads,
        num_key_value_heads: Some(
            file.opt_arch_u64("attention.head_count_kv")
                .map_err(meta_err)?
                .map_or(heads, |v| v as usize),
        ),
        head_dim: file
            .opt_arch_u64("attention.key_length")
            .map_err(meta_err)?
            .map(|v| v as usize),
        rms_norm_eps: file
            .opt_arch_f64("attention.layer_norm_rms_epsilon")
            .map_err(meta_err)?
            .unwrap_or(1e-5) as f32,
        vocab_size: vocab,
        rope_theta: file
            .opt_arch_f64("rope.freq_base")
            .map_err(meta_err)?
            .unwrap_or(10_000.0) as f32,
        rope_scaling,
        tie_word_embeddings: file.tensor("output.weight").is_none(),
        max_position_embeddings: file
            .opt_arch_u64("context_length")
            .map_err(meta_err)?
            .map(|v| v as usize),
        attention_bias: Some(file.tensor("blk.0.attn_q.bias").is_some()),
        quantization: None,
        eos_token_id: eos.map(serde_json::Value::from),
        // llama.cpp writes no key for SmolLM3's NoPE layers: it skips RoPE
        // in every fourth layer, the default of `rope_layers`.
        no_rope_layers: None,
        no_rope_layer_interval: None,
        partial_rotary_factor: None,
        original_max_position_embeddings: None,
        num_experts: file
            .opt_arch_u64("expert_count")
            .map_err(meta_err)?
            .map(|v| v as usize),
        num_experts_per_tok: file
            .opt_arch_u64("expert_used_count")
            .map_err(meta_err)?
            .map(|v| v as usize),
        decoder_sparse_step: None,
        mlp_only_layers: None,
        moe_intermediate_size: None,
        norm_topk_prob: None,
        query_pre_attn_scalar: None,
        // gpt-oss: sliding and full layers in turn, sliding first (the
        // default of `layer_types`, as llama.cpp's `set_swa_pattern(2)`).
        sliding_window: match gpt_oss {
            true => file
                .opt_arch_u64("attention.sliding_window")
                .map_err(meta_err)?
                .map(|v| v as usize),
            false => None,
        },
        sliding_window_pattern: None,
        rope_local_base_freq: None,
        layer_types: None,
        swiglu_limit: match gpt_oss {
            true => gguf_swiglu_limit(&file, &arch, u("block_count")?)?,
            false => None,
        },
    };
    config.validate(&format!("{} metadata", path.display()))?;
    // llama.cpp's converter permutes Q/K rows for llama and for SmolLM3
    // (a llama subclass there).
    let permuted = arch == "llama" || arch == "smollm3";
    // GGUF tensors carry their own packing: no folder-wide quantization.
    let loaded = |config: ModelConfig, tensors| Loaded {
        stop_ids: config.eos_ids(),
        config,
        weights: WeightMap {
            tensors,
            source: path.display().to_string(),
            quant: None,
            quant_overrides: Default::default(),
        },
    };
    if own_reader {
        let tensors = gguf_tensors::read_tensors(&file, name_of)?;
        return Ok(loaded(config, tensors));
    }
    drop(file);

    let mlx = mlx_rs::io::GgufFile::load(path)
        .map_err(|e| load_err(path, format!("MLX could not read it: {e}")))?;
    let arrays = mlx
        .arrays()
        .map_err(|e| load_err(path, format!("MLX could not read its tensors: {e}")))?;
    let mut tensors = HashMap::with_capacity(arrays.len());
    let (nq, nkv) = (config.num_attention_heads as i32, config.kv_heads() as i32);
    for (name, a) in arrays {
        let Some(hf) = name_of(&name) else { continue };
        let a =
            if permuted && (hf.contains("self_attn.q_proj.") || hf.contains("self_attn.k_proj.")) {
                let heads = if hf.contains("q_proj") { nq } else { nkv };
                unpermute_rows(&a, heads)
                    .map_err(|e| load_err(path, format!("tensor `{name}`: {e}")))?
            } else {
                a
            };
        tensors.insert(hf, a);
    }
    Ok(loaded(config, tensors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gpt_oss_swiglu_limit() {
        use thinkwire_gguf::{MetadataValue as V, ValueType, write};
        let limit = |name: &str, value: Option<V>| {
            let mut md = vec![("general.architecture", V::String("gpt-oss".into()))];
            md.extend(value.map(|v| ("gpt-oss.swiglu_clamp_exp", v)));
            let path = std::env::temp_dir().join(format!(
                "thinkwire-swiglu-{name}-{}.gguf",
                std::process::id()
            ));
            std::fs::write(&path, write::file(&md, &[])).unwrap();
            let got = gguf_swiglu_limit(&GgufFile::open(&path).unwrap(), "gpt-oss", 3);
            let _ = std::fs::remove_file(&path);
            got.map_err(|e| e.to_string())
        };
        let f32s = |v: &[f32]| V::Array(ValueType::F32, v.iter().map(|&x| V::F32(x)).collect());
        assert_eq!(limit("absent", None), Ok(None));
        assert_eq!(limit("scalar", Some(V::F32(10.0))), Ok(Some(10.0)));
        assert_eq!(limit("layers", Some(f32s(&[5.5; 3]))), Ok(Some(5.5)));
        assert_eq!(limit("off", Some(f32s(&[0.0; 3]))), Ok(Some(f32::MAX)));
        for (name, v, says) in [
            ("differ", f32s(&[7.0, 7.0, 8.0]), "differs between layers"),
            ("count", f32s(&[7.0; 2]), "2 values for 3 layers"),
            ("negative", V::F32(-1.0), "not a limit"),
            ("string", V::String("7".into()), "not a number"),
        ] {
            let e = limit(name, Some(v)).unwrap_err();
            assert!(
                e.contains("gpt-oss.swiglu_clamp_exp") && e.contains(says),
                "{e}"
            );
        }
    }

    #[test]
    fn maps_gguf_names() {
        assert_eq!(
            hf_name("token_embd.weight").as_deref(),
            Some("model.embed_tokens.weight")
        );
        assert_eq!(
            hf_name("blk.12.attn_k.scales").as_deref(),
            Some("model.layers.12.self_attn.k_proj.scales")
        );
        assert_eq!(
            hf_name("blk.0.ffn_norm.weight").as_deref(),
            Some("model.layers.0.post_attention_layernorm.weight")
        );
        assert_eq!(hf_name("rope_freqs.weight"), None);
    }

    #[test]
    fn unpermute_inverts_llama_cpp_permutation() {
        // HF rows for 2 heads of dim 4: 0..8. llama.cpp's permute maps
        // (heads, 2, half) → (heads, half, 2).
        let hf: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let permuted = Array::from_slice(&[0.0f32, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0], &[8, 1]);
        let back = unpermute_rows(&permuted, 2).unwrap();
        assert_eq!(back.as_slice::<f32>(), hf.as_slice());
    }
}
