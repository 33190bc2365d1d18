//! The 31 AG-UI 1.0 events.
//!
//! An [`Event`] is the fields every event may carry (`timestamp`, `rawEvent`,
//! `metadata`, `subagentRunId`) around an [`EventKind`], which holds the
//! type-specific fields. Each kind is a plain struct, so building an event is
//! one line:
//!
//! ```
//! use thinkwire_protocol::{Event, EventType, TextMessageContent};
//!
//! let ev = Event::from(TextMessageContent { message_id: "m1".into(), delta: "Hi".into() })
//!     .with_timestamp(1_700_000_000_000);
//! assert_eq!(ev.event_type(), EventType::TextMessageContent);
//! assert_eq!(
//!     ev.to_json(),
//!     r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hi","timestamp":1700000000000}"#
//! );
//! ```
//!
//! `THINKING_*` events were removed in 1.0 and do not exist here.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::decode::{DecodeError, decode_value, error_at, kind_of};
use crate::input::RunAgentInput;
use crate::message::{Content, Message};
use crate::outcome::{Outcome, SubagentOutcome, TokenUsage};
use crate::patch::PatchOp;
use crate::wire::{JsonObject, const_str, non_null, timestamp, wire_struct};

/// Declares `EventType`, `EventKind`, the `From` impls and the decoder from
/// one table, so the 31 types cannot drift apart.
macro_rules! events {
    ($($variant:ident => $wire:literal, attributable = $attr:literal;)*) => {
        /// The `type` of an event: one of the 31 AG-UI 1.0 event types.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum EventType {
            $(
                #[doc = concat!("`", $wire, "`")]
                #[serde(rename = $wire)]
                $variant,
            )*
        }

        impl EventType {
            /// Every event type, in schema order.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),*];

            /// The wire name (`"TEXT_MESSAGE_CONTENT"`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$variant => $wire,)*
                }
            }

            /// Looks up a wire name; `None` for types this protocol version
            /// does not know (which readers drop).
            pub fn parse(name: &str) -> Option<EventType> {
                match name {
                    $($wire => Some(EventType::$variant),)*
                    _ => None,
                }
            }

            /// Whether events of this type may carry the common
            /// `subagentRunId` attribution (all but the run-level events,
            /// `MESSAGES_SNAPSHOT`, and the subagent lifecycle events, which
            /// carry it as their own field).
            pub const fn is_attributable(self) -> bool {
                match self {
                    $(EventType::$variant => $attr,)*
                }
            }
        }

        /// The type-specific part of an event; serialized with its `type` tag.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "type")]
        pub enum EventKind {
            $(
                #[doc = concat!("`", $wire, "`")]
                #[serde(rename = $wire)]
                $variant($variant),
            )*
        }

        impl EventKind {
            /// This kind's event type.
            pub fn event_type(&self) -> EventType {
                match self {
                    $(EventKind::$variant(_) => EventType::$variant,)*
                }
            }

            fn decode(ty: EventType, value: &Value) -> Result<EventKind, DecodeError> {
                Ok(match ty {
                    $(EventType::$variant => EventKind::$variant(decode_value(value)?),)*
                })
            }
        }

        $(
            impl From<$variant> for EventKind {
                fn from(kind: $variant) -> Self {
                    EventKind::$variant(kind)
                }
            }

            impl From<$variant> for Event {
                fn from(kind: $variant) -> Self {
                    Event::new(EventKind::$variant(kind))
                }
            }
        )*
    };
}

