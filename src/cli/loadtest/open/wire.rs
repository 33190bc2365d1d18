//! The two kinds of server an open-loop load speaks to: thinkwire's AG-UI
//! `POST /agent` (SSE) and any OpenAI-compatible streaming
//! `/v1/chat/completions` (thinkwire's own, llama.cpp's `llama-server`,
//! `mlx_lm.server`). Each turns a planned conversation into a request body
//! and its response stream into the same [`Signal`]s, so one recorder
//! times every server alike.

use serde_json::{Map, Value, json};
use thinkwire_protocol::{EventKind, SseDecoder, decode_event};

use super::mix::{Message, Role};

/// Which API the load speaks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// thinkwire's AG-UI `POST /agent`, answered as SSE.
    Agui,
    /// OpenAI chat completions, `POST /v1/chat/completions` with `stream: true`.
    Openai,
}

impl Target {
    /// The path requests go to under the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Target::Agui => "/agent",
            Target::Openai => "/v1/chat/completions",
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Target::Agui => "agui",
            Target::Openai => "openai",
        }
    }
}

/// What every request carries besides its conversation.
#[derive(Debug, Clone)]
pub struct RequestShape {
    /// The API.
    pub target: Target,
    /// Most tokens a request may generate.
    pub max_tokens: u32,
    /// The `model` field of OpenAI requests.
    pub model: String,
    /// Merged over each request's defaults: the OpenAI body's top level, or
    /// AG-UI's `forwardedProps`.
    pub extra: Value,
}

impl RequestShape {
    /// The body of request `index` for `messages`: greedy, streamed,
    /// capped at `max_tokens`.
    pub fn body(&self, index: usize, messages: &[Message]) -> Value {
        match self.target {
            Target::Openai => {
                let messages: Vec<Value> = messages
                    .iter()
                    .map(|m| json!({"role": role(m.role), "content": m.text}))
                    .collect();
                let mut body = json!({
                    "model": self.model,
                    "messages": messages,
                    "stream": true,
                    "stream_options": {"include_usage": true},
                    "max_tokens": self.max_tokens,
                    "temperature": 0.0,
                });
                merge(&mut body, &self.extra);
                body
            }
            Target::Agui => {
                let thread = format!("open-{index}");
                let messages: Vec<Value> = messages
                    .iter()
                    .enumerate()
                    .map(|(i, m)| {
                        json!({"id": format!("{thread}-m{i}"), "role": role(m.role), "content": m.text})
                    })
                    .collect();
                let mut props = json!({
                    "sampling": {"maxTokens": self.max_tokens, "temperature": 0.0},
                });
                merge(&mut props, &self.extra);
                json!({
                    "threadId": thread,
                    "runId": format!("{thread}-run"),
                    "messages": messages,
                    "tools": [],
                    "context": [],
                    "state": {},
                    "forwardedProps": props,
                })
            }
        }
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// `over`'s fields into `base`, objects merged key by key, anything else
/// replaced.
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => merge_objects(base, over),
        (base, over) if !over.is_null() => *base = over.clone(),
        _ => {}
    }
}

fn merge_objects(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (key, value) in over {
        match base.get_mut(key) {
            Some(slot) => merge(slot, value),
            None => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// What a response stream said, in the order it said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// A piece of generated text (answer, reasoning or tool arguments).
    Content,
    /// The server's token counts.
    Usage {
        /// Prompt tokens.
        prompt: Option<u64>,
        /// Generated tokens.
        completion: Option<u64>,
    },
    /// The generation ended normally.
    Done,
    /// The server declined the request for load (`SERVER_BUSY`).
    Refused(String),
    /// The request failed; a short fixed key (never the server's text).
    Failed(String),
}

/// Reads one response stream into [`Signal`]s, bytes as they arrive.
pub struct StreamReader {
    target: Target,
    sse: SseDecoder,
    /// OpenAI: a `finish_reason` was seen, so a stream that closes without
    /// `[DONE]` still finished.
    finished: bool,
}

impl StreamReader {
    /// A reader for `target`'s stream.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            sse: SseDecoder::new(),
            finished: false,
        }
    }

    /// Whether the stream has said enough to count as finished if it
    /// closes now.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The signals in `chunk`.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Signal> {
        let mut out = Vec::new();
        for message in self.sse.push(chunk) {
            match self.target {
                Target::Openai => self.openai(&message.data, &mut out),
                Target::Agui => agui(&message.data, &mut out),
            }
        }
        out
    }

    fn openai(&mut self, data: &str, out: &mut Vec<Signal>) {
        let data = data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            out.push(Signal::Done);
            return;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            out.push(Signal::Failed("decode".into()));
            return;
        };
        if let Some(error) = chunk.get("error") {
            let code = error
                .get("code")
                .or_else(|| error.get("type"))
                .map(short_key)
                .unwrap_or_else(|| "error".into());
            out.push(Signal::Failed(format!("stream_error:{code}")));
            return;
        }
        let choice = chunk.get("choices").and_then(|c| c.get(0));
        if let Some(delta) = choice.and_then(|c| c.get("delta")) {
            let text = |key: &str| {
                delta
                    .get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            let tool_args = delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|calls| !calls.is_empty());
            if text("content") || text("reasoning_content") || text("reasoning") || tool_args {
                out.push(Signal::Content);
            }
        }
        if choice
            .and_then(|c| c.get("finish_reason"))
            .is_some_and(|r| !r.is_null())
        {
            self.finished = true;
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64);
            out.push(Signal::Usage {
                prompt: count("prompt_tokens"),
                completion: count("completion_tokens"),
            });
        }
    }
}

