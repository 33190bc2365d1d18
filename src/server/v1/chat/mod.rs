//! `POST /v1/chat/completions`: OpenAI chat completions over the agent's
//! run, streaming (`chat.completion.chunk` frames, then `data: [DONE]`) or
//! not (one `chat.completion`).
//!
//! Reasoning goes out under the field(s) the server is configured for
//! ([`ReasoningField`]: `reasoning` and `reasoning_content` by default),
//! and each sealed reasoning message as a `reasoning_details` entry
//! `{type: "reasoning.encrypted", id, format, index, data}` whose `data` the
//! client sends back on the assistant message to keep the reasoning.

mod request;
mod sampling;

#[cfg(feature = "fuzzing")]
pub(super) use request::decode;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use serde_json::{Map, Value, json};

pub use request::{Delivery, delivery, effort_control};
pub use sampling::{draws, top_logprobs};

use super::error::{ApiError, Dialect};
use super::events::{Collected, RunStep, Usage, collect};
use super::handler::{SdkEvent, Start, Surface, serve};
use super::{ReasoningField, unix_now};
use crate::server::AppState;
use crate::server::limits::Client;

/// The `format` of thinkwire's `reasoning_details` entries.
pub const DETAILS_FORMAT: &str = "thinkwire-seal-v1";

pub(in crate::server) async fn completions(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    serve(state, client, body, Dialect::OpenAi, |body, state| {
        let request = request::decode(body)?;
        let reply = Reply {
            id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
            model: request
                .model
                .unwrap_or_else(|| state.agent.model_id().to_owned()),
            created: unix_now(),
            field: state.config.openai_reasoning_field,
            logprobs: request.input.asks_logprobs(),
        };
        let choices = request.choices;
        let most = runs_allowed(state);
        if choices > most {
            return Err(ApiError::invalid(
                "n",
                format!(
                    "asks for {choices} runs; this server starts at most {most} for one request"
                ),
            ));
        }
        Ok(Start {
            inputs: vec![request.input],
            choices,
            stops: request.stop,
            stream: request.stream,
            surface: Completion {
                reply,
                streams: (0..choices).map(|_| Stream::default()).collect(),
                include_usage: request.include_usage,
                usage: None,
            },
        })
    })
    .await
}

/// The most runs one request may start: every one of them must be
/// admitted at once, past the client's limit and the server's.
pub(super) fn runs_allowed(state: &AppState) -> usize {
    let config = &state.config;
    let server = config.max_active_runs + config.max_queued_runs;
    match config.max_runs_per_client {
        0 => server,
        client => client.min(server),
    }
}

/// A chat completion: `chat.completion.chunk` frames, then `[DONE]`; or
/// one `chat.completion`. Each of `n` choices is a run of its own, its
/// chunks carrying its index.
struct Completion {
    reply: Reply,
    /// The streaming state of each choice.
    streams: Vec<Stream>,
    include_usage: bool,
    /// The usage of the choices finished so far.
    usage: Option<Usage>,
}

impl Surface for Completion {
    const DONE: Option<&'static str> = Some("[DONE]");

    fn opening(&mut self) -> Vec<SdkEvent> {
        let role = json!({"role": "assistant", "content": ""});
        (0..self.streams.len())
            .map(|choice| (None, self.reply.chunk(choice, role.clone(), None)))
            .collect()
    }

    fn map(&mut self, choice: usize, piece: RunStep) -> Vec<SdkEvent> {
        let Some(stream) = self.streams.get_mut(choice) else {
            return Vec::new();
        };
        match stream.map(&self.reply, choice, piece) {
            Mapped::Chunk(chunk) | Mapped::Error(chunk) => vec![(None, chunk)],
            Mapped::Finish(chunk, usage) => {
                self.usage = Some(match self.usage {
                    Some(sum) => sum.with_choice(usage),
                    None => usage,
                });
                vec![(None, chunk)]
            }
            Mapped::Nothing => Vec::new(),
        }
    }

    fn closing(&mut self) -> Vec<SdkEvent> {
        if !self.include_usage {
            return Vec::new();
        }
        let mut tail = self.reply.chunk(0, json!({}), None);
        tail["choices"] = json!([]);
        tail["usage"] = usage_json(self.usage.unwrap_or_default());
        vec![(None, tail)]
    }

    fn answer(self, choices: Vec<Vec<RunStep>>) -> Result<Value, ApiError> {
        let all = choices
            .into_iter()
            .map(collect)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.reply.completion(&all))
    }
}

/// What is the same on every chunk of one answer.
struct Reply {
    id: String,
    model: String,
    created: u64,
    field: ReasoningField,
    /// Whether the answer tokens' log-probabilities were asked for.
    logprobs: bool,
}

impl Reply {
    fn chunk(&self, choice: usize, delta: Value, finish: Option<&str>) -> Value {
        self.chunk_with(choice, delta, Value::Null, finish)
    }

