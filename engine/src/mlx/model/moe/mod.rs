//! A sparse mixture-of-experts MLP (Qwen3-MoE, gpt-oss): a router picks
//! each token's top-k experts, each a SwiGLU MLP, and their outputs are
//! summed weighted by the router's probabilities. Qwen3-MoE takes the top k
//! of a softmax over all experts (renormalised when asked); gpt-oss takes
//! the top k logits and a softmax over those, with biased experts and a
//! clamped SwiGLU.
//!
//! The operations are mlx-lm's (`SwitchGLU`): softmax in full precision,
//! `argpartition` for the top k, and `gather_mm` / `gather_qmm` reading only
//! the chosen experts' weights, so the numbers are the reference's.

mod experts;

use mlx_rs::Array;

use self::experts::Stacked;
use super::R;
use super::linear::Linear;
use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::kernels::{Precision, compiled};
use crate::mlx::load::WeightMap;

/// How a token's experts are chosen and weighted.
#[derive(Clone, Copy)]
pub(super) enum Routing {
    /// Qwen3-MoE: a softmax over every expert, its top k (renormalised to
    /// sum to one when asked).
    Softmax { norm_top_k: bool },
    /// gpt-oss: the top k logits, and a softmax over those.
    TopLogits,
}

/// The experts' gated activation.
#[derive(Clone, Copy)]
pub(super) enum Activation {
    /// `silu(gate) * up`.
    Swiglu,
    /// gpt-oss: `(clip(up, ±limit) + 1) * g * sigmoid(alpha * g)` with
    /// `g = min(gate, limit)`.
    ClampedSwiglu { limit: f32, alpha: f32 },
}

impl Activation {
    fn apply(self, gate: &Array, up: &Array) -> R<Array> {
        match self {
            Activation::Swiglu => compiled::swiglu(gate, up),
            Activation::ClampedSwiglu { limit, alpha } => {
                compiled::clamped_swiglu(gate, up, limit, alpha)
            }
        }
    }
}

pub(super) struct Moe {
    router: Linear,
    gate: Stacked,
    up: Stacked,
    down: Stacked,
    /// Per-expert biases of gate, up and down (`[experts, out]`; gpt-oss).
    biases: Option<[Array; 3]>,
    top_k: i32,
    routing: Routing,
    activation: Activation,
}

