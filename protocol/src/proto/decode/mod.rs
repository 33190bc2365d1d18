//! The `ag_ui.Event` message → the event's JSON form → [`Event`].
//!
//! The reverse of `encode`, and of what `@ag-ui/proto`'s decoder does:
//! the envelope's arm names the type (a `base_event.type` that disagrees is
//! malformed), required strings are always present (proto3 sends an empty
//! one as nothing), optional ones only when sent, and the JSON object is
//! then read by the same decoder as an SSE frame's.
//!
//! `out` builds the JSON object; `payload` maps what events carry.

mod out;
mod payload;

use prost::Message as _;
use serde_json::Value as Json;

use self::out::Out;
use self::payload::*;
use super::ProtoError;
use super::encode::proto_type;
use super::messages as pb;
use crate::event::{Event, EventType, decode_event_value};

/// One message: `Ok(None)` when it carries no event this build knows (an
/// arm from a later protocol), as an SSE reader skips an unknown type.
pub(super) fn decode(bytes: &[u8]) -> Result<Option<Event>, ProtoError> {
    if bytes.is_empty() {
        return Err(ProtoError::malformed("an empty message names no event"));
    }
    let envelope = pb::Event::decode(bytes).map_err(|e| ProtoError::malformed(format!("{e}")))?;
    let Some(kind) = envelope.event else {
        return Ok(None);
    };
    let json = to_json(kind)?;
    decode_event_value(&json).map_err(ProtoError::Event)
}

/// Writes the type and the base event's fields, checking they agree.
fn base(out: &mut Out, ty: EventType, base: Option<pb::BaseEvent>) -> Result<(), ProtoError> {
    let base = base.ok_or_else(|| ProtoError::malformed("an event without its base_event"))?;
    if base.r#type != proto_type(ty) as i32 {
        return Err(ProtoError::malformed(format!(
            "the envelope carries {ty} but base_event.type says otherwise"
        )));
    }
    out.put("type", ty.as_str());
    out.opt("timestamp", base.timestamp);
    out.value("rawEvent", base.raw_event)?;
    out.object("metadata", base.metadata)?;
    Ok(())
}

