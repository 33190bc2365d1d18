//! A raw completion (OpenAI's legacy `/v1/completions`): the client's
//! prompt is the model's input as given (no chat template, no system
//! prompt, no reasoning split) and the model's text comes back as it is,
//! markers and all. It is a run of its own plan ([`Plan::Raw`]), so
//! sampling, log-probabilities, admission, usage, cancellation and the
//! privacy rules are a chat run's.

use std::sync::Arc;

use thinkwire_engine::SamplingParams;
use thinkwire_protocol::RunAgentInput;

use super::backend::Backend;
use super::controls::ReasoningControls;
use super::events::incomplete;
use super::execute::Execution;
use super::generation::{Generation, Stopped};
use super::model::LocalModel;
use super::prepare::{Plan, PreparedRun, Shared, prepared};
use super::rejection::{RejectKind, RunRejected};
use super::{logprobs, sampling};
use crate::upstream::UpstreamKind;

/// The prompt of a raw completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawPrompt {
    /// Text, tokenized as the model's tokenizer tokenizes it (a beginning
    /// token added where the tokenizer adds one; the model's special
    /// tokens written in it are those tokens: the client writes the whole
    /// input, its own template included). Shared, not owned: `/v1`'s
    /// `echo` and every choice's run of the prompt hold this one copy.
    Text(Arc<str>),
    /// Token ids, as given.
    Ids(Vec<u32>),
}

/// A raw completion asked for: its prompt and the stop sequences the
/// client named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCompletion {
    /// What the model continues.
    pub prompt: RawPrompt,
    /// The client's stop sequences. The front that started the run
    /// watches the answer for them on every backend; an upstream is told
    /// of them too, so that it stops itself and reports the usage of what
    /// it generated (a stream the front cuts off has none).
    pub stop: Vec<String>,
}

/// Validates `input`'s `forwardedProps` (sampling, `maxTokens`,
/// log-probabilities) and `raw`'s prompt; the run generates from the
/// prompt alone.
pub(super) fn prepare(
    shared: Arc<Shared>,
    input: RunAgentInput,
    raw: RawCompletion,
) -> Result<PreparedRun, RunRejected> {
    super::ids::check_ids(&input)?;
    let RawCompletion { prompt, stop } = raw;
    let config = &shared.config;
    let forwarded = input.forwarded_props.as_ref();
    let (sampling, max_new_tokens) =
        sampling::from_forwarded_raw(forwarded, &config.sampling, config.max_new_tokens)?;
    let logprobs = logprobs::from_forwarded(forwarded)?;
    let score = prompt_logprobs(forwarded, logprobs)?;
    // Reasoning controls mean nothing here: the run shows what the model
    // writes, and these are the policy's defaults, which it allows.
    let controls = ReasoningControls::from_forwarded(None, &config.policy)?;
    let plan = match &shared.backend {
        Backend::Local(model) => local_plan(model, &sampling, prompt, score, max_new_tokens)?,
        Backend::Upstream(_) if score => {
            return Err(RunRejected::new(
                RejectKind::Unprocessable,
                "UNSUPPORTED_LOGPROBS",
                "a prompt's own log-probabilities are scored by a local model; an upstream's stream carries none",
            )
            .at("forwardedProps.promptLogprobs"));
        }
        Backend::Upstream(_) if max_new_tokens == 0 => {
            return Err(RunRejected::new(
                RejectKind::Unprocessable,
                "INVALID_SAMPLING",
                "maxTokens must be a positive integer: an upstream completes at least one token",
            )
            .at("forwardedProps.sampling.maxTokens"));
        }
        Backend::Upstream(up) => upstream_plan(up.upstream.config().kind, prompt, stop)?,
    };
    Ok(prepared(
        shared.clone(),
        input,
        controls,
        sampling,
        max_new_tokens,
        plan,
        Vec::new(),
        None,
        false,
        logprobs,
    ))
}

/// The plan of a raw completion the local model runs: the prompt
/// encoded (or its ids checked against the vocabulary) and fitting the
/// context: with room for a token, or the whole context where none is
/// asked (`max_tokens: 0` with `echo` scores or returns the prompt alone).
fn local_plan(
    model: &LocalModel,
    sampling: &SamplingParams,
    prompt: RawPrompt,
    score: bool,
    max_new_tokens: usize,
) -> Result<Plan, RunRejected> {
    let vocab = model.engine().info().vocab_size;
    sampling::check_vocabulary(sampling, vocab)?;
    if score && !model.engine().scores_prompts() {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "UNSUPPORTED_LOGPROBS",
            "this engine does not score a prompt's own tokens",
        )
        .at("forwardedProps.promptLogprobs"));
    }
    let ids = match prompt {
        // Refused though the tokenizer would add a beginning token to it:
        // nothing asked is nothing to continue.
        RawPrompt::Text(text) if text.is_empty() => Vec::new(),
        RawPrompt::Text(text) => model.encode_raw(&text).map_err(|err| {
            RunRejected::new(
                RejectKind::Unprocessable,
                "INVALID_PROMPT",
                format!("the tokenizer cannot encode it: {err}"),
            )
            .at("prompt")
        })?,
        RawPrompt::Ids(ids) => {
            if let Some((at, message)) = model.unknown_token(&ids) {
                return Err(
                    RunRejected::new(RejectKind::Unprocessable, "INVALID_PROMPT", message)
                        .at(format!("prompt[{at}]")),
                );
            }
            ids
        }
    };
    if ids.is_empty() {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_PROMPT",
            "is empty: the model needs at least one token to continue",
        )
        .at("prompt"));
    }
    let context = model.context_length();
    if ids.len() + max_new_tokens.min(1) > context {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "CONTEXT_OVERFLOW",
            format!(
                "the prompt is {} tokens; the model's context holds {context}",
                ids.len()
            ),
        )
        .at("prompt"));
    }
    Ok(Plan::Raw { prompt: ids, score })
}

