//! The gated MLP (SwiGLU) of the shared decoder.

use mlx_rs::Array;

use super::R;
use super::linear::Linear;
use super::moe::Moe;
use crate::EngineError;
use crate::mlx::kernels::{Precision, compiled, fused, stack_quantized};
use crate::mlx::load::{Weight, WeightMap};

/// The gate and up projections.
pub(super) enum GateUp {
    /// Their rows stacked, `[gate | up]`: one product, split after.
    Stacked(Linear),
    /// Two products, where stacked rows would take a slower kernel
    /// (`kernels::stack_quantized`).
    Apart { gate: Linear, up: Linear },
}

impl GateUp {
    /// The gate and up projections of MLP `p`: `{p}.gate_proj` and
    /// `{p}.up_proj`, or Phi-3's stored stack `{p}.gate_up_proj`.
    pub(super) fn load(
        w: &mut WeightMap,
        p: &str,
        precision: Precision,
    ) -> Result<Self, EngineError> {
        if w.has(&format!("{p}.gate_up_proj")) {
            let stacked = w.take_weight(&format!("{p}.gate_up_proj"))?;
            return Ok(Self::Stacked(Linear::new(
                stacked.with_policy(precision)?,
                None,
            )?));
        }
        let gate = w
            .take_weight(&format!("{p}.gate_proj"))?
            .with_policy(precision)?;
        let up = w
            .take_weight(&format!("{p}.up_proj"))?
            .with_policy(precision)?;
        Ok(match apart(&gate, &up) {
            true => Self::Apart {
                gate: Linear::new(gate, None)?,
                up: Linear::new(up, None)?,
            },
            false => Self::Stacked(Linear::fused(vec![gate, up], None)?),
        })
    }

    fn describe(&self) -> Vec<String> {
        match self {
            Self::Stacked(gate_up) => vec![gate_up.describe()],
            Self::Apart { gate, up } => vec![gate.describe(), up.describe()],
        }
    }

    fn arrays(&self) -> Vec<&Array> {
        match self {
            Self::Stacked(gate_up) => gate_up.arrays(),
            Self::Apart { gate, up } => {
                let mut all = gate.arrays();
                all.extend(up.arrays());
                all
            }
        }
    }
}

/// Whether `gate` and `up`, quantized for MLX's kernels, are better
/// multiplied apart on this device.
fn apart(gate: &Weight, up: &Weight) -> bool {
    match (gate.mlx_quantized_shape(), up.mlx_quantized_shape()) {
        (Some((g, cols)), Some((u, up_cols))) if cols == up_cols => !stack_quantized(&[g, u], cols),
        _ => false,
    }
}

pub(super) struct Mlp {
    pub(super) gate_up: GateUp,
    pub(super) down: Linear,
    pub(super) ffn: i32,
    /// On the CPU: one fused SwiGLU operation (same numbers).
    pub(super) fused: bool,
    /// Gemma: `gelu_approx(gate) * up` instead of `silu(gate) * up`.
    pub(super) gelu: bool,
}

impl Mlp {
    pub(super) fn forward(&self, x: &Array) -> R<Array> {
        let (g, u) = match &self.gate_up {
            GateUp::Apart { gate, up } => (gate.forward(x)?, up.forward(x)?),
            GateUp::Stacked(gate_up) => {
                let gu = gate_up.forward(x)?;
                if self.fused && !self.gelu && gu.dtype() == mlx_rs::Dtype::Float32 {
                    return self.down.forward(&fused::swiglu(&gu)?);
                }
                // One split operation for both halves (a GPU pays per
                // operation).
                let Ok([g, u]) = <[Array; 2]>::try_from(gu.split_at_indices(&[self.ffn], -1)?)
                else {
                    return Err(mlx_rs::error::Exception::custom("gate and up in two"));
                };
                (g, u)
            }
        };
        if self.gelu {
            // MLX's `nn.gelu_approx` (tanh form), as mlx-lm's Gemma 3 uses.
            let h = mlx_rs::nn::gelu_approximate(&g)?.multiply(&u)?;
            return self.down.forward(&h);
        }
        // On a GPU one compiled function (one kernel), as mlx-lm's `swiglu`.
        self.down.forward(&compiled::swiglu(&g, &u)?)
    }
}

