//! The chat completions stream: each `data:` payload's delta as chunks
//! (reasoning fields, content split at text level, indexed tool-call
//! deltas), the content's token log-probabilities when asked, the finish
//! reason and the usage chunk.

use std::collections::BTreeMap;

use serde_json::Value;
use thinkwire_reasoning::{Chunk, FormatSpec, Splitter};

use super::{UpstreamUsage, finished_call, refused_in_stream, upstream_logprobs};
use crate::logprob_entries::{Held, Seen};
use crate::upstream::{UpstreamError, UpstreamOutput};

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
    /// The calls in the order they opened.
    calls: Vec<OpenCall>,
    /// Each delta `index`'s latest call (a position in `calls`).
    by_index: BTreeMap<u64, usize>,
    call_prefix: String,
    finish_reason: Option<String>,
    usage: Option<UpstreamUsage>,
    done: bool,
    /// Alternatives per content token the run asked for; `None`: none.
    logprobs: Option<usize>,
    /// Entries of content the splitter holds.
    held: Held,
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
            calls: Vec::new(),
            by_index: BTreeMap::new(),
            call_prefix,
            finish_reason: None,
            usage: None,
            done: false,
            logprobs: None,
            held: Held::default(),
        }
    }

    /// Reads the content's token log-probabilities (`logprobs.content`),
    /// `top` alternatives each, and sends them ahead of the text they
    /// wrote.
    pub fn reporting_logprobs(mut self, top: Option<usize>) -> Self {
        self.logprobs = top;
        self
    }

    /// Whether `[DONE]` arrived.
    pub fn done(&self) -> bool {
        self.done
    }

    /// What the upstream counted, once its usage chunk arrived.
    pub fn usage(&self) -> Option<UpstreamUsage> {
        self.usage
    }

    /// Whether the upstream stopped at its token limit.
    pub fn cut_off(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }

    /// Why the upstream stopped (`stop`, `length`, `tool_calls`), if it
    /// said.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// One `data:` payload.
    pub fn push(&mut self, data: &str) -> Result<Vec<UpstreamOutput>, UpstreamError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(self.finish());
        }
        let mut entries = Vec::new();
        let chunks = self.read(data, &mut entries)?;
        Ok(ahead_of_text(chunks, entries))
    }

    /// A payload's chunks; `entries`: the log-probabilities to send ahead
    /// of their text.
    fn read(&mut self, data: &str, entries: &mut Vec<Value>) -> Result<Vec<Chunk>, UpstreamError> {
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
            let split = self.splitter.push(content);
            if let Some(top) = self.logprobs {
                let read =
                    upstream_logprobs(choice.get("logprobs").and_then(|l| l.get("content")), top)?;
                let in_answer = !self.splitter.in_reasoning() && !self.splitter.in_tool_call();
                entries.extend(self.held.wrote(read, &split, Seen::Tags { in_answer }));
            }
            chunks.extend(split);
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
    pub fn finish(&mut self) -> Vec<UpstreamOutput> {
        let mut chunks = Vec::new();
        self.end_reasoning(&mut chunks);
        let split = self.splitter.finish();
        let entries = self.held.tail(&split);
        chunks.extend(split);
        let cut_off = self.finish_reason.as_deref() == Some("length");
        self.by_index.clear();
        for call in std::mem::take(&mut self.calls) {
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
        ahead_of_text(chunks, entries)
    }

    fn end_reasoning(&mut self, chunks: &mut Vec<Chunk>) {
        if std::mem::take(&mut self.in_reasoning) {
            chunks.push(Chunk::ReasoningEnd);
        }
    }

    fn push_call(&mut self, delta: &Value, chunks: &mut Vec<Chunk>) -> Result<(), UpstreamError> {
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let at = self.call_of(delta);
        let call = &mut self.calls[at];
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

    /// The position in `calls` of the call `delta` continues, opening a
    /// new one where it continues none. A delta continues the call at its
    /// `index` unless it names another id there; servers that send no
    /// `index` (or 0 for every call) are told apart by the `id` a call's
    /// first delta carries, and an index-less delta without one continues
    /// the latest call.
    fn call_of(&mut self, delta: &Value) -> usize {
        let index = delta.get("index").and_then(Value::as_u64);
        let id = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let open = match index {
            Some(index) => self.by_index.get(&index).copied(),
            None => match id {
                Some(id) => self.calls.iter().rposition(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let continued = open.filter(|&at| id.is_none_or(|id| self.calls[at].id == id));
        if let Some(at) = continued {
            return at;
        }
        let at = self.calls.len();
        let prefix = &self.call_prefix;
        self.calls.push(OpenCall {
            id: id.map_or_else(|| format!("{prefix}{at}"), str::to_owned),
            name: String::new(),
            arguments: String::new(),
            started: false,
        });
        if let Some(index) = index {
            self.by_index.insert(index, at);
        }
        at
    }
}

/// `chunks` as the stream's output, `entries` (if any) just ahead of the
/// first text among them.
fn ahead_of_text(chunks: Vec<Chunk>, entries: Vec<Value>) -> Vec<UpstreamOutput> {
    let mut out = Vec::with_capacity(chunks.len() + 1);
    let mut entries = Some(entries).filter(|e| !e.is_empty());
    for chunk in chunks {
        if matches!(chunk, Chunk::Text(_))
            && let Some(entries) = entries.take()
        {
            out.push(UpstreamOutput::Logprobs(entries));
        }
        out.push(UpstreamOutput::Chunk(chunk));
    }
    out
}

pub(in crate::upstream) fn read_usage(usage: &Value) -> UpstreamUsage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64);
    UpstreamUsage {
        input: count(usage.get("prompt_tokens")).unwrap_or(0),
        output: count(usage.get("completion_tokens")).unwrap_or(0),
        reasoning: count(
            usage
                .get("completion_tokens_details")
                .and_then(|d| d.get("reasoning_tokens")),
        ),
        cached: count(
            usage
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens")),
        )
        .unwrap_or(0),
    }
}
