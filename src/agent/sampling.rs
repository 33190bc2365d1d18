//! Per-run sampling from `forwardedProps.sampling = {temperature, topP,
//! topK, minP, repetitionPenalty, frequencyPenalty, presencePenalty, seed,
//! maxTokens}`, over the server's defaults. Unknown keys are ignored; a
//! known key with a bad value is refused naming it.

use serde_json::Value;
use thinkwire_engine::{EngineError, SamplingParams};

use super::rejection::{RejectKind, RunRejected};

/// A numeric key and the field it sets.
type Setter = fn(&mut SamplingParams, f32);

/// The keys read as numbers. Each is range-checked alone (the sampler's
/// bounds are per field), so a refusal names the key rather than the
/// whole object — and a /v1 refusal the client's own parameter.
const NUMBERS: [(&str, Setter); 6] = [
    ("temperature", |p, v| p.temperature = v),
    ("topP", |p, v| p.top_p = v),
    ("minP", |p, v| p.min_p = v),
    ("repetitionPenalty", |p, v| p.repetition_penalty = v),
    ("frequencyPenalty", |p, v| p.frequency_penalty = v),
    ("presencePenalty", |p, v| p.presence_penalty = v),
];

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
    for (key, set) in NUMBERS {
        if let Some(value) = number(key)? {
            let mut alone = SamplingParams::greedy();
            set(&mut alone, value);
            alone
                .validate()
                .map_err(|err| out_of_range(err, &format!("forwardedProps.sampling.{key}")))?;
            set(&mut params, value);
        }
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
    params
        .validate()
        .map_err(|err| out_of_range(err, "forwardedProps.sampling"))?;
    Ok((params, max_tokens))
}

/// The sampler's refusal at `path`; its message names the parameter and
/// the range (`sampling top_p must be in (0, 1]`).
fn out_of_range(err: EngineError, path: &str) -> RunRejected {
    let message = match err {
        EngineError::InvalidRequest(message) => message,
        other => other.to_string(),
    };
    RunRejected::new(RejectKind::Unprocessable, "INVALID_SAMPLING", message).at(path)
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

    #[test]
    fn penalties_are_read_and_checked_by_key() {
        let (p, _) = from_forwarded(
            Some(&json!({"sampling": {"frequencyPenalty": 0.5, "presencePenalty": -1.5}})),
            &SamplingParams::default(),
            10,
        )
        .unwrap();
        assert_eq!((p.frequency_penalty, p.presence_penalty), (0.5, -1.5));
        assert!(p.penalizes());
        let err = from_forwarded(
            Some(&json!({"sampling": {"frequencyPenalty": "some"}})),
            &SamplingParams::default(),
            10,
        )
        .unwrap_err();
        assert_eq!(err.code, "INVALID_SAMPLING");
        assert_eq!(
            err.path.as_deref(),
            Some("forwardedProps.sampling.frequencyPenalty")
        );
        for (key, value) in [("frequencyPenalty", 2.5), ("presencePenalty", -3.0)] {
            let err = from_forwarded(
                Some(&json!({"sampling": {key: value}})),
                &SamplingParams::default(),
                10,
            )
            .unwrap_err();
            assert_eq!(err.code, "INVALID_SAMPLING");
            assert_eq!(
                err.path.as_deref(),
                Some(format!("forwardedProps.sampling.{key}").as_str())
            );
            assert!(err.message.contains("[-2, 2]"), "{}", err.message);
        }
        // The bounds themselves are accepted.
        assert!(
            from_forwarded(
                Some(&json!({"sampling": {"frequencyPenalty": 2, "presencePenalty": -2}})),
                &SamplingParams::default(),
                10,
            )
            .is_ok()
        );
    }

    #[test]
    fn an_out_of_range_value_is_refused_at_its_key() {
        for (key, value, name) in [
            ("temperature", json!(-1), "temperature"),
            ("topP", json!(1.5), "top_p"),
            ("minP", json!(2), "min_p"),
            ("repetitionPenalty", json!(0), "repetition_penalty"),
            ("temperature", json!(1e300), "temperature"),
        ] {
            let err = from_forwarded(
                Some(&json!({"sampling": {key: value}})),
                &SamplingParams::default(),
                10,
            )
            .unwrap_err();
            assert_eq!(
                err.path.as_deref(),
                Some(format!("forwardedProps.sampling.{key}").as_str())
            );
            assert!(
                err.message.starts_with(&format!("sampling {name} ")),
                "{}",
                err.message
            );
        }
    }
}
