//! AG-UI events for one run: its lifecycle, its reasoning spans (shown per
//! visibility, sealed at their end), its answer text and its tool calls.
//! Only emission lives here; what the model said is tracked by the pass
//! that produced it, which hands a reasoning message's text over to be
//! sealed when it ends.
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
use thinkwire_reasoning::{Malformed, MalformedKind, ToolCall};
use thinkwire_seal::{Binding, KeyRing, ProviderItem, SealedReasoning};

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
    /// The answer ended before it was whole; its `reason` is one of
    /// [`super::incomplete`].
    pub const OUTPUT_INCOMPLETE: &str = "thinkwire.output_incomplete";
    /// Answer tokens' log-probabilities (`forwardedProps.logprobs`).
    pub const LOGPROBS: &str = "thinkwire.logprobs";
}

/// Why an answer is incomplete (`thinkwire.output_incomplete`'s `reason`).
pub mod incomplete {
    /// The token limit (or the context's room) cut the answer off.
    pub const LENGTH: &str = "length";
    /// A constrained answer ended where its grammar may not, other than
    /// at the token limit (a stop token, or the grammar lifted), or does
    /// not validate against its schema.
    pub const CONSTRAINT: &str = "constraint";
}

/// `thinkwire.logprobs`'s value: `{messageId, <key>: entries}`, the
/// entries moved in (`json!` would serialize a copy of every entry, and a
/// scored prompt has one per token).
fn logprobs_value(
    message_id: &str,
    key: &str,
    entries: Vec<serde_json::Value>,
) -> serde_json::Value {
    let mut value = serde_json::Map::new();
    value.insert("messageId".into(), message_id.into());
    value.insert(key.into(), serde_json::Value::Array(entries));
    serde_json::Value::Object(value)
}

/// What sealing needs besides the text.
pub(crate) struct SealContext<'a> {
    pub keys: &'a KeyRing,
    pub model_id: &'a str,
    pub format_id: &'a str,
    pub ttl: Option<std::time::Duration>,
}

/// The ids of an open reasoning span and its message.
pub(crate) struct ReasoningMessage {
    span_id: String,
    message_id: String,
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
    /// Calls streamed to the client and still open (their ids).
    open_calls: BTreeSet<String>,
    /// Calls the model made that were not offered: swallowed until they end.
    rejected_calls: BTreeSet<String>,
    pending_calls: Vec<String>,
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
            open_calls: BTreeSet::new(),
            rejected_calls: BTreeSet::new(),
            pending_calls: Vec::new(),
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

    /// `thinkwire.output_incomplete` with its `reason` (one of
    /// [`incomplete`]), unless the run is stopping: an answer a client
    /// stopped is not called incomplete.
    pub(crate) fn incomplete(&mut self, reason: &str) -> Result<(), Disconnected> {
        if self.out.should_stop() {
            return Ok(());
        }
        self.custom(
            custom::OUTPUT_INCOMPLETE,
            serde_json::json!({ "reason": reason }),
        )
    }

    /// Answer tokens' log-probabilities (`entries` in OpenAI's shape),
    /// in the assistant message, ahead of the text that carries them.
    pub(crate) fn logprobs(&mut self, entries: Vec<serde_json::Value>) -> Result<(), Disconnected> {
        if entries.is_empty() {
            return Ok(());
        }
        self.open_text()?;
        let value = logprobs_value(&self.assistant_id, "content", entries);
        self.custom(custom::LOGPROBS, value)
    }

    /// A raw completion's prompt tokens' log-probabilities (`entries`,
    /// the first `null`), in the assistant message ahead of its text:
    /// `thinkwire.logprobs` with `prompt` instead of `content`.
    pub(crate) fn prompt_logprobs(
        &mut self,
        entries: Vec<serde_json::Value>,
    ) -> Result<(), Disconnected> {
        self.open_text()?;
        let value = logprobs_value(&self.assistant_id, "prompt", entries);
        self.custom(custom::LOGPROBS, value)
    }

    /// Whether reasoning is shown at all (`off` shows none).
    fn reasoning_shown(&self) -> bool {
        self.visibility != Visibility::Off
    }

    /// Opens a reasoning span and its message.
    pub(crate) fn reasoning_start(&mut self) -> Result<ReasoningMessage, Disconnected> {
        let message = ReasoningMessage {
            span_id: new_id("reasoning"),
            message_id: new_id("reasoning-msg"),
        };
        if self.reasoning_shown() {
            self.out.emit(ReasoningStart {
                message_id: message.span_id.clone(),
            })?;
            self.out
                .emit(ReasoningMessageStart::new(message.message_id.clone()))?;
        }
        Ok(message)
    }

    /// More reasoning text (streamed in `full` only).
    pub(crate) fn reasoning_delta(
        &mut self,
        message: &ReasoningMessage,
        delta: &str,
    ) -> Result<(), Disconnected> {
        if delta.is_empty() || self.visibility != Visibility::Full {
            return Ok(());
        }
        self.out.emit(ReasoningMessageContent {
            message_id: message.message_id.clone(),
            delta: delta.to_owned(),
        })
    }

