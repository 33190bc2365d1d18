//! A sparse mixture-of-experts MLP (Qwen3-MoE): a router picks each
//! token's top-k experts, each a SwiGLU MLP, and their outputs are summed
//! weighted by the router's (renormalised) probabilities.
//!
//! The operations are mlx-lm's (`SwitchGLU`): softmax in full precision,
//! `argpartition` for the top k, and `gather_mm` / `gather_qmm` reading only
//! the chosen experts' weights, so the numbers are the reference's.

use mlx_rs::{Array, Dtype};

use super::R;
use crate::EngineError;
use crate::mlx::quantized::{self, Activations};
use crate::mlx::weights::{Linear, Precision, Quant, Weight, WeightMap, mlx_err};

/// One projection of every expert, stacked on a leading expert axis.
enum Stacked {
    /// `[experts, in, out]`: the transposed view `gather_mm` multiplies by.
    Dense(Array),
    /// MLX-quantized `[experts, out, in * bits / 32]`, for `gather_qmm`.
    Quantized {
        w: Array,
        scales: Array,
        biases: Array,
        q: Quant,
    },
    /// The same packing with f32 scales and biases, on thinkwire's kernels
    /// (`quantized::gather_matmul`).
    Kernels {
        w: Array,
        scales: Array,
        biases: Array,
        q: Quant,
        act: Activations,
    },
}

impl Stacked {
    /// `x` (`[1, T, 1 or k, 1, in]`) times the experts `indices`
    /// (`[1, T, k]`) pick, as `[1, T, k, 1, out]`.
    fn gather(&self, x: &Array, indices: &Array) -> R<Array> {
        match self {
            Stacked::Kernels {
                w,
                scales,
                biases,
                q,
                act,
            } => {
                let (t, k) = (indices.shape()[1], indices.shape()[2]);
                let (per_token, input) = (x.shape()[2], x.shape()[4]);
                // One row per token (gate/up), or one per token and expert
                // (down).
                let (rows, per_row) = if per_token == 1 { (t, k) } else { (t * k, 1) };
                let x2 = x.reshape(&[rows, input])?;
                let i2 = indices.reshape(&[rows, per_row])?;
                let y = quantized::gather_matmul(&x2, &i2, w, scales, biases, *q, *act)?;
                let out = y.shape()[2];
                y.reshape(&[1, t, k, 1, out])
            }
            Stacked::Dense(w) => mlx_rs::ops::gather_mm(x, w, None, indices, false),
            Stacked::Quantized {
                w,
                scales,
                biases,
                q,
            } => mlx_rs::ops::gather_qmm(
                x,
                w,
                scales,
                biases,
                None,
                indices,
                true,
                q.group_size,
                q.bits,
                false,
            ),
        }
    }

    fn describe(&self) -> String {
        match self {
            Stacked::Dense(w) => format!("{:?} dense experts, gather_mm", w.dtype()).to_lowercase(),
            Stacked::Quantized { q, .. } => {
                format!(
                    "{}-bit/{} experts on MLX's gather_qmm",
                    q.bits, q.group_size
                )
            }
            Stacked::Kernels { q, act, .. } => format!(
                "{}-bit/{} experts on thinkwire's kernels{}",
                q.bits,
                q.group_size,
                match act {
                    Activations::F32 => "",
                    Activations::Int8 => ", int8 activations",
                }
            ),
        }
    }

    fn arrays(&self) -> Vec<&Array> {
        match self {
            Stacked::Dense(w) => vec![w],
            Stacked::Quantized {
                w, scales, biases, ..
            }
            | Stacked::Kernels {
                w, scales, biases, ..
            } => vec![w, scales, biases],
        }
    }

