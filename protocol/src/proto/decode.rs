//! The `ag_ui.Event` message → the event's JSON form → [`Event`].
//!
//! The reverse of `encode.rs`, and of what `@ag-ui/proto`'s decoder does:
//! the envelope's arm names the type (a `base_event.type` that disagrees is
//! malformed), required strings are always present (proto3 sends an empty
//! one as nothing), optional ones only when sent, and the JSON object is
//! then read by the same decoder as an SSE frame's.

use prost::Message as _;
use serde_json::{Map, Value as Json, json};

use super::ProtoError;
use super::encode::proto_type;
use super::messages as pb;
use super::value::{from_proto, struct_from_proto};
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

/// A JSON object under construction.
#[derive(Default)]
struct Out(Map<String, Json>);

impl Out {
    fn put(&mut self, key: &str, value: impl Into<Json>) {
        self.0.insert(key.to_owned(), value.into());
    }

    fn opt(&mut self, key: &str, value: Option<impl Into<Json>>) {
        if let Some(value) = value {
            self.put(key, value);
        }
    }

    fn value(&mut self, key: &str, value: Option<pb::Value>) -> Result<(), ProtoError> {
        if let Some(json) = value.map(from_proto).transpose()?.flatten() {
            self.put(key, json);
        }
        Ok(())
    }

    fn object(&mut self, key: &str, value: Option<pb::Struct>) -> Result<(), ProtoError> {
        if let Some(map) = value.map(struct_from_proto).transpose()? {
            self.put(key, map);
        }
        Ok(())
    }

    /// A repeated field as an array, left out when empty.
    fn list<T>(
        &mut self,
        key: &str,
        items: Vec<T>,
        item: impl Fn(T) -> Result<Json, ProtoError>,
    ) -> Result<(), ProtoError> {
        if !items.is_empty() {
            let items = items.into_iter().map(item).collect::<Result<Vec<_>, _>>()?;
            self.put(key, items);
        }
        Ok(())
    }