    /// Closes a reasoning message whose whole text is `text`: content per
    /// visibility (`summary` shows `summary`), end of message, the sealed
    /// value of `text` (with the upstream provider's item, if any), end of
    /// span.
    pub(crate) fn reasoning_end(
        &mut self,
        message: ReasoningMessage,
        text: &str,
        provider: Option<ProviderItem>,
        summary: Option<&str>,
    ) -> Result<(), Disconnected> {
        if !self.reasoning_shown() {
            return Ok(());
        }
        if self.visibility == Visibility::Summary
            && let Some(summary) = summary.filter(|s| !s.is_empty())
        {
            self.out.emit(ReasoningMessageContent {
                message_id: message.message_id.clone(),
                delta: summary.to_owned(),
            })?;
        }
        self.out.emit(ReasoningMessageEnd {
            message_id: message.message_id.clone(),
        })?;
        if !text.is_empty() || provider.is_some() {
            let binding = Binding::new(&self.thread_id, &message.message_id);
            let mut sealed = SealedReasoning::new(
                text,
                self.seal.model_id,
                self.seal.format_id,
                thinkwire_seal::now_unix_ms(),
            );
            if let Some(item) = provider {
                sealed = sealed.with_provider(item);
            }
            if let Some(ttl) = self.seal.ttl {
                sealed = sealed.with_ttl(ttl);
            }
            match self.seal.keys.seal(&sealed, binding) {
                Ok(value) => self
                    .out
                    .emit(ReasoningEncryptedValue::message(&message.message_id, value))?,
                // Sealing only fails if the OS RNG does; continuity of this
                // block is lost, visibly.
                Err(err) => {
                    tracing::error!(error = %err, "sealing reasoning failed");
                    self.custom(
                        custom::REASONING_DROPPED,
                        json!({ "messageId": message.message_id, "reason": "sealing failed" }),
                    )?;
                }
            }
        }
        self.out.emit(ReasoningEnd {
            message_id: message.span_id,
        })
    }

    /// Answer text.
    pub(crate) fn text(&mut self, text: &str) -> Result<(), Disconnected> {
        if text.is_empty() {
            return Ok(());
        }
        self.open_text()?;
        self.out.emit(TextMessageContent {
            message_id: self.assistant_id.clone(),
            delta: text.to_owned(),
        })
    }

    /// Opens the assistant message, once.
    fn open_text(&mut self) -> Result<(), Disconnected> {
        if !self.text_open {
            self.out
                .emit(TextMessageStart::assistant(self.assistant_id.clone()))?;
            self.text_open = true;
        }
        Ok(())
    }

    /// A call begins (streamed only when the tool was offered).
    pub(crate) fn tool_call_start(&mut self, id: String, name: String) -> Result<(), Disconnected> {
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

    /// More of a streamed call's arguments.
    pub(crate) fn tool_call_args(&mut self, id: String, delta: String) -> Result<(), Disconnected> {
        if self.open_calls.contains(&id) && !delta.is_empty() {
            self.out.emit(ToolCallArgs {
                tool_call_id: id,
                delta,
            })?;
        }
        Ok(())
    }

    /// A call ends: pending, invalid, or rejected as not offered.
    pub(crate) fn tool_call_end(&mut self, call: ToolCall) -> Result<(), Disconnected> {
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

    /// Model output that broke its format's syntax: a notice, and the raw
    /// text shown as answer text rather than lost (a stray close tag has
    /// nothing left to show).
    pub(crate) fn malformed(&mut self, malformed: Malformed) -> Result<(), Disconnected> {
        let kind = match malformed.kind {
            MalformedKind::StrayCloseTag => "stray_close_tag",
            MalformedKind::ToolCall => "tool_call",
            MalformedKind::HarmonyHeader => "harmony_header",
            MalformedKind::OutsideMessage => "outside_message",
        };
        self.custom(custom::MALFORMED_OUTPUT, json!({ "kind": kind }))?;
        if malformed.kind != MalformedKind::StrayCloseTag {
            self.text(&malformed.raw)?;
        }
        Ok(())
    }

    /// Closes the calls and text still open, in a valid order (passes
    /// close their own reasoning: they hold its text).
    fn close_open(&mut self) -> Result<(), Disconnected> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::logprobs_value;

    #[test]
    fn a_logprobs_value_is_the_event_as_written() {
        let entries = vec![json!({"token": "a", "logprob": -0.5})];
        assert_eq!(
            logprobs_value("m1", "prompt", entries.clone()),
            json!({"messageId": "m1", "prompt": entries})
        );
        let keys: Vec<String> = logprobs_value("m1", "content", Vec::new())
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["messageId", "content"]);
    }
}
