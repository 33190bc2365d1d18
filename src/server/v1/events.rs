//! A run's AG-UI events as the pieces every wire surface is built from.
//!
//! The codecs read typed events from the run's frames (no re-parsing) and
//! see only what they map: reasoning (its text per visibility and its
//! sealed carrier), answer text, tool calls, and how the run ended.

use std::collections::VecDeque;

use serde_json::Value;
use thinkwire_chat::{StopMatcher, StopStep};
use thinkwire_protocol::{EventKind, Outcome};

use super::carrier;
use super::error::ApiError;
use crate::agent::{custom, incomplete};
use crate::server::run::ActiveRun;

/// Token counts of a finished run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub input: u64,
    /// Of those, the tokens whose cache was reused rather than computed.
    pub cached: u64,
    /// Generated tokens, reasoning included.
    pub output: u64,
    /// Generated tokens spent reasoning.
    pub reasoning: u64,
}

impl Usage {
    /// This usage and that of another choice of the same request: the
    /// prompt, which both read, counted once, and cached only as far as
    /// both found it cached (the choices that reused another's prompt do
    /// not make it cached).
    pub fn with_choice(self, other: Usage) -> Usage {
        Usage {
            input: self.input.max(other.input),
            cached: self.cached.min(other.cached),
            output: self.output.saturating_add(other.output),
            reasoning: self.reasoning.saturating_add(other.reasoning),
        }
    }
}

/// One step of a run, in wire-neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStep {
    /// A reasoning message opens.
    ReasoningStart {
        /// Its AG-UI message id (what the seal is bound to).
        id: String,
    },
    /// Visible reasoning text (`full`: the reasoning; `summary`: the summary).
    ReasoningDelta(String),
    /// The carrier of the reasoning message just closed.
    ReasoningSealed {
        /// Its AG-UI message id.
        id: String,
        /// `tw1.<id>.<sealed>` ([`carrier`]).
        carrier: String,
    },
    /// The reasoning span ends.
    ReasoningEnd,
    /// Answer text.
    Text(String),
    /// The log-probabilities of answer tokens, in OpenAI's shape, ahead of
    /// the text they make (only where the run asked for them).
    Logprobs(Vec<Value>),
    /// A tool call begins.
    ToolStart {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// More of a call's arguments (JSON text).
    ToolArgs(String),
    /// The call is complete.
    ToolEnd,
    /// The run finished.
    Finished {
        /// Token counts.
        usage: Usage,
        /// Whether it ended with tool calls to execute.
        tool_calls: bool,
        /// The stop sequence that ended the answer, if one did.
        stop_sequence: Option<String>,
        /// Whether the token limit cut the answer off (`max_tokens`).
        cut_off: bool,
    },
    /// The run failed after it started.
    Failed {
        /// Machine-readable code.
        code: String,
        /// Safe message.
        message: String,
    },
}

impl RunStep {
    /// Whether nothing follows.
    pub fn is_last(&self) -> bool {
        matches!(self, RunStep::Finished { .. } | RunStep::Failed { .. })
    }
}

/// A run's pieces, with its answer text watched for stop sequences: at a
/// match the run is asked to stop and nothing but its end follows.
pub struct RunPieces {
    run: ActiveRun,
    stop: StopMatcher,
    queued: VecDeque<RunStep>,
    /// The stop sequence met, once one was.
    matched: Option<String>,
    /// The run said the token limit cut its answer off.
    cut_off: bool,
}

impl RunPieces {
    /// The pieces of `run`, stopping at any of `stops` (`stop`,
    /// `stop_sequences`; empty strings are ignored).
    pub fn new(run: ActiveRun, stops: Vec<String>) -> Self {
        Self {
            run,
            stop: StopMatcher::new(stops),
            queued: VecDeque::new(),
            matched: None,
            cut_off: false,
        }
    }

    /// The next piece; `Failed` if the run's thread ended without a
    /// terminal event.
    pub async fn next(&mut self) -> RunStep {
        if let Some(piece) = self.queued.pop_front() {
            return piece;
        }
        loop {
            let piece = next(&mut self.run, &mut self.cut_off).await;
            if let RunStep::Text(delta) = &piece
                && !self.stop.is_empty()
            {
                let shown = match self.stop.push(delta) {
                    StopStep::Continue(shown) => shown,
                    StopStep::Stopped { text, stop } => {
                        self.matched = Some(self.stop.stops()[stop].clone());
                        self.run.cancel.cancel();
                        text
                    }
                };
                if shown.is_empty() {
                    continue;
                }
                return RunStep::Text(shown);
            }
            // Entries go ahead of their text and leave what the matcher
            // holds held: a stop sequence may span the tokens they are of.
            if matches!(piece, RunStep::Logprobs(_)) && self.matched.is_none() {
                return piece;
            }
            if self.matched.is_some() && !piece.is_last() {
                continue;
            }
            let piece = match piece {
                RunStep::Finished {
                    usage, tool_calls, ..
                } => RunStep::Finished {
                    usage,
                    tool_calls: tool_calls && self.matched.is_none(),
                    stop_sequence: self.matched.clone(),
                    cut_off: self.cut_off && self.matched.is_none(),
                },
                other => other,
            };
            // Text held back as a possible stop sequence goes out before
            // whatever follows it.
            let held = self.stop.finish();
            if held.is_empty() {
                return piece;
            }
            self.queued.push_back(piece);
            return RunStep::Text(held);
        }
    }
}

