//! Streamed text messages: `TEXT_MESSAGE_*`.

use serde::{Deserialize, Serialize};

use crate::wire::wire_struct;

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
