//! Rotary position embeddings: the variants llama/qwen configs ask for
//! (read at load as a [`RopeKind`]), all run by `mlx::fast::rope` (plain
//! base, or explicit frequencies).

use mlx_rs::Array;

use crate::EngineError;
use crate::mlx::load::config::ModelConfig;
use crate::mlx::load::rope_config::RopeKind;

/// Positions whose angles are tabulated at load (beyond, `fast::rope`).
const TABLE_POSITIONS: usize = 32_768;

/// A ready-to-apply RoPE for one model.
///
/// MLX's CPU backend computes `fast::rope` from scratch on every call
/// (frequencies, angles, cos, sin: transcendental work per head and
/// position), which made RoPE the largest non-matmul cost of a decode step.
/// The angles depend only on the position, so their cos/sin are tabulated
/// once at load; a step takes its positions' rows, shared by every layer,
/// and rotates with plain multiplies ([`RopeRows::apply`]).
pub struct Rope {
    dims: i32,
    head_dim: i32,
    /// The rotated dimensions are multiplied by this first (LongRoPE, YaRN).
    mscale: f32,
    base: Option<f32>,
    scale: f32,
    freqs: Option<Array>,
    cos: Array,
    sin: Array,
    positions: i32,
}

/// The cos/sin rows of one step's positions, shared by every layer.
pub struct RopeRows {
    cos: Array,
    sin: Array,
    half: i32,
}

impl RopeRows {
    /// The cos and sin rows (`[T, 1, head_dim]`; sin signed for the first
    /// half), for the fused split-and-rotate.
    pub fn tables(&self) -> (&Array, &Array) {
        (&self.cos, &self.sin)
    }

    /// Rotates `x` (`[1, T, heads, head_dim]`, row `t` at the step's
    /// position `t`).
    pub fn apply(&self, x: &Array) -> mlx_rs::error::Result<Array> {
        use mlx_rs::ops::indexing::TryIndexOp;
        let swapped = mlx_rs::ops::concatenate(
            &[
                x.try_index((.., .., .., self.half..))?,
                x.try_index((.., .., .., ..self.half))?,
            ],
            -1,
        )?;
        x.multiply(&self.cos)?.add(swapped.multiply(&self.sin)?)
    }
}

