//! `POST /v1/messages`: Anthropic Messages over the agent's run, streaming
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`) or
//! not (one `message`).
//!
//! Reasoning per visibility: `full` is a `thinking` block whose
//! `signature` is the sealed carrier of that block; `hidden` is a
//! `redacted_thinking` block whose `data` is the carrier; `summary` is a
//! `thinking` block holding the summary (no signature) followed by the
//! `redacted_thinking` block that carries the reasoning itself.
//!
//! `message_start`'s `usage.input_tokens` is the prompt the run starts
//! from, as `count_tokens` counts it, where that is known before the run
//! (a local model's prepared prompt); `message_delta` then gives the
//! run's final counts (the prompt less what the cache served, every pass
//! of a run of several).

mod blocks;
mod request;

#[cfg(feature = "fuzzing")]
pub(super) use request::decode;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};

use super::error::{ApiError, Dialect};
use super::events::{Collected, RunStep, Usage, collect};
use super::handler::{SdkEvent, Start, Surface, only, serve};
use crate::agent::Visibility;
use crate::server::AppState;
use crate::server::limits::Client;

/// A `count_tokens` body as the run's input.
pub(super) fn counted_input(
    body: &Value,
    agent: &crate::agent::Agent,
) -> Result<super::bridge::RunInput, ApiError> {
    request::decode_count(body, agent)
}

pub(in crate::server) async fn create(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    serve(state, client, body, Dialect::Anthropic, |body, state| {
        let request = request::decode(body, &state.agent)?;
        let model = request
            .model
            .unwrap_or_else(|| state.agent.model_id().to_owned());
        Ok(Start {
            inputs: vec![request.input],
            choices: 1,
            stops: request.stop,
            stream: request.stream,
            surface: Reply {
                id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
                model,
                blocks: Blocks::new(request.visibility),
                prompt_tokens: None,
            },
        })
    })
    .await
}

/// A message: `message_start`, `content_block_*`, `message_delta`,
/// `message_stop`; or one `message`.
struct Reply {
    id: String,
    model: String,
    blocks: Blocks,
    /// The prompt the run starts from, once admitted, where it is known
    /// before the run (not on an upstream, which counts it itself).
    prompt_tokens: Option<usize>,
}

impl Surface for Reply {
    fn admitted(&mut self, prompt_tokens: &[Option<usize>]) {
        self.prompt_tokens = prompt_tokens.first().copied().flatten();
    }

    fn opening(&mut self) -> Vec<SdkEvent> {
        // Anthropic's SDKs read a number here; where the count is not
        // known before the run, 0 stands until `message_delta` gives it.
        let input_tokens = self.prompt_tokens.unwrap_or(0);
        let start = json!({"type": "message_start", "message": {
            "id": self.id, "type": "message", "role": "assistant", "content": [], "model": self.model,
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 0},
        }});
        vec![(Some("message_start"), start)]
    }

    fn map(&mut self, _choice: usize, piece: RunStep) -> Vec<SdkEvent> {
        let events = self.blocks.map(piece);
        events
            .into_iter()
            .map(|(name, event)| (Some(name), event))
            .collect()
    }

    fn answer(self, choices: Vec<Vec<RunStep>>) -> Result<Value, ApiError> {
        let all = collect(only(choices))?;
        Ok(message(&self.id, &self.model, self.blocks.visibility, &all))
    }
}

/// `max_tokens` where the token limit cut the answer off (a call it cut
/// short included), then `tool_use`, `stop_sequence` or `end_turn`.
fn stop_reason(cut_off: bool, tool_calls: bool, stop_sequence: Option<&str>) -> &'static str {
    match (cut_off, tool_calls, stop_sequence) {
        (true, ..) => "max_tokens",
        (false, true, _) => "tool_use",
        (false, false, Some(_)) => "stop_sequence",
        (false, false, None) => "end_turn",
    }
}

/// Anthropic's counts: `input_tokens` leaves out the prompt tokens read
/// from the cache, which `cache_read_input_tokens` holds.
fn usage_json(usage: Usage) -> Value {
    json!({"input_tokens": usage.input.saturating_sub(usage.cached),
           "cache_read_input_tokens": usage.cached,
           "output_tokens": usage.output})
}

/// A whole answer as one `message`.
fn message(id: &str, model: &str, visibility: Visibility, all: &Collected) -> Value {
    let mut content = Vec::new();
    for r in &all.reasoning {
        match visibility {
            Visibility::Full => content.push(json!({"type": "thinking", "thinking": r.text,
                "signature": r.carrier.clone().unwrap_or_default()})),
            Visibility::Summary => {
                if !r.text.is_empty() {
                    content.push(json!({"type": "thinking", "thinking": r.text, "signature": ""}));
                }
                if let Some(carrier) = &r.carrier {
                    content.push(json!({"type": "redacted_thinking", "data": carrier}));
                }
            }
            Visibility::Hidden | Visibility::Off => {
                if let Some(carrier) = &r.carrier {
                    content.push(json!({"type": "redacted_thinking", "data": carrier}));
                }
            }
        }
    }
    if !all.text.is_empty() {
        content.push(json!({"type": "text", "text": all.text}));
    }
    for call in &all.tool_calls {
        let input: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop_reason(
            all.cut_off,
            all.ended_with_tool_calls,
            all.stop_sequence.as_deref(),
        ),
        "stop_sequence": all.stop_sequence,
        "usage": usage_json(all.usage),
    })
}

/// Which block is open on the stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Thinking,
    Text,
    ToolUse,
}

/// The streaming state: the open block and the next block index.
struct Blocks {
    visibility: Visibility,
    open: Open,
    next: usize,
}

type Events = Vec<(&'static str, Value)>;

impl Blocks {
    fn new(visibility: Visibility) -> Self {
        Self {
            visibility,
            open: Open::None,
            next: 0,
        }
    }

    fn start(&mut self, out: &mut Events, kind: Open, block: Value) {
        self.close(out);
        out.push((
            "content_block_start",
            json!({"type": "content_block_start",
            "index": self.next, "content_block": block}),
        ));
        self.open = kind;
    }

    fn delta(&self, out: &mut Events, delta: Value) {
        out.push((
            "content_block_delta",
            json!({"type": "content_block_delta",
            "index": self.next, "delta": delta}),
        ));
    }

    fn close(&mut self, out: &mut Events) {
        if self.open != Open::None {
            out.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.next}),
            ));
            self.open = Open::None;
            self.next += 1;
        }
    }

    fn map(&mut self, piece: RunStep) -> Events {
        let mut out = Vec::new();
        let thinking = json!({"type": "thinking", "thinking": "", "signature": ""});
        match piece {
            RunStep::ReasoningStart { .. } => {
                if matches!(self.visibility, Visibility::Full) {
                    self.start(&mut out, Open::Thinking, thinking);
                }
            }
            RunStep::ReasoningDelta(text) => {
                if self.open != Open::Thinking {
                    self.start(&mut out, Open::Thinking, thinking);
                }
                self.delta(
                    &mut out,
                    json!({"type": "thinking_delta", "thinking": text}),
                );
            }
            RunStep::ReasoningSealed { carrier, .. } => {
                if self.visibility == Visibility::Full && self.open == Open::Thinking {
                    self.delta(
                        &mut out,
                        json!({"type": "signature_delta", "signature": carrier}),
                    );
                } else {
                    self.start(
                        &mut out,
                        Open::Thinking,
                        json!({"type": "redacted_thinking", "data": carrier}),
                    );
                    self.close(&mut out);
                }
            }
            RunStep::ReasoningEnd => self.close(&mut out),
            RunStep::Text(text) => {
                if self.open != Open::Text {
                    self.start(&mut out, Open::Text, json!({"type": "text", "text": ""}));
                }
                self.delta(&mut out, json!({"type": "text_delta", "text": text}));
            }
            RunStep::ToolStart { id, name } => self.start(
                &mut out,
                Open::ToolUse,
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            ),
            RunStep::ToolArgs(args) => {
                self.delta(
                    &mut out,
                    json!({"type": "input_json_delta", "partial_json": args}),
                );
            }
            RunStep::ToolEnd => self.close(&mut out),
            // Anthropic's API has no place for them, and never asks.
            RunStep::Logprobs(_) => {}
            RunStep::Finished {
                usage,
                tool_calls,
                stop_sequence,
                cut_off,
            } => {
                self.close(&mut out);
                let reason = stop_reason(cut_off, tool_calls, stop_sequence.as_deref());
                out.push((
                    "message_delta",
                    json!({"type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": stop_sequence},
                    "usage": usage_json(usage)}),
                ));
                out.push(("message_stop", json!({"type": "message_stop"})));
            }
            RunStep::Failed { message, .. } => out.push((
                "error",
                json!({"type": "error",
                "error": {"type": "api_error", "message": message}}),
            )),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(events: &Events) -> Vec<&'static str> {
        events.iter().map(|(n, _)| *n).collect()
    }

    #[test]
    fn full_thinking_is_one_signed_block() {
        let mut blocks = Blocks::new(Visibility::Full);
        let mut all = Vec::new();
        for piece in [
            RunStep::ReasoningStart { id: "r".into() },
            RunStep::ReasoningDelta("hmm".into()),
            RunStep::ReasoningSealed {
                id: "r".into(),
                carrier: "tw1.r.AA".into(),
            },
            RunStep::ReasoningEnd,
            RunStep::Text("Hi".into()),
            RunStep::Finished {
                usage: Usage::default(),
                tool_calls: false,
                stop_sequence: None,
                cut_off: false,
            },
        ] {
            all.extend(blocks.map(piece));
        }
        assert_eq!(
            names(&all),
            [
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(all[2].1["delta"]["signature"], "tw1.r.AA");
        assert_eq!(all[4].1["index"], 1);
    }

    #[test]
    fn message_start_counts_the_prompt_where_it_is_known() {
        let reply = |prompts: &[Option<usize>]| {
            let mut reply = Reply {
                id: "msg_1".into(),
                model: "m".into(),
                blocks: Blocks::new(Visibility::Off),
                prompt_tokens: None,
            };
            reply.admitted(prompts);
            let opening = reply.opening();
            assert_eq!(opening[0].0, Some("message_start"));
            opening[0].1["message"]["usage"].clone()
        };
        assert_eq!(
            reply(&[Some(42)]),
            json!({"input_tokens": 42, "output_tokens": 0})
        );
        // An upstream's run counts its prompt only as it runs.
        assert_eq!(
            reply(&[None]),
            json!({"input_tokens": 0, "output_tokens": 0})
        );
    }

    #[test]
    fn hidden_thinking_is_a_redacted_block() {
        let mut blocks = Blocks::new(Visibility::Hidden);
        let mut all = Vec::new();
        for piece in [
            RunStep::ReasoningStart { id: "r".into() },
            RunStep::ReasoningSealed {
                id: "r".into(),
                carrier: "tw1.r.AA".into(),
            },
            RunStep::ReasoningEnd,
        ] {
            all.extend(blocks.map(piece));
        }
        assert_eq!(names(&all), ["content_block_start", "content_block_stop"]);
        assert_eq!(all[0].1["content_block"]["type"], "redacted_thinking");
    }
}
