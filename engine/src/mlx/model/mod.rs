//! The decoder: llama, qwen2 (q/k/v biases) and qwen3 (q/k RMS norms) share
//! one block, whose differences are data (optional biases and norms), so a
//! fix to attention or the MLP reaches every family at once.
//!
//! Order as in mlx-lm's model files: attention → MLP → block → model. The
//! q/k/v and gate/up projections are fused into one matmul each at load.

use mlx_rs::{Array, Dtype};

mod attention;
mod mlp;
mod moe;

use self::attention::Attention;
use self::mlp::{FeedForward, Mlp};
use self::moe::Moe;
use super::cache::KvCache;
use super::config::{Architecture, ModelConfig};
use super::fused;
use super::rope::{Rope, RopeRows};
use super::weights::{Embedding, Linear, Precision, WeightMap, mlx_err};
use crate::EngineError;

type R<T> = mlx_rs::error::Result<T>;

struct Block {
    attn_norm: Array,
    attn: Attention,
    mlp_norm: Array,
    mlp: FeedForward,
    eps: f32,
}

impl Block {
    fn forward(
        &self,
        x: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        rope: &Rope,
        rows: Option<&RopeRows>,
    ) -> R<Array> {
        let h = mlx_rs::fast::rms_norm(x, Some(&self.attn_norm), self.eps)?;
        let x = x.add(self.attn.forward(&h, layer, segments, rope, rows)?)?;
        let h = mlx_rs::fast::rms_norm(&x, Some(&self.mlp_norm), self.eps)?;
        x.add(self.mlp.forward(&h)?)
    }