fn agui(data: &str, out: &mut Vec<Signal>) {
    let event = match decode_event(data) {
        Ok(Some(event)) => event,
        Ok(None) => return,
        Err(_) => {
            out.push(Signal::Failed("decode".into()));
            return;
        }
    };
    match &event.kind {
        EventKind::TextMessageContent(_)
        | EventKind::TextMessageChunk(_)
        | EventKind::ReasoningMessageContent(_)
        | EventKind::ReasoningMessageChunk(_)
        | EventKind::ToolCallArgs(_) => out.push(Signal::Content),
        EventKind::RunFinished(finished) => {
            if let Some(usage) = finished.usage.as_ref().and_then(|u| u.first()) {
                out.push(Signal::Usage {
                    prompt: usage.input_tokens,
                    completion: usage.output_tokens,
                });
            }
            out.push(Signal::Done);
        }
        EventKind::RunError(error) => {
            let code = error.code.as_deref().unwrap_or("none");
            if code == "SERVER_BUSY" {
                out.push(Signal::Refused(format!("run_error:{code}")));
            } else {
                out.push(Signal::Failed(format!(
                    "run_error:{}",
                    short_key(&json!(code))
                )));
            }
        }
        _ => {}
    }
}

/// A server-chosen code as a short report key: ASCII letters, digits, `_`
/// and `-` only, at most 40 characters (a server's free text never
/// reaches the report).
fn short_key(value: &Value) -> String {
    let raw = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return "error".into(),
    };
    let key: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(40)
        .collect();
    if key.is_empty() { "error".into() } else { key }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(target: Target, extra: Value) -> RequestShape {
        RequestShape {
            target,
            max_tokens: 32,
            model: "default_model".into(),
            extra,
        }
    }

    fn convo() -> Vec<Message> {
        vec![
            Message {
                role: Role::User,
                text: "Hi".into(),
            },
            Message {
                role: Role::Assistant,
                text: "Hello".into(),
            },
            Message {
                role: Role::User,
                text: "More".into(),
            },
        ]
    }

    #[test]
    fn openai_bodies_stream_capped_with_extras_over_defaults() {
        let body = shape(
            Target::Openai,
            json!({"reasoning_effort": "none", "temperature": 0.7}),
        )
        .body(3, &convo());
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 32);
        assert_eq!(body["temperature"], 0.7);
        assert_eq!(body["reasoning_effort"], "none");
        assert_eq!(body["model"], "default_model");
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": "Hello"})
        );
    }

    #[test]
    fn agui_bodies_are_run_inputs_with_merged_forwarded_props() {
        let body = shape(
            Target::Agui,
            json!({"reasoning": {"visibility": "off"}, "sampling": {"topP": 0.9}}),
        )
        .body(7, &convo());
        assert_eq!(body["threadId"], "open-7");
        assert_eq!(body["messages"][2]["role"], "user");
        assert_eq!(body["messages"][2]["id"], "open-7-m2");
        let props = &body["forwardedProps"];
        assert_eq!(
            props["sampling"],
            json!({"maxTokens": 32, "temperature": 0.0, "topP": 0.9})
        );
        assert_eq!(props["reasoning"]["visibility"], "off");
        assert!(thinkwire_protocol::decode_run_agent_input(body.to_string().as_bytes()).is_ok());
    }

    #[test]
    fn openai_streams_give_content_usage_and_done() {
        let mut r = StreamReader::new(Target::Openai);
        let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        assert!(r.push(first.as_bytes()).is_empty());
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"He\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"x\"}}]}\n\n",
            ": keep-alive\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n",
        );
        // Split mid-message: the decoder holds partial lines.
        let (a, b) = stream.as_bytes().split_at(37);
        let mut signals = r.push(a);
        signals.extend(r.push(b));
        assert_eq!(
            signals,
            vec![
                Signal::Content,
                Signal::Content,
                Signal::Usage {
                    prompt: Some(12),
                    completion: Some(2)
                },
                Signal::Done,
            ]
        );
        assert!(r.finished());
        let mut r = StreamReader::new(Target::Openai);
        let error = "data: {\"error\":{\"code\":503,\"message\":\"secret prompt text\"}}\n\n";
        assert_eq!(
            r.push(error.as_bytes()),
            vec![Signal::Failed("stream_error:503".into())]
        );
        assert_eq!(
            r.push(b"data: nope\n\n"),
            vec![Signal::Failed("decode".into())]
        );
    }

    #[test]
    fn agui_streams_give_content_usage_done_and_refusals() {
        let mut r = StreamReader::new(Target::Agui);
        let stream = concat!(
            "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
            "data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n",
            "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"Hi\"}\n\n",
            "data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}\n\n",
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"usage\":[{\"inputTokens\":9,\"outputTokens\":1,\"totalTokens\":10,\"reasoningTokens\":0}]}\n\n",
        );
        assert_eq!(
            r.push(stream.as_bytes()),
            vec![
                Signal::Content,
                Signal::Usage {
                    prompt: Some(9),
                    completion: Some(1)
                },
                Signal::Done,
            ]
        );
        let busy =
            "data: {\"type\":\"RUN_ERROR\",\"message\":\"busy\",\"code\":\"SERVER_BUSY\"}\n\n";
        assert_eq!(
            r.push(busy.as_bytes()),
            vec![Signal::Refused("run_error:SERVER_BUSY".into())]
        );
        let other =
            "data: {\"type\":\"RUN_ERROR\",\"message\":\"x\",\"code\":\"INTERNAL ERROR!\"}\n\n";
        assert_eq!(
            r.push(other.as_bytes()),
            vec![Signal::Failed("run_error:INTERNALERROR".into())]
        );
    }
}
