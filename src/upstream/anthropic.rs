//! Anthropic's Messages API, as an upstream: the run's conversation as a
//! streaming request with extended thinking, and its content blocks as
//! chunks.
//!
//! A thinking block's `signature` (or a `redacted_thinking` block's
//! `data`) is the provider's own item: it travels inside thinkwire's sealed
//! value ([`UpstreamOutput::Provider`]) and goes back verbatim with the block's text
//! on the next turn, as the API requires for tool loops.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use thinkwire_chat::TemplateMessage;
use thinkwire_reasoning::{Chunk, ToolCall, ToolCallProblem};
use thinkwire_seal::ProviderItem;

use super::openai_chat::{AnswerConstraint, UpstreamRequest, UpstreamUsage, error_kind};
use super::{MAX_TOOL_CALLS, UpstreamError, UpstreamOutput, too_many_calls};
use crate::conversation::ReplayedBlock;

/// Item kinds in the sealed value.
const THINKING: &str = "anthropic.thinking";
const REDACTED: &str = "anthropic.redacted_thinking";

/// The API version header this adapter speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The fields of [`request_body`] that `messages/count_tokens` takes: the
/// prompt's, not the generation's.
pub const COUNTED_FIELDS: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
];

/// Longest thinking-block signature accepted (they are a few hundred
/// bytes): the parser holds it until the block ends, unsent.
const MAX_SIGNATURE_BYTES: usize = 1 << 20;

/// The smallest thinking budget the API accepts.
const MIN_BUDGET: usize = 1024;

/// The request body for `model`.
pub fn request_body(model: &str, request: &UpstreamRequest<'_>) -> Value {
    let system: Vec<&str> = request
        .turns
        .iter()
        .filter(|t| t.role == "system")
        .filter_map(|t| t.content.as_deref())
        .collect();
    let mut messages: Vec<Value> = Vec::new();
    let mut assistant = 0;
    for turn in request.turns {
        let (role, blocks) = match turn.role.as_str() {
            "system" => continue,
            "assistant" => {
                assistant += 1;
                ("assistant", assistant_blocks(assistant - 1, turn, request))
            }
            "tool" => {
                let mut result = json!({
                    "type": "tool_result",
                    "tool_use_id": turn.tool_call_id,
                    "content": turn.content.clone().unwrap_or_default(),
                });
                if turn.is_error {
                    result["is_error"] = Value::Bool(true);
                }
                ("user", vec![result])
            }
            _ => (
                "user",
                vec![json!({"type": "text", "text": turn.content.clone().unwrap_or_default()})],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        // Consecutive turns of one role (tool results) form one message.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let thinking = request.thinking;
    let budget = request.budget.max(MIN_BUDGET);
    // With thinking, max_tokens covers the budget and the answer.
    let max_tokens = if thinking {
        request.max_tokens.saturating_add(budget)
    } else {
        request.max_tokens
    };
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": true,
    });
    let Some(fields) = body.as_object_mut() else {
        return body;
    };
    if !system.is_empty() {
        fields.insert("system".into(), json!(system.join("\n\n")));
    }
    if thinking {
        // The API fixes temperature and top-p while thinking.
        fields.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    } else {
        fields.insert("temperature".into(), json!(request.sampling.temperature));
        fields.insert("top_p".into(), json!(request.sampling.top_p));
        if request.sampling.top_k != 0 {
            fields.insert("top_k".into(), json!(request.sampling.top_k));
        }
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let schema = match &tool.parameters {
                    Some(p) if !p.is_null() => p.clone(),
                    _ => json!({"type": "object", "properties": {}}),
                };
                json!({"name": tool.name, "description": tool.description, "input_schema": schema})
            })
            .collect();
        fields.insert("tools".into(), Value::Array(tools));
    }
    // A required call, and at most one call, are both `tool_choice`.
    let choice = match request.answer {
        Some(AnswerConstraint::AnyCall) => Some(json!({"type": "any"})),
        Some(AnswerConstraint::Call(name)) => Some(json!({"type": "tool", "name": name})),
        _ if request.one_call && !request.tools.is_empty() => Some(json!({"type": "auto"})),
        _ => None,
    };
    if let Some(mut choice) = choice {
        if request.one_call {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        fields.insert("tool_choice".into(), choice);
    }
    // Structured outputs take a schema (there is no `json_object`: the
    // run is refused that before it starts).
    if let Some(AnswerConstraint::Schema { schema, .. }) = request.answer {
        fields.insert(
            "output_config".into(),
            json!({"format": {"type": "json_schema", "schema": schema}}),
        );
    }
    body
}

