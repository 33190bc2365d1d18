//! The RoPE a config asks for (`rope_scaling`), read and checked at load
//! as a [`RopeKind`]; `model/rope.rs` builds the rotation from it.

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
    /// Phi-3's LongRoPE (`longrope`, formerly `su`), as mlx-lm runs it:
    /// the periods times `long_factor` at every length, and the rotated
    /// dimensions scaled by `sqrt(1 + ln(max / original) / ln(original))`
    /// when the model's context goes past its pre-training context.
    LongRope {
        /// `rope_scaling.long_factor`, one per rotated pair.
        long_factor: Vec<f64>,
    },
    /// YaRN (`yarn`), as mlx-lm's `YarnRoPE`: periods blended between
    /// plain and `factor`-scaled by a linear ramp over the rotated pairs,
    /// and the rotated dimensions scaled by
    /// `get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)`.
    Yarn {
        /// `rope_scaling.factor`.
        factor: f64,
        /// `rope_scaling.original_max_position_embeddings` (4096).
        original_max_position_embeddings: f64,
        /// `rope_scaling.beta_fast` (32).
        beta_fast: f64,
        /// `rope_scaling.beta_slow` (1).
        beta_slow: f64,
        /// `rope_scaling.mscale` (1).
        mscale: f64,
        /// `rope_scaling.mscale_all_dim` (0).
        mscale_all_dim: f64,
    },
}

impl RopeKind {
    /// Reads `rope_scaling` (`scaling`) of a model that rotates
    /// `rope_dims` dimensions per head; unknown types are an error naming
    /// the field.
    pub fn parse(
        scaling: Option<&serde_json::Map<String, serde_json::Value>>,
        rope_dims: usize,
    ) -> Result<Self, EngineError> {
        let Some(s) = scaling else {
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
            Some("yarn") => {
                let nonneg = |key: &str, default: f32| -> Result<f64, EngineError> {
                    match s.get(key).and_then(serde_json::Value::as_f64) {
                        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
                        Some(_) => Err(EngineError::Load(format!(
                            "config.json field `rope_scaling.{key}` must be a number >= 0"
                        ))),
                        None => Ok(default as f64),
                    }
                };
                Ok(Self::Yarn {
                    factor: num("factor", None)? as f64,
                    original_max_position_embeddings: num(
                        "original_max_position_embeddings",
                        Some(4096.0),
                    )? as f64,
                    beta_fast: num("beta_fast", Some(32.0))? as f64,
                    beta_slow: num("beta_slow", Some(1.0))? as f64,
                    mscale: nonneg("mscale", 1.0)?,
                    mscale_all_dim: nonneg("mscale_all_dim", 0.0)?,
                })
            }
            Some("longrope" | "su") => {
                let long_factor: Option<Vec<f64>> = s
                    .get("long_factor")
                    .and_then(serde_json::Value::as_array)
                    .map(|v| v.iter().filter_map(serde_json::Value::as_f64).collect());
                let want = rope_dims / 2;
                match long_factor {
                    Some(f) if f.len() == want && f.iter().all(|v| v.is_finite() && *v > 0.0) => {
                        Ok(Self::LongRope { long_factor: f })
                    }
                    _ => Err(EngineError::Load(format!(
                        "config.json field `rope_scaling.long_factor` must list {want} positive numbers (one per rotated pair)"
                    ))),
                }
            }
            other => Err(EngineError::Load(format!(
                "unsupported RoPE type {} in config.json field `{field}` (supported: default, linear, llama3, longrope, yarn)",
                other.map_or_else(|| kind.to_string(), |s| format!("`{s}`"))
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rope_scaling` of a model with head_dim 32, all of it rotated.
    fn parse(scaling: serde_json::Value) -> Result<RopeKind, EngineError> {
        RopeKind::parse(scaling.as_object(), 32)
    }

    #[test]
    fn parses_known_kinds_and_names_the_field_of_unknown_ones() {
        assert_eq!(
            parse(serde_json::json!({"type": "linear", "factor": 2.0})).unwrap(),
            RopeKind::Linear { factor: 2.0 }
        );
        assert!(matches!(
            parse(serde_json::json!({"rope_type": "llama3", "factor": 8.0})).unwrap(),
            RopeKind::Llama3 { .. }
        ));
        // head_dim 32: 16 rotated pairs.
        let long: Vec<f64> = (0..16).map(|i| 1.0 + i as f64).collect();
        assert_eq!(
            parse(serde_json::json!({"type": "longrope", "long_factor": long})).unwrap(),
            RopeKind::LongRope { long_factor: long }
        );
        let e = parse(serde_json::json!({"type": "su", "long_factor": [1.0, 2.0]}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rope_scaling.long_factor") && e.contains("16"),
            "{e}"
        );
        assert!(matches!(
            parse(serde_json::json!({"rope_type": "yarn", "factor": 4.0})).unwrap(),
            RopeKind::Yarn {
                beta_fast: 32.0,
                beta_slow: 1.0,
                mscale_all_dim: 0.0,
                ..
            }
        ));
        let e = parse(serde_json::json!({"rope_type": "yarn"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rope_scaling.factor"), "{e}");
        let e = parse(serde_json::json!({"rope_type": "dynamic"}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rope_scaling.rope_type") && e.contains("dynamic"),
            "{e}"
        );
    }
}
