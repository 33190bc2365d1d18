//! Chat completions' sampling parameters: OpenAI's, and the extras vLLM
//! and llama.cpp's server take, onto `forwardedProps.sampling`; and
//! `logprobs` / `top_logprobs` onto `forwardedProps.logprobs`.

use serde_json::json;

use super::super::bridge::RunInput;
use super::super::error::ApiError;
use super::super::wire::{At, Field};

/// OpenAI's number parameters, and the extras vLLM and llama.cpp's server
/// take, onto `forwardedProps.sampling` keys. Range checks are the
/// agent's; its refusal comes back naming the parameter here.
const NUMBERS: [(&str, &str); 6] = [
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("frequency_penalty", "frequencyPenalty"),
    ("presence_penalty", "presencePenalty"),
    ("min_p", "minP"),
    ("repetition_penalty", "repetitionPenalty"),
];

/// The sampling parameters onto `forwardedProps.sampling`, and the
/// token log-probabilities asked for onto `forwardedProps.logprobs`.
pub(super) fn sampling(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    draws(input, root)?;
    logprobs(input, root)?;
    if let Some(format) = root.get("response_format").value.filter(|v| !v.is_null()) {
        input.response_format(format.clone(), "response_format");
    }
    for param in ["max_completion_tokens", "max_tokens"] {
        let field = root.get(param);
        if let Some(n) = field.u64()? {
            if n == 0 {
                return Err(field.invalid("must be a positive integer"));
            }
            input.sampling("maxTokens", json!(n), param);
            break;
        }
    }
    Ok(())
}

/// What shapes the draw, as chat and legacy completions both take it:
/// temperature, top-p, the penalties, the extras, `seed`, `logit_bias`.
pub fn draws(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    for (param, key) in NUMBERS {
        if let Some(v) = root.get(param).f64()? {
            input.sampling(key, json!(v), param);
        }
    }
    // vLLM's `top_k: -1` and llama.cpp's 0 both mean off.
    let top_k = root.get("top_k");
    if let Some(k) = top_k.value {
        let k = k
            .as_i64()
            .ok_or_else(|| top_k.invalid("must be an integer (-1 or 0: off)"))?;
        input.sampling("topK", json!(k.max(0)), "top_k");
    }
    if let Some(seed) = root.get("seed").u64()? {
        input.sampling("seed", json!(seed), "seed");
    }
    // Keys and values are the agent's to check (token ids, range, count,
    // the model's vocabulary); its refusal names `logit_bias`.
    if let Some(bias) = root.get("logit_bias").at()? {
        input.sampling("logitBias", bias.value.clone(), "logit_bias");
    }
    Ok(())
}

/// `logprobs: true`, with `top_logprobs` alternatives per token (0 to 20,
/// as OpenAI allows), onto `forwardedProps.logprobs`; alternatives without
/// `logprobs: true` are refused, as OpenAI refuses them.
fn logprobs(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    let asked = root.get("logprobs").bool()?.unwrap_or(false);
    let top = root.get("top_logprobs");
    match (asked, top_logprobs(&top)?) {
        (false, None | Some(0)) => {}
        (false, Some(_)) => return Err(top.invalid("needs logprobs: true")),
        (true, None) => input.logprobs(0, "logprobs"),
        (true, Some(k)) => input.logprobs(k, "top_logprobs"),
    }
    Ok(())
}