impl RunPieces {
    /// Every piece to the run's end, the last one included, deltas of one
    /// kind that follow each other merged ([`push_merged`]).
    pub async fn drain(&mut self) -> Vec<RunStep> {
        let mut all = Vec::new();
        loop {
            let piece = self.next().await;
            let last = piece.is_last();
            push_merged(&mut all, piece);
            if last {
                return all;
            }
        }
    }
}

/// Appends `piece`, merged into the delta before it of its kind: a run
/// that does not stream is held whole until every choice ends, and a
/// piece a token would hold ~20 times its text (n choices of long
/// answers). A run of answer text keeps its log-probabilities ahead of it
/// as one `Logprobs` and one `Text`: all of its entries still come before
/// all of its text.
fn push_merged(all: &mut Vec<RunStep>, piece: RunStep) {
    let (last, before) = match all.as_mut_slice() {
        [.., before, last] => (Some(last), Some(before)),
        [last] => (Some(last), None),
        [] => (None, None),
    };
    match (before, last, piece) {
        (_, Some(RunStep::Text(text)), RunStep::Text(more))
        | (_, Some(RunStep::ReasoningDelta(text)), RunStep::ReasoningDelta(more))
        | (_, Some(RunStep::ToolArgs(text)), RunStep::ToolArgs(more)) => text.push_str(&more),
        (_, Some(RunStep::Logprobs(entries)), RunStep::Logprobs(more))
        | (Some(RunStep::Logprobs(entries)), Some(RunStep::Text(_)), RunStep::Logprobs(more)) => {
            entries.extend(more);
        }
        (.., piece) => all.push(piece),
    }
}

/// The next piece of `run`; `Failed` if the run's thread ended without a
/// terminal event. Events the wire has no place for are skipped; the one
/// saying the token limit cut the answer off sets `cut_off`.
async fn next(run: &mut ActiveRun, cut_off: &mut bool) -> RunStep {
    loop {
        let Some(frame) = run.frames.recv().await else {
            return RunStep::Failed {
                code: "INTERNAL_ERROR".into(),
                message: "the run ended unexpectedly".into(),
            };
        };
        if let EventKind::Custom(e) = &frame.event.kind
            && e.name == custom::OUTPUT_INCOMPLETE
        {
            // Only the token limit is a cut-off; a lifted constraint ends
            // an answer the wires have no reason for but `stop`.
            *cut_off |= e.value["reason"] == incomplete::LENGTH;
            continue;
        }
        if let Some(piece) = piece(frame.event.kind) {
            return piece;
        }
    }
}

fn piece(kind: EventKind) -> Option<RunStep> {
    Some(match kind {
        EventKind::ReasoningMessageStart(e) => RunStep::ReasoningStart { id: e.message_id },
        EventKind::ReasoningMessageContent(e) => RunStep::ReasoningDelta(e.delta),
        EventKind::ReasoningEncryptedValue(e) => RunStep::ReasoningSealed {
            carrier: carrier::pack(&e.entity_id, &e.encrypted_value),
            id: e.entity_id,
        },
        EventKind::ReasoningEnd(_) => RunStep::ReasoningEnd,
        EventKind::TextMessageContent(e) => RunStep::Text(e.delta),
        EventKind::ToolCallStart(e) => RunStep::ToolStart {
            id: e.tool_call_id,
            name: e.tool_call_name,
        },
        EventKind::ToolCallArgs(e) => RunStep::ToolArgs(e.delta),
        EventKind::ToolCallEnd(_) => RunStep::ToolEnd,
        // A raw completion's prompt entries (`prompt`) come first, as
        // the legacy shape lists them.
        EventKind::Custom(mut e) if e.name == custom::LOGPROBS => {
            let entries = match e.value.get_mut("content") {
                Some(content) => content.take(),
                None => e
                    .value
                    .get_mut("prompt")
                    .map(Value::take)
                    .unwrap_or_default(),
            };
            match entries {
                Value::Array(entries) => RunStep::Logprobs(entries),
                _ => return None,
            }
        }
        EventKind::RunFinished(e) => {
            let usage = e
                .usage
                .as_ref()
                .and_then(|u| u.first())
                .map(|u| Usage {
                    input: u.input_tokens.unwrap_or(0),
                    cached: u.cached_input_tokens.unwrap_or(0),
                    output: u.output_tokens.unwrap_or(0),
                    reasoning: u.reasoning_tokens.unwrap_or(0),
                })
                .unwrap_or_default();
            let tool_calls = matches!(
                e.outcome,
                Some(Outcome::Success { pending_tool_call_ids: Some(ref ids) }) if !ids.is_empty()
            );
            RunStep::Finished {
                usage,
                tool_calls,
                stop_sequence: None,
                cut_off: false,
            }
        }
        EventKind::RunError(e) => RunStep::Failed {
            code: e.code.unwrap_or_else(|| "RUN_ERROR".into()),
            message: e.message,
        },
        _ => return None,
    })
}