/// The `assistant`-th assistant turn's blocks: its replayed thinking (with signatures)
/// first, then text, then tool calls.
fn assistant_blocks(
    assistant: usize,
    turn: &TemplateMessage,
    request: &UpstreamRequest<'_>,
) -> Vec<Value> {
    let mut blocks: Vec<Value> = ReplayedBlock::of(request.blocks, assistant)
        .filter_map(|b| match &b.provider {
            Some(item) if item.kind == THINKING => Some(json!({
                "type": "thinking", "thinking": b.text, "signature": item.data,
            })),
            Some(item) if item.kind == REDACTED => {
                Some(json!({"type": "redacted_thinking", "data": item.data}))
            }
            // Reasoning Anthropic did not sign cannot go back as thinking.
            _ => None,
        })
        .collect();
    if let Some(text) = turn.content.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in &turn.tool_calls {
        let input = match &call.function.arguments {
            Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| json!({})),
            other => other.clone(),
        };
        blocks.push(json!({
            "type": "tool_use", "id": call.id, "name": call.function.name, "input": input,
        }));
    }
    blocks
}

/// What a content block is while it streams.
enum Block {
    Thinking {
        signature: String,
    },
    Redacted,
    Text,
    Tool {
        id: String,
        name: String,
        input: String,
    },
    Other,
}

/// Turns the stream's events into pieces.
pub struct StreamParser {
    blocks: BTreeMap<u64, Block>,
    usage: UpstreamUsage,
    done: bool,
    /// The message stopped at `max_tokens`.
    cut_off: bool,
    /// Tool calls opened so far (at most [`MAX_TOOL_CALLS`]).
    calls: usize,
}

impl Default for StreamParser {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self {
            blocks: BTreeMap::new(),
            usage: UpstreamUsage::default(),
            done: false,
            cut_off: false,
            calls: 0,
        }
    }

    /// Whether `message_stop` arrived.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether the message stopped at its token limit.
    pub fn cut_off(&self) -> bool {
        self.cut_off
    }

    /// Token counts so far.
    pub fn usage(&self) -> UpstreamUsage {
        self.usage
    }

    /// One event's `data:` payload (its `type` says which event).
    pub fn push(&mut self, data: &str) -> Result<Vec<UpstreamOutput>, UpstreamError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|err| UpstreamError::Protocol(format!("an event is not JSON: {err}")))?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let mut out = Vec::new();
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                // Anthropic's `input_tokens` leaves out the cache's
                // reads and writes; ours is the whole prompt.
                let usage = &event["message"]["usage"];
                // Saturating: the counts are the upstream's to choose.
                let cached = usage["cache_read_input_tokens"].as_u64().unwrap_or(0);
                self.usage.input = (usage["input_tokens"].as_u64().unwrap_or(0))
                    .saturating_add(cached)
                    .saturating_add(usage["cache_creation_input_tokens"].as_u64().unwrap_or(0));
                self.usage.cached = cached;
            }
            "content_block_start" => {
                // A second start at an open index would leave the first
                // block (a call's start) with no end.
                if self.blocks.contains_key(&index) {
                    return Err(UpstreamError::Protocol(
                        "a content block opened at an index already open".into(),
                    ));
                }
                let block = &event["content_block"];
                let kind = block["type"].as_str().unwrap_or("");
                let started = match kind {
                    "thinking" => {
                        out.push(UpstreamOutput::Chunk(Chunk::ReasoningStart));
                        Block::Thinking {
                            signature: String::new(),
                        }
                    }
                    "redacted_thinking" => {
                        out.push(UpstreamOutput::Chunk(Chunk::ReasoningStart));
                        out.push(UpstreamOutput::Provider(ProviderItem {
                            kind: REDACTED.into(),
                            data: block["data"].as_str().unwrap_or("").to_owned(),
                        }));
                        Block::Redacted
                    }
                    "text" => Block::Text,
                    "tool_use" => {
                        self.calls += 1;
                        if self.calls > MAX_TOOL_CALLS {
                            return Err(too_many_calls());
                        }
                        let id = block["id"].as_str().unwrap_or("").to_owned();
                        let name = block["name"].as_str().unwrap_or("").to_owned();
                        out.push(UpstreamOutput::Chunk(Chunk::ToolCallStart {
                            id: id.clone(),
                            name: name.clone(),
                        }));
                        Block::Tool {
                            id,
                            name,
                            input: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, started);
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                let block = self.blocks.get_mut(&index).ok_or_else(|| {
                    UpstreamError::Protocol("a delta for a block that never started".into())
                })?;
                let text = |field: &str| delta[field].as_str().unwrap_or("").to_owned();
                match (delta["type"].as_str().unwrap_or(""), block) {
                    ("thinking_delta", Block::Thinking { .. }) => {
                        out.push(UpstreamOutput::Chunk(Chunk::ReasoningDelta(text(
                            "thinking",
                        ))));
                    }
                    ("signature_delta", Block::Thinking { signature }) => {
                        signature.push_str(&text("signature"));
                        if signature.len() > MAX_SIGNATURE_BYTES {
                            return Err(UpstreamError::Protocol(
                                "a thinking signature is too long".into(),
                            ));
                        }
                    }
                    ("text_delta", Block::Text) => {
                        let t = text("text");
                        if !t.is_empty() {
                            out.push(UpstreamOutput::Chunk(Chunk::Text(t)));
                        }
                    }
                    ("input_json_delta", Block::Tool { id, input, .. }) => {
                        let part = text("partial_json");
                        input.push_str(&part);
                        if !part.is_empty() {
                            out.push(UpstreamOutput::Chunk(Chunk::ToolCallArgs {
                                id: id.clone(),
                                delta: part,
                            }));
                        }
                    }
                    (other, _) => {
                        return Err(UpstreamError::Protocol(format!(
                            "a {other:?} delta in the wrong block"
                        )));
                    }
                }
            }
            "content_block_stop" => {
                if let Some(block) = self.blocks.remove(&index) {
                    out.extend(end_block(block, false));
                }
            }
            "message_delta" => {
                if let Some(output) = event["usage"]["output_tokens"].as_u64() {
                    self.usage.output = output;
                }
                self.cut_off |= event["delta"]["stop_reason"] == "max_tokens";
            }
            "message_stop" => {
                self.done = true;
                out.extend(self.finish());
            }
            "error" => return Err(refused(&event["error"])),
            // `ping`, and event types added later.
            _ => {}
        }
        Ok(out)
    }

    /// The stream ended: blocks still open are closed (a tool call in one
    /// was cut off).
    pub fn finish(&mut self) -> Vec<UpstreamOutput> {
        std::mem::take(&mut self.blocks)
            .into_values()
            .flat_map(|block| end_block(block, true))
            .collect()
    }

    /// Ends the message as stopped at `max_tokens` (its output passed what
    /// the request allows): open blocks close, a tool call truncated.
    pub fn cut_at_length(&mut self) -> Vec<UpstreamOutput> {
        self.cut_off = true;
        self.finish()
    }
}