    fn chunk_with(
        &self,
        choice: usize,
        delta: Value,
        logprobs: Value,
        finish: Option<&str>,
    ) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": choice, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        })
    }

    /// A choice's `logprobs`: its tokens' entries where they were asked
    /// for, else `null`.
    fn logprobs(&self, entries: Vec<Value>) -> Value {
        match self.logprobs {
            true => json!({"content": entries, "refusal": null}),
            false => Value::Null,
        }
    }

    /// `reasoning` and/or `reasoning_content` set to `text`.
    fn reasoning(&self, object: &mut Map<String, Value>, text: &str) {
        for name in self.field.names() {
            object.insert((*name).to_owned(), Value::String(text.to_owned()));
        }
    }

    /// The `chat.completion` of every choice; the prompt is counted once.
    fn completion(&self, choices: &[Collected]) -> Value {
        let usage = (choices.iter().map(|all| all.usage))
            .reduce(Usage::with_choice)
            .unwrap_or_default();
        let choices: Vec<Value> = choices
            .iter()
            .enumerate()
            .map(|(index, all)| self.choice(index, all))
            .collect();
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            "usage": usage_json(usage),
        })
    }

    /// One choice of a `chat.completion`.
    fn choice(&self, index: usize, all: &Collected) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        let content = (!all.text.is_empty() || all.tool_calls.is_empty()).then(|| all.text.clone());
        message.insert("content".into(), json!(content));
        let reasoning: Vec<&str> = all
            .reasoning
            .iter()
            .map(|r| r.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        if !reasoning.is_empty() {
            self.reasoning(&mut message, &reasoning.join("\n\n"));
        }
        let details: Vec<Value> = all
            .reasoning
            .iter()
            .filter_map(|r| r.carrier.as_ref().map(|c| (r, c)))
            .enumerate()
            .map(|(index, (r, carrier))| detail(index, &r.id, carrier))
            .collect();
        if !details.is_empty() {
            message.insert("reasoning_details".into(), Value::Array(details));
        }
        if !all.tool_calls.is_empty() {
            let calls: Vec<Value> = all
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let finish = finish_reason(all.cut_off, all.ended_with_tool_calls);
        let logprobs = self.logprobs(all.logprobs.clone());
        json!({"index": index, "message": message, "logprobs": logprobs, "finish_reason": finish})
    }
}

/// One `reasoning_details` entry.
fn detail(index: usize, id: &str, carrier: &str) -> Value {
    json!({
        "type": "reasoning.encrypted",
        "id": id,
        "format": DETAILS_FORMAT,
        "index": index,
        "data": carrier,
    })
}

/// `length` where the token limit cut the answer off (a call it cut
/// short included), `tool_calls` where the answer is calls, else `stop`.
fn finish_reason(cut_off: bool, tool_calls: bool) -> &'static str {
    match (cut_off, tool_calls) {
        (true, _) => "length",
        (false, true) => "tool_calls",
        (false, false) => "stop",
    }
}

/// OpenAI's `usage` object (chat and legacy completions alike).
pub(super) fn usage_json(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
        "prompt_tokens_details": {"cached_tokens": usage.cached},
    })
}

/// What a piece becomes on the stream.
enum Mapped {
    Chunk(Value),
    Finish(Value, Usage),
    Error(Value),
    Nothing,
}

/// The streaming state: indexes of reasoning details and tool calls, and
/// the log-probabilities of text not yet sent.
#[derive(Default)]
struct Stream {
    details: usize,
    calls: usize,
    logprobs: Vec<Value>,
}

impl Stream {
    fn map(&mut self, reply: &Reply, choice: usize, piece: RunStep) -> Mapped {
        let delta = match piece {
            RunStep::ReasoningDelta(text) => {
                let mut delta = Map::new();
                reply.reasoning(&mut delta, &text);
                Value::Object(delta)
            }
            RunStep::ReasoningSealed { id, carrier } => {
                let index = self.details;
                self.details += 1;
                json!({ "reasoning_details": [detail(index, &id, &carrier)] })
            }
            RunStep::Text(text) => {
                let logprobs = reply.logprobs(std::mem::take(&mut self.logprobs));
                return Mapped::Chunk(reply.chunk_with(
                    choice,
                    json!({ "content": text }),
                    logprobs,
                    None,
                ));
            }
            RunStep::Logprobs(entries) => {
                self.logprobs.extend(entries);
                return Mapped::Nothing;
            }
            RunStep::ToolStart { id, name } => {
                let index = self.calls;
                self.calls += 1;
                json!({ "tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}] })
            }
            RunStep::ToolArgs(args) => {
                json!({ "tool_calls": [{"index": self.calls.saturating_sub(1),
                    "function": {"arguments": args}}] })
            }
            RunStep::Finished {
                usage,
                tool_calls,
                cut_off,
                ..
            } => {
                let finish = finish_reason(cut_off, tool_calls);
                // Entries whose text never came (a stop sequence's) end here.
                let logprobs = match self.logprobs.is_empty() {
                    true => Value::Null,
                    false => reply.logprobs(std::mem::take(&mut self.logprobs)),
                };
                let chunk = reply.chunk_with(choice, json!({}), logprobs, Some(finish));
                return Mapped::Finish(chunk, usage);
            }
            RunStep::Failed { code, message } => {
                // Mid-stream failures: the shape OpenAI's SDKs raise from.
                return Mapped::Error(json!({
                    "error": {"message": message, "type": "server_error", "param": null, "code": code}
                }));
            }
            RunStep::ReasoningStart { .. } | RunStep::ReasoningEnd | RunStep::ToolEnd => {
                return Mapped::Nothing;
            }
        };
        Mapped::Chunk(reply.chunk(choice, delta, None))
    }
}