fn to_json(kind: pb::EventKind) -> Result<Json, ProtoError> {
    use pb::EventKind as K;
    let mut o = Out::default();
    match kind {
        K::TextMessageStart(e) => {
            base(&mut o, EventType::TextMessageStart, e.base_event)?;
            o.put("messageId", e.message_id);
            o.opt("role", e.role);
            o.opt("name", e.name);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::TextMessageContent(e) => {
            base(&mut o, EventType::TextMessageContent, e.base_event)?;
            o.put("messageId", e.message_id);
            o.put("delta", e.delta);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::TextMessageEnd(e) => {
            base(&mut o, EventType::TextMessageEnd, e.base_event)?;
            o.put("messageId", e.message_id);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::TextMessageChunk(e) => {
            base(&mut o, EventType::TextMessageChunk, e.base_event)?;
            o.opt("messageId", e.message_id);
            o.opt("role", e.role);
            o.opt("delta", e.delta);
            o.opt("name", e.name);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::ToolCallStart(e) => {
            base(&mut o, EventType::ToolCallStart, e.base_event)?;
            o.put("toolCallId", e.tool_call_id);
            o.put("toolCallName", e.tool_call_name);
            o.opt("parentMessageId", e.parent_message_id);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::ToolCallArgs(e) => {
            base(&mut o, EventType::ToolCallArgs, e.base_event)?;
            o.put("toolCallId", e.tool_call_id);
            o.put("delta", e.delta);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::ToolCallEnd(e) => {
            base(&mut o, EventType::ToolCallEnd, e.base_event)?;
            o.put("toolCallId", e.tool_call_id);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::ToolCallChunk(e) => {
            base(&mut o, EventType::ToolCallChunk, e.base_event)?;
            o.opt("toolCallId", e.tool_call_id);
            o.opt("toolCallName", e.tool_call_name);
            o.opt("parentMessageId", e.parent_message_id);
            o.opt("delta", e.delta);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::ToolCallResult(e) => {
            base(&mut o, EventType::ToolCallResult, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
            o.put("toolCallId", e.tool_call_id);
            o.put("content", content(e.content, e.content_parts)?);
            o.opt("role", e.role);
        }
        K::StateSnapshot(e) => {
            base(&mut o, EventType::StateSnapshot, e.base_event)?;
            o.value("snapshot", e.snapshot)?;
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::StateDelta(e) => {
            base(&mut o, EventType::StateDelta, e.base_event)?;
            o.put("delta", patch(e.delta)?);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::MessagesSnapshot(e) => {
            base(&mut o, EventType::MessagesSnapshot, e.base_event)?;
            o.put("messages", messages(e.messages)?);
        }
        K::ActivitySnapshot(e) => {
            base(&mut o, EventType::ActivitySnapshot, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
            o.put("activityType", e.activity_type);
            o.object("content", e.content)?;
            o.opt("replace", e.replace);
        }
        K::ActivityDelta(e) => {
            base(&mut o, EventType::ActivityDelta, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
            o.put("activityType", e.activity_type);
            o.put("patch", patch(e.patch)?);
        }
        K::Raw(e) => {
            base(&mut o, EventType::Raw, e.base_event)?;
            o.value("event", e.event)?;
            o.opt("source", e.source);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::Custom(e) => {
            base(&mut o, EventType::Custom, e.base_event)?;
            o.put("name", e.name);
            o.value("value", e.value)?;
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::RunStarted(e) => {
            base(&mut o, EventType::RunStarted, e.base_event)?;
            o.put("threadId", e.thread_id);
            o.put("runId", e.run_id);
            o.opt("parentRunId", e.parent_run_id);
            if let Some(input) = e.input {
                o.put("input", run_agent_input(input)?);
            }
            o.opt("protocolVersion", e.protocol_version);
        }
        K::RunFinished(e) => {
            base(&mut o, EventType::RunFinished, e.base_event)?;
            o.put("threadId", e.thread_id);
            o.put("runId", e.run_id);
            o.value("result", e.result)?;
            let mut outcome = Out::default();
            match e.outcome.as_str() {
                "" if e.pending_tool_call_ids.is_empty() && e.interrupts.is_empty() => {}
                "" => {
                    return Err(ProtoError::malformed(
                        "an outcome's payload without an outcome",
                    ));
                }
                ty => {
                    outcome.put("type", ty);
                    outcome.list("pendingToolCallIds", e.pending_tool_call_ids, |id| {
                        Ok(id.into())
                    })?;
                    if ty == "interrupt" {
                        outcome.put("interrupts", interrupts(e.interrupts)?);
                    } else {
                        outcome.list("interrupts", e.interrupts, interrupt)?;
                    }
                    o.put("outcome", outcome.done());
                }
            }
            o.list("usage", e.usage, usage)?;
        }
        K::RunError(e) => {
            base(&mut o, EventType::RunError, e.base_event)?;
            o.opt("code", e.code);
            o.put("message", e.message);
            o.list("usage", e.usage, usage)?;
        }
        K::StepStarted(e) => {
            base(&mut o, EventType::StepStarted, e.base_event)?;
            o.put("stepName", e.step_name);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::StepFinished(e) => {
            base(&mut o, EventType::StepFinished, e.base_event)?;
            o.put("stepName", e.step_name);
            o.opt("subagentRunId", e.subagent_run_id);
        }
        K::ReasoningStart(e) => {
            base(&mut o, EventType::ReasoningStart, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
        }
        K::ReasoningMessageStart(e) => {
            base(&mut o, EventType::ReasoningMessageStart, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
            o.put("role", e.role);
        }
        K::ReasoningMessageContent(e) => {
            base(&mut o, EventType::ReasoningMessageContent, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
            o.put("delta", e.delta);
        }
        K::ReasoningMessageEnd(e) => {
            base(&mut o, EventType::ReasoningMessageEnd, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
        }
        K::ReasoningMessageChunk(e) => {
            base(&mut o, EventType::ReasoningMessageChunk, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.opt("messageId", e.message_id);
            o.opt("delta", e.delta);
        }
        K::ReasoningEnd(e) => {
            base(&mut o, EventType::ReasoningEnd, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("messageId", e.message_id);
        }
        K::ReasoningEncryptedValue(e) => {
            base(&mut o, EventType::ReasoningEncryptedValue, e.base_event)?;
            o.opt("subagentRunId", e.subagent_run_id);
            o.put("subtype", e.subtype);
            o.put("entityId", e.entity_id);
            o.put("encryptedValue", e.encrypted_value);
        }
        K::SubagentStarted(e) => {
            base(&mut o, EventType::SubagentStarted, e.base_event)?;
            o.put("subagentRunId", e.subagent_run_id);
            o.put("name", e.name);
            o.opt("description", e.description);
            o.opt("parentSubagentRunId", e.parent_subagent_run_id);
            o.opt("parentToolCallId", e.parent_tool_call_id);
            o.opt("parentMessageId", e.parent_message_id);
        }
        K::SubagentFinished(e) => {
            base(&mut o, EventType::SubagentFinished, e.base_event)?;
            o.put("subagentRunId", e.subagent_run_id);
            o.value("result", e.result)?;
            match e.outcome.as_str() {
                "" if e.interrupt_ids.is_empty() => {}
                "" => {
                    return Err(ProtoError::malformed(
                        "an outcome's payload without an outcome",
                    ));
                }
                ty => {
                    let mut outcome = Out::default();
                    outcome.put("type", ty);
                    outcome.list("interruptIds", e.interrupt_ids, |id| Ok(id.into()))?;
                    o.put("outcome", outcome.done());
                }
            }
        }
        K::SubagentError(e) => {
            base(&mut o, EventType::SubagentError, e.base_event)?;
            o.put("subagentRunId", e.subagent_run_id);
            o.put("message", e.message);
            o.opt("code", e.code);
        }
    }
    Ok(o.done())
}