fn end_block(block: Block, unfinished: bool) -> Vec<UpstreamOutput> {
    match block {
        Block::Thinking { signature } => {
            let mut out = Vec::new();
            if !signature.is_empty() {
                out.push(UpstreamOutput::Provider(ProviderItem {
                    kind: THINKING.into(),
                    data: signature,
                }));
            }
            out.push(UpstreamOutput::Chunk(Chunk::ReasoningEnd));
            out
        }
        Block::Redacted => vec![UpstreamOutput::Chunk(Chunk::ReasoningEnd)],
        Block::Tool { id, name, input } => {
            let problem = if unfinished {
                Some(ToolCallProblem::Truncated)
            } else if input.trim().is_empty() {
                None
            } else {
                match serde_json::from_str::<Value>(&input) {
                    Ok(Value::Object(_)) => None,
                    Ok(_) => Some(ToolCallProblem::ArgumentsNotObject),
                    Err(err) => Some(ToolCallProblem::InvalidJson(format!(
                        "line {} column {}",
                        err.line(),
                        err.column()
                    ))),
                }
            };
            let arguments = if input.trim().is_empty() {
                "{}".to_owned()
            } else {
                input
            };
            vec![UpstreamOutput::Chunk(Chunk::ToolCallEnd(ToolCall {
                id,
                name,
                arguments,
                problem,
            }))]
        }
        Block::Text | Block::Other => Vec::new(),
    }
}

/// An `error` event or error body: its type only, never its message.
pub(super) fn refused(error: &Value) -> UpstreamError {
    let status = match error["type"].as_str() {
        Some("overloaded_error") => 529,
        Some("rate_limit_error") => 429,
        Some("api_error") => 500,
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        _ => 200,
    };
    UpstreamError::Refused {
        status,
        kind: error_kind(error),
    }
}
