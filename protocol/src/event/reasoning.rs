//! Reasoning spans, reasoning messages and sealed values: `REASONING_*`.

use serde::{Deserialize, Serialize};

use crate::wire::{const_str, wire_struct};

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
