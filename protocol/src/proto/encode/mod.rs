//! An event's JSON form → the `ag_ui.Event` message.
//!
//! The mapping reads the event as AG-UI JSON (what [`Event::to_value`]
//! writes, the same object an SSE frame carries) and takes each key it
//! knows off the object; a key left over at any level is a field the
//! protobuf binding has no place for, and the event is refused with its
//! path instead of arriving shorter than it was sent. The `match` over
//! [`EventType`] has no catch-all, so a new event type does not compile
//! until it has a mapping.
//!
//! `object` reads a JSON object key by key; `payload` maps what events
//! carry.

mod object;
mod payload;

use serde_json::Value as Json;

use self::object::Obj;
use self::payload::*;
use super::ProtoError;
use super::messages as pb;
use crate::event::{Event, EventType};

/// `event` as an `ag_ui.Event`.
pub(super) fn encode(event: &Event) -> Result<pb::Event, ProtoError> {
    encode_json(event.to_value())
}

/// An event's JSON object as an `ag_ui.Event`.
pub(super) fn encode_json(json: Json) -> Result<pb::Event, ProtoError> {
    let mut o = Obj::new(json, String::new())?;
    let name = o.string("type")?;
    let ty = EventType::parse(&name)
        .ok_or_else(|| ProtoError::unrepresentable("type", "not an AG-UI 1.0 event type"))?;
    let base_event = Some(pb::BaseEvent {
        r#type: proto_type(ty) as i32,
        timestamp: o.opt_i64("timestamp")?,
        raw_event: o.opt_value("rawEvent")?,
        metadata: o.opt_struct("metadata")?,
    });
    use pb::EventKind as K;
    let kind = match ty {
        EventType::TextMessageStart => K::TextMessageStart(pb::TextMessageStartEvent {
            base_event,
            message_id: o.string("messageId")?,
            role: o.opt_string("role")?,
            name: o.opt_string("name")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::TextMessageContent => K::TextMessageContent(pb::TextMessageContentEvent {
            base_event,
            message_id: o.string("messageId")?,
            delta: o.string("delta")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::TextMessageEnd => K::TextMessageEnd(pb::TextMessageEndEvent {
            base_event,
            message_id: o.string("messageId")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::TextMessageChunk => K::TextMessageChunk(pb::TextMessageChunkEvent {
            base_event,
            message_id: o.opt_string("messageId")?,
            role: o.opt_string("role")?,
            delta: o.opt_string("delta")?,
            name: o.opt_string("name")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::ToolCallStart => K::ToolCallStart(pb::ToolCallStartEvent {
            base_event,
            tool_call_id: o.string("toolCallId")?,
            tool_call_name: o.string("toolCallName")?,
            parent_message_id: o.opt_string("parentMessageId")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::ToolCallArgs => K::ToolCallArgs(pb::ToolCallArgsEvent {
            base_event,
            tool_call_id: o.string("toolCallId")?,
            delta: o.string("delta")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::ToolCallEnd => K::ToolCallEnd(pb::ToolCallEndEvent {
            base_event,
            tool_call_id: o.string("toolCallId")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::ToolCallChunk => K::ToolCallChunk(pb::ToolCallChunkEvent {
            base_event,
            tool_call_id: o.opt_string("toolCallId")?,
            tool_call_name: o.opt_string("toolCallName")?,
            parent_message_id: o.opt_string("parentMessageId")?,
            delta: o.opt_string("delta")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::ToolCallResult => {
            let (content, content_parts) = content(&mut o)?;
            K::ToolCallResult(pb::ToolCallResultEvent {
                base_event,
                subagent_run_id: o.opt_string("subagentRunId")?,
                message_id: o.string("messageId")?,
                tool_call_id: o.string("toolCallId")?,
                content,
                role: o.opt_string("role")?,
                content_parts,
            })
        }
        EventType::StateSnapshot => K::StateSnapshot(pb::StateSnapshotEvent {
            base_event,
            snapshot: Some(o.value("snapshot")?),
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::StateDelta => K::StateDelta(pb::StateDeltaEvent {
            base_event,
            delta: o.list("delta", patch_op)?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::MessagesSnapshot => K::MessagesSnapshot(pb::MessagesSnapshotEvent {
            base_event,
            messages: o.list("messages", message)?,
        }),
        EventType::ActivitySnapshot => K::ActivitySnapshot(pb::ActivitySnapshotEvent {
            base_event,
            subagent_run_id: o.opt_string("subagentRunId")?,
            message_id: o.string("messageId")?,
            activity_type: o.string("activityType")?,
            content: Some(o.required_struct("content")?),
            replace: o.opt_bool("replace")?,
        }),
        EventType::ActivityDelta => K::ActivityDelta(pb::ActivityDeltaEvent {
            base_event,
            subagent_run_id: o.opt_string("subagentRunId")?,
            message_id: o.string("messageId")?,
            activity_type: o.string("activityType")?,
            patch: o.list("patch", patch_op)?,
        }),
        EventType::Raw => K::Raw(pb::RawEvent {
            base_event,
            event: Some(o.value("event")?),
            source: o.opt_string("source")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::Custom => K::Custom(pb::CustomEvent {
            base_event,
            name: o.string("name")?,
            value: Some(o.value("value")?),
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::RunStarted => K::RunStarted(pb::RunStartedEvent {
            base_event,
            thread_id: o.string("threadId")?,
            run_id: o.string("runId")?,
            parent_run_id: o.opt_string("parentRunId")?,
            input: o.opt_object("input", run_agent_input)?,
            protocol_version: o.opt_string("protocolVersion")?,
        }),
        EventType::RunFinished => {
            let mut finished = pb::RunFinishedEvent {
                base_event,
                thread_id: o.string("threadId")?,
                run_id: o.string("runId")?,
                result: o.opt_value("result")?,
                usage: o.non_empty_list("usage", usage)?,
                ..Default::default()
            };
            if let Some(mut outcome) = o.take_object("outcome")? {
                finished.outcome = outcome.string("type")?;
                match finished.outcome.as_str() {
                    "success" => {
                        finished.pending_tool_call_ids =
                            outcome.non_empty_list("pendingToolCallIds", string)?;
                    }
                    "interrupt" => finished.interrupts = outcome.list("interrupts", interrupt)?,
                    "cancelled" => {}
                    _ => {
                        return Err(ProtoError::unrepresentable(
                            "outcome.type",
                            "not a run outcome of AG-UI 1.0",
                        ));
                    }
                }
                outcome.finish()?;
            }
            K::RunFinished(finished)
        }
        EventType::RunError => K::RunError(pb::RunErrorEvent {
            base_event,
            code: o.opt_string("code")?,
            message: o.string("message")?,
            usage: o.non_empty_list("usage", usage)?,
        }),
        EventType::StepStarted => K::StepStarted(pb::StepStartedEvent {
            base_event,
            step_name: o.string("stepName")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::StepFinished => K::StepFinished(pb::StepFinishedEvent {
            base_event,
            step_name: o.string("stepName")?,
            subagent_run_id: o.opt_string("subagentRunId")?,
        }),
        EventType::ReasoningStart => K::ReasoningStart(pb::ReasoningStartEvent {
            base_event,
            subagent_run_id: o.opt_string("subagentRunId")?,
            message_id: o.string("messageId")?,
        }),
        EventType::ReasoningMessageStart => {
            K::ReasoningMessageStart(pb::ReasoningMessageStartEvent {
                base_event,
                subagent_run_id: o.opt_string("subagentRunId")?,
                message_id: o.string("messageId")?,
                role: o.string("role")?,
            })
        }
        EventType::ReasoningMessageContent => {
            K::ReasoningMessageContent(pb::ReasoningMessageContentEvent {
                base_event,
                subagent_run_id: o.opt_string("subagentRunId")?,
                message_id: o.string("messageId")?,
                delta: o.string("delta")?,
            })
        }
        EventType::ReasoningMessageEnd => K::ReasoningMessageEnd(pb::ReasoningMessageEndEvent {
            base_event,
            subagent_run_id: o.opt_string("subagentRunId")?,
            message_id: o.string("messageId")?,
        }),
        EventType::ReasoningMessageChunk => {
            K::ReasoningMessageChunk(pb::ReasoningMessageChunkEvent {
                base_event,
                subagent_run_id: o.opt_string("subagentRunId")?,
                message_id: o.opt_string("messageId")?,
                delta: o.opt_string("delta")?,
            })
        }
        EventType::ReasoningEnd => K::ReasoningEnd(pb::ReasoningEndEvent {
            base_event,
            subagent_run_id: o.opt_string("subagentRunId")?,
            message_id: o.string("messageId")?,
        }),
        EventType::ReasoningEncryptedValue => {
            K::ReasoningEncryptedValue(pb::ReasoningEncryptedValueEvent {
                base_event,
                subagent_run_id: o.opt_string("subagentRunId")?,
                subtype: o.string("subtype")?,
                entity_id: o.string("entityId")?,
                encrypted_value: o.string("encryptedValue")?,
            })
        }
        EventType::SubagentStarted => K::SubagentStarted(pb::SubagentStartedEvent {
            base_event,
            subagent_run_id: o.string("subagentRunId")?,
            name: o.string("name")?,
            description: o.opt_string("description")?,
            parent_subagent_run_id: o.opt_string("parentSubagentRunId")?,
            parent_tool_call_id: o.opt_string("parentToolCallId")?,
            parent_message_id: o.opt_string("parentMessageId")?,
        }),
        EventType::SubagentFinished => {
            let mut finished = pb::SubagentFinishedEvent {
                base_event,
                subagent_run_id: o.string("subagentRunId")?,
                result: o.opt_value("result")?,
                ..Default::default()
            };
            if let Some(mut outcome) = o.take_object("outcome")? {
                finished.outcome = outcome.string("type")?;
                match finished.outcome.as_str() {
                    "success" => {}
                    "suspended" => {
                        finished.interrupt_ids = outcome.non_empty_list("interruptIds", string)?;
                    }
                    _ => {
                        return Err(ProtoError::unrepresentable(
                            "outcome.type",
                            "not a subagent outcome of AG-UI 1.0",
                        ));
                    }
                }
                outcome.finish()?;
            }
            K::SubagentFinished(finished)
        }
        EventType::SubagentError => K::SubagentError(pb::SubagentErrorEvent {
            base_event,
            subagent_run_id: o.string("subagentRunId")?,
            message: o.string("message")?,
            code: o.opt_string("code")?,
        }),
    };
    o.finish()?;
    Ok(pb::Event { event: Some(kind) })
}

/// The `EventType` enum value `base_event.type` carries for `ty` (the
/// official numbering, which is not the envelope's).
pub(super) fn proto_type(ty: EventType) -> pb::EventType {
    use pb::EventType as P;
    match ty {
        EventType::TextMessageStart => P::TextMessageStart,
        EventType::TextMessageContent => P::TextMessageContent,
        EventType::TextMessageEnd => P::TextMessageEnd,
        EventType::TextMessageChunk => P::TextMessageChunk,
        EventType::ToolCallStart => P::ToolCallStart,
        EventType::ToolCallArgs => P::ToolCallArgs,
        EventType::ToolCallEnd => P::ToolCallEnd,
        EventType::ToolCallChunk => P::ToolCallChunk,
        EventType::ToolCallResult => P::ToolCallResult,
        EventType::StateSnapshot => P::StateSnapshot,
        EventType::StateDelta => P::StateDelta,
        EventType::MessagesSnapshot => P::MessagesSnapshot,
        EventType::ActivitySnapshot => P::ActivitySnapshot,
        EventType::ActivityDelta => P::ActivityDelta,
        EventType::Raw => P::Raw,
        EventType::Custom => P::Custom,
        EventType::RunStarted => P::RunStarted,
        EventType::RunFinished => P::RunFinished,
        EventType::RunError => P::RunError,
        EventType::StepStarted => P::StepStarted,
        EventType::StepFinished => P::StepFinished,
        EventType::ReasoningStart => P::ReasoningStart,
        EventType::ReasoningMessageStart => P::ReasoningMessageStart,
        EventType::ReasoningMessageContent => P::ReasoningMessageContent,
        EventType::ReasoningMessageEnd => P::ReasoningMessageEnd,
        EventType::ReasoningMessageChunk => P::ReasoningMessageChunk,
        EventType::ReasoningEnd => P::ReasoningEnd,
        EventType::ReasoningEncryptedValue => P::ReasoningEncryptedValue,
        EventType::SubagentStarted => P::SubagentStarted,
        EventType::SubagentFinished => P::SubagentFinished,
        EventType::SubagentError => P::SubagentError,
    }
}
