//! The gated MLP (SwiGLU) of the shared decoder.

use mlx_rs::Array;

use super::R;
use super::linear::{Linear, halves};
use super::moe::Moe;
use crate::mlx::kernels::{compiled, fused};

pub(super) struct Mlp {
    pub(super) gate_up: Linear,
    pub(super) down: Linear,
    pub(super) ffn: i32,
    /// On the CPU: one fused SwiGLU operation (same numbers).
    pub(super) fused: bool,
    /// Gemma: `gelu_approx(gate) * up` instead of `silu(gate) * up`.
    pub(super) gelu: bool,
}

impl Mlp {
    pub(super) fn forward(&self, x: &Array) -> R<Array> {
        // One split operation for both halves (a GPU pays per operation),
        // or none where one row is multiplied by each half's rows apart.
        let (g, u) = match self.fused && !self.gelu {
            true => {
                let gu = self.gate_up.forward(x)?;
                if gu.dtype() == mlx_rs::Dtype::Float32 {
                    return self.down.forward(&fused::swiglu(&gu)?);
                }
                halves(&gu, self.ffn)?
            }
            false => self.gate_up.forward_halves(x, self.ffn)?,
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
            FeedForward::Dense(m) => vec![m.gate_up.describe(), m.down.describe()],
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
