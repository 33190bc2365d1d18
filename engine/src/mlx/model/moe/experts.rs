//! One projection of every expert, stacked, and who multiplies it: MLX's
//! `gather_mm` / `gather_qmm`, or thinkwire's kernels.

use mlx_rs::{Array, Dtype};

use super::super::R;
use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::kernels::{
    Activations, Precision, Quant, default_device_is_cpu, kernel_activations, mxfp4, quantized,
    supported,
};
use crate::mlx::load::{Weight, WeightMap};

/// One projection of every expert, stacked on a leading expert axis.
pub(super) enum Stacked {
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
    /// MXFP4 `[experts, out, in / 8]` with e8m0 scales `[experts, out, in /
    /// 32]`: on thinkwire's kernels (`kernels`) or MLX's `gather_qmm`.
    Mxfp4 {
        w: Array,
        scales: Array,
        kernels: bool,
    },
}

impl Stacked {
    /// `x` (`[1, T, 1 or k, 1, in]`) times the experts `indices`
    /// (`[1, T, k]`) pick, as `[1, T, k, 1, out]`.
    pub(super) fn gather(&self, x: &Array, indices: &Array) -> R<Array> {
        let (t, k) = (indices.shape()[1], indices.shape()[2]);
        // The kernels take one row per token (gate/up), or one per token
        // and expert (down).
        let flat = || -> R<(Array, Array)> {
            let (per_token, input) = (x.shape()[2], x.shape()[4]);
            let (rows, per_row) = if per_token == 1 { (t, k) } else { (t * k, 1) };
            Ok((
                x.reshape(&[rows, input])?,
                indices.reshape(&[rows, per_row])?,
            ))
        };
        let y = match self {
            Stacked::Kernels {
                w,
                scales,
                biases,
                q,
                act,
            } => {
                let (x2, i2) = flat()?;
                quantized::gather_matmul(&x2, &i2, w, scales, biases, *q, *act)?
            }
            Stacked::Mxfp4 {
                w,
                scales,
                kernels: true,
            } => {
                let (x2, i2) = flat()?;
                mxfp4::gather_matmul(&x2, &i2, w, scales)?
            }
            _ => return self.mlx_gather(x, indices, false),
        };
        let out = y.shape()[2];
        y.reshape(&[1, t, k, 1, out])
    }

    /// Whether thinkwire's kernels multiply this projection.
    fn on_kernels(&self) -> bool {
        matches!(
            self,
            Stacked::Kernels { .. } | Stacked::Mxfp4 { kernels: true, .. }
        )
    }

    /// MLX's gathers (`sorted`: the rows come grouped by expert).
    fn mlx_gather(&self, x: &Array, indices: &Array, sorted: bool) -> R<Array> {
        match self {
            // On the CPU the experts stay f32 (MLX's CPU `gather_mm` takes
            // nothing else): a bf16 step's rows go in wide and come back.
            Stacked::Dense(w) if w.dtype() != x.dtype() => {
                mlx_rs::ops::gather_mm(x.as_dtype(w.dtype())?, w, None, indices, sorted)?
                    .as_dtype(x.dtype())
            }
            Stacked::Dense(w) => mlx_rs::ops::gather_mm(x, w, None, indices, sorted),
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
                sorted,
            ),
            Stacked::Mxfp4 { w, scales, .. } => mxfp4::mlx_gather(x, w, scales, indices, sorted),
            Stacked::Kernels { .. } => self.gather(x, indices),
        }
    }

    /// `x` (`[N, 1, in]`, rows already grouped by expert) times the
    /// experts `indices` (`[N]`, sorted) pick, as `[N, 1, out]`: MLX's
    /// gathers then walk each expert's weights once (a prompt's pass).
    pub(super) fn gather_sorted(&self, x: &Array, indices: &Array) -> R<Array> {
        self.mlx_gather(x, indices, true)
    }

    /// Whether MLX gathers this projection (and gains from sorted rows).
    pub(super) fn sorts(&self) -> bool {
        !self.on_kernels()
    }

    pub(super) fn describe(&self) -> String {
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
                    Activations::F32 | Activations::F32Tiles => "",
                    Activations::Int8 | Activations::Int8Panels => ", int8 activations",
                }
            ),
            Stacked::Mxfp4 { kernels: true, .. } => "mxfp4 experts on thinkwire's kernels".into(),
            Stacked::Mxfp4 { .. } => "mxfp4 experts on MLX's gather_qmm".into(),
        }
    }

    pub(super) fn arrays(&self) -> Vec<&Array> {
        match self {
            Stacked::Dense(w) => vec![w],
            Stacked::Quantized {
                w, scales, biases, ..
            }
            | Stacked::Kernels {
                w, scales, biases, ..
            } => vec![w, scales, biases],
            Stacked::Mxfp4 { w, scales, .. } => vec![w, scales],
        }
    }

    /// `{prefix}.switch_mlp.{name}` (Qwen3-MoE) or `{prefix}.experts.{name}`
    /// (gpt-oss) as mlx-lm saves them, or Hugging Face's
    /// `{prefix}.experts.{e}.{name}` stacked here. Packed experts stay
    /// packed except under `f32`/`bf16`: on thinkwire's kernels under
    /// `auto`/`int8` on the CPU, else MLX's `gather_qmm`.
    pub(super) fn load(
        w: &mut WeightMap,
        prefix: &str,
        name: &str,
        experts: usize,
        precision: Precision,
    ) -> Result<Self, EngineError> {
        let switch = format!("{prefix}.switch_mlp.{name}");
        let experts_stacked = format!("{prefix}.experts.{name}");
        let weight = if w.has(&switch) {
            w.take_stacked(&switch)?
        } else if w.has(&experts_stacked) {
            w.take_stacked(&experts_stacked)?
        } else {
            let mut parts = Vec::with_capacity(experts);
            for e in 0..experts {
                let part = w.take_weight(&format!("{prefix}.experts.{e}.{name}"))?;
                let dtype = dense_experts_dtype(precision, &part);
                parts.push(part.dense(dtype)?);
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
        let kernels = kernel_activations(precision);
        match weight {
            Weight::Quantized {
                w,
                scales,
                biases,
                q,
                ..
            } if kernels.is_some() && supported(q) => {
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
            // MXFP4 multiplies x as it is under `int8` too.
            Weight::Mxfp4 { w, scales, .. } if keep => Ok(Stacked::Mxfp4 {
                w,
                scales,
                kernels: kernels.is_some(),
            }),
            weight => {
                let dtype = dense_experts_dtype(precision, &weight);
                let dense = weight.dense(dtype)?;
                let t = dense
                    .swap_axes(-1, -2)
                    .map_err(mlx_err("transposing experts"))?;
                Ok(Stacked::Dense(t))
            }
        }
    }
}

/// The type dense experts are held in: f32 on the CPU, whose `gather_mm`
/// takes nothing else; elsewhere the policy's, or (`keep`, a GPU's
/// default) the weights' own, so a bf16 model's experts stay bf16.
fn dense_experts_dtype(precision: Precision, weight: &Weight) -> Dtype {
    if default_device_is_cpu() {
        return Dtype::Float32;
    }
    precision.dense_dtype().unwrap_or(match weight {
        Weight::Dense(w) => w.dtype(),
        Weight::Quantized { scales, .. } => scales.dtype(),
        Weight::Mxfp4 { .. } => Dtype::Float32,
    })
}
