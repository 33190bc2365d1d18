//! What events carry (messages, content parts, tool calls, the run input,
//! usage, interrupts, patch operations), JSON → protobuf.

use serde_json::Value as Json;

use super::super::ProtoError;
use super::super::messages as pb;
use super::super::value::struct_to_proto;
use super::object::Obj;

pub(super) fn string(json: Json, path: String) -> Result<String, ProtoError> {
    match json {
        Json::String(s) => Ok(s),
        _ => Err(ProtoError::unrepresentable(&path, "expected a string")),
    }
}

pub(super) fn usage(json: Json, path: String) -> Result<pb::Usage, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let usage = pb::Usage {
        provider: o.opt_string("provider")?,
        model: o.opt_string("model")?,
        input_tokens: o.opt_i64("inputTokens")?,
        output_tokens: o.opt_i64("outputTokens")?,
        total_tokens: o.opt_i64("totalTokens")?,
        reasoning_tokens: o.opt_i64("reasoningTokens")?,
        cached_input_tokens: o.opt_i64("cachedInputTokens")?,
        cache_write_input_tokens: o.opt_i64("cacheWriteInputTokens")?,
    };
    o.finish()?;
    Ok(usage)
}

pub(super) fn interrupt(json: Json, path: String) -> Result<pb::Interrupt, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let interrupt = pb::Interrupt {
        id: o.string("id")?,
        reason: o.string("reason")?,
        message: o.opt_string("message")?,
        tool_call_id: o.opt_string("toolCallId")?,
        response_schema: o.opt_value("responseSchema")?,
        expires_at: o.opt_string("expiresAt")?,
        metadata: o.opt_value("metadata")?,
        subagent_run_id: o.opt_string("subagentRunId")?,
    };
    o.finish()?;
    Ok(interrupt)
}

pub(super) fn patch_op(json: Json, path: String) -> Result<pb::JsonPatchOperation, ProtoError> {
    use pb::JsonPatchOperationType as Op;
    let mut o = Obj::new(json, path)?;
    let op = match o.string("op")?.as_str() {
        "add" => Op::Add,
        "remove" => Op::Remove,
        "replace" => Op::Replace,
        "move" => Op::Move,
        "copy" => Op::Copy,
        "test" => Op::Test,
        _ => {
            return Err(ProtoError::unrepresentable(
                &o.at("op"),
                "not a JSON Patch operation",
            ));
        }
    };
    let operation = pb::JsonPatchOperation {
        op: op as i32,
        path: o.string("path")?,
        from: o.opt_string("from")?,
        value: o.opt_value("value")?,
    };
    o.finish()?;
    Ok(operation)
}

