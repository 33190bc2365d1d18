//! The OpenAI chat completions wire, as an upstream: the run's
//! conversation as a streaming request, and the stream's deltas as chunks.
//!
//! Reasoning arrives in `reasoning_content` (llama.cpp, SGLang, DeepSeek)
//! or `reasoning` (vLLM, Ollama, mlx-lm); a server that leaves `<think>`
//! in `content` is split at text level by the format's splitter. Tool calls
//! arrive as indexed deltas and end when the stream does.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use thinkwire_chat::TemplateMessage;
use thinkwire_engine::SamplingParams;
use thinkwire_protocol::Tool;
use thinkwire_reasoning::{Chunk, Effort, FormatSpec, Splitter, ToolCall, ToolCallProblem};

use super::UpstreamError;
use crate::conversation::ReplayedBlock;

/// What a run asks of the upstream.
pub struct UpstreamRequest<'a> {
    /// The conversation, replayed reasoning in `reasoning_content`.
    pub turns: &'a [TemplateMessage],
    /// The replayed reasoning blocks one by one, with their providers'
    /// items (for providers that want them back as blocks).
    pub blocks: &'a [ReplayedBlock],
    /// Tools the model may call.
    pub tools: &'a [Tool],
    /// Temperature, top-p and seed are passed on.
    pub sampling: &'a SamplingParams,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// `false`: ask the upstream not to think.
    pub thinking: bool,
    /// The reasoning effort the client chose, if any.
    pub effort: Option<Effort>,
    /// Reasoning tokens allowed (where the provider takes a budget).
    pub budget: usize,
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
}

/// The request body for `model`.
pub fn request_body(model: &str, request: &UpstreamRequest<'_>) -> Value {
    let messages: Vec<Value> = request.turns.iter().map(message).collect();
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": request.max_tokens,
        "temperature": request.sampling.temperature,
        "top_p": request.sampling.top_p,
    });
    let Some(fields) = body.as_object_mut() else {
        return body;
    };
    if let Some(seed) = request.sampling.seed {
        fields.insert("seed".into(), json!(seed));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(tool).collect();
        fields.insert("tools".into(), Value::Array(tools));
    }
    if !request.thinking {
        // `reasoning_effort: none` is OpenAI's and thinkwire's switch;
        // `enable_thinking` reaches Qwen3-style templates on vLLM, SGLang
        // and mlx-lm.
        fields.insert("reasoning_effort".into(), json!("none"));
        fields.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": false}),
        );
    } else if let Some(effort) = request.effort {
        let effort = match effort {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        };
        fields.insert("reasoning_effort".into(), json!(effort));
    }
    body
}

