//! From what the model produced to AG-UI events: one run's lifecycle, its
//! reasoning spans (shown per visibility, sealed at their end), its answer
//! text and its tool calls.
//!
//! Order per reasoning block: `REASONING_START`, `REASONING_MESSAGE_START`,
//! content (streamed in `full`, the summary in `summary`, none in `hidden`),
//! `REASONING_MESSAGE_END`, `REASONING_ENCRYPTED_VALUE` for that message id,
//! `REASONING_END`. The message exists even when empty, because the official
//! client drops an encrypted value whose entity it has not seen.
//!
//! Tool calls (documented behaviour, see docs/protocol.md):
//! - a call to an offered tool streams as `TOOL_CALL_START`/`ARGS`/`END`
//!   and is listed in `RUN_FINISHED.outcome.pendingToolCallIds`;
//! - a call whose arguments turn out malformed still ends (`TOOL_CALL_END`),
//!   is followed by a `CUSTOM` `thinkwire.tool_call_invalid` event, and is
//!   not pending;
//! - a call to a tool that was not offered is not streamed as a tool call;
//!   a `CUSTOM` `thinkwire.tool_call_rejected` event names it instead.

use std::collections::BTreeSet;

use serde_json::json;
use thinkwire_protocol::{
    Custom, Event, Outcome, ReasoningEncryptedValue, ReasoningEnd, ReasoningMessageContent,
    ReasoningMessageEnd, ReasoningMessageStart, ReasoningStart, RunError, RunFinished, RunStarted,
    TextMessageContent, TextMessageEnd, TextMessageStart, TokenUsage, ToolCallArgs, ToolCallEnd,
    ToolCallStart,
};
use thinkwire_reasoning::{Chunk, MalformedKind, ToolCall};
use thinkwire_seal::{Binding, KeyRing, SealedReasoning};

use super::controls::Visibility;
use super::output::{Disconnected, RunOutput};

/// Names of thinkwire's `CUSTOM` events.
pub mod custom {
    /// A sealed reasoning value from the input was dropped (drop mode).
    pub const REASONING_DROPPED: &str = "thinkwire.reasoning_dropped";
    /// The model called a tool that was not offered.
    pub const TOOL_CALL_REJECTED: &str = "thinkwire.tool_call_rejected";
    /// The model called an offered tool with malformed arguments.
    pub const TOOL_CALL_INVALID: &str = "thinkwire.tool_call_invalid";
    /// Model output that broke its format's syntax.
    pub const MALFORMED_OUTPUT: &str = "thinkwire.malformed_output";
}

/// What sealing needs besides the text.
pub(crate) struct SealContext<'a> {
    pub keys: &'a KeyRing,
    pub model_id: &'a str,
    pub format_id: &'a str,
    pub ttl: Option<std::time::Duration>,
}

struct OpenReasoning {
    span_id: String,
    message_id: String,
    text: String,
}

/// Builds one run's event stream.
pub(crate) struct RunEvents<'a> {
    out: &'a mut RunOutput,
    thread_id: String,
    run_id: String,
    visibility: Visibility,
    seal: SealContext<'a>,
    offered_tools: BTreeSet<String>,
    assistant_id: String,
    text_open: bool,
    reasoning: Option<OpenReasoning>,
    /// Calls streamed to the client and still open (their ids).
    open_calls: BTreeSet<String>,
    /// Calls the model made that were not offered: swallowed until they end.
    rejected_calls: BTreeSet<String>,
    pending_calls: Vec<String>,
    reasoning_blocks: usize,
}

impl<'a> RunEvents<'a> {
    pub(crate) fn new(
        out: &'a mut RunOutput,
        thread_id: &str,
        run_id: &str,
        visibility: Visibility,
        seal: SealContext<'a>,
        offered_tools: impl IntoIterator<Item = String>,
    ) -> Self {
        Self {
            out,
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            visibility,
            seal,
            offered_tools: offered_tools.into_iter().collect(),
            assistant_id: new_id("msg"),
            text_open: false,
            reasoning: None,
            open_calls: BTreeSet::new(),
            rejected_calls: BTreeSet::new(),
            pending_calls: Vec::new(),
            reasoning_blocks: 0,
        }
    }

    /// The output, for cancellation checks.
    pub(crate) fn output(&self) -> &RunOutput {
        self.out
    }

    /// `RUN_STARTED`.
    pub(crate) fn started(&mut self) -> Result<(), Disconnected> {
        let mut started = RunStarted::new(&self.thread_id, &self.run_id);
        started.protocol_version = Some("1.0".into());
        self.out.emit(started)
    }

