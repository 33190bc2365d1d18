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

pub use request::{effort_control, strings};
pub use sampling::top_logprobs;

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
        };
        Ok(Start {
            input: request.input,
            stops: request.stop,
            stream: request.stream,
            surface: Completion {
                reply,
                stream: Stream::default(),
                include_usage: request.include_usage,
            },
        })
    })
    .await
}

/// A chat completion: `chat.completion.chunk` frames, then `[DONE]`; or
/// one `chat.completion`.
struct Completion {
    reply: Reply,
    stream: Stream,
    include_usage: bool,
}

impl Surface for Completion {
    const DONE: Option<&'static str> = Some("[DONE]");

    fn opening(&mut self) -> Vec<SdkEvent> {
        let role = json!({"role": "assistant", "content": ""});
        vec![(None, self.reply.chunk(role, None))]
    }

    fn map(&mut self, piece: RunStep) -> Vec<SdkEvent> {
        match self.stream.map(&self.reply, piece) {
            Mapped::Chunk(chunk) | Mapped::Error(chunk) => vec![(None, chunk)],
            Mapped::Finish(chunk, usage) => {
                let mut out = vec![(None, chunk)];
                if self.include_usage {
                    let mut tail = self.reply.chunk(json!({}), None);
                    tail["choices"] = json!([]);
                    tail["usage"] = usage_json(usage);
                    out.push((None, tail));
                }
                out
            }
            Mapped::Nothing => Vec::new(),
        }
    }

    fn answer(self, pieces: Vec<RunStep>) -> Result<Value, ApiError> {
        Ok(self.reply.completion(&collect(pieces)?))
    }
}

/// What is the same on every chunk of one answer.
struct Reply {
    id: String,
    model: String,
    created: u64,
    field: ReasoningField,
}

impl Reply {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    }

    /// `reasoning` and/or `reasoning_content` set to `text`.
    fn reasoning(&self, object: &mut Map<String, Value>, text: &str) {
        for name in self.field.names() {
            object.insert((*name).to_owned(), Value::String(text.to_owned()));
        }
    }

    fn completion(&self, all: &Collected) -> Value {
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
        let finish = if all.ended_with_tool_calls {
            "tool_calls"
        } else {
            "stop"
        };
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
            "usage": usage_json(all.usage),
        })
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

fn usage_json(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    })
}

/// What a piece becomes on the stream.
enum Mapped {
    Chunk(Value),
    Finish(Value, Usage),
    Error(Value),
    Nothing,
}

/// The streaming state: indexes of reasoning details and tool calls.
#[derive(Default)]
struct Stream {
    details: usize,
    calls: usize,
}

impl Stream {
    fn map(&mut self, reply: &Reply, piece: RunStep) -> Mapped {
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
            RunStep::Text(text) => json!({ "content": text }),
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
                usage, tool_calls, ..
            } => {
                let finish = if tool_calls { "tool_calls" } else { "stop" };
                return Mapped::Finish(reply.chunk(json!({}), Some(finish)), usage);
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
        Mapped::Chunk(reply.chunk(delta, None))
    }
}
