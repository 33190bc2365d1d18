//! The chat completions stream: each `data:` payload's delta as chunks
//! (reasoning fields, content split at text level, indexed tool-call
//! deltas), the content's token log-probabilities when asked, the finish
//! reason and the usage chunk.
//!
//! A tool call's `function.name` may arrive in fragments (the wire does not
//! promise it whole in the call's first delta), so a call starts only once
//! its name is known whole: with its first arguments fragment, when another
//! call opens, when the choice finishes, or at the stream's end. The
//! arguments that came before are sent just after the start.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use thinkwire_reasoning::{Chunk, FormatSpec, Splitter};

use super::{UpstreamUsage, finished_call, refused_in_stream, upstream_logprobs};
use crate::logprob_entries::{Held, Seen};
use crate::upstream::{MAX_TOOL_CALLS, UpstreamError, UpstreamOutput, too_many_calls};

/// Longest tool name accepted (OpenAI allows 64 characters; this only
/// bounds what a runaway stream can make the parser hold).
const MAX_NAME_BYTES: usize = 4096;

/// Most arguments a call may gather before it has any name (held, not
/// sent): past it, a name is not coming.
const MAX_NAMELESS_ARGUMENT_BYTES: usize = 1 << 20;

/// A tool call being streamed.
struct OpenCall {
    id: String,
    /// The name's fragments so far.
    name: String,
    /// Every arguments fragment so far, those held before the start too.
    arguments: String,
    /// `TOOL_CALL_START` went out: the name is whole (see the module docs).
    started: bool,
}

impl OpenCall {
    /// `TOOL_CALL_START` with the whole name, then the arguments that
    /// arrived while the name was held.
    fn start(&mut self, chunks: &mut Vec<Chunk>) {
        self.started = true;
        chunks.push(Chunk::ToolCallStart {
            id: self.id.clone(),
            name: self.name.clone(),
        });
        if !self.arguments.is_empty() {
            chunks.push(Chunk::ToolCallArgs {
                id: self.id.clone(),
                delta: self.arguments.clone(),
            });
        }
    }
}

/// Turns the stream's `data:` payloads into chunks.
pub struct StreamParser {
    splitter: Splitter,
    in_reasoning: bool,
    /// The calls in the order they opened.
    calls: Vec<OpenCall>,
    /// Each delta `index`'s latest call (a position in `calls`).
    by_index: BTreeMap<u64, usize>,
    /// Each call id's latest call (a position in `calls`), so a delta
    /// found by its id costs no scan of the calls.
    by_id: HashMap<String, usize>,
    /// Calls whose name began and that may not have started yet, as
    /// positions in `calls`: all another call's opening has to look at.
    named: Vec<usize>,
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
            by_id: HashMap::new(),
            named: Vec::new(),
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