fn message(turn: &TemplateMessage) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), json!(turn.role));
    out.insert("content".into(), json!(turn.content));
    if let Some(reasoning) = &turn.reasoning_content {
        out.insert("reasoning_content".into(), json!(reasoning));
    }
    if !turn.tool_calls.is_empty() {
        let calls: Vec<Value> = turn
            .tool_calls
            .iter()
            .map(|call| {
                let arguments = match &call.function.arguments {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                json!({
                    "id": call.id, "type": "function",
                    "function": {"name": call.function.name, "arguments": arguments},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &turn.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    if let Some(name) = &turn.name {
        out.insert("name".into(), json!(name));
    }
    Value::Object(out)
}

fn tool(tool: &Tool) -> Value {
    let parameters = match &tool.parameters {
        Some(parameters) if !parameters.is_null() => parameters.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    })
}

/// A tool call being streamed.
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
    /// `TOOL_CALL_START` is sent once the name is known.
    started: bool,
}

/// Turns the stream's `data:` payloads into chunks.
pub struct StreamParser {
    splitter: Splitter,
    in_reasoning: bool,
    calls: BTreeMap<u64, OpenCall>,
    call_prefix: String,
    finish_reason: Option<String>,
    usage: Option<UpstreamUsage>,
    done: bool,
}

impl StreamParser {
    /// A parser splitting text-level reasoning under `format`; tool calls
    /// without an upstream id get `call_prefix` and their index.
    pub fn new(format: &FormatSpec, call_prefix: String) -> Self {
        Self {
            splitter: Splitter::new(format)
                .starting_in_reasoning(false)
                .call_id_prefix(format!("{call_prefix}t")),
            in_reasoning: false,
            calls: BTreeMap::new(),
            call_prefix,
            finish_reason: None,
            usage: None,
            done: false,
        }
    }

    /// Whether `[DONE]` arrived.
    pub fn done(&self) -> bool {
        self.done
    }

    /// What the upstream counted, once its usage chunk arrived.
    pub fn usage(&self) -> Option<UpstreamUsage> {
        self.usage
    }

    /// Why the upstream stopped (`stop`, `length`, `tool_calls`), if it
    /// said.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// One `data:` payload.
    pub fn push(&mut self, data: &str) -> Result<Vec<Chunk>, UpstreamError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(self.finish());
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|err| UpstreamError::Protocol(format!("a chunk is not JSON: {err}")))?;
        if let Some(error) = value.get("error") {
            return Err(refused_in_stream(error));
        }
        if let Some(usage) = value.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(read_usage(usage));
        }
        let mut chunks = Vec::new();
        let Some(choices) = value.get("choices").and_then(Value::as_array) else {
            return Ok(chunks);
        };
        let Some(choice) = choices.first() else {
            return Ok(chunks);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(chunks);
        };
        let reasoning = ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|field| delta.get(*field).and_then(Value::as_str))
            .filter(|r| !r.is_empty());
        if let Some(reasoning) = reasoning {
            if !self.in_reasoning {
                self.in_reasoning = true;
                chunks.push(Chunk::ReasoningStart);
            }
            chunks.push(Chunk::ReasoningDelta(reasoning.to_owned()));
        }
        if let Some(content) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        {
            self.end_reasoning(&mut chunks);
            chunks.extend(self.splitter.push(content));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            self.end_reasoning(&mut chunks);
            for call in calls {
                self.push_call(call, &mut chunks)?;
            }
        }
        Ok(chunks)
    }

    /// The stream ended: close what is open. Idempotent.
    pub fn finish(&mut self) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        self.end_reasoning(&mut chunks);
        chunks.extend(self.splitter.finish());
        let cut_off = self.finish_reason.as_deref() == Some("length");
        for (_, call) in std::mem::take(&mut self.calls) {
            if !call.started {
                chunks.push(Chunk::ToolCallStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                if !call.arguments.is_empty() {
                    chunks.push(Chunk::ToolCallArgs {
                        id: call.id.clone(),
                        delta: call.arguments.clone(),
                    });
                }
            }
            chunks.push(Chunk::ToolCallEnd(finished_call(
                call.id,
                call.name,
                call.arguments,
                cut_off,
            )));
        }
        chunks
    }

    fn end_reasoning(&mut self, chunks: &mut Vec<Chunk>) {
        if std::mem::take(&mut self.in_reasoning) {
            chunks.push(Chunk::ReasoningEnd);
        }
    }

    fn push_call(&mut self, delta: &Value, chunks: &mut Vec<Chunk>) -> Result<(), UpstreamError> {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let prefix = &self.call_prefix;
        let call = self.calls.entry(index).or_insert_with(|| OpenCall {
            id: delta
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("{prefix}{index}"), str::to_owned),
            name: String::new(),
            arguments: String::new(),
            started: false,
        });
        if let Some(name) = name {
            call.name.push_str(name);
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            chunks.push(Chunk::ToolCallStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if !call.arguments.is_empty() {
                chunks.push(Chunk::ToolCallArgs {
                    id: call.id.clone(),
                    delta: call.arguments.clone(),
                });
            }
        }
        call.arguments.push_str(arguments);
        if call.started && !arguments.is_empty() {
            chunks.push(Chunk::ToolCallArgs {
                id: call.id.clone(),
                delta: arguments.to_owned(),
            });
        }
        if call.name.len() > 4096 {
            return Err(UpstreamError::Protocol("a tool name is too long".into()));
        }
        Ok(())
    }
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

