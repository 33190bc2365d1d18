//! Decoding a legacy completions request into raw runs' inputs: the
//! prompts (text or token ids, one or several), OpenAI's sampling
//! parameters and the extras chat takes, `logprobs` as the legacy integer,
//! `echo`, `n`, `stop`; `suffix` and a `best_of` other than `n` refused.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::bridge::RunInput;
use super::super::chat::{Delivery, delivery, draws};
use super::super::error::ApiError;
use super::super::wire::{At, Field, MAX_CHOICES, choices};
use crate::agent::{Agent, RawPrompt};

/// OpenAI's `max_tokens` when a completions request gives none.
const DEFAULT_MAX_TOKENS: u64 = 16;

/// The most alternatives per token legacy `logprobs` takes: 20, as vLLM
/// takes them (and chat's `top_logprobs`; OpenAI's own legacy API stops
/// at 5).
const MAX_LEGACY_LOGPROBS: u64 = 20;

/// The most with `echo`, where every prompt token of every choice is
/// scored and listed with that many alternatives: OpenAI's 5, which bounds
/// what a scored prompt holds.
const MAX_ECHOED_LOGPROBS: u64 = 5;

/// A decoded completions request.
#[derive(Debug)]
pub struct CompletionRequest {
    /// A run's input per prompt, in order, each prompt raw.
    pub inputs: Vec<RunInput>,
    /// The `model` the client named (echoed back).
    pub model: Option<String>,
    /// Answer as an SSE stream.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// `n`: completions of each prompt, each a run of its own.
    pub choices: usize,
    /// Per prompt, the text written ahead of each of its completions:
    /// the prompt's with `echo`, else empty. A text prompt's is the same
    /// allocation as the prompt its runs take, so nothing is copied per
    /// choice.
    pub echoes: Vec<Arc<str>>,
    /// Whether the tokens' log-probabilities were asked for.
    pub logprobs: bool,
    /// Whether the prompt's tokens are scored and listed first (`echo`
    /// with `logprobs`).
    pub scored: bool,
}

/// Decodes `body`; `agent` writes back a prompt of token ids as text for
/// `echo`.
pub fn decode(body: &Value, agent: &Agent) -> Result<CompletionRequest, ApiError> {
    let root = At::root(body)?;
    let mut input = RunInput::new();
    let prompts = prompts(&root.get("prompt"))?;
    draws(&mut input, &root)?;
    let max = root.get("max_tokens");
    let echo = root.get("echo");
    match max.u64()? {
        // The prompt alone: echoed, and scored where logprobs are asked.
        Some(0) if echo.bool()? == Some(true) => {
            input.sampling("maxTokens", json!(0), "max_tokens")
        }
        Some(0) => return Err(max.invalid("must be a positive integer (0 only with echo)")),
        Some(n) => input.sampling("maxTokens", json!(n), "max_tokens"),
        None if max.value.is_some_and(|v| !v.is_null()) => {
            return Err(max.invalid("must be a positive integer"));
        }
        None => input.sampling("maxTokens", json!(DEFAULT_MAX_TOKENS), "max_tokens"),
    }
    let logprobs = root.get("logprobs");
    if let Some(k) = legacy_logprobs(&logprobs, echo.bool()?.unwrap_or(false))? {
        input.logprobs(k, "logprobs");
    }
    let echoed_logprobs = echo.bool()?.unwrap_or(false) && input.asks_logprobs();
    if echoed_logprobs {
        // The prompt's own tokens are scored and listed ahead of the
        // completion's (the run refuses it where the backend cannot).
        input.prompt_logprobs("echo");
    }
    let echoes: Vec<Arc<str>> = match echo.bool()?.unwrap_or(false) {
        false => vec![Arc::from(""); prompts.len()],
        // Ids are written back as text by the model's tokenizer, which an
        // upstream keeps to itself.
        true if agent.model().is_none()
            && agent.backend().runs_raw_completions()
            && prompts.iter().any(|(p, _)| matches!(p, RawPrompt::Ids(_))) =>
        {
            return Err(echo.invalid(
                "echo of a prompt of token ids needs the model's tokenizer, which an upstream keeps",
            ));
        }
        true => prompts.iter().map(|(p, _)| echoed(p, agent)).collect(),
    };
    let choices = choices(&root.get("n"))?;
    let best_of = root.get("best_of");
    if let Some(best) = best_of.u64()?
        && best as usize != choices
    {
        return Err(best_of.invalid(
            "only best_of equal to n is supported: every completion is returned, none ranked",
        ));
    }
    let suffix = root.get("suffix");
    if suffix.str()?.is_some_and(|s| !s.is_empty()) {
        return Err(
            suffix.invalid("insertion (suffix) is not supported: the model continues the prompt")
        );
    }
    let Delivery {
        stream,
        include_usage,
        stop,
    } = delivery(&root)?;
    let logprobs = input.asks_logprobs();
    // A backend without raw completions refuses every prompt alike: the
    // refusal names `prompt` itself.
    let runs = agent.backend().runs_raw_completions();
    let inputs = (prompts.into_iter())
        .map(|(prompt, path)| {
            let mut input = input.clone();
            let param = if runs { path } else { "prompt".into() };
            input.raw_prompt(prompt, stop.clone(), param);
            input
        })
        .collect();
    Ok(CompletionRequest {
        scored: echoed_logprobs,
        inputs,
        model: root.get("model").str()?.map(str::to_owned),
        stream,
        include_usage,
        stop,
        choices,
        echoes,
        logprobs,
    })
}

