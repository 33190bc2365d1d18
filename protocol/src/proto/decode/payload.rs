//! What events carry (messages, content parts, tool calls, usage,
//! interrupts, patch operations), protobuf → JSON.

use serde_json::{Value as Json, json};

use super::super::ProtoError;
use super::super::messages as pb;
use super::out::Out;

pub(super) fn usage(u: pb::Usage) -> Result<Json, ProtoError> {
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

pub(super) fn interrupts(items: Vec<pb::Interrupt>) -> Result<Json, ProtoError> {
    items
        .into_iter()
        .map(interrupt)
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

pub(super) fn interrupt(i: pb::Interrupt) -> Result<Json, ProtoError> {
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

pub(super) fn patch(ops: Vec<pb::JsonPatchOperation>) -> Result<Json, ProtoError> {
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
pub(super) fn content(
    text: Option<String>,
    parts: Vec<pb::InputContent>,
) -> Result<Json, ProtoError> {
    match text {
        Some(_) if !parts.is_empty() => Err(ProtoError::malformed(
            "both string content and content parts",
        )),
        Some(text) => Ok(text.into()),
        None => content_parts(parts),
    }
}

pub(super) fn content_parts(parts: Vec<pb::InputContent>) -> Result<Json, ProtoError> {
    parts
        .into_iter()
        .map(content_part)
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

pub(super) fn content_part(part: pb::InputContent) -> Result<Json, ProtoError> {
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

pub(super) fn part_source(source: pb::InputContentSource) -> Result<Json, ProtoError> {
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

pub(super) fn messages(items: Vec<pb::Message>) -> Result<Json, ProtoError> {
    items
        .into_iter()
        .map(message)
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

/// One message of any role: `content` from whichever field its role uses.
pub(super) fn message(m: pb::Message) -> Result<Json, ProtoError> {
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

/// A tool call; `function` is required (the encoder never leaves it out,
/// and `@ag-ui/proto` refuses a call without it), so an absent one is
/// malformed rather than read as an empty name and arguments.
pub(super) fn tool_call(call: pb::ToolCall) -> Result<Json, ProtoError> {
    let function = call
        .function
        .ok_or_else(|| ProtoError::malformed("a tool call without its function"))?;
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

pub(super) fn run_agent_input(input: pb::RunAgentInput) -> Result<Json, ProtoError> {
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
