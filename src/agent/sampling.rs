//! Per-run sampling from `forwardedProps.sampling = {temperature, topP,
//! topK, minP, repetitionPenalty, frequencyPenalty, presencePenalty,
//! logitBias, seed, maxTokens}`, over the server's defaults. Unknown keys
//! are ignored; a known key with a bad value is refused naming it.

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

/// Where a `logitBias` refusal points: at the object, the message naming
/// the token, so /v1 answers with the client's `logit_bias`.
const LOGIT_BIAS: &str = "forwardedProps.sampling.logitBias";

/// Most `logitBias` entries one run may give. OpenAI's reference states
/// the values' range but no count; each entry is added to the logits on
/// every step of the run, so a bound keeps one request's extra work small.
/// 1024 is far above a real list (every spelling of a few banned words, a
/// set of labels to choose among).
const MAX_LOGIT_BIAS: usize = 1024;

/// The sampling parameters and token limit for one run.
pub(crate) fn from_forwarded(
    forwarded: Option<&Value>,
    defaults: &SamplingParams,
    max_new_tokens: usize,
) -> Result<(SamplingParams, usize), RunRejected> {
    parse(forwarded, defaults, max_new_tokens, false)
}

/// [`from_forwarded`] for a raw completion, which may ask for no tokens
/// at all (`max_tokens: 0` with `echo`: the prompt alone, scored where
/// asked, as evaluation scripts ask for it).
pub(crate) fn from_forwarded_raw(
    forwarded: Option<&Value>,
    defaults: &SamplingParams,
    max_new_tokens: usize,
) -> Result<(SamplingParams, usize), RunRejected> {
    parse(forwarded, defaults, max_new_tokens, true)
}

fn parse(
    forwarded: Option<&Value>,
    defaults: &SamplingParams,
    max_new_tokens: usize,
    none_allowed: bool,
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
    if let Some(bias) = sampling.get("logitBias") {
        params.logit_bias = logit_bias(bias)?;
    }
    if let Some(k) = count("topK")? {
        params.top_k = usize::try_from(k).unwrap_or(usize::MAX);
    }
    if let Some(seed) = count("seed")? {
        params.seed = Some(seed);
    }
    if let Some(n) = count("maxTokens")? {
        if n == 0 && !none_allowed {
            return Err(bad("maxTokens", "a positive integer"));
        }
        max_tokens = usize::try_from(n).unwrap_or(usize::MAX).min(max_new_tokens);
    }
    params
        .validate()
        .map_err(|err| out_of_range(err, "forwardedProps.sampling"))?;
    Ok((params, max_tokens))
}

/// `{"<token id>": bias}` (OpenAI's `logit_bias`, ids as decimal object
/// keys) as the sampler's pairs, in token order. A key that is not a token
/// id is refused without quoting it: it may be text meant as a token.
fn logit_bias(value: &Value) -> Result<Vec<(u32, f32)>, RunRejected> {
    let refuse = |message: String| {
        RunRejected::new(RejectKind::Unprocessable, "INVALID_SAMPLING", message).at(LOGIT_BIAS)
    };
    let Some(entries) = value.as_object() else {
        return Err(refuse(
            "sampling logit_bias must be an object of token ids to numbers".into(),
        ));
    };
    if entries.len() > MAX_LOGIT_BIAS {
        return Err(refuse(format!(
            "sampling logit_bias has {} entries; the limit is {MAX_LOGIT_BIAS}",
            entries.len()
        )));
    }
    let mut biases = Vec::with_capacity(entries.len());
    for (key, bias) in entries {
        let id = Some(key)
            .filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|k| k.parse::<u32>().ok())
            .ok_or_else(|| {
                refuse(
                    "sampling logit_bias keys must be token ids: decimal integers below 2^32"
                        .into(),
                )
            })?;
        let bias = bias.as_f64().ok_or_else(|| {
            refuse(format!(
                "sampling logit_bias of token {id} must be a number"
            ))
        })?;
        biases.push((id, bias as f32));
    }
    // `7` and `007` are one token: refused rather than added up or one
    // silently dropped.
    biases.sort_by_key(|&(id, _)| id);
    if let Some(pair) = biases.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(refuse(format!(
            "sampling logit_bias names token {} twice",
            pair[0].0
        )));
    }
    let alone = SamplingParams {
        logit_bias: biases,
        ..SamplingParams::greedy()
    };
    alone
        .validate()
        .map_err(|err| out_of_range(err, LOGIT_BIAS))?;
    Ok(alone.logit_bias)
}

