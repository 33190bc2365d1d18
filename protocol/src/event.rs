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
use crate::wire::{JsonObject, const_str, non_null, timestamp};

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

/// `RUN_STARTED`: the first event of every run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    /// The conversation.
    pub thread_id: String,
    /// The run.
    pub run_id: String,
    /// The run that spawned this one.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_run_id: Option<String>,
    /// Echo of the request (boxed: it is large and rarely sent).
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub input: Option<Box<RunAgentInput>>,
    /// Protocol version the producer speaks (`"1.0"`).
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
}

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

/// `RUN_FINISHED`: the run ended normally (or stopped for an interrupt).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinished {
    /// The conversation.
    pub thread_id: String,
    /// The run.
    pub run_id: String,
    /// Any JSON result; `null` reads as absent (legacy tolerance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// How it ended; absent means success. `null` reads as absent (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Token accounting.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage: Option<Vec<TokenUsage>>,
}

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

/// `RUN_ERROR`: the run failed. The message is shown to users; keep it free
/// of private data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// Human-readable description.
    pub message: String,
    /// Machine-readable code.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
    /// Token accounting up to the failure.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage: Option<Vec<TokenUsage>>,
}

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

/// `STEP_STARTED`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepStarted {
    /// Step name (unique among open steps of one producer).
    pub step_name: String,
}

/// `STEP_FINISHED`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFinished {
    /// Step name.
    pub step_name: String,
}

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

/// `TEXT_MESSAGE_START`: opens text message `message_id`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageStart {
    /// The message id.
    pub message_id: String,
    /// Role; absent means assistant.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub role: Option<TextMessageRole>,
    /// Optional author name.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
}

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

/// `TEXT_MESSAGE_CONTENT`: appends `delta` to an open text message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageContent {
    /// The open message.
    pub message_id: String,
    /// Text to append.
    pub delta: String,
}

/// `TEXT_MESSAGE_END`: closes a text message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageEnd {
    /// The open message.
    pub message_id: String,
}

/// `TEXT_MESSAGE_CHUNK`: shorthand that opens, continues (and implicitly
/// closes) a text message; the client expands it into START/CONTENT/END.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageChunk {
    /// Required on the first chunk of a message.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_id: Option<String>,
    /// Role of a new message.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub role: Option<TextMessageRole>,
    /// Text to append.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub delta: Option<String>,
    /// Author name of a new message.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
}

// ---------------------------------------------------------------------------
// Tool calls

/// `TOOL_CALL_START`: opens tool call `tool_call_id`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStart {
    /// The call id.
    pub tool_call_id: String,
    /// The tool called.
    pub tool_call_name: String,
    /// The assistant message carrying the call; `null` reads as absent (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
}

/// `TOOL_CALL_ARGS`: a fragment of the call's JSON arguments text.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallArgs {
    /// The open call.
    pub tool_call_id: String,
    /// Arguments fragment.
    pub delta: String,
}

/// `TOOL_CALL_END`: closes a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEnd {
    /// The open call.
    pub tool_call_id: String,
}

/// `TOOL_CALL_CHUNK`: shorthand for START/ARGS/END.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallChunk {
    /// Required on the first chunk of a call.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_id: Option<String>,
    /// Required on the first chunk of a call.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_name: Option<String>,
    /// The assistant message carrying the call; `null` reads as absent (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
    /// Arguments fragment.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub delta: Option<String>,
}

const_str!(
    /// The `role: "tool"` of a `TOOL_CALL_RESULT`.
    ToolRole = "tool"
);

/// `TOOL_CALL_RESULT`: a tool's result, inserted as a tool message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    /// Id of the tool message this becomes.
    pub message_id: String,
    /// The call answered.
    pub tool_call_id: String,
    /// The result.
    pub content: Content,
    /// Always `"tool"` when present.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub role: Option<ToolRole>,
}

// ---------------------------------------------------------------------------
// State, messages, activities

/// `STATE_SNAPSHOT`: the whole state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StateSnapshot {
    /// Any JSON value.
    pub snapshot: Value,
}

