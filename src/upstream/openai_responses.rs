//! OpenAI's Responses API, as an upstream, with `store: false`: the run's
//! conversation as input items, and the stream's semantic events as
//! chunks.
//!
//! The provider's reasoning item (with its `encrypted_content`, asked for
//! by `include: ["reasoning.encrypted_content"]`) is its own item: it
//! travels inside thinkwire's sealed value ([`UpstreamOutput::Provider`]) and goes
//! back verbatim as an input item on the next turn, so the provider keeps
//! its reasoning while neither it nor thinkwire stores anything.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use thinkwire_reasoning::{Chunk, Effort};
use thinkwire_seal::ProviderItem;

use super::openai_chat::{
    UpstreamRequest, UpstreamUsage, error_kind, finished_call, refused_in_stream, upstream_logprobs,
};
use super::{MAX_TOOL_CALLS, UpstreamError, UpstreamOutput, too_many_calls};
use crate::conversation::ReplayedBlock;

/// Item kind in the sealed value.
const REASONING: &str = "openai.reasoning";

/// The fields of [`request_body`] that `responses/input_tokens` takes: the
/// prompt's, not the generation's.
pub const COUNTED_FIELDS: &[&str] = &[
    "model",
    "input",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "text",
];

/// The request body for `model`.
pub fn request_body(model: &str, request: &UpstreamRequest<'_>) -> Value {
    let mut input: Vec<Value> = Vec::new();
    let mut assistant = 0;
    for turn in request.turns {
        let text = turn.content.clone().unwrap_or_default();
        match turn.role.as_str() {
            "assistant" => {
                // The provider's own reasoning items first, as it gave them.
                input.extend(
                    ReplayedBlock::of(request.blocks, assistant)
                        .filter_map(|b| b.provider.as_ref())
                        .filter(|item| item.kind == REASONING)
                        .filter_map(|item| serde_json::from_str::<Value>(&item.data).ok()),
                );
                assistant += 1;
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                for call in &turn.tool_calls {
                    let arguments = match &call.function.arguments {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    input.push(json!({
                        "type": "function_call", "call_id": call.id,
                        "name": call.function.name, "arguments": arguments,
                    }));
                }
            }
            "tool" => input.push(json!({
                "type": "function_call_output",
                "call_id": turn.tool_call_id, "output": text,
            })),
            role => input.push(json!({
                "type": "message", "role": if role == "system" { "developer" } else { role },
                "content": [{"type": "input_text", "text": text}],
            })),
        }
    }
    let mut body = json!({
        "model": model,
        "input": input,
        "stream": true,
        "store": false,
        "max_output_tokens": request.max_tokens,
    });
    let Some(fields) = body.as_object_mut() else {
        return body;
    };
    if request.thinking {
        let effort = match request.effort {
            Some(Effort::Low) => "low",
            Some(Effort::High) => "high",
            Some(Effort::Medium) | None => "medium",
        };
        fields.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
    } else {
        fields.insert("reasoning".into(), json!({"effort": "none"}));
        fields.insert("temperature".into(), json!(request.sampling.temperature));
        fields.insert("top_p".into(), json!(request.sampling.top_p));
    }
    let mut include = Vec::new();
    if request.thinking {
        include.push("reasoning.encrypted_content");
    }
    if let Some(top) = request.logprobs {
        include.push("message.output_text.logprobs");
        fields.insert("top_logprobs".into(), json!(top));
    }
    if !include.is_empty() {
        fields.insert("include".into(), json!(include));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let parameters = match &tool.parameters {
                    Some(p) if !p.is_null() => p.clone(),
                    _ => json!({"type": "object", "properties": {}}),
                };
                json!({"type": "function", "name": tool.name,
                       "description": tool.description, "parameters": parameters})
            })
            .collect();
        fields.insert("tools".into(), Value::Array(tools));
        if request.one_call {
            fields.insert("parallel_tool_calls".into(), json!(false));
        }
    }
    if let Some(answer) = request.answer {
        if let Some(format) = answer.openai_format() {
            fields.insert("text".into(), json!({"format": format}));
        }
        let named = |name: &str| json!({"type": "function", "name": name});
        if let Some(choice) = answer.openai_tool_choice(named) {
            fields.insert("tool_choice".into(), choice);
        }
    }
    body
}

/// What an output item is while it streams.
enum Item {
    Reasoning {
        /// A summary part or reasoning text was written (parts after the
        /// first are separated by a blank line).
        wrote: bool,
    },
    Message,
    Call {
        id: String,
        name: String,
        arguments: String,
    },
    Other,
}

/// Turns the stream's events into pieces.
#[derive(Default)]
pub struct StreamParser {
    items: BTreeMap<u64, Item>,
    usage: Option<UpstreamUsage>,
    done: bool,
    /// The response ended incomplete at its token limit.
    cut_off: bool,
    /// Alternatives per answer token the run asked for; `None`: none.
    logprobs: Option<usize>,
    /// Function calls opened so far (at most [`MAX_TOOL_CALLS`]).
    calls: usize,
}