    fn done(self) -> Json {
        Json::Object(self.0)
    }
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

fn usage(u: pb::Usage) -> Result<Json, ProtoError> {
    let mut o = Out::default();
    o.opt("provider", u.provider);
    o.opt("model", u.model);
    o.opt("inputTokens", u.input_tokens);
    o.opt("outputTokens", u.output_tokens);
    o.opt("totalTokens", u.total_tokens);
    o.opt("reasoningTokens", u.reasoning_tokens);
    o.opt("cachedInputTokens", u.cached_input_tokens);
    o.opt("cacheWriteInputTokens", u.cache_write_input_tokens);
    Ok(o.done())
}

fn interrupts(items: Vec<pb::Interrupt>) -> Result<Json, ProtoError> {
    items
        .into_iter()
        .map(interrupt)
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

fn interrupt(i: pb::Interrupt) -> Result<Json, ProtoError> {
    let mut o = Out::default();
    o.put("id", i.id);
    o.put("reason", i.reason);
    o.opt("message", i.message);
    o.opt("toolCallId", i.tool_call_id);
    o.value("responseSchema", i.response_schema)?;
    o.opt("expiresAt", i.expires_at);
    o.value("metadata", i.metadata)?;
    o.opt("subagentRunId", i.subagent_run_id);
    Ok(o.done())
}

fn patch(ops: Vec<pb::JsonPatchOperation>) -> Result<Json, ProtoError> {
    use pb::JsonPatchOperationType as Op;
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let name = match Op::try_from(op.op) {
            Ok(Op::Add) => "add",
            Ok(Op::Remove) => "remove",
            Ok(Op::Replace) => "replace",
            Ok(Op::Move) => "move",
            Ok(Op::Copy) => "copy",
            Ok(Op::Test) => "test",
            Err(_) => return Err(ProtoError::malformed("an unknown JSON Patch operation")),
        };
        let mut o = Out::default();
        o.put("op", name);
        o.put("path", op.path);
        o.opt("from", op.from);
        o.value("value", op.value)?;
        out.push(o.done());
    }
    Ok(Json::Array(out))
}

/// String content, or else the parts (none: an empty list).
fn content(text: Option<String>, parts: Vec<pb::InputContent>) -> Result<Json, ProtoError> {
    match text {
        Some(_) if !parts.is_empty() => Err(ProtoError::malformed(
            "both string content and content parts",
        )),
        Some(text) => Ok(text.into()),
        None => content_parts(parts),
    }
}

fn content_parts(parts: Vec<pb::InputContent>) -> Result<Json, ProtoError> {
    parts
        .into_iter()
        .map(content_part)
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

fn content_part(part: pb::InputContent) -> Result<Json, ProtoError> {
    use pb::Part;
    let mut o = Out::default();
    let (kind, source, metadata, id) = match part.part {
        None => return Err(ProtoError::malformed("a content part of no known kind")),
        Some(Part::Text(t)) => {
            o.put("type", "text");
            o.put("text", t.text);
            o.opt("id", t.id);
            o.value("metadata", t.metadata)?;
            return Ok(o.done());
        }
        Some(Part::Image(p)) => ("image", p.source, p.metadata, p.id),
        Some(Part::Audio(p)) => ("audio", p.source, p.metadata, p.id),
        Some(Part::Video(p)) => ("video", p.source, p.metadata, p.id),
        Some(Part::Document(p)) => ("document", p.source, p.metadata, p.id),
    };
    o.put("type", kind);
    if let Some(source) = source {
        o.put("source", part_source(source)?);
    }
    o.opt("id", id);
    o.value("metadata", metadata)?;
    Ok(o.done())
}

fn part_source(source: pb::InputContentSource) -> Result<Json, ProtoError> {
    use pb::Source;
    Ok(match source.source {
        None => return Err(ProtoError::malformed("a content source of no known kind")),
        Some(Source::Data(s)) => json!({"type": "data", "value": s.value, "mimeType": s.mime_type}),
        Some(Source::Url(s)) => {
            let mut o = Out::default();
            o.put("type", "url");
            o.put("value", s.value);
            o.opt("mimeType", s.mime_type);
            o.done()
        }
        Some(Source::File(s)) => {
            let mut o = Out::default();
            o.put("type", "file");
            o.put("value", s.value);
            o.opt("provider", s.provider);
            o.opt("mimeType", s.mime_type);
            o.done()
        }
    })
}

fn messages(items: Vec<pb::Message>) -> Result<Json, ProtoError> {
    items
        .into_iter()
        .map(message)
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

/// One message of any role: `content` from whichever field its role uses.
fn message(m: pb::Message) -> Result<Json, ProtoError> {
    let mut o = Out::default();
    let parts_role = matches!(m.role.as_str(), "user" | "tool");
    let activity = m.role == "activity";
    if !parts_role && !m.content_parts.is_empty() {
        return Err(ProtoError::malformed(
            "content parts on a role that has none",
        ));
    }
    if !activity && m.activity_content.is_some() {
        return Err(ProtoError::malformed(
            "activity content on a role that is not activity",
        ));
    }
    o.put("id", m.id);
    o.put("role", m.role);
    if activity {
        if m.content.is_some() {
            return Err(ProtoError::malformed("string content on an activity"));
        }
        o.object("content", m.activity_content)?;
    } else if parts_role {
        o.put("content", content(m.content, m.content_parts)?);
    } else {
        o.opt("content", m.content);
    }
    o.opt("name", m.name);
    o.list("toolCalls", m.tool_calls, tool_call)?;
    o.opt("toolCallId", m.tool_call_id);
    o.opt("error", m.error);
    o.object("metadata", m.metadata)?;
    o.opt("subagentRunId", m.subagent_run_id);
    o.opt("encryptedValue", m.encrypted_value);
    o.opt("activityType", m.activity_type);
    Ok(o.done())
}

fn tool_call(call: pb::ToolCall) -> Result<Json, ProtoError> {
    let function = call.function.unwrap_or_default();
    let mut o = Out::default();
    o.put("id", call.id);
    o.put("type", call.r#type);
    o.put(
        "function",
        json!({"name": function.name, "arguments": function.arguments}),
    );
    o.object("metadata", call.metadata)?;
    o.opt("encryptedValue", call.encrypted_value);
    Ok(o.done())
}

fn run_agent_input(input: pb::RunAgentInput) -> Result<Json, ProtoError> {
    let mut o = Out::default();
    o.put("threadId", input.thread_id);
    o.put("runId", input.run_id);
    o.opt("parentRunId", input.parent_run_id);
    o.value("state", input.state)?;
    o.put("messages", messages(input.messages)?);
    o.list("tools", input.tools, |t| {
        let mut o = Out::default();
        o.put("name", t.name);
        o.put("description", t.description);
        o.value("parameters", t.parameters)?;
        o.object("metadata", t.metadata)?;
        Ok(o.done())
    })?;
    o.list("context", input.context, |c| {
        Ok(json!({"description": c.description, "value": c.value}))
    })?;
    o.value("forwardedProps", input.forwarded_props)?;
    o.list("resume", input.resume, |r| {
        let mut o = Out::default();
        o.put("interruptId", r.interrupt_id);
        o.put("status", r.status);
        o.value("payload", r.payload)?;
        o.object("metadata", r.metadata)?;
        Ok(o.done())
    })?;
    o.opt("protocolVersion", input.protocol_version);
    Ok(o.done())
}