events! {
    TextMessageStart => "TEXT_MESSAGE_START", attributable = true;
    TextMessageContent => "TEXT_MESSAGE_CONTENT", attributable = true;
    TextMessageEnd => "TEXT_MESSAGE_END", attributable = true;
    TextMessageChunk => "TEXT_MESSAGE_CHUNK", attributable = true;
    ToolCallStart => "TOOL_CALL_START", attributable = true;
    ToolCallArgs => "TOOL_CALL_ARGS", attributable = true;
    ToolCallEnd => "TOOL_CALL_END", attributable = true;
    ToolCallChunk => "TOOL_CALL_CHUNK", attributable = true;
    ToolCallResult => "TOOL_CALL_RESULT", attributable = true;
    StateSnapshot => "STATE_SNAPSHOT", attributable = true;
    StateDelta => "STATE_DELTA", attributable = true;
    MessagesSnapshot => "MESSAGES_SNAPSHOT", attributable = false;
    ActivitySnapshot => "ACTIVITY_SNAPSHOT", attributable = true;
    ActivityDelta => "ACTIVITY_DELTA", attributable = true;
    Raw => "RAW", attributable = true;
    Custom => "CUSTOM", attributable = true;
    RunStarted => "RUN_STARTED", attributable = false;
    RunFinished => "RUN_FINISHED", attributable = false;
    RunError => "RUN_ERROR", attributable = false;
    StepStarted => "STEP_STARTED", attributable = true;
    StepFinished => "STEP_FINISHED", attributable = true;
    ReasoningStart => "REASONING_START", attributable = true;
    ReasoningMessageStart => "REASONING_MESSAGE_START", attributable = true;
    ReasoningMessageContent => "REASONING_MESSAGE_CONTENT", attributable = true;
    ReasoningMessageEnd => "REASONING_MESSAGE_END", attributable = true;
    ReasoningMessageChunk => "REASONING_MESSAGE_CHUNK", attributable = true;
    ReasoningEnd => "REASONING_END", attributable = true;
    ReasoningEncryptedValue => "REASONING_ENCRYPTED_VALUE", attributable = true;
    SubagentStarted => "SUBAGENT_STARTED", attributable = false;
    SubagentFinished => "SUBAGENT_FINISHED", attributable = false;
    SubagentError => "SUBAGENT_ERROR", attributable = false;
}

impl EventType {
    /// `RUN_FINISHED` and `RUN_ERROR`: the events that end a run (and an
    /// SSE response / a WebSocket run).
    pub const fn is_terminal(self) -> bool {
        matches!(self, EventType::RunFinished | EventType::RunError)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One AG-UI event: the common fields plus the type-specific [`EventKind`].
///
/// `subagent_run_id` is the common attribution field; it is only written for
/// types where the schema allows it ([`EventType::is_attributable`]) and is
/// silently left out for the others. Optional fields that are `None` are
/// omitted, never written as `null`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The type-specific fields.
    pub kind: EventKind,
    /// Milliseconds since the Unix epoch (an integer on the wire).
    pub timestamp: Option<i64>,
    /// The provider event this one was derived from (any JSON but `null`).
    pub raw_event: Option<Value>,
    /// Free-form metadata.
    pub metadata: Option<JsonObject>,
    /// Which subagent produced the event (attributable types only).
    pub subagent_run_id: Option<String>,
}

impl Event {
    /// An event with no common fields set.
    pub fn new(kind: impl Into<EventKind>) -> Self {
        Event {
            kind: kind.into(),
            timestamp: None,
            raw_event: None,
            metadata: None,
            subagent_run_id: None,
        }
    }

    /// The event's type.
    pub fn event_type(&self) -> EventType {
        self.kind.event_type()
    }

    /// Whether this event ends a run (`RUN_FINISHED`, `RUN_ERROR`).
    pub fn is_terminal(&self) -> bool {
        self.event_type().is_terminal()
    }

    /// The type-specific fields.
    pub fn kind(&self) -> &EventKind {
        &self.kind
    }

    /// Sets `timestamp` (milliseconds since the epoch).
    #[must_use]
    pub fn with_timestamp(mut self, millis: i64) -> Self {
        self.timestamp = Some(millis);
        self
    }

    /// Sets `timestamp` to the current wall-clock time.
    #[must_use]
    pub fn with_timestamp_now(self) -> Self {
        self.with_timestamp(now_millis())
    }

    /// Sets `metadata`.
    #[must_use]
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Sets `rawEvent`.
    #[must_use]
    pub fn with_raw_event(mut self, raw: Value) -> Self {
        self.raw_event = Some(raw);
        self
    }

