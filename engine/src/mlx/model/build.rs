//! A [`Network`] from weights named as in Hugging Face checkpoints: per
//! architecture, which tensors make each block and which options it takes.

use mlx_rs::{Array, Dtype};

use super::attention::Attention;
use super::linear::{Embedding, Linear};
use super::mlp::{FeedForward, Mlp};
use super::moe::{Activation, Moe, Routing};
use super::rope::Rope;
use super::{Block, Network};
use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::kernels::{Precision, default_device_is_cpu};
use crate::mlx::load::WeightMap;
use crate::mlx::load::config::{Architecture, ModelConfig};

impl Network {
    /// Builds the decoder from weights named as in Hugging Face checkpoints.
    pub fn build(
        config: &ModelConfig,
        mut w: WeightMap,
        precision: Precision,
    ) -> Result<Self, EngineError> {
        let architecture = config.architecture()?;
        let (nq, nkv, hd) = (
            config.num_attention_heads as i32,
            config.kv_heads() as i32,
            config.head_dim() as i32,
        );
        let eps = config.rms_norm_eps;
        let bias = config.qkv_bias();
        let dense_dtype = precision.dense_dtype();
        // Where the weights keep their own types (`keep`, a GPU), the
        // activations take the norms' type.
        let activations =
            dense_dtype.or_else(|| w.tensors.get("model.norm.weight").map(|norm| norm.dtype()));
        if let Some(activations) = activations {
            w.widen_scales_for(activations)?;
        }
        // The fused operations run on the CPU, in f32 (what every CPU
        // policy but bf16 computes in).
        let fused_ops = default_device_is_cpu() && dense_dtype == Some(Dtype::Float32);
        let cast = |a: Array| -> Result<Array, EngineError> {
            match dense_dtype {
                Some(d) if a.dtype() != d => a.as_dtype(d).map_err(mlx_err("casting a norm")),
                _ => Ok(a),
            }
        };
        let gemma = architecture == Architecture::Gemma3Text;
        let gpt_oss = architecture == Architecture::GptOss;
        // Gemma's norms scale by (1 + w): folded in once, the same sum MLX
        // computes on every call.
        let norm_w = |a: Array| -> Result<Array, EngineError> {
            let a = cast(a)?;
            if gemma {
                a.add(Array::from_f32(1.0))
                    .map_err(mlx_err("offsetting a norm"))
            } else {
                Ok(a)
            }
        };
        let scale = match (gemma, config.query_pre_attn_scalar) {
            (true, Some(s)) if s > 0.0 => s.powf(-0.5),
            _ => (hd as f32).powf(-0.5),
        };
        let rope_layers = config.rope_layers()?;
        let mut blocks = Vec::with_capacity(config.num_hidden_layers);
        for (i, &rotate) in rope_layers.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let qkv = if w.has(&format!("{p}.self_attn.qkv_proj")) {
                // Stored fused (Phi-3), [q | k | v] rows, as the model fuses them.
                Linear::new(
                    w.take_weight(&format!("{p}.self_attn.qkv_proj"))?
                        .with_policy(precision)?,
                    None,
                )?
            } else {
                let mut parts = Vec::new();
                for name in ["q_proj", "k_proj", "v_proj"] {
                    parts.push(
                        w.take_weight(&format!("{p}.self_attn.{name}"))?
                            .with_policy(precision)?,
                    );
                }
                let biases = if bias {
                    let mut b = Vec::new();
                    for name in ["q_proj", "k_proj", "v_proj"] {
                        b.push(cast(w.take(&format!("{p}.self_attn.{name}.bias"))?)?);
                    }
                    Some(b)
                } else {
                    None
                };
                Linear::fused(parts, biases)?
            };
            let o_bias = match gpt_oss {
                true => Some(cast(w.take(&format!("{p}.self_attn.o_proj.bias"))?)?),
                false => None,
            };
            let o = Linear::new(
                w.take_weight(&format!("{p}.self_attn.o_proj"))?
                    .with_policy(precision)?,
                o_bias,
            )?;
            let sinks = match gpt_oss {
                true => Some(cast(w.take(&format!("{p}.self_attn.sinks"))?)?),
                false => None,
            };
            let qk_norms = matches!(
                architecture,
                Architecture::Qwen3 | Architecture::Qwen3Moe | Architecture::Gemma3Text
            );
            let (q_norm, k_norm) = if qk_norms {
                (
                    Some(norm_w(w.take(&format!("{p}.self_attn.q_norm.weight"))?)?),
                    Some(norm_w(w.take(&format!("{p}.self_attn.k_norm.weight"))?)?),
                )
            } else {
                (None, None)
            };
            let mlp = if config.is_moe_layer(i) {
                let style = if gpt_oss {
                    let limit = config.swiglu_limit.unwrap_or(7.0);
                    let clamped = Activation::ClampedSwiglu {
                        limit,
                        alpha: 1.702,
                    };
                    (Routing::TopLogits, clamped)
                } else {
                    let norm_top_k = config.norm_topk_prob.unwrap_or(false);
                    (Routing::Softmax { norm_top_k }, Activation::Swiglu)
                };
                let counts = (
                    config.num_experts.unwrap_or(0),
                    config.num_experts_per_tok.unwrap_or(0),
                );
                FeedForward::Moe(Moe::load(
                    &mut w,
                    &format!("{p}.mlp"),
                    counts,
                    style,
                    precision,
                )?)
            } else {
                let gate_up = if w.has(&format!("{p}.mlp.gate_up_proj")) {
                    // Stored fused (Phi-3), [gate | up] rows.
                    Linear::new(
                        w.take_weight(&format!("{p}.mlp.gate_up_proj"))?
                            .with_policy(precision)?,
                        None,
                    )?
                } else {
                    let gate = w
                        .take_weight(&format!("{p}.mlp.gate_proj"))?
                        .with_policy(precision)?;
                    let up = w
                        .take_weight(&format!("{p}.mlp.up_proj"))?
                        .with_policy(precision)?;
                    Linear::fused(vec![gate, up], None)?
                };
                let down = w
                    .take_weight(&format!("{p}.mlp.down_proj"))?
                    .with_policy(precision)?;
                FeedForward::Dense(Mlp {
                    gate_up,
                    down: Linear::new(down, None)?,
                    ffn: config.intermediate_size as i32,
                    fused: fused_ops,
                    gelu: gemma,
                })
            };
            let window = config.sliding_window_of(i);
            // Gemma: post_attention_layernorm follows attention and
            // pre_feedforward_layernorm leads the MLP; elsewhere the
            // former leads the MLP.
            let (mlp_norm, post_norms) = if gemma {
                let after_attn = norm_w(w.take(&format!("{p}.post_attention_layernorm.weight"))?)?;
                let before_mlp = norm_w(w.take(&format!("{p}.pre_feedforward_layernorm.weight"))?)?;
                let after_mlp = norm_w(w.take(&format!("{p}.post_feedforward_layernorm.weight"))?)?;
                (before_mlp, Some((after_attn, after_mlp)))
            } else {
                (
                    cast(w.take(&format!("{p}.post_attention_layernorm.weight"))?)?,
                    None,
                )
            };
            blocks.push(Block {
                attn_norm: norm_w(w.take(&format!("{p}.input_layernorm.weight"))?)?,
                attn: Attention {
                    qkv,
                    o,
                    q_norm,
                    k_norm,
                    heads: nq,
                    kv_heads: nkv,
                    head_dim: hd,
                    scale,
                    eps,
                    rotate,
                    window: window.map(|w| w as i32),
                    sinks,
                    fused: fused_ops,
                },
                mlp_norm,
                mlp,
                post_norms,
                local_rope: window.is_some(),
                eps,
            });
        }
        let embed_w = w
            .take_weight("model.embed_tokens")?
            .with_policy(precision)?;
        let tied = config.tie_word_embeddings || !w.has("lm_head");
        let (embed, lm_head) = if tied {
            // One set of arrays (dense or packed) is table and output layer.
            (Embedding::new(embed_w.clone()), Linear::new(embed_w, None)?)
        } else {
            let head = w.take_weight("lm_head")?.with_policy(precision)?;
            (Embedding::new(embed_w), Linear::new(head, None)?)
        };
        if embed.rows() as usize != config.vocab_size {
            return Err(EngineError::Load(format!(
                "{}: tensor `model.embed_tokens.weight` has {} rows but vocab_size is {}",
                w.source,
                embed.rows(),
                config.vocab_size
            )));
        }
        let norm = norm_w(w.take("model.norm.weight")?)?;
        let (local_rope, embed_scale) = if gemma {
            let mut local = config.clone();
            local.rope_theta = config.rope_local_base_freq.unwrap_or(10_000.0);
            local.rope_scaling = None;
            let sqrt = (config.hidden_size as f32).sqrt();
            (Some(Rope::new(&local)?), Some(round_to_bf16(sqrt)))
        } else {
            (None, None)
        };
        let layers = blocks.len();
        let model = Self {
            embed,
            blocks,
            norm,
            lm_head,
            rope: Rope::new(config)?,
            local_rope,
            embed_scale,
            eps,
            // Under int8 the cache keeps halves: a decode step reads the
            // whole cache of every sequence, and at a few hundred positions
            // that read costs as much as the weights' at a batch of 8. A
            // half holds a key to 11 bits, finer than the 8-bit activations
            // int8 already accepts (its tolerance: bench/precision_parity.rs).
            cache_dtype: (fused_ops && precision == Precision::Int8).then_some(Dtype::Float16),
            batches: (0..layers).map(|_| Default::default()).collect(),
            architecture,
            vocab: config.vocab_size,
        };
        model.materialize()?;
        Ok(model)
    }
}

/// `x` rounded to the nearest bfloat16 (ties to even), as a float.
fn round_to_bf16(x: f32) -> f32 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) & 0xffff_0000;
    f32::from_bits(rounded)
}
