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
    /// input, its own template included).
    Text(String),
    /// Token ids, as given.
    Ids(Vec<u32>),
}

/// Validates `input`'s `forwardedProps` (sampling, `maxTokens`,
/// log-probabilities) and `prompt`; the run generates from `prompt` alone.
pub(super) fn prepare(
    shared: Arc<Shared>,
    input: RunAgentInput,
    prompt: RawPrompt,
) -> Result<PreparedRun, RunRejected> {
    let config = &shared.config;
    let forwarded = input.forwarded_props.as_ref();
    let (sampling, max_new_tokens) =
        sampling::from_forwarded(forwarded, &config.sampling, config.max_new_tokens)?;
    let logprobs = logprobs::from_forwarded(forwarded)?;
    // Reasoning controls mean nothing here: the run shows what the model
    // writes, and these are the policy's defaults, which it allows.
    let controls = ReasoningControls::from_forwarded(None, &config.policy)?;
    let plan = match &shared.backend {
        Backend::Local(model) => local_plan(model, &sampling, prompt)?,
        Backend::Upstream(up) => upstream_plan(up.upstream.config().kind, &sampling, prompt)?,
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
/// context.
fn local_plan(
    model: &LocalModel,
    sampling: &SamplingParams,
    prompt: RawPrompt,
) -> Result<Plan, RunRejected> {
    let vocab = model.engine().info().vocab_size;
    sampling::check_vocabulary(sampling, vocab)?;
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
    if ids.len() >= context {
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
    Ok(Plan::Raw { prompt: ids })
}

/// The plan of a raw completion an upstream runs: its wire must have raw
/// completions (OpenAI-compatible servers' `/completions`) and carry the
/// sampling asked; the prompt goes up as written (the upstream's
/// tokenizer encodes it and checks its ids and its context).
fn upstream_plan(
    kind: UpstreamKind,
    sampling: &SamplingParams,
    prompt: RawPrompt,
) -> Result<Plan, RunRejected> {
    if kind != UpstreamKind::OpenAiChat {
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
    if let Some(uncarried) = kind.uncarried_sampling(sampling, false) {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "UNSUPPORTED_SAMPLING",
            uncarried.message,
        )
        .at(format!("forwardedProps.sampling.{}", uncarried.key)));
    }
    let prompt = match prompt {
        RawPrompt::Text(text) if !text.is_empty() => serde_json::json!(text),
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
    Ok(Plan::UpstreamRaw { prompt })
}
