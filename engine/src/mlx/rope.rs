//! Rotary position embeddings: the variants llama/qwen configs ask for,
//! all run by `mlx::fast::rope` (plain base, or explicit frequencies).

use mlx_rs::Array;

use super::config::ModelConfig;
use crate::EngineError;

/// Which RoPE a config asks for (`rope_scaling.rope_type` / `.type`).
#[derive(Debug, Clone, PartialEq)]
pub enum RopeKind {
    /// `base^(-2i/d)` frequencies.
    Default,
    /// Positions divided by `factor`.
    Linear {
        /// `rope_scaling.factor`.
        factor: f32,
    },
    /// Llama 3.1's frequency-dependent scaling.
    Llama3 {
        /// `rope_scaling.factor`.
        factor: f32,
        /// `rope_scaling.low_freq_factor`.
        low_freq_factor: f32,
        /// `rope_scaling.high_freq_factor`.
        high_freq_factor: f32,
        /// `rope_scaling.original_max_position_embeddings`.
        original_max_position_embeddings: f32,
    },
}

impl RopeKind {
    /// Reads `rope_scaling`; unknown types are an error naming the field.
    pub fn from_config(config: &ModelConfig) -> Result<Self, EngineError> {
        let Some(s) = &config.rope_scaling else {
            return Ok(Self::Default);
        };
        let (field, kind) = match (s.get("rope_type"), s.get("type")) {
            (Some(v), _) => ("rope_scaling.rope_type", v),
            (None, Some(v)) => ("rope_scaling.type", v),
            (None, None) => return Ok(Self::Default),
        };
        let num = |key: &str, default: Option<f32>| -> Result<f32, EngineError> {
            match s.get(key).and_then(serde_json::Value::as_f64) {
                Some(v) if v.is_finite() && v > 0.0 => Ok(v as f32),
                Some(_) => Err(EngineError::Load(format!(
                    "config.json field `rope_scaling.{key}` must be a positive number"
                ))),
                None => default.ok_or_else(|| {
                    EngineError::Load(format!("config.json lacks `rope_scaling.{key}`"))
                }),
            }
        };
        match kind.as_str() {
            Some("default") => Ok(Self::Default),
            Some("linear") => Ok(Self::Linear {
                factor: num("factor", None)?,
            }),
            Some("llama3") => Ok(Self::Llama3 {
                factor: num("factor", None)?,
                low_freq_factor: num("low_freq_factor", Some(1.0))?,
                high_freq_factor: num("high_freq_factor", Some(4.0))?,
                original_max_position_embeddings: num(
                    "original_max_position_embeddings",
                    Some(8192.0),
                )?,
            }),
            other => Err(EngineError::Load(format!(
                "unsupported RoPE type {} in config.json field `{field}` (supported: default, linear, llama3)",
                other.map_or_else(|| kind.to_string(), |s| format!("`{s}`"))
            ))),
        }
    }
}

/// A ready-to-apply RoPE for one model.
pub struct Rope {
    dims: i32,
    base: Option<f32>,
    scale: f32,
    freqs: Option<Array>,
}

impl Rope {
    /// Builds the rotation for `config` (head_dim dimensions rotated).
    pub fn new(config: &ModelConfig) -> Result<Self, EngineError> {
        let dims = config.head_dim() as i32;
        let base = config.rope_theta;
        Ok(match RopeKind::from_config(config)? {
            RopeKind::Default => Self {
                dims,
                base: Some(base),
                scale: 1.0,
                freqs: None,
            },
            RopeKind::Linear { factor } => Self {
                dims,
                base: Some(base),
                scale: 1.0 / factor,
                freqs: None,
            },
            RopeKind::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: old,
            } => {
                let low_wavelen = old / low_freq_factor;
                let high_wavelen = old / high_freq_factor;
                let periods: Vec<f32> = (0..dims / 2)
                    .map(|i| {
                        let p = base.powf(2.0 * i as f32 / dims as f32);
                        let wavelen = 2.0 * std::f32::consts::PI * p;
                        if wavelen > low_wavelen {
                            p * factor
                        } else if wavelen > high_wavelen {
                            let smooth = (old / wavelen - low_freq_factor)
                                / (high_freq_factor - low_freq_factor);
                            p / ((1.0 - smooth) / factor + smooth)
                        } else {
                            p
                        }
                    })
                    .collect();
                Self {
                    dims,
                    base: None,
                    scale: 1.0,
                    freqs: Some(Array::from_slice(&periods, &[dims / 2])),
                }
            }
        })
    }

    /// Rotates `x` ([batch, heads, len, head_dim]) for positions from `offset`.
    pub fn apply(&self, x: &Array, offset: i32) -> mlx_rs::error::Result<Array> {
        mlx_rs::fast::rope(
            x,
            self.dims,
            false,
            self.base,
            self.scale,
            offset,
            self.freqs.as_ref(),
        )
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
    fn parses_known_kinds_and_names_the_field_of_unknown_ones() {
        assert_eq!(
            RopeKind::from_config(&config(
                serde_json::json!({"type": "linear", "factor": 2.0})
            ))
            .unwrap(),
            RopeKind::Linear { factor: 2.0 }
        );
        assert!(matches!(
            RopeKind::from_config(&config(
                serde_json::json!({"rope_type": "llama3", "factor": 8.0})
            ))
            .unwrap(),
            RopeKind::Llama3 { .. }
        ));
        let e = RopeKind::from_config(&config(serde_json::json!({"rope_type": "longrope"})))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rope_scaling.rope_type") && e.contains("longrope"),
            "{e}"
        );
    }
}