/// `prompt`: a string or an array of token ids, or an array of those
/// (several prompts, each completed on its own; at most as many as `n`
/// may ask for), each with its wire path for the run's refusals.
fn prompts(field: &Field<'_>) -> Result<Vec<(RawPrompt, String)>, ApiError> {
    let shapes = "must be a string, an array of token ids, or an array of those";
    match field.value {
        None | Some(Value::Null) => Err(field.invalid("is required")),
        Some(Value::String(text)) => Ok(vec![(text_prompt(text), field.path.clone())]),
        Some(Value::Array(items)) if items.is_empty() => Err(field.invalid("must hold a prompt")),
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => {
            Ok(vec![(ids(field)?, field.path.clone())])
        }
        Some(Value::Array(items)) if items.len() as u64 > MAX_CHOICES => {
            Err(field.invalid(format!(
                "holds {} prompts; one request takes at most {MAX_CHOICES}",
                items.len()
            )))
        }
        Some(Value::Array(_)) => (field.array()?.iter())
            .map(|item| match item.value {
                Some(Value::String(text)) => Ok((text_prompt(text), item.path.clone())),
                Some(Value::Array(_)) => Ok((ids(item)?, item.path.clone())),
                _ => Err(item.invalid("must be a string or an array of token ids")),
            })
            .collect(),
        Some(_) => Err(field.invalid(shapes)),
    }
}

/// A prompt of text: its one copy out of the body, which its echo shares.
fn text_prompt(text: &str) -> RawPrompt {
    RawPrompt::Text(Arc::from(text))
}

/// `logprobs`, the legacy integer: 0 to [`MAX_LEGACY_LOGPROBS`]
/// alternatives per token, or [`MAX_ECHOED_LOGPROBS`] where the prompt is
/// `echo`ed and scored.
fn legacy_logprobs(field: &Field<'_>, echo: bool) -> Result<Option<usize>, ApiError> {
    let (most, when) = match echo {
        true => (
            MAX_ECHOED_LOGPROBS,
            " with echo, which scores every prompt token",
        ),
        false => (MAX_LEGACY_LOGPROBS, ""),
    };
    match field.u64()? {
        None => Ok(None),
        Some(k) if k <= most => Ok(usize::try_from(k).ok()),
        Some(_) => Err(field.invalid(format!(
            "must be an integer from 0 to {most}{when}: at most {most} alternatives per token"
        ))),
    }
}

/// An array of token ids (the model's vocabulary is the run's to check).
fn ids(field: &Field<'_>) -> Result<RawPrompt, ApiError> {
    Ok(RawPrompt::Ids(field.token_ids()?))
}

/// The prompt as text, for `echo` (token ids decoded by the model's
/// tokenizer; nothing on a backend without one, which refuses the run).
fn echoed(prompt: &RawPrompt, agent: &Agent) -> Arc<str> {
    echo_of(prompt, |ids| {
        agent.model().and_then(|model| model.decode(ids).ok())
    })
}