    /// Sets the `subagentRunId` attribution (ignored on non-attributable types).
    #[must_use]
    pub fn with_subagent_run_id(mut self, id: impl Into<String>) -> Self {
        self.subagent_run_id = Some(id.into());
        self
    }

    /// The JSON text of this event (one line: JSON escapes newlines).
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string and
        // no custom serializer reports errors.
        serde_json::to_string(self).expect("AG-UI events always serialize")
    }

    /// The JSON value of this event.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("AG-UI events always serialize")
    }
}

/// Milliseconds since the Unix epoch, for `timestamp`.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl From<EventKind> for Event {
    fn from(kind: EventKind) -> Self {
        Event::new(kind)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventOut<'a> {
    #[serde(flatten)]
    kind: &'a EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_event: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent_run_id: Option<&'a str>,
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let attributable = self.event_type().is_attributable();
        EventOut {
            kind: &self.kind,
            timestamp: self.timestamp,
            raw_event: self.raw_event.as_ref(),
            metadata: self.metadata.as_ref(),
            subagent_run_id: self.subagent_run_id.as_deref().filter(|_| attributable),
        }
        .serialize(serializer)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BaseFields {
    #[serde(default, deserialize_with = "timestamp")]
    timestamp: Option<i64>,
    /// `null` reads as absent: tolerated by the official client.
    #[serde(default)]
    raw_event: Option<Value>,
    #[serde(default, deserialize_with = "non_null")]
    metadata: Option<JsonObject>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Attribution {
    #[serde(default, deserialize_with = "non_null")]
    subagent_run_id: Option<String>,
}

/// Decodes one event from JSON text as the official client reads it:
/// `Ok(None)` for an event type AG-UI 1.0 does not define (ignored), unknown
/// fields dropped, a malformed known field an error naming its path.
pub fn decode_event(json: &str) -> Result<Option<Event>, DecodeError> {
    let value: Value = serde_json::from_str(json).map_err(|e| DecodeError::from_json(&e))?;
    decode_event_value(&value)
}

/// [`decode_event`] for an already parsed value.
pub fn decode_event_value(value: &Value) -> Result<Option<Event>, DecodeError> {
    let Value::Object(map) = value else {
        return Err(DecodeError::invalid(
            "",
            format!("invalid type: {}, expected an object", kind_of(value)),
        ));
    };
    let ty = match map.get("type") {
        None => return Err(DecodeError::invalid("", "missing field `type`")),
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(DecodeError::invalid(
                "type",
                format!("invalid type: {}, expected a string", kind_of(other)),
            ));
        }
    };
    let Some(event_type) = EventType::parse(ty) else {
        return Ok(None);
    };
    let base: BaseFields = decode_value(value)?;
    let subagent_run_id = if event_type.is_attributable() {
        decode_value::<Attribution>(value)?.subagent_run_id
    } else {
        None
    };
    Ok(Some(Event {
        kind: EventKind::decode(event_type, value)?,
        timestamp: base.timestamp,
        raw_event: base.raw_event,
        metadata: base.metadata,
        subagent_run_id,
    }))
}

impl<'de> Deserialize<'de> for Event {
    /// Strict form of [`decode_event`]: an unknown event type is an error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match decode_event_value(&value) {
            Ok(Some(event)) => Ok(event),
            Ok(None) => Err(error_at(
                "type",
                "unknown variant, expected an AG-UI 1.0 event type",
            )),
            Err(DecodeError::Invalid { path, message }) => Err(error_at(&path, &message)),
            Err(err @ DecodeError::Syntax { .. }) => Err(serde::de::Error::custom(err)),
        }
    }
}

// ---------------------------------------------------------------------------
// Lifecycle

wire_struct!(
    /// `RUN_STARTED`: the first event of every run.
    #[derive(Default)]
    RunStarted {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The run that spawned this one.
        optional parent_run_id: String,
        /// Echo of the request (boxed: it is large and rarely sent).
        optional input: Box<RunAgentInput>,
        /// Protocol version the producer speaks (`"1.0"`).
        optional protocol_version: String,
    }
);