/// A reasoning message of a finished run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reasoning {
    /// Its AG-UI message id.
    pub id: String,
    /// What was shown of it (empty when hidden).
    pub text: String,
    /// Its carrier, when it was sealed (empty reasoning is not).
    pub carrier: Option<String>,
}

/// A tool call of a finished run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, JSON text.
    pub arguments: String,
}

/// A whole run, for the non-streaming answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Collected {
    /// Reasoning messages in order.
    pub reasoning: Vec<Reasoning>,
    /// The answer text.
    pub text: String,
    /// The answer tokens' log-probabilities, where they were asked for.
    pub logprobs: Vec<Value>,
    /// Tool calls in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts.
    pub usage: Usage,
    /// Whether it ended with tool calls to execute.
    pub ended_with_tool_calls: bool,
    /// The stop sequence that ended the answer, if one did.
    pub stop_sequence: Option<String>,
    /// Whether the token limit cut the answer off.
    pub cut_off: bool,
}

/// A whole run from its pieces; a run that failed is a server error with
/// its code.
pub fn collect(pieces: Vec<RunStep>) -> Result<Collected, ApiError> {
    let mut all = Collected::default();
    for piece in pieces {
        match piece {
            RunStep::ReasoningStart { id } => all.reasoning.push(Reasoning {
                id,
                ..Reasoning::default()
            }),
            RunStep::ReasoningDelta(delta) => {
                if let Some(r) = all.reasoning.last_mut() {
                    r.text.push_str(&delta);
                }
            }
            RunStep::ReasoningSealed { id, carrier } => {
                if let Some(r) = all.reasoning.iter_mut().rev().find(|r| r.id == id) {
                    r.carrier = Some(carrier);
                }
            }
            RunStep::ReasoningEnd => {}
            RunStep::Text(text) => all.text.push_str(&text),
            RunStep::Logprobs(entries) => all.logprobs.extend(entries),
            RunStep::ToolStart { id, name } => all.tool_calls.push(ToolCall {
                id,
                name,
                arguments: String::new(),
            }),
            RunStep::ToolArgs(delta) => {
                if let Some(call) = all.tool_calls.last_mut() {
                    call.arguments.push_str(&delta);
                }
            }
            RunStep::ToolEnd => {}
            RunStep::Finished {
                usage,
                tool_calls,
                stop_sequence,
                cut_off,
            } => {
                all.usage = usage;
                all.ended_with_tool_calls = tool_calls;
                all.stop_sequence = stop_sequence;
                all.cut_off = cut_off;
                return Ok(all);
            }
            RunStep::Failed { code, message } => return Err(ApiError::server(&code, &message)),
        }
    }
    Err(ApiError::server(
        "INTERNAL_ERROR",
        "the run ended unexpectedly",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Deltas merge within their kind, a text's entries stay ahead of it,
    /// and what the answer collects is what it collected unmerged.
    #[test]
    fn deltas_of_a_kind_merge_and_collect_the_same() {
        let finished = RunStep::Finished {
            usage: Usage::default(),
            tool_calls: true,
            stop_sequence: None,
            cut_off: false,
        };
        let pieces = vec![
            RunStep::ReasoningStart { id: "r".into() },
            RunStep::ReasoningDelta("thinking ".into()),
            RunStep::ReasoningDelta("hard".into()),
            RunStep::ReasoningEnd,
            RunStep::Logprobs(vec![json!({"token": "He"})]),
            RunStep::Text("He".into()),
            RunStep::Logprobs(vec![json!({"token": "llo"})]),
            RunStep::Text("llo".into()),
            RunStep::Text("!".into()),
            RunStep::ToolStart {
                id: "c".into(),
                name: "f".into(),
            },
            RunStep::ToolArgs("{\"a\":".into()),
            RunStep::ToolArgs(" 1}".into()),
            RunStep::ToolEnd,
            RunStep::Text("after".into()),
            finished.clone(),
        ];
        let mut merged = Vec::new();
        for piece in pieces.clone() {
            push_merged(&mut merged, piece);
        }
        assert_eq!(
            merged,
            [
                RunStep::ReasoningStart { id: "r".into() },
                RunStep::ReasoningDelta("thinking hard".into()),
                RunStep::ReasoningEnd,
                RunStep::Logprobs(vec![json!({"token": "He"}), json!({"token": "llo"})]),
                RunStep::Text("Hello!".into()),
                RunStep::ToolStart {
                    id: "c".into(),
                    name: "f".into(),
                },
                RunStep::ToolArgs("{\"a\": 1}".into()),
                RunStep::ToolEnd,
                RunStep::Text("after".into()),
                finished,
            ]
        );
        assert_eq!(collect(merged).unwrap(), collect(pieces).unwrap());
    }
}
