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

mod codec;
mod custom;
mod lifecycle;
mod reasoning;
mod state;
mod subagent;
mod text;
mod tool_call;

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decode::{DecodeError, decode_value};
use crate::wire::JsonObject;

pub use codec::{decode_event, decode_event_value};
pub use custom::{Custom, Raw};
pub use lifecycle::{RunError, RunFinished, RunStarted, StepFinished, StepStarted};
pub use reasoning::{
    EncryptedValueSubtype, ReasoningEncryptedValue, ReasoningEnd, ReasoningMessageChunk,
    ReasoningMessageContent, ReasoningMessageEnd, ReasoningMessageStart, ReasoningRole,
    ReasoningStart,
};
pub use state::{ActivityDelta, ActivitySnapshot, MessagesSnapshot, StateDelta, StateSnapshot};
pub use subagent::{SubagentError, SubagentFinished, SubagentStarted};
pub use text::{
    TextMessageChunk, TextMessageContent, TextMessageEnd, TextMessageRole, TextMessageStart,
};
pub use tool_call::{
    ToolCallArgs, ToolCallChunk, ToolCallEnd, ToolCallResult, ToolCallStart, ToolRole,
};

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
    fn now_is_plausible() {
        assert!(now_millis() > 1_600_000_000_000);
    }
}