    /// A visible warning that is not an error.
    pub(crate) fn custom(
        &mut self,
        name: &str,
        value: serde_json::Value,
    ) -> Result<(), Disconnected> {
        self.out.emit(Custom {
            name: name.to_owned(),
            value,
        })
    }

    /// Whether reasoning is shown at all (`off` shows none).
    fn reasoning_shown(&self) -> bool {
        self.visibility != Visibility::Off
    }

    /// Handles one chunk of model output.
    pub(crate) fn chunk(&mut self, chunk: Chunk) -> Result<(), Disconnected> {
        match chunk {
            Chunk::ReasoningStart => self.reasoning_start(),
            Chunk::ReasoningDelta(delta) => self.reasoning_delta(&delta),
            Chunk::ReasoningEnd => self.reasoning_end(None),
            Chunk::Text(text) => self.text(&text),
            Chunk::ToolCallStart { id, name } => self.tool_call_start(id, name),
            Chunk::ToolCallArgs { id, delta } => {
                if self.open_calls.contains(&id) && !delta.is_empty() {
                    self.out.emit(ToolCallArgs {
                        tool_call_id: id,
                        delta,
                    })?;
                }
                Ok(())
            }
            Chunk::ToolCallEnd(call) => self.tool_call_end(call),
            Chunk::Malformed(malformed) => {
                let kind = match malformed.kind {
                    MalformedKind::StrayCloseTag => "stray_close_tag",
                    MalformedKind::ToolCall => "tool_call",
                    MalformedKind::HarmonyHeader => "harmony_header",
                    MalformedKind::OutsideMessage => "outside_message",
                };
                self.custom(custom::MALFORMED_OUTPUT, json!({ "kind": kind }))?;
                // Broken syntax is shown to the user as answer text rather
                // than lost; a stray close tag has nothing left to show.
                if malformed.kind != MalformedKind::StrayCloseTag {
                    self.text(&malformed.raw)?;
                }
                Ok(())
            }
        }
    }

    /// Opens a reasoning block.
    pub(crate) fn reasoning_start(&mut self) -> Result<(), Disconnected> {
        if self.reasoning.is_some() {
            return Ok(());
        }
        self.reasoning_blocks += 1;
        let open = OpenReasoning {
            span_id: new_id("reasoning"),
            message_id: new_id("reasoning-msg"),
            text: String::new(),
        };
        if self.reasoning_shown() {
            self.out.emit(ReasoningStart {
                message_id: open.span_id.clone(),
            })?;
            self.out
                .emit(ReasoningMessageStart::new(open.message_id.clone()))?;
        }
        self.reasoning = Some(open);
        Ok(())
    }

    /// More reasoning text.
    pub(crate) fn reasoning_delta(&mut self, delta: &str) -> Result<(), Disconnected> {
        if delta.is_empty() {
            return Ok(());
        }
        if self.reasoning.is_none() {
            self.reasoning_start()?;
        }
        let stream = self.visibility == Visibility::Full;
        let Some(open) = self.reasoning.as_mut() else {
            return Ok(());
        };
        open.text.push_str(delta);
        if stream {
            let message_id = open.message_id.clone();
            self.out.emit(ReasoningMessageContent {
                message_id,
                delta: delta.to_owned(),
            })?;
        }
        Ok(())
    }

    /// The reasoning text of the open block so far.
    pub(crate) fn open_reasoning_text(&self) -> Option<&str> {
        self.reasoning.as_ref().map(|r| r.text.as_str())
    }

    /// Whether a reasoning block is open.
    pub(crate) fn reasoning_open(&self) -> bool {
        self.reasoning.is_some()
    }

    /// Closes the open reasoning block: content per visibility (`summary`
    /// shows `summary`), end of message, sealed value, end of span.
    pub(crate) fn reasoning_end(&mut self, summary: Option<&str>) -> Result<(), Disconnected> {
        let Some(open) = self.reasoning.take() else {
            return Ok(());
        };
        if !self.reasoning_shown() {
            return Ok(());
        }
        if self.visibility == Visibility::Summary
            && let Some(summary) = summary.filter(|s| !s.is_empty())
        {
            self.out.emit(ReasoningMessageContent {
                message_id: open.message_id.clone(),
                delta: summary.to_owned(),
            })?;
        }
        self.out.emit(ReasoningMessageEnd {
            message_id: open.message_id.clone(),
        })?;
        if !open.text.is_empty() {
            let binding = Binding::new(&self.thread_id, &open.message_id);
            let mut sealed = SealedReasoning::new(
                open.text.as_str(),
                self.seal.model_id,
                self.seal.format_id,
                thinkwire_seal::now_unix_ms(),
            );
            if let Some(ttl) = self.seal.ttl {
                sealed = sealed.with_ttl(ttl);
            }
            match self.seal.keys.seal(&sealed, binding) {
                Ok(value) => self
                    .out
                    .emit(ReasoningEncryptedValue::message(&open.message_id, value))?,
                // Sealing only fails if the OS RNG does; continuity of this
                // block is lost, visibly.
                Err(err) => {
                    tracing::error!(error = %err, "sealing reasoning failed");
                    self.custom(
                        custom::REASONING_DROPPED,
                        json!({ "messageId": open.message_id, "reason": "sealing failed" }),
                    )?;
                }
            }
        }
        self.out.emit(ReasoningEnd {
            message_id: open.span_id,
        })
    }

