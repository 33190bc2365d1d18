//! An event's JSON form → the `ag_ui.Event` message.
//!
//! The mapping reads the event as AG-UI JSON (what [`Event::to_value`]
//! writes, the same object an SSE frame carries) and takes each key it
//! knows off the object; a key left over at any level is a field the
//! protobuf binding has no place for, and the event is refused with its
//! path instead of arriving shorter than it was sent. The `match` over
//! [`EventType`] has no catch-all, so a new event type does not compile
//! until it has a mapping.

use serde_json::{Map, Value as Json};

use super::ProtoError;
use super::messages as pb;
use super::value::{struct_to_proto, to_proto};
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

/// A JSON object whose keys are taken one by one; `finish` refuses any
/// left over. `path` names it in errors (`""` for the event itself).
struct Obj {
    map: Map<String, Json>,
    path: String,
}

impl Obj {
    fn new(json: Json, path: String) -> Result<Self, ProtoError> {
        match json {
            Json::Object(map) => Ok(Obj { map, path }),
            _ => Err(ProtoError::unrepresentable(&path, "expected an object")),
        }
    }

    fn at(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn take(&mut self, key: &str) -> Option<Json> {
        self.map.remove(key)
    }

    fn string(&mut self, key: &str) -> Result<String, ProtoError> {
        self.opt_string(key)?.ok_or_else(|| {
            ProtoError::unrepresentable(&self.at(key), "a required field is missing")
        })
    }

    fn opt_string(&mut self, key: &str) -> Result<Option<String>, ProtoError> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::String(s)) => Ok(Some(s)),
            Some(_) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "expected a string",
            )),
        }
    }

    fn opt_bool(&mut self, key: &str) -> Result<Option<bool>, ProtoError> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(b)),
            Some(_) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "expected a boolean",
            )),
        }
    }

    fn opt_i64(&mut self, key: &str) -> Result<Option<i64>, ProtoError> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
                ProtoError::unrepresentable(&self.at(key), "expected a 64-bit integer")
            }),
            Some(_) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "expected an integer",
            )),
        }
    }

    /// A required JSON value of any type.
    fn value(&mut self, key: &str) -> Result<pb::Value, ProtoError> {
        self.opt_value(key)?.ok_or_else(|| {
            ProtoError::unrepresentable(&self.at(key), "a required field is missing")
        })
    }

    fn opt_value(&mut self, key: &str) -> Result<Option<pb::Value>, ProtoError> {
        let path = self.at(key);
        self.take(key).map(|v| to_proto(v, &path)).transpose()
    }

    fn required_struct(&mut self, key: &str) -> Result<pb::Struct, ProtoError> {
        self.opt_struct(key)?.ok_or_else(|| {
            ProtoError::unrepresentable(&self.at(key), "a required field is missing")
        })
    }

    fn opt_struct(&mut self, key: &str) -> Result<Option<pb::Struct>, ProtoError> {
        let path = self.at(key);
        match self.take(key) {
            None => Ok(None),
            Some(Json::Object(map)) => struct_to_proto(map, &path).map(Some),
            Some(_) => Err(ProtoError::unrepresentable(&path, "expected an object")),
        }
    }

    fn take_object(&mut self, key: &str) -> Result<Option<Obj>, ProtoError> {
        let path = self.at(key);
        self.take(key).map(|v| Obj::new(v, path)).transpose()
    }

    fn opt_object<T>(
        &mut self,
        key: &str,
        map: impl FnOnce(Obj) -> Result<T, ProtoError>,
    ) -> Result<Option<T>, ProtoError> {
        self.take_object(key)?.map(map).transpose()
    }

    /// An array mapped item by item; absent reads as empty (a repeated
    /// field cannot tell the two apart: use this only where the JSON form
    /// always has the array, or where empty is written as absent).
    fn list<T>(
        &mut self,
        key: &str,
        item: impl Fn(Json, String) -> Result<T, ProtoError>,
    ) -> Result<Vec<T>, ProtoError> {
        let path = self.at(key);
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Json::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| item(v, format!("{path}[{i}]")))
                .collect(),
            Some(_) => Err(ProtoError::unrepresentable(&path, "expected an array")),
        }
    }

    /// An optional array that the protobuf form writes as a repeated field:
    /// absent and empty would both arrive absent, so an empty one is
    /// refused rather than changed.
    fn non_empty_list<T>(
        &mut self,
        key: &str,
        item: impl Fn(Json, String) -> Result<T, ProtoError>,
    ) -> Result<Vec<T>, ProtoError> {
        if matches!(self.map.get(key), Some(Json::Array(items)) if items.is_empty()) {
            return Err(ProtoError::unrepresentable(
                &self.at(key),
                "an empty array arrives as an absent one",
            ));
        }
        self.list(key, item)
    }

    /// Refuses the keys nobody took.
    fn finish(self) -> Result<(), ProtoError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "no field of the protobuf binding carries it",
            )),
        }
    }
}

fn string(json: Json, path: String) -> Result<String, ProtoError> {
    match json {
        Json::String(s) => Ok(s),
        _ => Err(ProtoError::unrepresentable(&path, "expected a string")),
    }
}

fn usage(json: Json, path: String) -> Result<pb::Usage, ProtoError> {
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

fn interrupt(json: Json, path: String) -> Result<pb::Interrupt, ProtoError> {
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

fn patch_op(json: Json, path: String) -> Result<pb::JsonPatchOperation, ProtoError> {
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
fn content(o: &mut Obj) -> Result<(Option<String>, Vec<pb::InputContent>), ProtoError> {
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

fn content_part(json: Json, path: String) -> Result<pb::InputContent, ProtoError> {
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

fn part_source(mut o: Obj) -> Result<pb::InputContentSource, ProtoError> {
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
fn message(json: Json, path: String) -> Result<pb::Message, ProtoError> {
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

fn tool_call(json: Json, path: String) -> Result<pb::ToolCall, ProtoError> {
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

fn tool_function(mut o: Obj) -> Result<pb::ToolCallFunction, ProtoError> {
    let function = pb::ToolCallFunction {
        name: o.string("name")?,
        arguments: o.string("arguments")?,
    };
    o.finish()?;
    Ok(function)
}

fn run_agent_input(mut o: Obj) -> Result<pb::RunAgentInput, ProtoError> {
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

fn tool(json: Json, path: String) -> Result<pb::Tool, ProtoError> {
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

fn context(json: Json, path: String) -> Result<pb::Context, ProtoError> {
    let mut o = Obj::new(json, path)?;
    let context = pb::Context {
        description: o.string("description")?,
        value: o.string("value")?,
    };
    o.finish()?;
    Ok(context)
}

fn resume_entry(json: Json, path: String) -> Result<pb::ResumeEntry, ProtoError> {
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