impl RunStarted {
    /// A `RUN_STARTED` for `thread_id`/`run_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunStarted {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..Default::default()
        }
    }
}

wire_struct!(
    /// `RUN_FINISHED`: the run ended normally (or stopped for an interrupt).
    #[derive(Default)]
    RunFinished {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
        /// Any JSON result; `null` reads as absent (legacy tolerance).
        nullable result: Value,
        /// How it ended; absent means success. `null` reads as absent (legacy).
        nullable outcome: Outcome,
        /// Token accounting.
        optional usage: Vec<TokenUsage>,
    }
);

impl RunFinished {
    /// A successful `RUN_FINISHED` for `thread_id`/`run_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunFinished {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..Default::default()
        }
    }
}

wire_struct!(
    /// `RUN_ERROR`: the run failed. The message is shown to users; keep it free
    /// of private data.
    #[derive(Default)]
    RunError {
        /// Human-readable description.
        message: String,
        /// Machine-readable code.
        optional code: String,
        /// Token accounting up to the failure.
        optional usage: Vec<TokenUsage>,
    }
);

impl RunError {
    /// A `RUN_ERROR` with a message and a code.
    pub fn new(message: impl Into<String>, code: impl Into<String>) -> Self {
        RunError {
            message: message.into(),
            code: Some(code.into()),
            usage: None,
        }
    }
}

wire_struct!(
    /// `STEP_STARTED`.
    #[derive(Eq, Default)]
    StepStarted {
        /// Step name (unique among open steps of one producer).
        step_name: String,
    }
);

wire_struct!(
    /// `STEP_FINISHED`.
    #[derive(Eq, Default)]
    StepFinished {
        /// Step name.
        step_name: String,
    }
);

// ---------------------------------------------------------------------------
// Text messages

/// The roles a streamed text message may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextMessageRole {
    /// Developer instructions.
    Developer,
    /// System prompt.
    System,
    /// Model output (the default when absent).
    #[default]
    Assistant,
    /// User input.
    User,
}

wire_struct!(
    /// `TEXT_MESSAGE_START`: opens text message `message_id`.
    #[derive(Eq, Default)]
    TextMessageStart {
        /// The message id.
        message_id: String,
        /// Role; absent means assistant.
        optional role: TextMessageRole,
        /// Optional author name.
        optional name: String,
    }
);

impl TextMessageStart {
    /// An assistant message start with an explicit `role: "assistant"`.
    pub fn assistant(message_id: impl Into<String>) -> Self {
        TextMessageStart {
            message_id: message_id.into(),
            role: Some(TextMessageRole::Assistant),
            name: None,
        }
    }
}

wire_struct!(
    /// `TEXT_MESSAGE_CONTENT`: appends `delta` to an open text message.
    #[derive(Eq, Default)]
    TextMessageContent {
        /// The open message.
        message_id: String,
        /// Text to append.
        delta: String,
    }
);

wire_struct!(
    /// `TEXT_MESSAGE_END`: closes a text message.
    #[derive(Eq, Default)]
    TextMessageEnd {
        /// The open message.
        message_id: String,
    }
);

wire_struct!(
    /// `TEXT_MESSAGE_CHUNK`: shorthand that opens, continues (and implicitly
    /// closes) a text message; the client expands it into START/CONTENT/END.
    #[derive(Eq, Default)]
    TextMessageChunk {
        /// Required on the first chunk of a message.
        optional message_id: String,
        /// Role of a new message.
        optional role: TextMessageRole,
        /// Text to append.
        optional delta: String,
        /// Author name of a new message.
        optional name: String,
    }
);

// ---------------------------------------------------------------------------
// Tool calls

wire_struct!(
    /// `TOOL_CALL_START`: opens tool call `tool_call_id`.
    #[derive(Eq, Default)]
    ToolCallStart {
        /// The call id.
        tool_call_id: String,
        /// The tool called.
        tool_call_name: String,
        /// The assistant message carrying the call; `null` reads as absent (legacy).
        nullable parent_message_id: String,
    }
);