/// `STATE_DELTA`: an RFC 6902 patch to the state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StateDelta {
    /// The patch.
    pub delta: Vec<PatchOp>,
}

/// `MESSAGES_SNAPSHOT`: the whole conversation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessagesSnapshot {
    /// All messages, in order.
    pub messages: Vec<Message>,
}

/// `ACTIVITY_SNAPSHOT`: creates or replaces an activity message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySnapshot {
    /// The activity message id.
    pub message_id: String,
    /// Application-defined kind.
    pub activity_type: String,
    /// Its state (a JSON object).
    pub content: JsonObject,
    /// Replace an existing activity (default true).
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub replace: Option<bool>,
}

/// `ACTIVITY_DELTA`: patches an activity message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityDelta {
    /// The activity message id.
    pub message_id: String,
    /// Application-defined kind.
    pub activity_type: String,
    /// The patch.
    pub patch: Vec<PatchOp>,
}

/// `RAW`: a provider event passed through.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Raw {
    /// The provider's event, any JSON.
    pub event: Value,
    /// Where it came from.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub source: Option<String>,
}

/// `CUSTOM`: an application-defined event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Custom {
    /// Event name.
    pub name: String,
    /// Payload, any JSON.
    pub value: Value,
}

// ---------------------------------------------------------------------------
// Reasoning

/// `REASONING_START`: opens a reasoning span (its id namespaces nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningStart {
    /// The span id.
    pub message_id: String,
}

const_str!(
    /// The `role: "reasoning"` every `REASONING_MESSAGE_START` carries;
    /// any other role is rejected.
    ReasoningRole = "reasoning"
);

/// `REASONING_MESSAGE_START`: opens reasoning message `message_id`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningMessageStart {
    /// The message id (also the `entityId` of its encrypted value).
    pub message_id: String,
    /// Always `"reasoning"`.
    pub role: ReasoningRole,
}

impl ReasoningMessageStart {
    /// Opens reasoning message `message_id`.
    pub fn new(message_id: impl Into<String>) -> Self {
        ReasoningMessageStart {
            message_id: message_id.into(),
            role: ReasoningRole,
        }
    }
}

/// `REASONING_MESSAGE_CONTENT`: appends visible reasoning text.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningMessageContent {
    /// The open reasoning message.
    pub message_id: String,
    /// Text to append.
    pub delta: String,
}

/// `REASONING_MESSAGE_END`: closes a reasoning message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningMessageEnd {
    /// The open reasoning message.
    pub message_id: String,
}

/// `REASONING_MESSAGE_CHUNK`: shorthand for START/CONTENT/END.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningMessageChunk {
    /// Required on the first chunk of a message.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_id: Option<String>,
    /// Text to append.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub delta: Option<String>,
}

/// `REASONING_END`: closes a reasoning span.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEnd {
    /// The open span.
    pub message_id: String,
}

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

/// `REASONING_ENCRYPTED_VALUE`: stores an opaque value on an existing
/// message or tool call (dropped by the client if the entity is unknown, so
/// emit it after the entity's START).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEncryptedValue {
    /// Message or tool call.
    pub subtype: EncryptedValueSubtype,
    /// The message or tool call id.
    pub entity_id: String,
    /// The sealed value.
    pub encrypted_value: String,
}

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

/// `SUBAGENT_STARTED`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStarted {
    /// The subagent invocation's id (unique within the run).
    pub subagent_run_id: String,
    /// Subagent name.
    pub name: String,
    /// What it does.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// The subagent that delegated to this one.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_subagent_run_id: Option<String>,
    /// The tool call that spawned it.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_tool_call_id: Option<String>,
    /// The message that spawned it.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_message_id: Option<String>,
}

/// `SUBAGENT_FINISHED`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentFinished {
    /// The subagent invocation.
    pub subagent_run_id: String,
    /// Any JSON result; `null` reads as absent (legacy tolerance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// How it ended.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub outcome: Option<SubagentOutcome>,
}

/// `SUBAGENT_ERROR`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentError {
    /// The subagent invocation.
    pub subagent_run_id: String,
    /// Human-readable description.
    pub message: String,
    /// Machine-readable code.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
}

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
