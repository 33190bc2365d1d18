//! Model hyper-parameters, named as Hugging Face `config.json` names them,
//! read either from `config.json` or from GGUF metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rope_config::RopeKind;
use crate::EngineError;

/// The architectures this engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// Llama (and SmolLM, Mistral-style) decoders.
    Llama,
    /// Qwen2: llama plus biases on the q/k/v projections.
    Qwen2,
    /// Qwen3: llama plus RMS norms on queries and keys per head.
    Qwen3,
    /// SmolLM3: llama whose every few layers skip RoPE (NoPE layers).
    SmolLm3,
    /// Phi-3 / Phi-4-mini: llama with q/k/v and gate/up stored fused,
    /// partial rotary dimensions and LongRoPE.
    Phi3,
    /// Qwen3-MoE: qwen3 attention, sparse mixture-of-experts MLPs.
    Qwen3Moe,
    /// Gemma 3 (text): qwen3-like attention with sliding-window layers,
    /// norms after attention and MLP too, (1 + w) norm weights, GELU MLP,
    /// embeddings scaled by sqrt(hidden).
    Gemma3Text,
    /// gpt-oss: biased attention with per-head sinks, sliding and full
    /// layers in turn, experts routed on their logits' top k with a
    /// clamped SwiGLU.
    GptOss,
}

impl Architecture {
    /// Parses `model_type` (config.json) or `general.architecture` (GGUF).
    pub fn parse(name: &str, field: &str) -> Result<Self, EngineError> {
        match name {
            "llama" | "mistral" => Ok(Self::Llama),
            "qwen2" => Ok(Self::Qwen2),
            "qwen3" => Ok(Self::Qwen3),
            "smollm3" => Ok(Self::SmolLm3),
            "phi3" => Ok(Self::Phi3),
            "qwen3_moe" => Ok(Self::Qwen3Moe),
            "gemma3_text" => Ok(Self::Gemma3Text),
            "gpt_oss" => Ok(Self::GptOss),
            other => Err(EngineError::Load(format!(
                "unsupported architecture `{other}` in {field} (supported: gemma3_text, gpt_oss, llama, mistral, phi3, qwen2, qwen3, qwen3_moe, smollm3)"
            ))),
        }
    }

    /// The name configs use for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::SmolLm3 => "smollm3",
            Self::Phi3 => "phi3",
            Self::Qwen3Moe => "qwen3_moe",
            Self::Gemma3Text => "gemma3_text",
            Self::GptOss => "gpt_oss",
        }
    }
}

/// MLX quantization of a Hugging Face / mlx-community folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuantizationConfig {
    /// Weights per scale/bias pair.
    pub group_size: i32,
    /// Bits per weight.
    pub bits: i32,
    /// `affine` (scale and bias per group) or `mxfp4` (gpt-oss's experts:
    /// e8m0 scales per 32 four-bit floats; the tensors tell which modules).
    #[serde(default = "affine", skip_serializing)]
    pub mode: String,
    /// Other keys; mlx-lm's mixed quantization puts per-module entries here
    /// (`"model.embed_tokens": {"group_size": 32, "bits": 8}`), see
    /// [`QuantizationConfig::module`].
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl QuantizationConfig {
    /// Quantization of one module (`model.layers.0.mlp.up_proj`): its own
    /// entry when it has one, else the folder's.
    pub fn module(&self, path: &str) -> (i32, i32) {
        self.overrides()
            .find(|(name, _, _)| *name == path)
            .map_or((self.group_size, self.bits), |(_, g, b)| (g, b))
    }

    /// Per-module entries: (module path, group size, bits).
    pub fn overrides(&self) -> impl Iterator<Item = (&str, i32, i32)> {
        self.extra.iter().filter_map(|(name, v)| {
            let g = v.get("group_size")?.as_i64()?;
            let b = v.get("bits")?.as_i64()?;
            Some((
                name.as_str(),
                i32::try_from(g).ok()?,
                i32::try_from(b).ok()?,
            ))
        })
    }

    /// A quantization with one module (`name`) at its own width.
    pub fn with_module(mut self, name: &str, group_size: i32, bits: i32) -> Self {
        self.extra.insert(
            name.to_string(),
            serde_json::json!({ "group_size": group_size, "bits": bits }),
        );
        self
    }
}

fn affine() -> String {
    "affine".into()
}