impl Moe {
    /// The block's experts and router (`{prefix}.gate`, or gpt-oss's
    /// `{prefix}.router` with its bias).
    pub(super) fn load(
        w: &mut WeightMap,
        prefix: &str,
        (experts, top_k): (usize, usize),
        (routing, activation): (Routing, Activation),
        precision: Precision,
    ) -> Result<Self, EngineError> {
        if top_k == 0 || top_k > experts {
            return Err(EngineError::Load(format!(
                "{}: num_experts_per_tok {top_k} must be between 1 and num_experts {experts}",
                w.source
            )));
        }
        // The policy's type, or (`keep`, a GPU's default) the stored one:
        // an f32 bias would widen a bf16 step.
        let dtype = precision.dense_dtype();
        let bias = |w: &mut WeightMap, name: &str| -> Result<Option<Array>, EngineError> {
            let name = format!("{name}.bias");
            if !w.has_tensor(&name) {
                return Ok(None);
            }
            let b = w.take(&name)?;
            match dtype {
                Some(d) if b.dtype() != d => {
                    b.as_dtype(d).map(Some).map_err(mlx_err("casting a bias"))
                }
                _ => Ok(Some(b)),
            }
        };
        let router_name = match w.has(&format!("{prefix}.router")) {
            true => format!("{prefix}.router"),
            false => format!("{prefix}.gate"),
        };
        let router_bias = bias(w, &router_name)?;
        let router = Linear::new(
            w.take_weight(&router_name)?.with_policy(precision)?,
            router_bias,
        )?;
        let biases = match (
            bias(w, &format!("{prefix}.experts.gate_proj"))?,
            bias(w, &format!("{prefix}.experts.up_proj"))?,
            bias(w, &format!("{prefix}.experts.down_proj"))?,
        ) {
            (Some(g), Some(u), Some(d)) => Some([g, u, d]),
            (None, None, None) => None,
            _ => {
                return Err(EngineError::Load(format!(
                    "{}: {prefix}.experts has biases on some projections only",
                    w.source
                )));
            }
        };
        Ok(Self {
            router,
            gate: Stacked::load(w, prefix, "gate_proj", experts, precision)?,
            up: Stacked::load(w, prefix, "up_proj", experts, precision)?,
            down: Stacked::load(w, prefix, "down_proj", experts, precision)?,
            biases,
            top_k: top_k as i32,
            routing,
            activation,
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
        all.extend(self.biases.iter().flatten());
        all
    }

    /// `y` (`[1, T, k, 1, out]`) plus each pick's expert bias.
    fn biased(&self, y: Array, which: usize, inds: &Array) -> R<Array> {
        match &self.biases {
            Some(b) => y.add(mlx_rs::ops::expand_dims_axes(
                &b[which].take_axis(inds, 0)?,
                &[-2],
            )?),
            None => Ok(y),
        }
    }

    /// `x`: `[1, T, hidden]`.
    pub(super) fn forward(&self, x: &Array) -> R<Array> {
        use mlx_rs::ops::argpartition_axis;
        use mlx_rs::ops::indexing::TryIndexOp;
        let logits = self.router.forward(x)?;
        let k = self.top_k;
        let experts = logits.shape()[logits.ndim() - 1];
        let top = |a: &Array| argpartition_axis(a, -k, -1)?.try_index((.., .., experts - k..));
        let (inds, scores) = match self.routing {
            Routing::Softmax { norm_top_k } => {
                let gates = mlx_rs::ops::softmax_axis(&logits, -1, true)?;
                let inds = top(&gates)?;
                let mut scores = gates.take_along_axis(&inds, -1)?;
                if norm_top_k {
                    scores = scores.divide(scores.sum_axis(-1, true)?)?;
                }
                (inds, scores)
            }
            Routing::TopLogits => {
                let inds = top(&logits)?;
                let picked = logits.take_along_axis(&inds, -1)?;
                (inds, mlx_rs::ops::softmax_axis(&picked, -1, true)?)
            }
        };
        if self.gate.sorts() && inds.size() >= 64 {
            return self.forward_sorted(x, &inds, &scores);
        }
        self.forward_gathered(x, &inds, &scores)
    }

    /// The experts of each token in place: `inds` and `scores` `[1, T, k]`.
    fn forward_gathered(&self, x: &Array, inds: &Array, scores: &Array) -> R<Array> {
        // [1, T, 1, 1, hidden] against each token's k experts.
        let xe = mlx_rs::ops::expand_dims_axes(x, &[-2, -3])?;
        let up = self.biased(self.up.gather(&xe, inds)?, 1, inds)?;
        let gate = self.biased(self.gate.gather(&xe, inds)?, 0, inds)?;
        let h = self.activation.apply(&gate, &up)?;
        let y = self
            .biased(self.down.gather(&h, inds)?, 2, inds)?
            .squeeze_axes(&[-2])?;
        Self::combine(y, scores)
    }

    /// [`forward`](Self::forward) for many (token, expert) pairs on MLX's
    /// gathers, as mlx-lm does past 64 of them: the pairs sorted by
    /// expert, so each expert's weights are walked once, then put back.
    fn forward_sorted(&self, x: &Array, inds: &Array, scores: &Array) -> R<Array> {
        use mlx_rs::ops::argsort;
        let (t, k) = (inds.shape()[1], inds.shape()[2]);
        let hidden = x.shape()[2];
        let flat = inds.reshape(&[-1])?;
        let order = argsort(&flat)?;
        let back = argsort(&order)?;
        let rows = order.floor_divide(Array::from_int(k))?;
        let xs = x.reshape(&[t, 1, hidden])?.take_axis(&rows, 0)?;
        let idx = flat.take_axis(&order, 0)?;
        let up = self.biased(self.up.gather_sorted(&xs, &idx)?, 1, &idx)?;
        let gate = self.biased(self.gate.gather_sorted(&xs, &idx)?, 0, &idx)?;
        let h = self.activation.apply(&gate, &up)?;
        let y = self.biased(self.down.gather_sorted(&h, &idx)?, 2, &idx)?;
        let y = y.take_axis(&back, 0)?.reshape(&[1, t, k, hidden])?;
        Self::combine(y, scores)
    }

    /// The experts' outputs (`[1, T, k, hidden]`) weighted by `scores` and
    /// summed.
    fn combine(y: Array, scores: &Array) -> R<Array> {
        let weighted = y.multiply(mlx_rs::ops::expand_dims_axes(scores, &[-1])?)?;
        let out = weighted.sum_axis(-2, false)?;
        if out.dtype() == y.dtype() {
            Ok(out)
        } else {
            out.as_dtype(y.dtype())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx::load::Weight;

    fn normal(shape: &[i32], key: u64) -> Array {
        let key = mlx_rs::random::key(key).unwrap();
        mlx_rs::random::normal::<f32>(shape, None, None, &key).unwrap()
    }

    /// A prompt's many (token, expert) pairs go through MLX's gathers
    /// sorted by expert; the result is each token's experts in place.
    #[test]
    fn sorted_experts_give_the_tokens_own_results() {
        let (e, hidden, inter, t) = (4, 8, 6, 40);
        for (routing, activation) in [
            (Routing::Softmax { norm_top_k: true }, Activation::Swiglu),
            (
                Routing::TopLogits,
                Activation::ClampedSwiglu {
                    limit: 7.0,
                    alpha: 1.702,
                },
            ),
        ] {
            let dense = |shape: &[i32], key| Stacked::Dense(normal(shape, key));
            let moe = Moe {
                router: Linear::new(Weight::Dense(normal(&[e, hidden], 1)), None).unwrap(),
                gate: dense(&[e, hidden, inter], 2),
                up: dense(&[e, hidden, inter], 3),
                down: dense(&[e, inter, hidden], 4),
                biases: Some([
                    normal(&[e, inter], 5),
                    normal(&[e, inter], 6),
                    normal(&[e, hidden], 7),
                ]),
                top_k: 2,
                routing,
                activation,
            };
            let x = normal(&[1, t, hidden], 8);
            let (inds, scores) = {
                let logits = moe.router.forward(&x).unwrap();
                let inds = mlx_rs::ops::argsort_axis(&logits, -1).unwrap();
                use mlx_rs::ops::indexing::TryIndexOp;
                let inds = inds.try_index((.., .., e - 2..)).unwrap();
                let scores =
                    mlx_rs::ops::softmax_axis(logits.take_along_axis(&inds, -1).unwrap(), -1, true)
                        .unwrap();
                (inds, scores)
            };
            let sorted = moe.forward_sorted(&x, &inds, &scores).unwrap();
            let gathered = moe.forward_gathered(&x, &inds, &scores).unwrap();
            assert_eq!(sorted.shape(), gathered.shape());
            let close = sorted.all_close(&gathered, 1e-5, 1e-5, None).unwrap();
            assert!(close);
            // And through `forward`, which takes the sorted path here.
            assert!(inds.size() >= 64);
            moe.forward(&x).unwrap().eval().unwrap();
        }
    }
}