/// Refuses a bias on a token the model does not have, before the run
/// starts: the engine would refuse it only once the run had begun.
pub(crate) fn check_vocabulary(
    params: &SamplingParams,
    vocab_size: usize,
) -> Result<(), RunRejected> {
    let outside = params
        .logit_bias
        .iter()
        .find(|&&(id, _)| usize::try_from(id).ok().is_none_or(|id| id >= vocab_size));
    match outside {
        None => Ok(()),
        Some((id, _)) => Err(RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_SAMPLING",
            format!("sampling logit_bias names token {id}, outside the vocabulary of {vocab_size}"),
        )
        .at(LOGIT_BIAS)),
    }
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

    /// `forwardedProps.sampling` = `sampling` over the default parameters.
    fn read(sampling: Value) -> Result<SamplingParams, RunRejected> {
        from_forwarded(
            Some(&json!({ "sampling": sampling })),
            &SamplingParams::default(),
            10,
        )
        .map(|(p, _)| p)
    }

    /// `sampling`'s refusal, which must name `forwardedProps.sampling.{key}`.
    fn refused_at(sampling: Value, key: &str) -> RunRejected {
        let err = read(sampling).unwrap_err();
        assert_eq!(err.code, "INVALID_SAMPLING");
        let path = format!("forwardedProps.sampling.{key}");
        assert_eq!(err.path.as_deref(), Some(path.as_str()));
        err
    }

    #[test]
    fn names_the_bad_key() {
        refused_at(json!({"topP": "high"}), "topP");
        let err = refused_at(json!({"topP": 0}), "topP");
        assert!(err.message.contains("top_p"), "{}", err.message);
    }

    #[test]
    fn penalties_are_read_and_checked_by_key() {
        let p = read(json!({"frequencyPenalty": 0.5, "presencePenalty": -1.5})).unwrap();
        assert_eq!((p.frequency_penalty, p.presence_penalty), (0.5, -1.5));
        refused_at(json!({"frequencyPenalty": "some"}), "frequencyPenalty");
        for (key, value) in [("frequencyPenalty", 2.5), ("presencePenalty", -3.0)] {
            let err = refused_at(json!({ key: value }), key);
            assert!(err.message.contains("[-2, 2]"), "{}", err.message);
        }
        // The bounds themselves are accepted.
        assert!(read(json!({"frequencyPenalty": 2, "presencePenalty": -2})).is_ok());
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
            let err = refused_at(json!({ key: value }), key);
            assert!(
                err.message.starts_with(&format!("sampling {name} ")),
                "{}",
                err.message
            );
        }
    }

    fn biased(bias: Value) -> Result<SamplingParams, RunRejected> {
        read(json!({ "logitBias": bias }))
    }

    #[test]
    fn logit_bias_is_read_in_token_order() {
        let p = biased(json!({"50256": -100, "7": 2.5, "0": 100})).unwrap();
        assert_eq!(p.logit_bias, vec![(0, 100.0), (7, 2.5), (50256, -100.0)]);
        assert!(biased(json!({})).unwrap().logit_bias.is_empty());
        let top = u32::MAX.to_string();
        let p = biased(json!({ top: 1 })).unwrap();
        assert_eq!(p.logit_bias, vec![(u32::MAX, 1.0)]);
    }

    #[test]
    fn a_bad_logit_bias_is_refused_at_its_key() {
        let long = "x".repeat(300);
        for (bias, says) in [
            (json!([[1, 2]]), "must be an object"),
            (json!("1: 2"), "must be an object"),
            (json!({"hello": 1}), "must be token ids"),
            (json!({long.as_str(): 1}), "must be token ids"),
            (json!({"-1": 1}), "must be token ids"),
            (json!({"+5": 1}), "must be token ids"),
            (json!({"1.5": 1}), "must be token ids"),
            (json!({"": 1}), "must be token ids"),
            (json!({"4294967296": 1}), "must be token ids"),
            (json!({"5": "1"}), "of token 5 must be a number"),
            (json!({"5": null}), "of token 5 must be a number"),
            (json!({"5": 100.5}), "of token 5 must be in [-100, 100]"),
            (json!({"9": -101}), "of token 9 must be in [-100, 100]"),
            (json!({"9": 1e300}), "of token 9 must be in [-100, 100]"),
            (json!({"7": 1, "007": 2}), "names token 7 twice"),
        ] {
            let err = biased(bias.clone()).unwrap_err();
            assert_eq!(err.code, "INVALID_SAMPLING", "{bias}");
            assert_eq!(err.path.as_deref(), Some(LOGIT_BIAS), "{bias}");
            assert!(err.message.contains(says), "{bias}: {}", err.message);
            assert!(!err.message.contains("hello") && !err.message.contains("xxx"));
        }
    }

    #[test]
    fn logit_bias_entries_are_capped() {
        let entries =
            |n: usize| Value::Object((0..n).map(|id| (id.to_string(), json!(-100))).collect());
        assert_eq!(
            biased(entries(MAX_LOGIT_BIAS)).unwrap().logit_bias.len(),
            MAX_LOGIT_BIAS
        );
        let err = biased(entries(MAX_LOGIT_BIAS + 1)).unwrap_err();
        assert_eq!(err.path.as_deref(), Some(LOGIT_BIAS));
        assert!(err.message.contains("limit is 1024"), "{}", err.message);
    }

    #[test]
    fn a_token_outside_the_vocabulary_is_refused() {
        let p = biased(json!({"9": 1, "10": -1})).unwrap();
        assert!(check_vocabulary(&p, 11).is_ok());
        let err = check_vocabulary(&p, 10).unwrap_err();
        assert_eq!(err.code, "INVALID_SAMPLING");
        assert_eq!(err.path.as_deref(), Some(LOGIT_BIAS));
        assert_eq!(
            err.message,
            "sampling logit_bias names token 10, outside the vocabulary of 10"
        );
        assert!(check_vocabulary(&SamplingParams::default(), 0).is_ok());
    }
}