wire_struct!(
    /// `TOOL_CALL_ARGS`: a fragment of the call's JSON arguments text.
    #[derive(Eq, Default)]
    ToolCallArgs {
        /// The open call.
        tool_call_id: String,
        /// Arguments fragment.
        delta: String,
    }
);

wire_struct!(
    /// `TOOL_CALL_END`: closes a tool call.
    #[derive(Eq, Default)]
    ToolCallEnd {
        /// The open call.
        tool_call_id: String,
    }
);

wire_struct!(
    /// `TOOL_CALL_CHUNK`: shorthand for START/ARGS/END.
    #[derive(Eq, Default)]
    ToolCallChunk {
        /// Required on the first chunk of a call.
        optional tool_call_id: String,
        /// Required on the first chunk of a call.
        optional tool_call_name: String,
        /// The assistant message carrying the call; `null` reads as absent (legacy).
        nullable parent_message_id: String,
        /// Arguments fragment.
        optional delta: String,
    }
);

const_str!(
    /// The `role: "tool"` of a `TOOL_CALL_RESULT`.
    ToolRole = "tool"
);

wire_struct!(
    /// `TOOL_CALL_RESULT`: a tool's result, inserted as a tool message.
    #[derive(Default)]
    ToolCallResult {
        /// Id of the tool message this becomes.
        message_id: String,
        /// The call answered.
        tool_call_id: String,
        /// The result.
        content: Content,
        /// Always `"tool"` when present.
        optional role: ToolRole,
    }
);

// ---------------------------------------------------------------------------
// State, messages, activities

wire_struct!(
    /// `STATE_SNAPSHOT`: the whole state.
    #[derive(Default)]
    StateSnapshot {
        /// Any JSON value.
        snapshot: Value,
    }
);

wire_struct!(
    /// `STATE_DELTA`: an RFC 6902 patch to the state.
    #[derive(Default)]
    StateDelta {
        /// The patch.
        delta: Vec<PatchOp>,
    }
);

wire_struct!(
    /// `MESSAGES_SNAPSHOT`: the whole conversation.
    #[derive(Default)]
    MessagesSnapshot {
        /// All messages, in order.
        messages: Vec<Message>,
    }
);

wire_struct!(
    /// `ACTIVITY_SNAPSHOT`: creates or replaces an activity message.
    #[derive(Default)]
    ActivitySnapshot {
        /// The activity message id.
        message_id: String,
        /// Application-defined kind.
        activity_type: String,
        /// Its state (a JSON object).
        content: JsonObject,
        /// Replace an existing activity (default true).
        optional replace: bool,
    }
);

wire_struct!(
    /// `ACTIVITY_DELTA`: patches an activity message.
    #[derive(Default)]
    ActivityDelta {
        /// The activity message id.
        message_id: String,
        /// Application-defined kind.
        activity_type: String,
        /// The patch.
        patch: Vec<PatchOp>,
    }
);

wire_struct!(
    /// `RAW`: a provider event passed through.
    #[derive(Default)]
    Raw {
        /// The provider's event, any JSON.
        event: Value,
        /// Where it came from.
        optional source: String,
    }
);

wire_struct!(
    /// `CUSTOM`: an application-defined event.
    #[derive(Default)]
    Custom {
        /// Event name.
        name: String,
        /// Payload, any JSON.
        value: Value,
    }
);

// ---------------------------------------------------------------------------
// Reasoning

wire_struct!(
    /// `REASONING_START`: opens a reasoning span (its id namespaces nothing).
    #[derive(Eq, Default)]
    ReasoningStart {
        /// The span id.
        message_id: String,
    }
);

const_str!(
    /// The `role: "reasoning"` every `REASONING_MESSAGE_START` carries;
    /// any other role is rejected.
    ReasoningRole = "reasoning"
);

wire_struct!(
    /// `REASONING_MESSAGE_START`: opens reasoning message `message_id`.
    #[derive(Eq, Default)]
    ReasoningMessageStart {
        /// The message id (also the `entityId` of its encrypted value).
        message_id: String,
        /// Always `"reasoning"`.
        role: ReasoningRole,
    }
);

