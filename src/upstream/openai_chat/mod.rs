//! The OpenAI chat completions wire, as an upstream: the run's
//! conversation as a streaming request, and the stream's deltas as chunks.
//!
//! Reasoning arrives in `reasoning_content` (llama.cpp, SGLang, DeepSeek)
//! or `reasoning` (vLLM, Ollama, mlx-lm); a server that leaves `<think>`
//! in `content` is split at text level by the format's splitter. Tool calls
//! arrive as indexed deltas and end when the stream does.
//!
//! This module holds what every upstream adapter shares: the run's request
//! ([`UpstreamRequest`]), the usage it reports ([`UpstreamUsage`]), a
//! finished tool call's check (`finished_call`), token log-probabilities
//! in OpenAI's shape (`upstream_logprobs`) and error objects read
//! without their text (`refused_in_stream`, `error_kind`). The chat
//! completions wire itself lives in `request` (the body) and `stream` (the
//! `data:` payloads as chunks).

mod request;
mod stream;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};
use thinkwire_chat::TemplateMessage;
use thinkwire_engine::SamplingParams;
use thinkwire_protocol::Tool;
use thinkwire_reasoning::{Effort, ToolCall, ToolCallProblem};

use super::UpstreamError;
use crate::conversation::ReplayedBlock;

pub use request::request_body;
pub(super) use request::streamed_body;
pub use stream::StreamParser;
pub(super) use stream::read_usage;

/// What a run asks of the upstream.
pub struct UpstreamRequest<'a> {
    /// The conversation, replayed reasoning in `reasoning_content`.
    pub turns: &'a [TemplateMessage],
    /// The replayed reasoning blocks one by one, with their providers'
    /// items (for providers that want them back as blocks).
    pub blocks: &'a [ReplayedBlock],
    /// Tools the model may call.
    pub tools: &'a [Tool],
    /// Passed on as far as the wire carries it; a run asking for more was
    /// refused when prepared ([`super::UpstreamKind::uncarried_sampling`]).
    pub sampling: &'a SamplingParams,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// `false`: ask the upstream not to think.
    pub thinking: bool,
    /// The reasoning effort the client chose, if any.
    pub effort: Option<Effort>,
    /// Reasoning tokens allowed (where the provider takes a budget).
    pub budget: usize,
    /// What the answer must be, for the upstream to enforce: it holds the
    /// model, so the constraint goes with the request.
    pub answer: Option<&'a AnswerConstraint>,
    /// At most one tool call (`parallel_tool_calls: false`).
    pub one_call: bool,
    /// The answer tokens' log-probabilities, with this many alternatives
    /// each (`None`: not asked; an Anthropic upstream reports none, and a
    /// run asking one is refused when prepared).
    pub logprobs: Option<usize>,
}

impl<'a> UpstreamRequest<'a> {
    /// `turns` alone, nothing but text asked: no tools, no reasoning, no
    /// constraint, no log-probabilities (a summary pass).
    pub fn plain(
        turns: &'a [TemplateMessage],
        sampling: &'a SamplingParams,
        max_tokens: usize,
    ) -> Self {
        Self {
            turns,
            blocks: &[],
            tools: &[],
            sampling,
            max_tokens,
            thinking: false,
            effort: None,
            budget: 0,
            answer: None,
            one_call: false,
            logprobs: None,
        }
    }
}

/// A run's constraint on its answer, as an upstream is asked for it.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerConstraint {
    /// JSON valid under `schema`; `name` and `strict` as the client gave
    /// them (OpenAI's `json_schema` carries both).
    Schema {
        /// The format's name (`answer` when the client gave none).
        name: String,
        /// The JSON schema.
        schema: Value,
        /// OpenAI's strict mode, when the client asked.
        strict: Option<bool>,
    },
    /// Any JSON object (`json_object`).
    AnyObject,
    /// A call of one of the offered tools (`tool_choice: required`).
    AnyCall,
    /// A call of this tool.
    Call(String),
}

