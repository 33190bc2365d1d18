//! The event-sequence rules the official AG-UI client enforces (its
//! `verifyEvents` stage, preceded by the chunk expansion it runs first). A
//! stream this [`Verifier`] rejects is one the official client would abort.
//!
//! Rules (see `shared/design/agui-1.0.md`, "What the official client
//! verifies"):
//!
//! 1. The first event is `RUN_STARTED` or `RUN_ERROR`.
//! 2. No `RUN_STARTED` while a run is active; after `RUN_FINISHED` or
//!    `RUN_ERROR` a `RUN_STARTED` begins a fresh run (all state reset).
//! 3. After `RUN_ERROR` only `RUN_STARTED`; after `RUN_FINISHED` only
//!    `RUN_STARTED` or `RUN_ERROR`.
//! 4. Text messages, tool calls, reasoning spans and reasoning messages:
//!    START of an open id is an error, CONTENT/ARGS/END need an open id, ids
//!    may be reused after END, several may be open at once.
//! 5. Steps: a duplicate `STEP_STARTED` or an unmatched `STEP_FINISHED` is an
//!    error (steps are keyed by subagent and name).
//! 6. `RUN_FINISHED` while a step, message, tool call, reasoning span or
//!    message, or subagent is open is an error.
//!
//! Where the design note is silent this follows the official client's source:
//! `*_CHUNK` events are expanded into START/CONTENT/END first (a chunk lane is
//! closed by the next non-chunk event of its producer); subagent lifecycle
//! events are checked; and a `subagentRunId` on a continuation must agree with
//! whoever opened the entity.
//!
//! ```
//! use thinkwire_protocol::*;
//!
//! let mut v = Verifier::new();
//! v.check(&RunStarted::new("t", "r").into()).unwrap();
//! v.check(&TextMessageStart::assistant("m1").into()).unwrap();
//! let err = v.check(&RunFinished::new("t", "r").into()).unwrap_err();
//! assert!(err.to_string().contains("m1"));
//! ```

mod entity;
mod error;
mod owner;
mod run;
mod step;
mod subagent;

use std::collections::HashSet;

use crate::chunk::ChunkExpander;
use crate::event::{
    Event, EventKind, ReasoningEnd, ReasoningMessageContent, ReasoningMessageEnd,
    ReasoningMessageStart, ReasoningStart, SubagentError, SubagentFinished, TextMessageContent,
    TextMessageEnd, ToolCallArgs, ToolCallEnd,
};

pub use error::{Entity, VerifyError};
use owner::Owners;
pub(crate) use owner::{Owner, tag_of};

/// Checks an AG-UI event stream against the official client's rules, one
/// event at a time. One verifier per stream (an SSE response, a WebSocket
/// connection); it follows several consecutive runs.
///
/// After an error the stream is invalid (the client aborts it); further
/// results are unspecified.
#[derive(Debug, Default)]
pub struct Verifier {
    first_seen: bool,
    run_started: bool,
    run_finished: bool,
    run_errored: bool,
    open_messages: Vec<String>,
    open_tool_calls: Vec<String>,
    open_reasoning_spans: Vec<String>,
    open_reasoning_messages: Vec<String>,
    owners: Owners,
    /// Open steps as (owner, name), in start order.
    steps: Vec<(Owner, String)>,
    active_subagents: Vec<String>,
    closed_subagents: HashSet<String>,
    /// Chunk streams being assembled, one lane per producer.
    chunks: ChunkExpander,
}

fn remove(set: &mut Vec<String>, id: &str) -> bool {
    match set.iter().position(|x| x == id) {
        Some(at) => {
            set.remove(at);
            true
        }
        None => false,
    }
}

fn contains(set: &[String], id: &str) -> bool {
    set.iter().any(|x| x == id)
}

impl Verifier {
    /// A verifier expecting a stream's first event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a run has started and not yet finished or errored.
    pub fn is_run_active(&self) -> bool {
        self.run_started && !self.run_finished && !self.run_errored
    }