/// `forwardedProps.promptLogprobs`: the prompt's own tokens are scored
/// too, with the alternatives `logprobs` asks for (which it needs).
fn prompt_logprobs(
    forwarded: Option<&serde_json::Value>,
    logprobs: Option<usize>,
) -> Result<bool, RunRejected> {
    let invalid = |message: &str| {
        RunRejected::new(RejectKind::Unprocessable, "INVALID_LOGPROBS", message)
            .at("forwardedProps.promptLogprobs")
    };
    match forwarded.and_then(|f| f.get("promptLogprobs")) {
        None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false)) => Ok(false),
        Some(serde_json::Value::Bool(true)) if logprobs.is_some() => Ok(true),
        Some(serde_json::Value::Bool(true)) => Err(invalid(
            "needs logprobs: the prompt's tokens are listed with the answer's",
        )),
        Some(_) => Err(invalid("must be a boolean")),
    }
}

impl Execution<'_, '_> {
    /// A raw completion: `prompt` continued as it is, its own tokens
    /// scored first where `score` (`promptLogprobs`) asks, on the caches
    /// the generation then continues from, and listed ahead of the
    /// answer's. With no tokens asked (`max_tokens: 0` with `echo`) the
    /// run is the prompt alone, at its limit before any token: scored as
    /// a generation of nothing (so, on an engine that scores in passes, a
    /// client gone stops it between them), or, unscored, not run at all.
    pub(super) fn raw(
        &mut self,
        model: &LocalModel,
        prompt: &[u32],
        score: bool,
    ) -> Result<(), Stopped> {
        let run = self.run;
        let top = run.logprobs.filter(|_| score);
        if run.max_new_tokens == 0 && top.is_none() {
            self.usage.input += prompt.len();
            return Ok(self.events.incomplete(incomplete::LENGTH)?);
        }
        let pass = Generation::raw(model)
            .reporting_logprobs(run.logprobs)
            .scoring_prompt(top);
        self.one_pass(pass, prompt)
    }
}

/// The stop sequences an upstream is told of: the first
/// [`UPSTREAM_STOPS`] distinct ones that are not empty (an empty one stops
/// nothing, and some servers refuse it). The front watches for all of
/// them.
fn upstream_stops(stop: Vec<String>) -> Vec<String> {
    let mut told: Vec<String> = Vec::new();
    for s in stop {
        if !s.is_empty() && !told.contains(&s) && told.len() < UPSTREAM_STOPS {
            told.push(s);
        }
    }
    told
}

/// The most stop sequences OpenAI's own `/completions` takes; vLLM and
/// llama.cpp take more, but an upstream refusing more would fail a
/// request the front alone could serve.
const UPSTREAM_STOPS: usize = 4;

/// The plan of a raw completion an upstream runs: its wire must have raw
/// completions (OpenAI-compatible servers' `/completions`, which carry
/// every sampling parameter); the prompt goes up as written (the
/// upstream's tokenizer encodes it and checks its ids and its context).
fn upstream_plan(
    kind: UpstreamKind,
    prompt: RawPrompt,
    stop: Vec<String>,
) -> Result<Plan, RunRejected> {
    if !kind.has_raw_completions() {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "UNSUPPORTED_COMPLETION",
            format!(
                "raw completions run on a local model or an OpenAI-compatible upstream; this upstream's API ({}) has none",
                kind.as_str()
            ),
        )
        .at("prompt"));
    }
    let prompt = match prompt {
        RawPrompt::Text(text) if !text.is_empty() => serde_json::Value::from(&*text),
        RawPrompt::Ids(ids) if !ids.is_empty() => serde_json::json!(ids),
        _ => {
            return Err(RunRejected::new(
                RejectKind::Unprocessable,
                "INVALID_PROMPT",
                "is empty: the model needs at least one token to continue",
            )
            .at("prompt"));
        }
    };
    Ok(Plan::UpstreamRaw {
        prompt,
        stop: upstream_stops(stop),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each choice's run takes a clone of its completion (`/v1`'s `n`):
    /// the prompt's text is shared, not copied per choice.
    #[test]
    fn a_raw_completions_clones_share_its_prompt() {
        let raw = RawCompletion {
            prompt: RawPrompt::Text(Arc::from("Once upon a time")),
            stop: Vec::new(),
        };
        let copy = raw.clone();
        let (RawPrompt::Text(one), RawPrompt::Text(other)) = (&raw.prompt, &copy.prompt) else {
            panic!("a text prompt");
        };
        assert!(Arc::ptr_eq(one, other));
    }

    #[test]
    fn an_upstream_is_told_the_first_four_distinct_stops_that_stop_something() {
        let stops = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            upstream_stops(stops(&["", "\n", "\n", "END", "a", "b", "c"])),
            stops(&["\n", "END", "a", "b"])
        );
        assert!(upstream_stops(stops(&["", ""])).is_empty());
    }
}
