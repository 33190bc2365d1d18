//! Per-run sampling from `forwardedProps.sampling = {temperature, topP,
//! topK, minP, repetitionPenalty, seed, maxTokens}`, over the server's
//! defaults. Unknown keys are ignored; a known key with a bad value is
//! refused naming it.

use serde_json::Value;
use thinkwire_engine::SamplingParams;

use super::rejection::{RejectKind, RunRejected};

/// The sampling parameters and token limit for one run.
pub(crate) fn from_forwarded(
    forwarded: Option<&Value>,
    defaults: &SamplingParams,
    max_new_tokens: usize,
) -> Result<(SamplingParams, usize), RunRejected> {
    let mut params = defaults.clone();
    let mut max_tokens = max_new_tokens;
    let Some(sampling) = forwarded.and_then(|f| f.get("sampling")) else {
        return Ok((params, max_tokens));
    };
    let bad = |key: &str, what: &str| {
        RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_SAMPLING",
            format!("{key} must be {what}"),
        )
        .at(format!("forwardedProps.sampling.{key}"))
    };
    let Some(sampling) = sampling.as_object() else {
        return Err(bad("", "an object").at("forwardedProps.sampling"));
    };
    let number = |key: &str| -> Result<Option<f32>, RunRejected> {
        match sampling.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(|f| Some(f as f32))
                .ok_or_else(|| bad(key, "a number")),
        }
    };
    let count = |key: &str| -> Result<Option<u64>, RunRejected> {
        match sampling.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| bad(key, "a non-negative integer")),
        }
    };
    if let Some(t) = number("temperature")? {
        params.temperature = t;
    }
    if let Some(p) = number("topP")? {
        params.top_p = p;
    }
    if let Some(p) = number("minP")? {
        params.min_p = p;
    }
    if let Some(p) = number("repetitionPenalty")? {
        params.repetition_penalty = p;
    }
    if let Some(k) = count("topK")? {
        params.top_k = usize::try_from(k).unwrap_or(usize::MAX);
    }
    if let Some(seed) = count("seed")? {
        params.seed = Some(seed);
    }
    if let Some(n) = count("maxTokens")? {
        if n == 0 {
            return Err(bad("maxTokens", "a positive integer"));
        }
        max_tokens = usize::try_from(n).unwrap_or(usize::MAX).min(max_new_tokens);
    }
    params.validate().map_err(|err| {
        RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_SAMPLING",
            err.to_string(),
        )
        .at("forwardedProps.sampling")
    })?;
    Ok((params, max_tokens))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overrides_defaults_and_caps_max_tokens() {
        let (p, n) = from_forwarded(
            Some(&json!({"sampling": {"temperature": 0, "seed": 7, "maxTokens": 5000}})),
            &SamplingParams::default(),
            1024,
        )
        .unwrap();
        assert!(p.is_greedy());
        assert_eq!(p.seed, Some(7));
        assert_eq!(n, 1024);
    }

    /// Regression (issue 10): `temperature: 0` over the server's defaults
    /// must be plain greedy decoding; a default repetition penalty made the
    /// agent path answer differently from the engine and mlx-lm.
    #[test]
    fn temperature_zero_over_server_defaults_is_plain_greedy() {
        let defaults = crate::agent::AgentConfig::default().sampling;
        let (p, _) = from_forwarded(
            Some(&json!({"sampling": {"temperature": 0}})),
            &defaults,
            64,
        )
        .unwrap();
        assert!(p.is_greedy());
        assert_eq!(p.repetition_penalty, 1.0, "{p:?}");
        let (p, _) = from_forwarded(
            Some(&json!({"sampling": {"temperature": 0, "repetitionPenalty": 1.3}})),
            &defaults,
            64,
        )
        .unwrap();
        assert_eq!(p.repetition_penalty, 1.3, "an explicit penalty is honoured");
    }

    #[test]
    fn names_the_bad_key() {
        let err = from_forwarded(
            Some(&json!({"sampling": {"topP": "high"}})),
            &SamplingParams::default(),
            10,
        )
        .unwrap_err();
        assert_eq!(err.path.as_deref(), Some("forwardedProps.sampling.topP"));
        let err = from_forwarded(
            Some(&json!({"sampling": {"topP": 0}})),
            &SamplingParams::default(),
            10,
        )
        .unwrap_err();
        assert!(err.message.contains("top_p"), "{}", err.message);
    }
}