impl AnswerConstraint {
    /// The answer's format as OpenAI's wires describe one, flat:
    /// `{type: json_schema, name, schema, strict?}` (Responses' `text.
    /// format`; chat nests all but `type` under `json_schema`) or `{type:
    /// json_object}`. `None` for a required call.
    pub(crate) fn openai_format(&self) -> Option<Map<String, Value>> {
        let format = match self {
            Self::Schema {
                name,
                schema,
                strict,
            } => {
                let mut format = json!({"type": "json_schema", "name": name, "schema": schema});
                if let Some(strict) = strict {
                    format["strict"] = json!(strict);
                }
                format
            }
            Self::AnyObject => json!({"type": "json_object"}),
            Self::AnyCall | Self::Call(_) => return None,
        };
        format.as_object().cloned()
    }

    /// A required call's `tool_choice`: `required`, or the tool `named`
    /// writes as the wire names a function. `None` for a format.
    pub(crate) fn openai_tool_choice(&self, named: fn(&str) -> Value) -> Option<Value> {
        match self {
            Self::AnyCall => Some(json!("required")),
            Self::Call(name) => Some(named(name)),
            Self::Schema { .. } | Self::AnyObject => None,
        }
    }
}

/// Token counts the upstream reported (`stream_options.include_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpstreamUsage {
    /// Prompt tokens.
    pub input: u64,
    /// Generated tokens, reasoning included.
    pub output: u64,
    /// Reasoning tokens, where the upstream counts them.
    pub reasoning: Option<u64>,
    /// Of the prompt tokens, those the upstream served from its cache.
    pub cached: u64,
}

/// A tool call whose streamed arguments are complete: `{}` when there were
/// none, and what is wrong with them (`cut_off`: the stream hit its token
/// limit, so unparsable arguments were truncated). Shared by every adapter.
pub(super) fn finished_call(
    id: String,
    name: String,
    arguments: String,
    cut_off: bool,
) -> ToolCall {
    let problem = arguments_problem(&arguments, cut_off);
    let arguments = if arguments.trim().is_empty() {
        "{}".to_owned()
    } else {
        arguments
    };
    ToolCall {
        id,
        name,
        arguments,
        problem,
    }
}

fn arguments_problem(arguments: &str, cut_off: bool) -> Option<ToolCallProblem> {
    if arguments.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => None,
        Ok(_) => Some(ToolCallProblem::ArgumentsNotObject),
        Err(_) if cut_off => Some(ToolCallProblem::Truncated),
        Err(err) => Some(ToolCallProblem::InvalidJson(format!(
            "line {} column {}",
            err.line(),
            err.column()
        ))),
    }
}

/// A list of token log-probabilities as OpenAI's wires write one (chat's
/// `logprobs.content`, Responses' `logprobs`), `top` alternatives each;
/// none when the upstream sent none.
pub(super) fn upstream_logprobs(
    list: Option<&Value>,
    top: usize,
) -> Result<Vec<Value>, UpstreamError> {
    let malformed = || UpstreamError::Protocol("a token's log-probability is malformed".into());
    match list {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(all)) => (all.iter())
            .map(|e| crate::logprob_entries::from_upstream(e, top).ok_or_else(malformed))
            .collect(),
        Some(_) => Err(malformed()),
    }
}

/// An error object: its `type` or `code` only, never its message (it may
/// quote the conversation).
pub(super) fn refused_in_stream(error: &Value) -> UpstreamError {
    let status = error
        .get("status")
        .or_else(|| error.get("code"))
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(200);
    UpstreamError::Refused {
        status,
        kind: error_kind(error),
    }
}

/// `: <type or code>` of an error object, when it has a short one.
pub(super) fn error_kind(error: &Value) -> String {
    ["type", "code"]
        .iter()
        .find_map(|f| error.get(*f).and_then(Value::as_str))
        .filter(|k| {
            k.len() <= 64
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        })
        .map_or_else(String::new, |k| format!(": {k}"))
}
