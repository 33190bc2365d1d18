//! The network's weights as held: evaluated once at load, counted,
//! described for `thinkwire inspect`, and the wide layers split for a
//! one-row input where MLX's CUDA backend would otherwise take its GEMM.

use mlx_rs::Array;

use super::Network;
use super::mlp::FeedForward;
use crate::EngineError;
use crate::mlx::error::mlx_err;

impl Network {
    /// Evaluates every weight once, so the first request does not pay for
    /// dequantization and the GGUF/safetensors buffers can be released.
    pub(super) fn materialize(&self) -> Result<(), EngineError> {
        mlx_rs::transforms::eval(self.weight_arrays()).map_err(mlx_err("materializing weights"))
    }

    /// The bytes the weights take as held (a tied output layer's counted
    /// twice).
    pub fn weight_bytes(&self) -> usize {
        self.weight_arrays().iter().map(|a| a.nbytes()).sum()
    }

    fn weight_arrays(&self) -> Vec<&Array> {
        let mut all: Vec<&Array> = self.embed.arrays();
        all.push(&self.norm);
        all.extend(self.rope.arrays());
        if let Some(local) = &self.local_rope {
            all.extend(local.arrays());
        }
        all.extend(self.lm_head.arrays());
        for b in &self.blocks {
            all.push(&b.attn_norm);
            all.push(&b.mlp_norm);
            all.extend(b.attn.qkv.arrays());
            all.extend(b.attn.o.arrays());
            if let Some((after_attn, after_mlp)) = &b.post_norms {
                all.extend([after_attn, after_mlp]);
            }
            all.extend(b.attn.q_norm.iter());
            all.extend(b.attn.sinks.iter());
            all.extend(b.attn.k_norm.iter());
            all.extend(b.mlp.arrays());
        }
        all
    }

    /// How the weights are held and multiplied: each description with the
    /// number of matrices it covers, most common first (`thinkwire
    /// inspect`).
    pub fn weight_summary(&self) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        let mut add = |d: String| match counts.iter_mut().find(|(k, _)| *k == d) {
            Some((_, n)) => *n += 1,
            None => counts.push((d, 1)),
        };
        for b in &self.blocks {
            add(b.attn.qkv.describe());
            add(b.attn.o.describe());
            b.mlp.describe().into_iter().for_each(&mut add);
        }
        add(format!("{} (output layer)", self.lm_head.describe()));
        counts.sort_by_key(|c| std::cmp::Reverse(c.1));
        counts
            .iter()
            .map(|(d, n)| format!("{n} × {d}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Makes every quantized layer on MLX's matmul wider than `limit` rows
    /// multiply a one-row input by blocks of at most `limit` rows
    /// (`Linear::split_one_row`: what MLX's CUDA backend runs as a
    /// matrix-vector product).
    pub fn split_one_row(&mut self, limit: usize) -> Result<(), EngineError> {
        for block in &mut self.blocks {
            block.attn.qkv.split_one_row(limit)?;
            block.attn.o.split_one_row(limit)?;
            if let FeedForward::Dense(mlp) = &mut block.mlp {
                mlp.gate_up.split_one_row(limit)?;
                mlp.down.split_one_row(limit)?;
            }
        }
        self.lm_head.split_one_row(limit)
    }
}