impl Rope {
    /// Builds the rotation for `config` (its `rope_dims()` rotated).
    pub fn new(config: &ModelConfig) -> Result<Self, EngineError> {
        let dims = config.rope_dims() as i32;
        if dims == 0 || dims % 2 != 0 {
            return Err(EngineError::Load(format!(
                "config.json: RoPE would rotate {dims} dimensions per head (head_dim × partial_rotary_factor); it needs an even, positive number"
            )));
        }
        let half = (dims / 2) as usize;
        let mut mscale = 1.0f32;
        let base = config.rope_theta;
        let default_periods = || -> Vec<f64> {
            (0..half)
                .map(|i| (base as f64).powf(2.0 * i as f64 / dims as f64))
                .collect()
        };
        let (base_opt, scale, periods) = match config.rope_kind()? {
            RopeKind::Default => (Some(base), 1.0f32, default_periods()),
            RopeKind::Linear { factor } => (Some(base), 1.0 / factor, default_periods()),
            RopeKind::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: old,
            } => {
                let low_wavelen = old as f64 / low_freq_factor as f64;
                let high_wavelen = old as f64 / high_freq_factor as f64;
                let periods = default_periods()
                    .into_iter()
                    .map(|p| {
                        let wavelen = 2.0 * std::f64::consts::PI * p;
                        if wavelen > low_wavelen {
                            p * factor as f64
                        } else if wavelen > high_wavelen {
                            let smooth = (old as f64 / wavelen - low_freq_factor as f64)
                                / (high_freq_factor as f64 - low_freq_factor as f64);
                            p / ((1.0 - smooth) / factor as f64 + smooth)
                        } else {
                            p
                        }
                    })
                    .collect();
                (None, 1.0, periods)
            }
            RopeKind::Yarn {
                factor,
                original_max_position_embeddings: original,
                beta_fast,
                beta_slow,
                mscale: m,
                mscale_all_dim,
            } => {
                let d = dims as f64;
                let ln_base = (base as f64).ln();
                let correction = |rotations: f64| {
                    d * (original / (rotations * 2.0 * std::f64::consts::PI)).ln() / (2.0 * ln_base)
                };
                let low = correction(beta_fast).floor().max(0.0);
                let mut high = correction(beta_slow).ceil().min(d - 1.0);
                if low == high {
                    high += 0.001;
                }
                let get_mscale = |m: f64| {
                    if factor <= 1.0 {
                        1.0
                    } else {
                        0.1 * m * factor.ln() + 1.0
                    }
                };
                mscale = (get_mscale(m) / get_mscale(mscale_all_dim)) as f32;
                let periods = default_periods()
                    .into_iter()
                    .enumerate()
                    .map(|(i, extra)| {
                        let inter = factor * extra;
                        let keep = 1.0 - ((i as f64 - low) / (high - low)).clamp(0.0, 1.0);
                        inter * extra / (inter * keep + extra * (1.0 - keep))
                    })
                    .collect();
                (None, 1.0, periods)
            }
            RopeKind::LongRope { long_factor } => {
                let original = config.original_max_position_embeddings.unwrap_or(4096) as f64;
                let max = config.max_position_embeddings.unwrap_or(131_072) as f64;
                let factor = max / original;
                if factor > 1.0 {
                    mscale = (1.0 + factor.ln() / original.ln()).sqrt() as f32;
                }
                let periods = default_periods()
                    .into_iter()
                    .zip(long_factor)
                    .map(|(p, f)| p * f)
                    .collect();
                (None, 1.0, periods)
            }
        };
        // Tables only where `rows` can use them (whole heads, unscaled).
        let tabulated = dims == config.head_dim() as i32 && mscale == 1.0;
        let positions = if tabulated {
            config.context_length().clamp(1, TABLE_POSITIONS)
        } else {
            1
        };
        let mut cos = Vec::with_capacity(positions * half * 2);
        let mut sin = Vec::with_capacity(positions * half * 2);
        // Full-width rows [cos, cos] and [-sin, sin], so that a rotation is
        // x * cos + swap_halves(x) * sin: the same products and sums as
        // `x1*cos - x2*sin`, `x2*cos + x1*sin`, in fewer ops.
        for p in 0..positions {
            let angles: Vec<f64> = periods
                .iter()
                .map(|period| p as f64 * scale as f64 / period)
                .collect();
            cos.extend(angles.iter().map(|a| a.cos() as f32));
            cos.extend(angles.iter().map(|a| a.cos() as f32));
            sin.extend(angles.iter().map(|a| -a.sin() as f32));
            sin.extend(angles.iter().map(|a| a.sin() as f32));
        }
        let shape = [positions as i32, dims];
        let freqs = if base_opt.is_none() {
            let f: Vec<f32> = periods.iter().map(|&p| p as f32).collect();
            Some(Array::from_slice(&f, &[half as i32]))
        } else {
            None
        };
        Ok(Self {
            dims,
            head_dim: config.head_dim() as i32,
            mscale,
            base: base_opt,
            scale,
            freqs,
            cos: Array::from_slice(&cos, &shape),
            sin: Array::from_slice(&sin, &shape),
            positions: positions as i32,
        })
    }

    /// The tables, to evaluate at load.
    pub fn arrays(&self) -> [&Array; 2] {
        [&self.cos, &self.sin]
    }

    /// Whether the tables rotate every position below `positions`
    /// ([`Rope::rows`] gives rows for them).
    pub fn tables_cover(&self, positions: usize) -> bool {
        self.dims == self.head_dim && self.mscale == 1.0 && positions <= self.positions as usize
    }

    /// The table rows of `positions` (one per row of a step, sequences
    /// one after another), shaped to rotate `[1, T, heads, head_dim]`;
    /// `None` when a position is past the tables ([`Rope::apply`] then).
    pub fn rows(&self, positions: &[i32]) -> mlx_rs::error::Result<Option<RopeRows>> {
        use mlx_rs::ops::indexing::TryIndexOp;
        if positions.iter().any(|&p| p < 0 || p >= self.positions) {
            return Ok(None);
        }
        // The tables rotate whole heads, unscaled; partial or scaled
        // rotations take `fast::rope` (`apply`).
        if self.dims != self.head_dim || self.mscale != 1.0 {
            return Ok(None);
        }
        let t = positions.len() as i32;
        let contiguous = positions.windows(2).all(|w| w[1] == w[0] + 1);
        let (cos, sin) = match positions.first() {
            // One sequence: a slice, as cheap as it gets.
            Some(&first) if contiguous => (
                self.cos.try_index(first..first + t)?,
                self.sin.try_index(first..first + t)?,
            ),
            _ => {
                let idx = Array::from_slice(positions, &[t]);
                (self.cos.take_axis(&idx, 0)?, self.sin.take_axis(&idx, 0)?)
            }
        };
        Ok(Some(RopeRows {
            cos: cos.reshape(&[t, 1, self.dims])?,
            sin: sin.reshape(&[t, 1, self.dims])?,
            half: self.dims / 2,
        }))
    }

    /// Rotates `x` for positions from `offset` with `fast::rope` (its
    /// first `dims` dimensions, scaled by `mscale` first as mlx-lm does).
    pub fn apply(&self, x: &Array, offset: i32) -> mlx_rs::error::Result<Array> {
        let scaled = self.prescaled(x)?;
        mlx_rs::fast::rope(
            scaled.as_ref().unwrap_or(x),
            self.dims,
            false,
            self.base,
            self.scale,
            offset,
            self.freqs.as_ref(),
        )
    }

    /// As [`Rope::apply`] for a batch of sequences, `x` `[N, heads, L,
    /// head_dim]`, each's rows from its own position on (`offsets`, `[N]`
    /// int32): one operation for a decode step or a padded pass of
    /// prompts, where the tables are not used.
    pub fn apply_at(&self, x: &Array, offsets: &Array) -> mlx_rs::error::Result<Array> {
        let scaled = self.prescaled(x)?;
        mlx_rs::fast::rope_dynamic(
            scaled.as_ref().unwrap_or(x),
            self.dims,
            false,
            self.base,
            self.scale,
            offsets,
            self.freqs.as_ref(),
        )
    }

    /// `x` with its rotated dimensions multiplied by `mscale`, in `x`'s own
    /// type (an f32 factor would widen a bf16 step to f32); `None` when
    /// `mscale` is 1.
    fn prescaled(&self, x: &Array) -> mlx_rs::error::Result<Option<Array>> {
        use mlx_rs::ops::indexing::TryIndexOp;
        if self.mscale == 1.0 {
            return Ok(None);
        }
        let m = Array::from_f32(self.mscale).as_dtype(x.dtype())?;
        Ok(Some(if self.dims == self.head_dim {
            x.multiply(&m)?
        } else {
            mlx_rs::ops::concatenate(
                &[
                    x.try_index((.., .., .., ..self.dims))?.multiply(&m)?,
                    x.try_index((.., .., .., self.dims..))?,
                ],
                -1,
            )?
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(scaling: serde_json::Value) -> ModelConfig {
        serde_json::from_value(serde_json::json!({
            "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
            "intermediate_size": 64, "num_attention_heads": 2, "rms_norm_eps": 1e-5,
            "vocab_size": 10, "rope_scaling": scaling
        }))
        .unwrap()
    }

    #[test]
    fn tables_match_fast_rope() {
        for scaling in [
            serde_json::Value::Null,
            serde_json::json!({"type": "linear", "factor": 2.0}),
            serde_json::json!({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 16}),
        ] {
            let rope = Rope::new(&config(scaling)).unwrap();
            let x = mlx_rs::random::normal::<f32>(&[1, 2, 3, 32], None, None, None).unwrap();
            let want = rope.apply(&x, 5).unwrap();
            // Rows for positions 5, 6, 7 in the `[1, T, heads, dim]` layout.
            let rows = rope.rows(&[5, 6, 7]).unwrap().unwrap();
            let xt = x.transpose_axes(&[0, 2, 1, 3]).unwrap();
            let got = rows
                .apply(&xt)
                .unwrap()
                .transpose_axes(&[0, 2, 1, 3])
                .unwrap();
            assert!(rope.rows(&[5, 1 << 20]).unwrap().is_none());
            let diff = want
                .subtract(&got)
                .unwrap()
                .abs()
                .unwrap()
                .max(None)
                .unwrap();
            let diff = diff.item_exact::<f32>();
            assert!(diff < 1e-4, "{diff}");
        }
    }
}