impl ReasoningMessageStart {
    /// Opens reasoning message `message_id`.
    pub fn new(message_id: impl Into<String>) -> Self {
        ReasoningMessageStart {
            message_id: message_id.into(),
            role: ReasoningRole,
        }
    }
}

wire_struct!(
    /// `REASONING_MESSAGE_CONTENT`: appends visible reasoning text.
    #[derive(Eq, Default)]
    ReasoningMessageContent {
        /// The open reasoning message.
        message_id: String,
        /// Text to append.
        delta: String,
    }
);

wire_struct!(
    /// `REASONING_MESSAGE_END`: closes a reasoning message.
    #[derive(Eq, Default)]
    ReasoningMessageEnd {
        /// The open reasoning message.
        message_id: String,
    }
);

wire_struct!(
    /// `REASONING_MESSAGE_CHUNK`: shorthand for START/CONTENT/END.
    #[derive(Eq, Default)]
    ReasoningMessageChunk {
        /// Required on the first chunk of a message.
        optional message_id: String,
        /// Text to append.
        optional delta: String,
    }
);

wire_struct!(
    /// `REASONING_END`: closes a reasoning span.
    #[derive(Eq, Default)]
    ReasoningEnd {
        /// The open span.
        message_id: String,
    }
);

/// What a `REASONING_ENCRYPTED_VALUE` attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum EncryptedValueSubtype {
    /// A message (reasoning or text) whose id is `entityId`.
    #[default]
    #[serde(rename = "message")]
    Message,
    /// A tool call whose id is `entityId`.
    #[serde(rename = "tool-call")]
    ToolCall,
}

wire_struct!(
    /// `REASONING_ENCRYPTED_VALUE`: stores an opaque value on an existing
    /// message or tool call (dropped by the client if the entity is unknown, so
    /// emit it after the entity's START).
    #[derive(Eq, Default)]
    ReasoningEncryptedValue {
        /// Message or tool call.
        subtype: EncryptedValueSubtype,
        /// The message or tool call id.
        entity_id: String,
        /// The sealed value.
        encrypted_value: String,
    }
);

