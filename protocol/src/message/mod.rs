//! Conversation messages (`RunAgentInput.messages`, `MESSAGES_SNAPSHOT`),
//! tool calls and multimodal content parts.
//!
//! Each role is its own struct carrying exactly the fields the schema allows
//! for it; [`Message`] is the union, tagged by `role` on the wire.

mod content;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::decode::{from_value, tag_index};
use crate::wire::{JsonObject, const_str, wire_struct};

pub use content::{
    Content, ContentPart, DataSource, FileSource, MediaPart, PartSource, TextPart, UrlSource,
};

/// Every message role AG-UI knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the application developer.
    Developer,
    /// System prompt.
    System,
    /// Model output.
    Assistant,
    /// End-user input.
    User,
    /// A tool's result.
    Tool,
    /// A frontend activity (progress cards and the like).
    Activity,
    /// Model reasoning, possibly sealed (`encryptedValue`).
    Reasoning,
}

impl Role {
    /// The wire spelling (`"reasoning"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Developer => "developer",
            Role::System => "system",
            Role::Assistant => "assistant",
            Role::User => "user",
            Role::Tool => "tool",
            Role::Activity => "activity",
            Role::Reasoning => "reasoning",
        }
    }
}

wire_struct!(
    /// A message from the developer (`role: "developer"`).
    #[derive(Default)]
    DeveloperMessage {
        /// Message id.
        id: String,
        /// The text.
        content: String,
        /// Optional author name.
        optional name: String,
        /// Opaque sealed payload attached by the producer.
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

wire_struct!(
    /// A system prompt (`role: "system"`).
    #[derive(Default)]
    SystemMessage {
        /// Message id.
        id: String,
        /// The text.
        content: String,
        /// Optional author name.
        optional name: String,
        /// Opaque sealed payload attached by the producer.
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

wire_struct!(
    /// Model output (`role: "assistant"`): text, tool calls, or both.
    #[derive(Default)]
    AssistantMessage {
        /// Message id.
        id: String,
        /// The text, if any.
        optional content: String,
        /// Tool calls the model made in this message.
        optional tool_calls: Vec<ToolCall>,
        /// Optional author name.
        optional name: String,
        /// Opaque sealed payload attached by the producer.
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

wire_struct!(
    /// End-user input (`role: "user"`): text or multimodal parts.
    UserMessage {
        /// Message id.
        id: String,
        /// Text or content parts.
        content: Content,
        /// Optional author name.
        optional name: String,
        /// Opaque sealed payload attached by the producer.
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

wire_struct!(
    /// A tool's result (`role: "tool"`).
    ToolMessage {
        /// Message id.
        id: String,
        /// The result: text or content parts.
        content: Content,
        /// The call this answers.
        tool_call_id: String,
        /// Set when the tool failed.
        optional error: String,
        /// Opaque sealed payload attached by the producer.
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

wire_struct!(
    /// A frontend activity (`role: "activity"`).
    #[derive(Default)]
    ActivityMessage {
        /// Message id.
        id: String,
        /// Application-defined activity kind.
        activity_type: String,
        /// The activity's state (a JSON object).
        content: JsonObject,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

wire_struct!(
    /// Model reasoning (`role: "reasoning"`).
    ///
    /// For hidden reasoning `content` is empty and the sealed text travels in
    /// `encrypted_value`; clients send it back unchanged on the next turn.
    #[derive(Default)]
    ReasoningMessage {
        /// Message id.
        id: String,
        /// The visible reasoning text (may be empty).
        content: String,
        /// Opaque sealed reasoning.
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent that produced it.
        optional subagent_run_id: String,
    }
);

/// One message of a conversation, tagged by `role` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// `role: "developer"`.
    Developer(DeveloperMessage),
    /// `role: "system"`.
    System(SystemMessage),
    /// `role: "assistant"`.
    Assistant(AssistantMessage),
    /// `role: "user"`.
    User(UserMessage),
    /// `role: "tool"`.
    Tool(ToolMessage),
    /// `role: "activity"`.
    Activity(ActivityMessage),
    /// `role: "reasoning"`.
    Reasoning(ReasoningMessage),
}

const ROLES: [&str; 7] = [
    "developer",
    "system",
    "assistant",
    "user",
    "tool",
    "activity",
    "reasoning",
];

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match tag_index(&value, "role", &ROLES)? {
            0 => Message::Developer(from_value(&value)?),
            1 => Message::System(from_value(&value)?),
            2 => Message::Assistant(from_value(&value)?),
            3 => Message::User(from_value(&value)?),
            4 => Message::Tool(from_value(&value)?),
            5 => Message::Activity(from_value(&value)?),
            _ => Message::Reasoning(from_value(&value)?),
        })
    }
}

impl Message {
    /// The message id.
    pub fn id(&self) -> &str {
        match self {
            Message::Developer(m) => &m.id,
            Message::System(m) => &m.id,
            Message::Assistant(m) => &m.id,
            Message::User(m) => &m.id,
            Message::Tool(m) => &m.id,
            Message::Activity(m) => &m.id,
            Message::Reasoning(m) => &m.id,
        }
    }

    /// The role.
    pub fn role(&self) -> Role {
        match self {
            Message::Developer(_) => Role::Developer,
            Message::System(_) => Role::System,
            Message::Assistant(_) => Role::Assistant,
            Message::User(_) => Role::User,
            Message::Tool(_) => Role::Tool,
            Message::Activity(_) => Role::Activity,
            Message::Reasoning(_) => Role::Reasoning,
        }
    }

    /// The sealed payload, where the role allows one.
    pub fn encrypted_value(&self) -> Option<&str> {
        match self {
            Message::Developer(m) => m.encrypted_value.as_deref(),
            Message::System(m) => m.encrypted_value.as_deref(),
            Message::Assistant(m) => m.encrypted_value.as_deref(),
            Message::User(m) => m.encrypted_value.as_deref(),
            Message::Tool(m) => m.encrypted_value.as_deref(),
            Message::Reasoning(m) => m.encrypted_value.as_deref(),
            Message::Activity(_) => None,
        }
    }

    /// The subagent attribution, if any.
    pub fn subagent_run_id(&self) -> Option<&str> {
        match self {
            Message::Developer(m) => m.subagent_run_id.as_deref(),
            Message::System(m) => m.subagent_run_id.as_deref(),
            Message::Assistant(m) => m.subagent_run_id.as_deref(),
            Message::User(m) => m.subagent_run_id.as_deref(),
            Message::Tool(m) => m.subagent_run_id.as_deref(),
            Message::Activity(m) => m.subagent_run_id.as_deref(),
            Message::Reasoning(m) => m.subagent_run_id.as_deref(),
        }
    }
}

macro_rules! message_from {
    ($($variant:ident($ty:ty)),* $(,)?) => {$(
        impl From<$ty> for Message {
            fn from(m: $ty) -> Self {
                Message::$variant(m)
            }
        }
    )*};
}
message_from!(
    Developer(DeveloperMessage),
    System(SystemMessage),
    Assistant(AssistantMessage),
    User(UserMessage),
    Tool(ToolMessage),
    Activity(ActivityMessage),
    Reasoning(ReasoningMessage),
);

const_str!(
    /// The `type: "function"` of a [`ToolCall`] (the only kind AG-UI has).
    FunctionType = "function"
);

wire_struct!(
    /// A tool call inside an assistant message.
    #[derive(Default)]
    ToolCall {
        /// Call id.
        id: String,
        /// Always `"function"`.
        #[serde(rename = "type")]
        kind: FunctionType,
        /// What is called, with which arguments.
        function: FunctionCall,
        /// Opaque sealed payload (e.g. reasoning behind the call).
        optional encrypted_value: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
    }
);

impl ToolCall {
    /// A function call with JSON-encoded `arguments`.
    pub fn function(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: FunctionType,
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
            encrypted_value: None,
            metadata: None,
        }
    }
}

wire_struct!(
    /// The function a [`ToolCall`] names.
    #[derive(Default)]
    FunctionCall {
        /// Tool name.
        name: String,
        /// The arguments as a JSON text (not parsed: it may be partial while streaming).
        arguments: String,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_value;
    use serde_json::json;

    #[test]
    fn message_round_trip_and_role_tag() {
        let m = Message::Reasoning(ReasoningMessage {
            id: "r1".into(),
            content: String::new(),
            encrypted_value: Some("sealed".into()),
            ..Default::default()
        });
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"role": "reasoning", "id": "r1", "content": "", "encryptedValue": "sealed"})
        );
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.role(), Role::Reasoning);
        assert_eq!(back.encrypted_value(), Some("sealed"));
    }

    #[test]
    fn unknown_role_rejected_at_role_path() {
        let v = json!([{"id": "a", "role": "user", "content": "hi"}, {"id": "b", "role": "thinking", "content": "x"}]);
        let err = decode_value::<Vec<Message>>(&v).unwrap_err();
        assert_eq!(err.path(), "[1].role");
        assert!(!err.to_string().contains("thinking"));
    }

    #[test]
    fn missing_required_and_null_optional() {
        let err = decode_value::<Message>(&json!({"role": "tool", "id": "t", "content": "x"}))
            .unwrap_err();
        assert!(
            err.to_string().contains("missing field `toolCallId`"),
            "{err}"
        );
        let err = decode_value::<Message>(
            &json!({"role": "user", "id": "u", "content": "x", "name": null}),
        )
        .unwrap_err();
        assert_eq!(err.path(), "name");
    }

    #[test]
    fn tool_call_type_is_function() {
        let tc = ToolCall::function("c1", "search", "{\"q\":1}");
        let v = serde_json::to_value(&tc).unwrap();
        assert_eq!(v["type"], "function");
        let mut bad = v.clone();
        bad["type"] = json!("other");
        let err = decode_value::<ToolCall>(&bad).unwrap_err();
        assert_eq!(err.path(), "type");
    }
}