/// `top_logprobs`: alternatives per token, 0 to 20.
pub fn top_logprobs(field: &Field<'_>) -> Result<Option<usize>, ApiError> {
    let most = thinkwire_engine::MAX_TOP_LOGPROBS;
    match field.u64()? {
        None => Ok(None),
        Some(k) if k as usize <= most => Ok(Some(k as usize)),
        Some(_) => Err(field.invalid(format!("must be an integer from 0 to {most}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::request::decode;
    use super::*;

    fn asking(param: &str, value: Value) -> Value {
        let mut body = json!({"messages": [{"role": "user", "content": "x"}]});
        body[param] = value;
        body
    }

    #[test]
    fn sampling_parameters_become_forwarded_sampling() {
        let body = json!({
            "messages": [{"role": "user", "content": "x"}],
            "temperature": 0.5, "top_p": 0.9, "seed": 3,
            "frequency_penalty": 0.25, "presence_penalty": -0.5,
            "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
            // `null` is absent, as for every other parameter.
            "max_tokens": null,
        });
        let props = decode(&body)
            .unwrap()
            .input
            .to_input("run-1", None)
            .forwarded_props;
        assert_eq!(
            props.unwrap()["sampling"],
            json!({
                "temperature": 0.5, "topP": 0.9, "seed": 3,
                "frequencyPenalty": 0.25, "presencePenalty": -0.5,
                "topK": 40, "minP": 0.05, "repetitionPenalty": 1.1,
            })
        );
        let body = json!({
            "messages": [{"role": "user", "content": "x"}],
            "frequency_penalty": null, "top_k": null,
        });
        let props = decode(&body)
            .unwrap()
            .input
            .to_input("run-1", None)
            .forwarded_props;
        assert_eq!(props.unwrap()["sampling"], json!({}));
    }

    #[test]
    fn a_sampling_parameter_of_the_wrong_type_is_named() {
        for (param, value) in [
            ("frequency_penalty", json!("high")),
            ("presence_penalty", json!([1])),
            ("min_p", json!(true)),
            ("repetition_penalty", json!({})),
            ("top_k", json!(1.5)),
            ("top_k", json!("40")),
        ] {
            let mut body = json!({"messages": [{"role": "user", "content": "x"}]});
            body[param] = value;
            let err = decode(&body).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{body}");
            assert_eq!(err.status, 400);
        }
    }

    /// An out-of-range value is the agent's refusal (its range check, at
    /// `forwardedProps.sampling.<key>`); through the bridge it names the
    /// client's parameter, as OpenAI's `invalid_request_error` does.
    /// `tests/v1_api` checks the same over a socket.
    #[test]
    fn an_agent_refusal_names_the_parameter() {
        use crate::agent::{RejectKind, RunRejected};
        let mut body = json!({"messages": [{"role": "user", "content": "x"}], "top_k": 5});
        for (param, _) in NUMBERS {
            body[param] = json!(1);
        }
        let request = decode(&body).unwrap();
        for (param, key) in NUMBERS.into_iter().chain([("top_k", "topK")]) {
            let rejected = RunRejected::new(
                RejectKind::Unprocessable,
                "INVALID_SAMPLING",
                format!("sampling {param} must be in range"),
            )
            .at(format!("forwardedProps.sampling.{key}"));
            let err = request.input.refusal(rejected);
            assert_eq!(err.status, 400);
            assert_eq!(err.param.as_deref(), Some(param));
            let wire = err.body(super::super::super::error::Dialect::OpenAi);
            assert_eq!(wire["error"]["type"], "invalid_request_error");
            assert_eq!(wire["error"]["param"], param);
        }
    }

    #[test]
    fn logit_bias_goes_on_as_given() {
        let bias = json!({"50256": -100, "7": 2.5});
        let props = decode(&asking("logit_bias", bias.clone()))
            .unwrap()
            .input
            .to_input("run-1", None)
            .forwarded_props
            .unwrap();
        assert_eq!(props["sampling"], json!({ "logitBias": bias }));
        let props = decode(&asking("logit_bias", Value::Null))
            .unwrap()
            .input
            .to_input("run-1", None)
            .forwarded_props
            .unwrap();
        assert_eq!(props["sampling"], json!({}));
        for value in [json!([[7, 1]]), json!("7"), json!(1)] {
            let err = decode(&asking("logit_bias", value)).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("logit_bias"));
            assert_eq!(err.status, 400);
        }
        // The agent's refusal of a key or value names `logit_bias`.
        use crate::agent::{RejectKind, RunRejected};
        let request = decode(&asking("logit_bias", json!({"x": 1}))).unwrap();
        let rejected = RunRejected::new(RejectKind::Unprocessable, "INVALID_SAMPLING", "bad")
            .at("forwardedProps.sampling.logitBias");
        let err = request.input.refusal(rejected);
        assert_eq!(err.param.as_deref(), Some("logit_bias"));
    }

    #[test]
    fn log_probabilities_are_asked_for_or_refused_by_name() {
        for (param, value) in [
            ("top_logprobs", json!(2)),
            ("top_logprobs", json!(-1)),
            ("top_logprobs", json!("2")),
            ("logprobs", json!("yes")),
        ] {
            let err = decode(&asking(param, value.clone())).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{value}");
            assert_eq!(err.status, 400);
        }
        let mut body = asking("logprobs", json!(true));
        body["top_logprobs"] = json!(21);
        let err = decode(&body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("top_logprobs"));
        let props = |body: &Value| {
            let input = decode(body).unwrap().input;
            input.to_input("run-1", None).forwarded_props.unwrap()
        };
        body["top_logprobs"] = json!(5);
        assert_eq!(props(&body)["logprobs"], json!(5));
        assert_eq!(
            props(&asking("logprobs", json!(true)))["logprobs"],
            json!(0)
        );
        // Asking for nothing passes, and asks for nothing.
        for (param, value) in [
            ("logprobs", json!(false)),
            ("logprobs", Value::Null),
            ("top_logprobs", json!(0)),
            ("top_logprobs", Value::Null),
        ] {
            assert!(
                props(&asking(param, value)).get("logprobs").is_none(),
                "{param}"
            );
        }
    }

    #[test]
    fn a_negative_top_k_is_off_as_in_vllm() {
        for k in [-1, 0] {
            let body = json!({"messages": [{"role": "user", "content": "x"}], "top_k": k});
            let props = decode(&body)
                .unwrap()
                .input
                .to_input("run-1", None)
                .forwarded_props;
            assert_eq!(props.unwrap()["sampling"]["topK"], json!(0), "{k}");
        }
    }
}