    /// Checks the next event of the stream.
    pub fn check(&mut self, event: &Event) -> Result<(), VerifyError> {
        let expanded = self.chunks.expand(event)?;
        for derived in &expanded.derived {
            self.apply(derived)?;
        }
        if expanded.and_itself {
            self.apply(event)?;
        }
        Ok(())
    }

    /// Checks the end of the stream. Stricter than the official client
    /// (which only drops a dangling run): thinkwire always ends a run with
    /// `RUN_FINISHED` or `RUN_ERROR`, and always sends at least one event.
    pub fn finish(&mut self) -> Result<(), VerifyError> {
        if !self.first_seen {
            return Err(VerifyError::Empty);
        }
        if self.is_run_active() {
            return Err(VerifyError::Unterminated);
        }
        Ok(())
    }

    /// The official `verifyEvents` state machine for one (expanded) event.
    fn apply(&mut self, event: &Event) -> Result<(), VerifyError> {
        let ty = event.event_type();
        let tag = tag_of(event);
        self.check_run_order(ty)?;
        match &event.kind {
            EventKind::TextMessageStart(e) => self.text_start(ty, tag, &e.message_id),
            EventKind::TextMessageContent(TextMessageContent { message_id: id, .. })
            | EventKind::TextMessageEnd(TextMessageEnd { message_id: id }) => {
                self.text_continue(ty, tag, id)
            }
            EventKind::ToolCallStart(e) => self.tool_call_start(ty, tag, e),
            EventKind::ToolCallArgs(ToolCallArgs {
                tool_call_id: id, ..
            })
            | EventKind::ToolCallEnd(ToolCallEnd { tool_call_id: id }) => {
                self.tool_call_continue(ty, tag, id)
            }
            EventKind::StepStarted(e) => self.step_started(tag, e),
            EventKind::StepFinished(e) => self.step_finished(tag, e),
            EventKind::ActivitySnapshot(e) => {
                self.activity_snapshot(tag, e);
                Ok(())
            }
            EventKind::ActivityDelta(e) => self.activity_delta(ty, tag, e),
            EventKind::ToolCallResult(e) => {
                self.tool_call_result(tag, e);
                Ok(())
            }
            EventKind::ReasoningStart(ReasoningStart { message_id: id })
            | EventKind::ReasoningMessageStart(ReasoningMessageStart { message_id: id, .. }) => {
                self.reasoning_start(ty, tag, id)
            }
            EventKind::ReasoningMessageContent(ReasoningMessageContent {
                message_id: id, ..
            })
            | EventKind::ReasoningMessageEnd(ReasoningMessageEnd { message_id: id })
            | EventKind::ReasoningEnd(ReasoningEnd { message_id: id }) => {
                self.reasoning_continue(ty, tag, id)
            }
            EventKind::ReasoningEncryptedValue(e) => self.encrypted_value(ty, tag, e),
            EventKind::SubagentStarted(e) => self.subagent_started(e),
            EventKind::SubagentFinished(SubagentFinished {
                subagent_run_id: id,
                ..
            })
            | EventKind::SubagentError(SubagentError {
                subagent_run_id: id,
                ..
            }) => self.subagent_ended(ty, id),
            EventKind::MessagesSnapshot(e) => {
                self.seed_owners(&e.messages, true);
                Ok(())
            }
            EventKind::RunStarted(e) => {
                self.run_started = true;
                if let Some(input) = &e.input {
                    self.seed_owners(&input.messages, false);
                }
                Ok(())
            }
            EventKind::RunFinished(_) => {
                self.check_nothing_open()?;
                self.run_finished = true;
                Ok(())
            }
            EventKind::RunError(_) => {
                self.run_errored = true;
                Ok(())
            }
            EventKind::TextMessageChunk(_)
            | EventKind::ToolCallChunk(_)
            | EventKind::ReasoningMessageChunk(_)
            | EventKind::StateSnapshot(_)
            | EventKind::StateDelta(_)
            | EventKind::Raw(_)
            | EventKind::Custom(_) => Ok(()),
        }
    }
}