/// `content` as a string or as parts (a string rides `content`, parts the
/// repeated field; an absent string and no parts read as empty parts).
pub(super) fn content(o: &mut Obj) -> Result<(Option<String>, Vec<pb::InputContent>), ProtoError> {
    let path = o.at("content");
    match o.take("content") {
        Some(Json::String(s)) => Ok((Some(s), Vec::new())),
        Some(Json::Array(parts)) => Ok((
            None,
            parts
                .into_iter()
                .enumerate()
                .map(|(i, p)| content_part(p, format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        )),
        Some(_) => Err(ProtoError::unrepresentable(
            &path,
            "expected a string or an array of content parts",
        )),
        None => Err(ProtoError::unrepresentable(
            &path,
            "a required field is missing",
        )),
    }
}

pub(super) fn content_part(json: Json, path: String) -> Result<pb::InputContent, ProtoError> {
    use pb::Part;
    let mut o = Obj::new(json, path)?;
    let kind = o.string("type")?;
    let part = if kind == "text" {
        Part::Text(pb::TextInputPart {
            text: o.string("text")?,
            id: o.opt_string("id")?,
            metadata: o.opt_value("metadata")?,
        })
    } else {
        let source = o.take_object("source")?.ok_or_else(|| {
            ProtoError::unrepresentable(&o.at("source"), "a required field is missing")
        })?;
        let media = (
            Some(part_source(source)?),
            o.opt_value("metadata")?,
            o.opt_string("id")?,
        );
        match kind.as_str() {
            "image" => Part::Image(pb::ImageInputPart {
                source: media.0,
                metadata: media.1,
                id: media.2,
            }),
            "audio" => Part::Audio(pb::AudioInputPart {
                source: media.0,
                metadata: media.1,
                id: media.2,
            }),
            "video" => Part::Video(pb::VideoInputPart {
                source: media.0,
                metadata: media.1,
                id: media.2,
            }),
            "document" => Part::Document(pb::DocumentInputPart {
                source: media.0,
                metadata: media.1,
                id: media.2,
            }),
            _ => {
                return Err(ProtoError::unrepresentable(
                    &o.at("type"),
                    "not a content part of AG-UI 1.0",
                ));
            }
        }
    };
    o.finish()?;
    Ok(pb::InputContent { part: Some(part) })
}

pub(super) fn part_source(mut o: Obj) -> Result<pb::InputContentSource, ProtoError> {
    use pb::Source;
    let source = match o.string("type")?.as_str() {
        "data" => Source::Data(pb::InputContentDataSource {
            value: o.string("value")?,
            mime_type: o.string("mimeType")?,
        }),
        "url" => Source::Url(pb::InputContentUrlSource {
            value: o.string("value")?,
            mime_type: o.opt_string("mimeType")?,
        }),
        "file" => Source::File(pb::InputContentFileSource {
            value: o.string("value")?,
            provider: o.opt_string("provider")?,
            mime_type: o.opt_string("mimeType")?,
        }),
        _ => {
            return Err(ProtoError::unrepresentable(
                &o.at("type"),
                "not a content source of AG-UI 1.0",
            ));
        }
    };
    o.finish()?;
    Ok(pb::InputContentSource {
        source: Some(source),
    })
}

/// A message of any role: the wire's one `Message` holds every role's
/// fields; `content` goes to `content` (a string), `content_parts` (parts)
/// or `activity_content` (an activity's object).
pub(super) fn message(json: Json, path: String) -> Result<pb::Message, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let mut message = pb::Message {
        id: o.string("id")?,
        role: o.string("role")?,
        name: o.opt_string("name")?,
        tool_calls: o.non_empty_list("toolCalls", tool_call)?,
        tool_call_id: o.opt_string("toolCallId")?,
        error: o.opt_string("error")?,
        metadata: o.opt_struct("metadata")?,
        subagent_run_id: o.opt_string("subagentRunId")?,
        encrypted_value: o.opt_string("encryptedValue")?,
        activity_type: o.opt_string("activityType")?,
        ..Default::default()
    };
    let path = o.at("content");
    let parts_role = matches!(message.role.as_str(), "user" | "tool");
    match o.take("content") {
        // Those roles read a missing string as (empty) parts.
        None if parts_role => {
            return Err(ProtoError::unrepresentable(
                &path,
                "a required field is missing",
            ));
        }
        None => {}
        Some(Json::String(s)) => message.content = Some(s),
        Some(Json::Array(parts)) if parts_role => {
            message.content_parts = parts
                .into_iter()
                .enumerate()
                .map(|(i, p)| content_part(p, format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?;
        }
        Some(Json::Object(map)) if message.role == "activity" => {
            message.activity_content = Some(struct_to_proto(map, &path)?);
        }
        Some(_) => {
            return Err(ProtoError::unrepresentable(
                &path,
                "not a content form of this role",
            ));
        }
    }
    o.finish()?;
    Ok(message)
}

pub(super) fn tool_call(json: Json, path: String) -> Result<pb::ToolCall, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let function = o.take_object("function")?.ok_or_else(|| {
        ProtoError::unrepresentable(&o.at("function"), "a required field is missing")
    })?;
    let call = pb::ToolCall {
        id: o.string("id")?,
        r#type: o.string("type")?,
        function: Some(tool_function(function)?),
        metadata: o.opt_struct("metadata")?,
        encrypted_value: o.opt_string("encryptedValue")?,
    };
    o.finish()?;
    Ok(call)
}

pub(super) fn tool_function(mut o: Obj) -> Result<pb::ToolCallFunction, ProtoError> {
    let function = pb::ToolCallFunction {
        name: o.string("name")?,
        arguments: o.string("arguments")?,
    };
    o.finish()?;
    Ok(function)
}

pub(super) fn run_agent_input(mut o: Obj) -> Result<pb::RunAgentInput, ProtoError> {
    let input = pb::RunAgentInput {
        thread_id: o.string("threadId")?,
        run_id: o.string("runId")?,
        parent_run_id: o.opt_string("parentRunId")?,
        state: o.opt_value("state")?,
        messages: o.list("messages", message)?,
        tools: o.non_empty_list("tools", tool)?,
        context: o.non_empty_list("context", context)?,
        forwarded_props: o.opt_value("forwardedProps")?,
        resume: o.non_empty_list("resume", resume_entry)?,
        protocol_version: o.opt_string("protocolVersion")?,
    };
    o.finish()?;
    Ok(input)
}

pub(super) fn tool(json: Json, path: String) -> Result<pb::Tool, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let tool = pb::Tool {
        name: o.string("name")?,
        description: o.string("description")?,
        parameters: o.opt_value("parameters")?,
        metadata: o.opt_struct("metadata")?,
    };
    o.finish()?;
    Ok(tool)
}

pub(super) fn context(json: Json, path: String) -> Result<pb::Context, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let context = pb::Context {
        description: o.string("description")?,
        value: o.string("value")?,
    };
    o.finish()?;
    Ok(context)
}

pub(super) fn resume_entry(json: Json, path: String) -> Result<pb::ResumeEntry, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let entry = pb::ResumeEntry {
        interrupt_id: o.string("interruptId")?,
        status: o.string("status")?,
        payload: o.opt_value("payload")?,
        metadata: o.opt_struct("metadata")?,
    };
    o.finish()?;
    Ok(entry)
}