/// The part of `config.json` the decoder needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// `gemma3_text`, `llama`, `mistral`, `phi3`, `qwen2`, `qwen3`,
    /// `qwen3_moe` or `smollm3`.
    pub model_type: String,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Decoder blocks.
    pub num_hidden_layers: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention when fewer than queries).
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// Per-head width; `hidden_size / num_attention_heads` when absent.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// Epsilon of every RMS norm.
    pub rms_norm_eps: f32,
    /// Rows of the embedding and output layers.
    pub vocab_size: usize,
    /// RoPE base frequency.
    #[serde(default = "default_rope_theta")]
    pub rope_theta: f32,
    /// RoPE scaling, as the config spells it (`rope_type` or `type`).
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Map<String, serde_json::Value>>,
    /// Whether the output layer reuses the embedding matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Longest sequence the model was trained for.
    #[serde(default)]
    pub max_position_embeddings: Option<usize>,
    /// Biases on q/k/v (`qwen2` always has them).
    #[serde(default)]
    pub attention_bias: Option<bool>,
    /// MLX quantization of the stored weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<QuantizationConfig>,
    /// End-of-sequence id(s), single or list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eos_token_id: Option<serde_json::Value>,
    /// The share of each head's dimensions RoPE rotates (Phi-4-mini:
    /// 0.75); the rest pass through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_rotary_factor: Option<f32>,
    /// The context the model was pre-trained for (Phi-3's LongRoPE scales
    /// its rotation by how far `max_position_embeddings` goes past it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_max_position_embeddings: Option<usize>,
    /// Mixture of experts (Qwen3-MoE; gpt-oss's `num_local_experts`):
    /// experts per MoE layer.
    #[serde(
        default,
        alias = "num_local_experts",
        skip_serializing_if = "Option::is_none"
    )]
    pub num_experts: Option<usize>,
    /// Experts each token is routed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_experts_per_tok: Option<usize>,
    /// Every this-many-th layer is a MoE layer (1: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoder_sparse_step: Option<usize>,
    /// Layers that keep a dense MLP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlp_only_layers: Option<Vec<usize>>,
    /// Width of each expert's MLP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_intermediate_size: Option<usize>,
    /// Whether the top-k router probabilities are renormalised to sum to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm_topk_prob: Option<bool>,
    /// Gemma 3: attention scale is this to the power -1/2 (else head_dim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_pre_attn_scalar: Option<f32>,
    /// Gemma 3 and gpt-oss: positions a sliding-window layer attends to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<usize>,
    /// Gemma 3: every this-many-th layer is global, the others slide
    /// (default 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window_pattern: Option<usize>,
    /// Gemma 3: the sliding layers' RoPE base (default 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_local_base_freq: Option<f32>,
    /// gpt-oss: per layer, `sliding_attention` or `full_attention`
    /// (default: the two in turn, sliding first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_types: Option<Vec<String>>,
    /// gpt-oss: the experts' SwiGLU clamps at this (default 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swiglu_limit: Option<f32>,
    /// SmolLM3: per layer, 1 where it applies RoPE and 0 where it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_rope_layers: Option<Vec<u8>>,
    /// SmolLM3 without `no_rope_layers`: every this-many-th layer skips
    /// RoPE (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_rope_layer_interval: Option<usize>,
}

fn default_rope_theta() -> f32 {
    10_000.0
}

impl ModelConfig {
    /// The architecture, or an error naming `model_type`.
    pub fn architecture(&self) -> Result<Architecture, EngineError> {
        Architecture::parse(&self.model_type, "config.json field `model_type`")
    }

    /// Key/value heads.
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Dimensions of each head that RoPE rotates: all, or the first
    /// `head_dim * partial_rotary_factor` (rounded down, as mlx-lm does).
    pub fn rope_dims(&self) -> usize {
        match self.partial_rotary_factor {
            Some(f) if f > 0.0 && f < 1.0 => (self.head_dim() as f32 * f) as usize,
            _ => self.head_dim(),
        }
    }

    /// Per-head width.
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Whether q/k/v carry biases.
    pub fn qkv_bias(&self) -> bool {
        self.attention_bias
            .unwrap_or(matches!(self.model_type.as_str(), "qwen2" | "gpt_oss"))
    }

    /// Per layer, whether it rotates queries and keys: all of them but
    /// SmolLM3's NoPE layers (`no_rope_layers`, else every
    /// `no_rope_layer_interval`-th layer, as mlx-lm reads the config).
    pub fn rope_layers(&self) -> Result<Vec<bool>, EngineError> {
        let n = self.num_hidden_layers;
        if self.model_type != "smollm3" {
            return Ok(vec![true; n]);
        }
        match &self.no_rope_layers {
            Some(flags) if flags.len() != n => Err(EngineError::Load(format!(
                "config.json field `no_rope_layers` has {} entries for {n} layers",
                flags.len()
            ))),
            Some(flags) => Ok(flags.iter().map(|&f| f != 0).collect()),
            None => {
                let every = self.no_rope_layer_interval.unwrap_or(4);
                if every == 0 {
                    return Err(EngineError::Load(
                        "config.json field `no_rope_layer_interval` must be positive".into(),
                    ));
                }
                Ok((0..n).map(|i| (i + 1) % every != 0).collect())
            }
        }
    }