/// `prompt`'s echo: a text prompt's own allocation, shared (a prompt of
/// megabytes echoed to `n` choices is held once), or its ids as `decode`
/// writes them.
fn echo_of(prompt: &RawPrompt, decode: impl FnOnce(&[u32]) -> Option<String>) -> Arc<str> {
    match prompt {
        RawPrompt::Text(text) => Arc::clone(text),
        RawPrompt::Ids(ids) => Arc::from(decode(ids).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts_of(value: Value) -> Result<Vec<RawPrompt>, ApiError> {
        paths_of(value).map(|all| all.into_iter().map(|(p, _)| p).collect())
    }

    fn paths_of(value: Value) -> Result<Vec<(RawPrompt, String)>, ApiError> {
        let body = json!({ "prompt": value });
        prompts(&At::root(&body)?.get("prompt"))
    }

    fn logprobs_of(value: Value) -> Result<Option<usize>, ApiError> {
        let body = json!({ "logprobs": value });
        legacy_logprobs(&At::root(&body)?.get("logprobs"), true)
    }

    #[test]
    fn legacy_logprobs_are_capped_at_five_with_echo_and_twenty_without() {
        assert_eq!(logprobs_of(Value::Null).unwrap(), None);
        assert_eq!(logprobs_of(json!(0)).unwrap(), Some(0));
        assert_eq!(logprobs_of(json!(5)).unwrap(), Some(5));
        // Chat's cap of 20 is not the legacy one.
        for bad in [
            json!(6),
            json!(20),
            json!(21),
            json!(-1),
            json!(1.5),
            json!("3"),
        ] {
            let err = logprobs_of(bad.clone()).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("logprobs"), "{bad}");
            assert_eq!(err.status, 400, "{bad}");
        }
        let err = logprobs_of(json!(6)).unwrap_err();
        assert!(err.message.contains("0 to 5 with echo"), "{}", err.message);
        // Without echo, as vLLM: up to 20.
        let body = json!({"logprobs": 20, "more": 21});
        let root = At::root(&body).unwrap();
        assert_eq!(
            legacy_logprobs(&root.get("logprobs"), false).unwrap(),
            Some(20)
        );
        let err = legacy_logprobs(&root.get("more"), false).unwrap_err();
        assert!(err.message.contains("0 to 20"), "{}", err.message);
    }

    #[test]
    fn a_text_prompts_echo_is_the_prompt_itself() {
        let all = prompts_of(json!(["Once upon a time", [1, 2]])).unwrap();
        let RawPrompt::Text(text) = &all[0] else {
            panic!("{all:?}");
        };
        let echo = echo_of(&all[0], |_| panic!("text is not decoded"));
        assert!(Arc::ptr_eq(text, &echo), "no copy of the prompt");
        let ids = echo_of(&all[1], |ids| Some(format!("{ids:?}")));
        assert_eq!(&*ids, "[1, 2]");
        assert_eq!(&*echo_of(&all[1], |_| None), "");
    }

    #[test]
    fn each_prompt_keeps_its_wire_path() {
        let paths = |v: Value| -> Vec<String> {
            paths_of(v).unwrap().into_iter().map(|(_, p)| p).collect()
        };
        assert_eq!(paths(json!("Once")), ["prompt"]);
        assert_eq!(paths(json!([1, 2])), ["prompt"]);
        assert_eq!(paths(json!(["a", [3]])), ["prompt[0]", "prompt[1]"]);
    }

    #[test]
    fn prompts_are_text_or_ids_one_or_several() {
        let text = |t: &str| RawPrompt::Text(t.into());
        assert_eq!(prompts_of(json!("Once")).unwrap(), [text("Once")]);
        assert_eq!(prompts_of(json!(["Once"])).unwrap(), [text("Once")]);
        assert_eq!(
            prompts_of(json!([1, 2])).unwrap(),
            [RawPrompt::Ids(vec![1, 2])]
        );
        assert_eq!(
            prompts_of(json!([[1, 2]])).unwrap(),
            [RawPrompt::Ids(vec![1, 2])]
        );
        assert_eq!(
            prompts_of(json!(["a", [3]])).unwrap(),
            [text("a"), RawPrompt::Ids(vec![3])]
        );
        let many = vec![json!("a"); MAX_CHOICES as usize + 1];
        for (bad, path) in [
            (json!(null), "prompt"),
            (json!([]), "prompt"),
            (json!(many), "prompt"),
            (json!([1, "a"]), "prompt[0]"),
            (json!(["a", 2]), "prompt[1]"),
            (json!([1, -2]), "prompt[1]"),
            (json!([1, 4294967296_u64]), "prompt[1]"),
            (json!([[1, 2.5]]), "prompt[0][1]"),
            (json!(7), "prompt"),
        ] {
            let err = prompts_of(bad.clone()).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(path), "{bad}");
        }
    }
}