impl ReasoningEncryptedValue {
    /// An encrypted value for message `entity_id`.
    pub fn message(entity_id: impl Into<String>, encrypted_value: impl Into<String>) -> Self {
        ReasoningEncryptedValue {
            subtype: EncryptedValueSubtype::Message,
            entity_id: entity_id.into(),
            encrypted_value: encrypted_value.into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Subagents

wire_struct!(
    /// `SUBAGENT_STARTED`.
    #[derive(Eq, Default)]
    SubagentStarted {
        /// The subagent invocation's id (unique within the run).
        subagent_run_id: String,
        /// Subagent name.
        name: String,
        /// What it does.
        optional description: String,
        /// The subagent that delegated to this one.
        optional parent_subagent_run_id: String,
        /// The tool call that spawned it.
        optional parent_tool_call_id: String,
        /// The message that spawned it.
        optional parent_message_id: String,
    }
);

wire_struct!(
    /// `SUBAGENT_FINISHED`.
    #[derive(Default)]
    SubagentFinished {
        /// The subagent invocation.
        subagent_run_id: String,
        /// Any JSON result; `null` reads as absent (legacy tolerance).
        nullable result: Value,
        /// How it ended.
        optional outcome: SubagentOutcome,
    }
);

wire_struct!(
    /// `SUBAGENT_ERROR`.
    #[derive(Eq, Default)]
    SubagentError {
        /// The subagent invocation.
        subagent_run_id: String,
        /// Human-readable description.
        message: String,
        /// Machine-readable code.
        optional code: String,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thirty_one_types_round_trip_names() {
        assert_eq!(EventType::ALL.len(), 31);
        for &t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
            assert!(!t.as_str().starts_with("THINKING"));
            assert_eq!(serde_json::to_value(t).unwrap(), json!(t.as_str()));
        }
        assert_eq!(EventType::parse("THINKING_START"), None);
        let terminal: Vec<_> = EventType::ALL.iter().filter(|t| t.is_terminal()).collect();
        assert_eq!(terminal, [&EventType::RunFinished, &EventType::RunError]);
    }

    #[test]
    fn common_fields_order_and_omission() {
        let ev = Event::from(TextMessageStart::assistant("m1"))
            .with_timestamp(5)
            .with_subagent_run_id("s1");
        assert_eq!(
            ev.to_json(),
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant","timestamp":5,"subagentRunId":"s1"}"#
        );
        // Not attributable: the common subagentRunId is left out.
        let ev = Event::from(RunStarted::new("t", "r")).with_subagent_run_id("s1");
        assert_eq!(
            ev.to_json(),
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#
        );
        // Subagent events carry their own field exactly once.
        let ev = Event::from(SubagentError {
            subagent_run_id: "s2".into(),
            message: "m".into(),
            code: None,
        })
        .with_subagent_run_id("s1");
        assert_eq!(
            ev.to_json(),
            r#"{"type":"SUBAGENT_ERROR","subagentRunId":"s2","message":"m"}"#
        );
    }

    #[test]
    fn decode_unknown_type_is_none() {
        assert_eq!(decode_event(r#"{"type":"THINKING_START"}"#).unwrap(), None);
        assert_eq!(
            decode_event(r#"{"type":"SOMETHING_NEW","x":1}"#).unwrap(),
            None
        );
        assert_eq!(decode_event(r#"{"x":1}"#).unwrap_err().path(), "");
        assert_eq!(decode_event(r#"{"type":1}"#).unwrap_err().path(), "type");
        assert!(serde_json::from_str::<Event>(r#"{"type":"NOPE"}"#).is_err());
    }

    #[test]
    fn decode_checks_fields() {
        let ev = decode_event(r#"{"type":"REASONING_MESSAGE_START","messageId":"r","role":"reasoning","extra":{"a":1}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev, Event::from(ReasoningMessageStart::new("r")));
        let err = decode_event(
            r#"{"type":"REASONING_MESSAGE_START","messageId":"r","role":"assistant"}"#,
        )
        .unwrap_err();
        assert_eq!(err.path(), "role");
        let err =
            decode_event(r#"{"type":"REASONING_MESSAGE_START","messageId":"r"}"#).unwrap_err();
        assert!(err.to_string().contains("missing field `role`"), "{err}");
        let err = decode_event(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":1.5}"#)
            .unwrap_err();
        assert_eq!(err.path(), "timestamp");
        let err = decode_event(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":null}"#)
            .unwrap_err();
        assert_eq!(err.path(), "timestamp");
        let err = decode_event(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","metadata":[]}"#)
            .unwrap_err();
        assert_eq!(err.path(), "metadata");
        let err = decode_event(
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[{"id":"x","role":"user"}]}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path(), "input.messages[0]");
        assert!(err.to_string().contains("missing field `content`"), "{err}");
    }

    #[test]
    fn subagent_attribution_only_where_allowed() {
        let ev = decode_event(r#"{"type":"RUN_ERROR","message":"x","subagentRunId":5}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev.subagent_run_id, None);
        let ev = decode_event(r#"{"type":"STEP_STARTED","stepName":"x","subagentRunId":"s"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev.subagent_run_id.as_deref(), Some("s"));
        assert_eq!(
            decode_event(r#"{"type":"STEP_STARTED","stepName":"x","subagentRunId":5}"#)
                .unwrap_err()
                .path(),
            "subagentRunId"
        );
    }

    #[test]
    fn legacy_nulls_read_as_absent() {
        let ev = decode_event(r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":null,"outcome":null,"rawEvent":null}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev, Event::from(RunFinished::new("t", "r")));
        let ev = decode_event(r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            ev.to_json(),
            r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n"}"#
        );
    }

    #[test]
    fn now_is_plausible() {
        assert!(now_millis() > 1_600_000_000_000);
    }
}