    /// Answer text.
    pub(crate) fn text(&mut self, text: &str) -> Result<(), Disconnected> {
        if text.is_empty() {
            return Ok(());
        }
        if !self.text_open {
            self.out
                .emit(TextMessageStart::assistant(self.assistant_id.clone()))?;
            self.text_open = true;
        }
        self.out.emit(TextMessageContent {
            message_id: self.assistant_id.clone(),
            delta: text.to_owned(),
        })
    }

    fn tool_call_start(&mut self, id: String, name: String) -> Result<(), Disconnected> {
        if !self.offered_tools.contains(&name) {
            self.rejected_calls.insert(id);
            return Ok(());
        }
        self.out.emit(ToolCallStart {
            tool_call_id: id.clone(),
            tool_call_name: name,
            parent_message_id: Some(self.assistant_id.clone()),
        })?;
        self.open_calls.insert(id);
        Ok(())
    }

    fn tool_call_end(&mut self, call: ToolCall) -> Result<(), Disconnected> {
        if self.rejected_calls.remove(&call.id) || !self.offered_tools.contains(&call.name) {
            return self.custom(
                custom::TOOL_CALL_REJECTED,
                json!({
                    "toolCallId": call.id,
                    "toolCallName": call.name,
                    "reason": "the model called a tool that was not offered",
                }),
            );
        }
        if !self.open_calls.remove(&call.id) {
            // A call whose start we never saw: start it now so it is whole.
            self.tool_call_start(call.id.clone(), call.name.clone())?;
            self.open_calls.remove(&call.id);
            if !call.arguments.is_empty() {
                self.out.emit(ToolCallArgs {
                    tool_call_id: call.id.clone(),
                    delta: call.arguments.clone(),
                })?;
            }
        }
        self.out.emit(ToolCallEnd {
            tool_call_id: call.id.clone(),
        })?;
        match call.validate(self.offered_tools.iter().map(String::as_str)) {
            Ok(_) => {
                self.pending_calls.push(call.id);
                Ok(())
            }
            Err(problem) => self.custom(
                custom::TOOL_CALL_INVALID,
                json!({ "toolCallId": call.id, "problem": problem.to_string() }),
            ),
        }
    }

    /// Closes whatever is open, in a valid order.
    fn close_open(&mut self) -> Result<(), Disconnected> {
        self.reasoning_end(None)?;
        for id in std::mem::take(&mut self.open_calls) {
            self.out.emit(ToolCallEnd { tool_call_id: id })?;
        }
        if self.text_open {
            self.text_open = false;
            self.out.emit(TextMessageEnd {
                message_id: self.assistant_id.clone(),
            })?;
        }
        Ok(())
    }

    /// Ends the run normally (or cancelled), with usage.
    pub(crate) fn finished(
        &mut self,
        cancelled: bool,
        usage: TokenUsage,
    ) -> Result<(), Disconnected> {
        self.close_open()?;
        let mut finished = RunFinished::new(&self.thread_id, &self.run_id);
        finished.outcome = Some(if cancelled {
            Outcome::Cancelled
        } else {
            Outcome::Success {
                pending_tool_call_ids: (!self.pending_calls.is_empty())
                    .then(|| self.pending_calls.clone()),
            }
        });
        finished.usage = Some(vec![usage]);
        self.out.emit(finished)
    }

    /// Ends the run with an error. Nothing follows it, so nothing needs
    /// closing first.
    pub(crate) fn failed(&mut self, message: &str, code: &str) -> Result<(), Disconnected> {
        self.out.emit(Event::new(RunError::new(message, code)))
    }
}

/// A fresh, unguessable id: `prefix-` and 128 random bits in hex.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}