impl StreamParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the answer text's token log-probabilities (each
    /// `output_text.delta`'s `logprobs`), `top` alternatives each, and
    /// sends them ahead of the text they wrote.
    pub fn reporting_logprobs(mut self, top: Option<usize>) -> Self {
        self.logprobs = top;
        self
    }

    /// Whether the response completed (or ended incomplete).
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether the response stopped at its token limit
    /// (`max_output_tokens`).
    pub fn cut_off(&self) -> bool {
        self.cut_off
    }

    /// Token counts, from the final response.
    pub fn usage(&self) -> Option<UpstreamUsage> {
        self.usage
    }

    /// One event's `data:` payload.
    pub fn push(&mut self, data: &str) -> Result<Vec<UpstreamOutput>, UpstreamError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|err| UpstreamError::Protocol(format!("an event is not JSON: {err}")))?;
        let index = event
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let text = |field: &str| event[field].as_str().unwrap_or("").to_owned();
        let mut out = Vec::new();
        match event["type"].as_str().unwrap_or("") {
            "response.output_item.added" => {
                let item = &event["item"];
                let started = match item["type"].as_str().unwrap_or("") {
                    "reasoning" => {
                        out.push(UpstreamOutput::Chunk(Chunk::ReasoningStart));
                        Item::Reasoning { wrote: false }
                    }
                    "message" => Item::Message,
                    "function_call" => {
                        self.calls += 1;
                        if self.calls > MAX_TOOL_CALLS {
                            return Err(too_many_calls());
                        }
                        let id = item["call_id"].as_str().unwrap_or("").to_owned();
                        let name = item["name"].as_str().unwrap_or("").to_owned();
                        out.push(UpstreamOutput::Chunk(Chunk::ToolCallStart {
                            id: id.clone(),
                            name: name.clone(),
                        }));
                        Item::Call {
                            id,
                            name,
                            arguments: String::new(),
                        }
                    }
                    _ => Item::Other,
                };
                self.items.insert(index, started);
            }
            kind @ ("response.reasoning_summary_part.added"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta") => {
                if let Some(Item::Reasoning { wrote }) = self.items.get_mut(&index) {
                    if kind == "response.reasoning_summary_part.added" {
                        if *wrote {
                            out.push(UpstreamOutput::Chunk(Chunk::ReasoningDelta("\n\n".into())));
                        }
                    } else {
                        let delta = text("delta");
                        if !delta.is_empty() {
                            *wrote = true;
                            out.push(UpstreamOutput::Chunk(Chunk::ReasoningDelta(delta)));
                        }
                    }
                }
            }
            "response.output_text.delta" => {
                let delta = text("delta");
                if !delta.is_empty() {
                    if let Some(top) = self.logprobs {
                        let entries = upstream_logprobs(event.get("logprobs"), top)?;
                        if !entries.is_empty() {
                            out.push(UpstreamOutput::Logprobs(entries));
                        }
                    }
                    out.push(UpstreamOutput::Chunk(Chunk::Text(delta)));
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(Item::Call { id, arguments, .. }) = self.items.get_mut(&index) {
                    let delta = text("delta");
                    arguments.push_str(&delta);
                    if !delta.is_empty() {
                        out.push(UpstreamOutput::Chunk(Chunk::ToolCallArgs {
                            id: id.clone(),
                            delta,
                        }));
                    }
                }
            }
            "response.output_item.done" => {
                let done = &event["item"];
                match self.items.remove(&index) {
                    Some(Item::Reasoning { .. }) => {
                        if done.get("encrypted_content").is_some_and(|c| !c.is_null()) {
                            out.push(UpstreamOutput::Provider(ProviderItem {
                                kind: REASONING.into(),
                                data: done.to_string(),
                            }));
                        }
                        out.push(UpstreamOutput::Chunk(Chunk::ReasoningEnd));
                    }
                    Some(Item::Call {
                        id,
                        name,
                        arguments,
                    }) => {
                        let arguments = done["arguments"].as_str().map_or(arguments, str::to_owned);
                        out.push(UpstreamOutput::Chunk(Chunk::ToolCallEnd(finished_call(
                            id, name, arguments, false,
                        ))));
                    }
                    _ => {}
                }
            }
            kind @ ("response.completed" | "response.incomplete") => {
                self.done = true;
                self.cut_off =
                    event["response"]["incomplete_details"]["reason"] == "max_output_tokens";
                let usage = &event["response"]["usage"];
                if !usage.is_null() {
                    self.usage = Some(UpstreamUsage {
                        input: usage["input_tokens"].as_u64().unwrap_or(0),
                        output: usage["output_tokens"].as_u64().unwrap_or(0),
                        reasoning: usage["output_tokens_details"]["reasoning_tokens"].as_u64(),
                        cached: usage["input_tokens_details"]["cached_tokens"]
                            .as_u64()
                            .unwrap_or(0),
                    });
                }
                out.extend(self.close_all(kind == "response.incomplete"));
            }
            "response.failed" => {
                let error = &event["response"]["error"];
                return Err(UpstreamError::Refused {
                    status: 200,
                    kind: error_kind(error),
                });
            }
            // `{type: "error", code, message}`: the code names it.
            "error" => return Err(refused_in_stream(&json!({"code": event["code"]}))),
            _ => {}
        }
        Ok(out)
    }

    /// The stream ended: close what is still open.
    pub fn finish(&mut self) -> Vec<UpstreamOutput> {
        self.close_all(true)
    }

    /// Ends the response as stopped at its token limit (its output passed
    /// what the request allows): what is open closes, a call truncated.
    pub fn cut_at_length(&mut self) -> Vec<UpstreamOutput> {
        self.cut_off = true;
        self.close_all(true)
    }

    fn close_all(&mut self, cut_off: bool) -> Vec<UpstreamOutput> {
        let mut out = Vec::new();
        for (_, item) in std::mem::take(&mut self.items) {
            match item {
                Item::Reasoning { .. } => out.push(UpstreamOutput::Chunk(Chunk::ReasoningEnd)),
                Item::Call {
                    id,
                    name,
                    arguments,
                } => out.push(UpstreamOutput::Chunk(Chunk::ToolCallEnd(finished_call(
                    id, name, arguments, cut_off,
                )))),
                Item::Message | Item::Other => {}
            }
        }
        out
    }
}