    /// What the upstream counted so far: its usage chunk (the last, with
    /// `stream_options.include_usage`), or the latest of the counts some
    /// servers send with every chunk (vLLM's and SGLang's
    /// `continuous_usage_stats`); `None` before any.
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
        let finished = choice.get("finish_reason").and_then(Value::as_str);
        if let Some(reason) = finished {
            self.finish_reason = Some(reason.to_owned());
        }
        if let Some(delta) = choice.get("delta") {
            self.read_delta(choice, delta, entries, &mut chunks)?;
        }
        if finished.is_some() {
            // The choice finished: every name it streamed is whole.
            self.start_named(&mut chunks);
        }
        Ok(chunks)
    }

    /// One choice's `delta`: its reasoning, content and tool-call chunks
    /// into `chunks`.
    fn read_delta(
        &mut self,
        choice: &Value,
        delta: &Value,
        entries: &mut Vec<Value>,
        chunks: &mut Vec<Chunk>,
    ) -> Result<(), UpstreamError> {
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
            self.end_reasoning(chunks);
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
            self.end_reasoning(chunks);
            for call in calls {
                self.push_call(call, chunks)?;
            }
        }
        Ok(())
    }

    /// Ends the stream as stopped at its token limit (its output passed
    /// what the request allows): what is open closes, a call's unfinished
    /// arguments truncated.
    pub fn cut_at_length(&mut self) -> Vec<UpstreamOutput> {
        self.finish_reason = Some("length".into());
        self.finish()
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
        self.by_id.clear();
        self.named.clear();
        for mut call in std::mem::take(&mut self.calls) {
            if !call.started {
                call.start(&mut chunks);
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

    /// Starts every call not yet started whose name has begun: its name
    /// is whole now (another call opens, or the choice finished). Only
    /// the calls named since the last time are looked at, in the order
    /// they opened, so each call costs this once.
    fn start_named(&mut self, chunks: &mut Vec<Chunk>) {
        if self.named.is_empty() {
            return;
        }
        let mut named = std::mem::take(&mut self.named);
        named.sort_unstable();
        for at in named {
            if let Some(call) = self.calls.get_mut(at)
                && !call.started
            {
                call.start(chunks);
            }
        }
    }

    fn push_call(&mut self, delta: &Value, chunks: &mut Vec<Chunk>) -> Result<(), UpstreamError> {
        let function = delta.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let at = match self.continued(delta) {
            Some(at) => at,
            None => {
                // Another call opens: the names of those before it are whole.
                self.start_named(chunks);
                self.open_call(delta)?
            }
        };
        let Some(call) = self.calls.get_mut(at) else {
            return Err(UpstreamError::Protocol("a tool call went missing".into()));
        };
        // Some servers (Fireworks, NIM) send the whole name again with
        // every delta: a fragment that is the name held so far says it
        // again, and is not more of it.
        if let Some(name) = name.filter(|name| *name != call.name) {
            // Its start named it whole; more of it would make the end
            // name another tool than the start did.
            if call.started {
                return Err(UpstreamError::Protocol(
                    "a tool call's name went on after the call started".into(),
                ));
            }
            if call.name.is_empty() {
                self.named.push(at);
            }
            call.name.push_str(name);
            if call.name.len() > MAX_NAME_BYTES {
                return Err(UpstreamError::Protocol("a tool name is too long".into()));
            }
        }
        if arguments.is_empty() {
            return Ok(());
        }
        call.arguments.push_str(arguments);
        if call.name.is_empty() && call.arguments.len() > MAX_NAMELESS_ARGUMENT_BYTES {
            return Err(UpstreamError::Protocol(
                "a tool call's arguments went on without a name".into(),
            ));
        }
        if call.started {
            chunks.push(Chunk::ToolCallArgs {
                id: call.id.clone(),
                delta: arguments.to_owned(),
            });
        } else if !call.name.is_empty() {
            // Its first arguments: the name before them is whole.
            call.start(chunks);
        }
        Ok(())
    }

    /// The position in `calls` of the call `delta` continues, if any. A
    /// delta continues the call at its `index` unless it names another id
    /// there; servers that send no `index` (or 0 for every call) are told
    /// apart by the `id` a call's first delta carries, and an index-less
    /// delta without one continues the latest call.
    fn continued(&self, delta: &Value) -> Option<usize> {
        let (index, id) = call_key(delta);
        let open = match index {
            Some(index) => self.by_index.get(&index).copied(),
            None => match id {
                Some(id) => self.by_id.get(id).copied(),
                None => self.calls.len().checked_sub(1),
            },
        };
        open.filter(|&at| id.is_none_or(|id| self.calls.get(at).is_some_and(|c| c.id == id)))
    }

    /// Opens the call `delta` begins; its position in `calls`. A call
    /// without an upstream id gets the call prefix and its position. Past
    /// [`MAX_TOOL_CALLS`] the stream is malformed.
    fn open_call(&mut self, delta: &Value) -> Result<usize, UpstreamError> {
        let at = self.calls.len();
        if at >= MAX_TOOL_CALLS {
            return Err(too_many_calls());
        }
        let (index, id) = call_key(delta);
        let prefix = &self.call_prefix;
        let id = id.map_or_else(|| format!("{prefix}{at}"), str::to_owned);
        self.by_id.insert(id.clone(), at);
        self.calls.push(OpenCall {
            id,
            name: String::new(),
            arguments: String::new(),
            started: false,
        });
        if let Some(index) = index {
            self.by_index.insert(index, at);
        }
        Ok(at)
    }
}

/// A tool-call delta's `index` and non-empty `id`, as far as it has them.
fn call_key(delta: &Value) -> (Option<u64>, Option<&str>) {
    let index = delta.get("index").and_then(Value::as_u64);
    let id = delta
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty());
    (index, id)
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