/// A block's MLP: dense, or a mixture of experts.
pub(super) enum FeedForward {
    Dense(Mlp),
    Moe(Moe),
}

impl FeedForward {
    pub(super) fn forward(&self, x: &Array) -> R<Array> {
        match self {
            FeedForward::Dense(m) => m.forward(x),
            FeedForward::Moe(m) => m.forward(x),
        }
    }

    pub(super) fn describe(&self) -> Vec<String> {
        match self {
            FeedForward::Dense(m) => {
                let mut all = m.gate_up.describe();
                all.push(m.down.describe());
                all
            }
            FeedForward::Moe(m) => m.describe(),
        }
    }

    pub(super) fn arrays(&self) -> Vec<&Array> {
        match self {
            FeedForward::Dense(m) => {
                let mut all = m.gate_up.arrays();
                all.extend(m.down.arrays());
                all
            }
            FeedForward::Moe(m) => m.arrays(),
        }
    }
}

#[cfg(test)]
mod tests {
    use mlx_rs::Array;

    use super::{GateUp, Mlp, apart};
    use crate::mlx::kernels::{Kernel, Quant};
    use crate::mlx::load::Weight;
    use crate::mlx::model::linear::Linear;

    fn normal(seed: u64, shape: &[i32]) -> Array {
        let key = mlx_rs::random::key(seed).unwrap();
        mlx_rs::random::normal::<f32>(shape, None, None, &key).unwrap()
    }

    /// A random `[rows, cols]` weight, 4-bit for MLX's kernels.
    fn quantized(seed: u64, rows: i32, cols: i32) -> Weight {
        let (w, scales, biases) =
            mlx_rs::ops::quantize(normal(seed, &[rows, cols]), 64, 4).unwrap();
        let q = Quant {
            group_size: 64,
            bits: 4,
        };
        let kernel = Kernel::Mlx;
        Weight::Quantized {
            w,
            scales,
            biases,
            q,
            kernel,
        }
    }

    #[test]
    fn gate_and_up_apart_compute_what_they_compute_stacked() {
        let (ffn, hidden) = (128, 64);
        let (gate, up) = (quantized(1, ffn, hidden), quantized(2, ffn, hidden));
        assert_eq!(gate.mlx_quantized_shape(), Some((128, 64)));
        // Small enough to stack on any device.
        assert!(!apart(&gate, &up));
        let mlp = |gate_up| Mlp {
            gate_up,
            down: Linear::new(quantized(3, hidden, ffn), None).unwrap(),
            ffn,
            fused: false,
            gelu: false,
        };
        let stacked = Linear::fused(vec![gate.clone(), up.clone()], None).unwrap();
        let stacked = mlp(GateUp::Stacked(stacked));
        let gate = Linear::new(gate, None).unwrap();
        let up = Linear::new(up, None).unwrap();
        let apart = mlp(GateUp::Apart { gate, up });
        assert_eq!(stacked.gate_up.arrays().len(), 3);
        assert_eq!(apart.gate_up.arrays().len(), 6);
        // A decode row and a prompt's rows.
        for rows in [1, 5] {
            let x = normal(4, &[1, rows, hidden]);
            let want = stacked.forward(&x).unwrap();
            let got = apart.forward(&x).unwrap();
            assert_eq!(want.shape(), got.shape());
            let worst = want
                .subtract(&got)
                .unwrap()
                .abs()
                .unwrap()
                .max(None)
                .unwrap()
                .item_exact::<f32>();
            assert!(worst < 1e-4, "{rows} rows: differ by {worst}");
        }
    }
}