    /// gpt-oss: the window of a `sliding_attention` layer.
    /// Gemma 3: the window of layer `i`, `None` for a global layer (every
    /// `sliding_window_pattern`-th, as mlx-lm decides) and for other
    /// architectures.
    pub fn sliding_window_of(&self, i: usize) -> Option<usize> {
        if self.model_type == "gpt_oss" {
            let sliding = match &self.layer_types {
                Some(types) => types.get(i).is_some_and(|t| t == "sliding_attention"),
                None => i % 2 == 0,
            };
            return sliding.then(|| self.sliding_window.unwrap_or(128).max(1));
        }
        if self.model_type != "gemma3_text" {
            return None;
        }
        let pattern = self.sliding_window_pattern.unwrap_or(6).max(1);
        let global = i % pattern == pattern - 1;
        (!global).then(|| self.sliding_window.unwrap_or(512).max(1))
    }

    /// Whether layer `i` is a mixture-of-experts layer (as mlx-lm decides:
    /// not in `mlp_only_layers`, experts configured, on the sparse step).
    pub fn is_moe_layer(&self, i: usize) -> bool {
        let experts = self.num_experts.unwrap_or(0);
        let step = self.decoder_sparse_step.unwrap_or(1).max(1);
        let dense_only = self
            .mlp_only_layers
            .as_ref()
            .is_some_and(|l| l.contains(&i));
        !dense_only && experts > 0 && (i + 1) % step == 0
    }

    /// Context length, with a conservative default when the config omits it.
    pub fn context_length(&self) -> usize {
        self.max_position_embeddings.unwrap_or(4096)
    }

    /// Checks the numbers a decoder divides by or allocates with.
    pub fn validate(&self, source: &str) -> Result<(), EngineError> {
        let bad = |what: String| Err(EngineError::Load(format!("{source}: {what}")));
        for (name, v) in [
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("intermediate_size", self.intermediate_size),
            ("num_attention_heads", self.num_attention_heads),
            ("vocab_size", self.vocab_size),
            ("num_key_value_heads", self.kv_heads()),
            ("head_dim", self.head_dim()),
        ] {
            if v == 0 || v > 1 << 20 {
                return bad(format!("field `{name}` = {v} is out of range"));
            }
        }
        if self.num_attention_heads % self.kv_heads() != 0 {
            return bad(format!(
                "num_attention_heads {} is not a multiple of num_key_value_heads {}",
                self.num_attention_heads,
                self.kv_heads()
            ));
        }
        if self.head_dim() % 2 != 0 {
            return bad(format!(
                "head_dim {} must be even for RoPE",
                self.head_dim()
            ));
        }
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps > 0.0) {
            return bad("field `rms_norm_eps` must be > 0".into());
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return bad("field `rope_theta` must be > 0".into());
        }
        if let Some(q) = &self.quantization {
            let mxfp4 = q.mode == "mxfp4";
            if q.mode != "affine" && !mxfp4 {
                return bad(format!(
                    "unsupported quantization mode `{}` in field `quantization.mode` (supported: affine, mxfp4)",
                    q.mode
                ));
            }
            if mxfp4 && (q.group_size, q.bits) != (32, 4) {
                return bad(format!(
                    "quantization mode `mxfp4` needs bits=4 group_size=32, got bits={} group_size={} in field `quantization`",
                    q.bits, q.group_size
                ));
            }
            let widths = std::iter::once(("", q.group_size, q.bits)).chain(q.overrides());
            for (module, group_size, bits) in widths {
                if ![2, 3, 4, 5, 6, 8].contains(&bits) || ![32, 64, 128].contains(&group_size) {
                    let field = if module.is_empty() {
                        "quantization".to_string()
                    } else {
                        format!("quantization.{module}")
                    };
                    return bad(format!(
                        "unsupported quantization bits={bits} group_size={group_size} in field `{field}`"
                    ));
                }
            }
        }
        self.architecture()?;
        self.rope_kind()?;
        Ok(())
    }

    /// The RoPE `rope_scaling` asks for, or what is wrong with it.
    pub(crate) fn rope_kind(&self) -> Result<RopeKind, EngineError> {
        RopeKind::parse(self.rope_scaling.as_ref(), self.rope_dims())
    }

    /// End-of-sequence ids declared in the config.
    pub fn eos_ids(&self) -> Vec<u32> {
        ids_of(self.eos_token_id.as_ref())
    }
}

/// Reads a single id or a list of ids (`eos_token_id` in configs).
pub fn ids_of(value: Option<&serde_json::Value>) -> Vec<u32> {
    match value {
        Some(serde_json::Value::Number(n)) => n.as_u64().map(|v| v as u32).into_iter().collect(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_u64().map(|v| v as u32))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