fn read_usage(usage: &Value) -> UpstreamUsage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64);
    UpstreamUsage {
        input: count(usage.get("prompt_tokens")).unwrap_or(0),
        output: count(usage.get("completion_tokens")).unwrap_or(0),
        reasoning: count(
            usage
                .get("completion_tokens_details")
                .and_then(|d| d.get("reasoning_tokens")),
        ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use thinkwire_reasoning::Registry;

    fn parser() -> StreamParser {
        let registry = Registry::builtin();
        let spec = registry
            .family("qwen3")
            .cloned()
            .unwrap_or_else(|| registry.default_spec().clone());
        StreamParser::new(&spec, "call-".into())
    }

    fn delta(delta: Value) -> String {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
    }

    fn run(parser: &mut StreamParser, payloads: &[String]) -> Vec<Chunk> {
        let mut out = Vec::new();
        for p in payloads {
            out.extend(parser.push(p).unwrap());
        }
        out
    }

    #[test]
    fn reasoning_fields_and_content_become_chunks() {
        let mut p = parser();
        let chunks = run(
            &mut p,
            &[
                delta(json!({"role": "assistant"})),
                delta(json!({"reasoning_content": "Think"})),
                delta(json!({"reasoning": " more."})),
                delta(json!({"content": "Answer."})),
                "[DONE]".into(),
            ],
        );
        assert_eq!(
            chunks,
            vec![
                Chunk::ReasoningStart,
                Chunk::ReasoningDelta("Think".into()),
                Chunk::ReasoningDelta(" more.".into()),
                Chunk::ReasoningEnd,
                Chunk::Text("Answer.".into()),
            ]
        );
        assert!(p.done());
    }

    #[test]
    fn inline_think_tags_in_content_are_split() {
        let mut p = parser();
        let mut chunks = run(
            &mut p,
            &[
                delta(json!({"content": "<thi"})),
                delta(json!({"content": "nk>Hmm</think>"})),
                delta(json!({"content": "Yes."})),
            ],
        );
        chunks.extend(p.finish());
        let reasoning: String = chunks
            .iter()
            .filter_map(|c| match c {
                Chunk::ReasoningDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let text: String = chunks
            .iter()
            .filter_map(|c| match c {
                Chunk::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning.trim(), "Hmm");
        assert_eq!(text.trim(), "Yes.");
    }

    #[test]
    fn tool_call_deltas_stream_and_end_with_the_stream() {
        let mut p = parser();
        let mut chunks = run(
            &mut p,
            &[
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                    "function": {"name": "get_weather", "arguments": ""}}]}),
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Rome\"}"}}]}),
                ),
            ],
        );
        chunks.extend(p.push("[DONE]").unwrap());
        assert_eq!(
            chunks[0],
            Chunk::ToolCallStart {
                id: "c1".into(),
                name: "get_weather".into()
            }
        );
        let Some(Chunk::ToolCallEnd(call)) = chunks.last() else {
            panic!("no end: {chunks:?}");
        };
        assert_eq!(call.arguments, "{\"city\":\"Rome\"}");
        assert_eq!(call.problem, None);
    }

    #[test]
    fn cut_off_arguments_are_truncated_and_errors_name_no_text() {
        let mut p = parser();
        run(
            &mut p,
            &[delta(
                json!({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{\"a\": \"secr"}}]}),
            )],
        );
        p.push(
            &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}).to_string(),
        )
        .unwrap();
        let end = p.finish();
        assert!(matches!(
            end.last(),
            Some(Chunk::ToolCallEnd(ToolCall {
                problem: Some(ToolCallProblem::Truncated),
                ..
            }))
        ));
        let err = parser()
            .push(r#"{"error": {"message": "secret prompt text", "type": "invalid_request_error", "code": 400}}"#)
            .unwrap_err();
        assert_eq!(err.code(), "UPSTREAM_ERROR");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(err.to_string().contains("invalid_request_error"), "{err}");
        let err = parser().push("{not json").unwrap_err();
        assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
    }

    #[test]
    fn usage_is_read_and_the_request_carries_replayed_reasoning() {
        let mut p = parser();
        p.push(r#"{"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 3}}}"#)
            .unwrap();
        assert_eq!(
            p.usage(),
            Some(UpstreamUsage {
                input: 7,
                output: 5,
                reasoning: Some(3)
            })
        );

        let mut assistant = TemplateMessage::new("assistant", "No.");
        assistant.reasoning_content = Some("91 = 7 x 13".into());
        let turns = [TemplateMessage::new("user", "Is 91 prime?"), assistant];
        let sampling = SamplingParams::greedy();
        let body = request_body(
            "m",
            &UpstreamRequest {
                turns: &turns,
                blocks: &[],
                tools: &[],
                sampling: &sampling,
                max_tokens: 9,
                thinking: false,
                effort: None,
                budget: 0,
            },
        );
        assert_eq!(body["messages"][1]["reasoning_content"], "91 = 7 x 13");
        assert_eq!(body["reasoning_effort"], "none");
        assert_eq!(body["max_tokens"], 9);
        assert_eq!(body["stream"], true);
    }
}