    /// `{prefix}.switch_mlp.{name}` as mlx-lm saves it, or Hugging Face's
    /// `{prefix}.experts.{e}.{name}` stacked here. Packed experts stay
    /// packed except under `f32`/`bf16`: on thinkwire's kernels under
    /// `auto`/`int8` on the CPU, else MLX's `gather_qmm`.
    fn load(
        w: &mut WeightMap,
        prefix: &str,
        name: &str,
        experts: usize,
        precision: Precision,
    ) -> Result<Self, EngineError> {
        let stacked = format!("{prefix}.switch_mlp.{name}");
        let weight = if w.has(&stacked) {
            w.take_stacked(&stacked)?
        } else {
            let mut parts = Vec::with_capacity(experts);
            for e in 0..experts {
                let part = w.take_weight(&format!("{prefix}.experts.{e}.{name}"))?;
                parts.push(part.dense(Dtype::Float32)?);
            }
            let all = mlx_rs::ops::stack(&parts, 0).map_err(mlx_err("stacking experts"))?;
            Weight::Dense(all)
        };
        // Packed experts stay packed unless f32/bf16 is asked for by name:
        // a quantized MoE is most of a model's bytes, dequantized 4-8x more.
        let keep = matches!(
            precision,
            Precision::Auto | Precision::Int8 | Precision::Keep
        );
        let kernels = match precision {
            Precision::Auto => Some(Activations::F32),
            Precision::Int8 => Some(Activations::Int8),
            _ => None,
        }
        .filter(|_| quantized::default_device_is_cpu());
        match weight {
            Weight::Quantized {
                w,
                scales,
                biases,
                q,
                ..
            } if kernels.is_some() && quantized::supported(q) => {
                let f32 = |a: Array| {
                    a.as_dtype(Dtype::Float32)
                        .map_err(mlx_err("casting the experts' scales"))
                };
                Ok(Stacked::Kernels {
                    w,
                    scales: f32(scales)?,
                    biases: f32(biases)?,
                    q,
                    act: kernels.unwrap_or(Activations::F32),
                })
            }
            Weight::Quantized {
                w,
                scales,
                biases,
                q,
                ..
            } if keep => Ok(Stacked::Quantized {
                w,
                scales,
                biases,
                q,
            }),
            weight => {
                let dtype = match precision {
                    Precision::Bf16 => Dtype::Bfloat16,
                    _ => Dtype::Float32,
                };
                let dense = weight.dense(dtype)?;
                let t = dense
                    .swap_axes(-1, -2)
                    .map_err(mlx_err("transposing experts"))?;
                Ok(Stacked::Dense(t))
            }
        }
    }
}

pub(super) struct Moe {
    router: Linear,
    gate: Stacked,
    up: Stacked,
    down: Stacked,
    top_k: i32,
    norm_top_k: bool,
}

impl Moe {
    /// The block's experts and router (`{prefix}.gate`).
    pub(super) fn load(
        w: &mut WeightMap,
        prefix: &str,
        experts: usize,
        top_k: usize,
        norm_top_k: bool,
        precision: Precision,
    ) -> Result<Self, EngineError> {
        if top_k == 0 || top_k > experts {
            return Err(EngineError::Load(format!(
                "{}: num_experts_per_tok {top_k} must be between 1 and num_experts {experts}",
                w.source
            )));
        }
        let router = Linear::new(
            w.take_weight(&format!("{prefix}.gate"))?
                .with_policy(precision)?,
            None,
        )?;
        Ok(Self {
            router,
            gate: Stacked::load(w, prefix, "gate_proj", experts, precision)?,
            up: Stacked::load(w, prefix, "up_proj", experts, precision)?,
            down: Stacked::load(w, prefix, "down_proj", experts, precision)?,
            top_k: top_k as i32,
            norm_top_k,
        })
    }

    /// Each weight's description (router, then gate, up, down experts).
    pub(super) fn describe(&self) -> Vec<String> {
        let mut all = vec![self.router.describe()];
        all.extend([&self.gate, &self.up, &self.down].map(Stacked::describe));
        all
    }

    pub(super) fn arrays(&self) -> Vec<&Array> {
        let mut all = self.router.arrays();
        for s in [&self.gate, &self.up, &self.down] {
            all.extend(s.arrays());
        }
        all
    }

    /// `x`: `[1, T, hidden]`.
    pub(super) fn forward(&self, x: &Array) -> R<Array> {
        use mlx_rs::ops::argpartition_axis;
        use mlx_rs::ops::indexing::TryIndexOp;
        let gates = self.router.forward(x)?;
        let gates = mlx_rs::ops::softmax_axis(&gates, -1, true)?;
        let k = self.top_k;
        let experts = gates.shape()[gates.ndim() - 1];
        let inds = argpartition_axis(&gates, -k, -1)?.try_index((.., .., experts - k..))?;
        let mut scores = gates.take_along_axis(&inds, -1)?;
        if self.norm_top_k {
            scores = scores.divide(scores.sum_axis(-1, true)?)?;
        }
        // [1, T, 1, 1, hidden] against each token's k experts.
        let xe = mlx_rs::ops::expand_dims_axes(x, &[-2, -3])?;
        let up = self.up.gather(&xe, &inds)?;
        let gate = self.gate.gather(&xe, &inds)?;
        let h = gate.multiply(mlx_rs::ops::sigmoid(&gate)?)?.multiply(&up)?;
        let y = self.down.gather(&h, &inds)?.squeeze_axes(&[-2])?;
        let weighted = y.multiply(mlx_rs::ops::expand_dims_axes(&scores, &[-1])?)?;
        let out = weighted.sum_axis(-2, false)?;
        if out.dtype() == y.dtype() {
            Ok(out)
        } else {
            out.as_dtype(y.dtype())
        }
    }
}
