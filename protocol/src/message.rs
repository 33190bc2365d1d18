//! Conversation messages (`RunAgentInput.messages`, `MESSAGES_SNAPSHOT`),
//! tool calls and multimodal content parts.
//!
//! Each role is its own struct carrying exactly the fields the schema allows
//! for it; [`Message`] is the union, tagged by `role` on the wire.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::decode::{from_value, kind_of, tag_index};
use crate::wire::{JsonObject, const_str, wire_struct};

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

/// Message content: plain text or a list of parts (user and tool messages,
/// `TOOL_CALL_RESULT`).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A plain string.
    Text(String),
    /// Multimodal parts.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The concatenated text parts (media parts are skipped).
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(s) => serializer.serialize_str(s),
            Content::Parts(parts) => parts.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value {
            Value::String(s) => Ok(Content::Text(s)),
            Value::Array(_) => Ok(Content::Parts(from_value(&value)?)),
            other => Err(serde::de::Error::custom(format_args!(
                "invalid type: {}, expected a string or an array of content parts",
                kind_of(&other)
            ))),
        }
    }
}

/// One part of multimodal content, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentPart {
    /// `type: "text"`.
    Text(TextPart),
    /// `type: "image"`.
    Image(MediaPart),
    /// `type: "audio"`.
    Audio(MediaPart),
    /// `type: "video"`.
    Video(MediaPart),
    /// `type: "document"`.
    Document(MediaPart),
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        const TYPES: [&str; 5] = ["text", "image", "audio", "video", "document"];
        Ok(match tag_index(&value, "type", &TYPES)? {
            0 => ContentPart::Text(from_value(&value)?),
            1 => ContentPart::Image(from_value(&value)?),
            2 => ContentPart::Audio(from_value(&value)?),
            3 => ContentPart::Video(from_value(&value)?),
            _ => ContentPart::Document(from_value(&value)?),
        })
    }
}

wire_struct!(
    /// A text part.
    #[derive(Default)]
    TextPart {
        /// The text.
        text: String,
        /// Optional part id.
        optional id: String,
        /// Any JSON value except `null`.
        optional metadata: Value,
    }
);

wire_struct!(
    /// An image, audio, video or document part.
    MediaPart {
        /// Where the bytes are.
        source: PartSource,
        /// Optional part id.
        optional id: String,
        /// Any JSON value. `null` is read as absent: the official client
        /// tolerates it here for older producers.
        nullable metadata: Value,
    }
);

/// Where a media part's bytes are, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PartSource {
    /// Inline base64 data.
    Data(DataSource),
    /// A URL.
    Url(UrlSource),
    /// A provider-held file.
    File(FileSource),
}

impl<'de> Deserialize<'de> for PartSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match tag_index(&value, "type", &["data", "url", "file"])? {
            0 => PartSource::Data(from_value(&value)?),
            1 => PartSource::Url(from_value(&value)?),
            _ => PartSource::File(from_value(&value)?),
        })
    }
}

wire_struct!(
    /// Inline base64 bytes.
    #[derive(Default)]
    DataSource {
        /// Base64 data.
        value: String,
        /// MIME type of the decoded bytes.
        mime_type: String,
    }
);

wire_struct!(
    /// Bytes behind a URL.
    #[derive(Default)]
    UrlSource {
        /// The URL.
        value: String,
        /// MIME type, if known.
        optional mime_type: String,
    }
);

wire_struct!(
    /// A file held by some provider.
    #[derive(Default)]
    FileSource {
        /// Provider-specific file reference.
        value: String,
        /// Who holds the file.
        optional provider: String,
        /// MIME type, if known.
        optional mime_type: String,
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
    fn nested_content_part_path() {
        let v = json!({"id": "u", "role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "source": {"type": "data", "value": "AAAA", "mimeType": 7}}
        ]});
        let err = decode_value::<Message>(&v).unwrap_err();
        assert_eq!(err.path(), "content[1].source.mimeType");
        assert!(err.to_string().contains("expected a string"), "{err}");
    }

    #[test]
    fn content_wrong_type() {
        let v = json!({"id": "u", "role": "user", "content": 5});
        let err = decode_value::<Message>(&v).unwrap_err();
        assert_eq!(err.path(), "content");
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

    #[test]
    fn content_text_helper() {
        let c = Content::Parts(vec![
            ContentPart::Text(TextPart {
                text: "a".into(),
                ..Default::default()
            }),
            ContentPart::Image(MediaPart {
                source: PartSource::Url(UrlSource {
                    value: "u".into(),
                    mime_type: None,
                }),
                id: None,
                metadata: None,
            }),
            ContentPart::Text(TextPart {
                text: "b".into(),
                ..Default::default()
            }),
        ]);
        assert_eq!(c.text(), "ab");
    }
}