    /// [`Block::forward`] with the residual adds folded into the fused RMS
    /// norms (the same bits): `pending` is the previous block's MLP output,
    /// still to be added to `x`; returns `x` and this block's MLP output.
    fn forward_fused(
        &self,
        x: &Array,
        pending: Option<&Array>,
        layer: usize,
        segments: &mut [Segment<'_>],
        rope: &Rope,
        rows: Option<&RopeRows>,
    ) -> R<(Array, Array)> {
        let (x, h) = match pending {
            Some(p) => fused::add_rms_norm(x, p, &self.attn_norm, self.eps)?,
            None => (x.clone(), fused::rms_norm(x, &self.attn_norm, self.eps)?),
        };
        let a = self.attn.forward(&h, layer, segments, rope, rows)?;
        let (x, h) = fused::add_rms_norm(&x, &a, &self.mlp_norm, self.eps)?;
        Ok((x, self.mlp.forward(&h)?))
    }
}

/// A loaded decoder.
pub(crate) struct Model {
    embed: Embedding,
    blocks: Vec<Block>,
    norm: Array,
    lm_head: Linear,
    rope: Rope,
    eps: f32,
    pub architecture: Architecture,
    pub vocab: usize,
}

impl Model {
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
        // The fused operations run on the CPU, in f32 (what every CPU
        // policy but bf16 computes in).
        let fused_ops =
            super::quantized::default_device_is_cpu() && dense_dtype == Some(Dtype::Float32);
        let cast = |a: Array| -> Result<Array, EngineError> {
            match dense_dtype {
                Some(d) if a.dtype() != d => a.as_dtype(d).map_err(mlx_err("casting a norm")),
                _ => Ok(a),
            }
        };
        let rope_layers = config.rope_layers()?;
        let mut blocks = Vec::with_capacity(config.num_hidden_layers);
        for (i, &rotate) in rope_layers.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let qkv = if architecture == Architecture::Phi3 {
                // Stored fused, [q | k | v] rows, as the model fuses them.
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
            let o = Linear::new(
                w.take_weight(&format!("{p}.self_attn.o_proj"))?
                    .with_policy(precision)?,
                None,
            )?;
            let qk_norms = matches!(architecture, Architecture::Qwen3 | Architecture::Qwen3Moe);
            let (q_norm, k_norm) = if qk_norms {
                (
                    Some(cast(w.take(&format!("{p}.self_attn.q_norm.weight"))?)?),
                    Some(cast(w.take(&format!("{p}.self_attn.k_norm.weight"))?)?),
                )
            } else {
                (None, None)
            };
            let mlp = if config.is_moe_layer(i) {
                FeedForward::Moe(Moe::load(
                    &mut w,
                    &format!("{p}.mlp"),
                    config.num_experts.unwrap_or(0),
                    config.num_experts_per_tok.unwrap_or(0),
                    config.norm_topk_prob.unwrap_or(false),
                    precision,
                )?)
            } else {
                let gate_up = if architecture == Architecture::Phi3 {
                    // Stored fused, [gate | up] rows.
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
                })
            };
            blocks.push(Block {
                attn_norm: cast(w.take(&format!("{p}.input_layernorm.weight"))?)?,
                attn: Attention {
                    qkv,
                    o,
                    q_norm,
                    k_norm,
                    heads: nq,
                    kv_heads: nkv,
                    head_dim: hd,
                    scale: (hd as f32).powf(-0.5),
                    eps,
                    rotate,
                    fused: fused_ops,
                },
                mlp_norm: cast(w.take(&format!("{p}.post_attention_layernorm.weight"))?)?,
                mlp,
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
        let norm = cast(w.take("model.norm.weight")?)?;
        let model = Self {
            embed,
            blocks,
            norm,
            lm_head,
            rope: Rope::new(config)?,
            eps,
            architecture,
            vocab: config.vocab_size,
        };
        model.materialize()?;
        Ok(model)
    }

    /// Evaluates every weight once, so the first request does not pay for
    /// dequantization and the GGUF/safetensors buffers can be released.
    fn materialize(&self) -> Result<(), EngineError> {
        let mut all: Vec<&Array> = self.embed.arrays();
        all.push(&self.norm);
        all.extend(self.rope.arrays());
        all.extend(self.lm_head.arrays());
        for b in &self.blocks {
            all.push(&b.attn_norm);
            all.push(&b.mlp_norm);
            all.extend(b.attn.qkv.arrays());
            all.extend(b.attn.o.arrays());
            all.extend(b.attn.q_norm.iter());
            all.extend(b.attn.k_norm.iter());
            all.extend(b.mlp.arrays());
        }
        mlx_rs::transforms::eval(all).map_err(mlx_err("materializing weights"))
    }

    /// A fresh cache for one sequence.
    pub fn new_cache(&self) -> Vec<KvCache> {
        (0..self.blocks.len()).map(|_| KvCache::default()).collect()
    }

    /// Bytes the cache of one sequence holds per position.
    pub fn cache_bytes_per_token(&self) -> usize {
        let Some(b) = self.blocks.first() else {
            return 0;
        };
        let per_layer = 2 * b.attn.kv_heads as usize * b.attn.head_dim as usize;
        let bytes = self.norm.item_size();
        self.blocks.len() * per_layer * bytes
    }

    /// One step of several sequences: every segment's tokens go through
    /// the decoder together (projections and MLP read each weight once for
    /// all rows), attention runs per segment against its own cache. With
    /// `logits`, returns the logits of each segment's last position
    /// (`[segments, vocab]`, f32); otherwise only the caches are filled.
    pub fn forward(&self, segments: &mut [Segment<'_>], logits: bool) -> R<Option<Array>> {
        let mut positions = Vec::new();
        let mut last_rows = Vec::with_capacity(segments.len());
        for seg in segments.iter() {
            let offset = seg.caches.first().map_or(0, KvCache::offset);
            positions.extend(offset..offset + seg.len);
            last_rows.push(positions.len() as i32 - 1);
        }
        let ids = match segments {
            [one] => one.ids.clone(),
            _ => {
                let all: Vec<&Array> = segments.iter().map(|s| &s.ids).collect();
                mlx_rs::ops::concatenate(&all, 1)?
            }
        };
        let rows = self.rope.rows(&positions)?;
        let mut x = self.embed.lookup(&ids)?;
        let fused = self.blocks.first().is_some_and(|b| b.attn.fused) && x.ndim() == 3;
        let mut pending: Option<Array> = None;
        for (layer, block) in self.blocks.iter().enumerate() {
            if fused {
                let (nx, out) = block.forward_fused(
                    &x,
                    pending.as_ref(),
                    layer,
                    segments,
                    &self.rope,
                    rows.as_ref(),
                )?;
                (x, pending) = (nx, Some(out));
            } else {
                x = block.forward(&x, layer, segments, &self.rope, rows.as_ref())?;
            }
        }
        if !logits {
            // Prefill only fills the caches: the last MLP output is not needed.
            return Ok(None);
        }
        let t = positions.len() as i32;
        let last = |a: Array| -> R<Array> {
            if last_rows.len() as i32 == t {
                Ok(a)
            } else {
                let idx = Array::from_slice(&last_rows, &[last_rows.len() as i32]);
                a.take_axis(&idx, 1)
            }
        };
        let x = match pending {
            // Only the last rows' sums are normed, as below.
            Some(p) => {
                let (x, p) = (last(x)?, last(p)?);
                fused::add_rms_norm(&x, &p, &self.norm, self.eps)?.1
            }
            None => mlx_rs::fast::rms_norm(&last(x)?, Some(&self.norm), self.eps)?,
        };
        let logits = self
            .lm_head
            .forward(&x)?
            .reshape(&[last_rows.len() as i32, -1])?;
        if logits.dtype() == mlx_rs::Dtype::Float32 {
            Ok(Some(logits))
        } else {
            logits.as_dtype(mlx_rs::Dtype::Float32).map(Some)
        }
    }
}

/// One sequence's part of a [`Model::forward`] step.
pub(crate) struct Segment<'a> {
    /// Token ids, `[1, len]` int32; may be lazy (a token the previous step
    /// picked and nobody has read yet).
    pub ids: Array,
    /// How many tokens `ids` holds.
    pub len: i32,
    /// The sequence's cache, one per layer.
    pub caches: &'a mut [KvCache],
}
