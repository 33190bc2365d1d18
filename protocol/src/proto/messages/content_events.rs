//! The events that stream a message: text, tool calls and reasoning.

use super::*;

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TextMessageStartEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub message_id: String,
    #[prost(string, optional, tag = "3")]
    pub role: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TextMessageContentEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub message_id: String,
    #[prost(string, tag = "3")]
    pub delta: String,
    #[prost(string, optional, tag = "4")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TextMessageEndEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub message_id: String,
    #[prost(string, optional, tag = "3")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TextMessageChunkEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub message_id: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub role: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub delta: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCallStartEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub tool_call_id: String,
    #[prost(string, tag = "3")]
    pub tool_call_name: String,
    #[prost(string, optional, tag = "4")]
    pub parent_message_id: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCallArgsEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub tool_call_id: String,
    #[prost(string, tag = "3")]
    pub delta: String,
    #[prost(string, optional, tag = "4")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCallEndEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub tool_call_id: String,
    #[prost(string, optional, tag = "3")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCallChunkEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub tool_call_id: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub tool_call_name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub parent_message_id: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub delta: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCallResultEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
    #[prost(string, tag = "4")]
    pub tool_call_id: String,
    #[prost(string, optional, tag = "5")]
    pub content: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub role: Option<String>,
    #[prost(message, repeated, tag = "7")]
    pub content_parts: Vec<InputContent>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningStartEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningMessageStartEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
    #[prost(string, tag = "4")]
    pub role: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningMessageContentEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
    #[prost(string, tag = "4")]
    pub delta: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningMessageEndEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningMessageChunkEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub message_id: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub delta: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningEndEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ReasoningEncryptedValueEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub subtype: String,
    #[prost(string, tag = "4")]
    pub entity_id: String,
    #[prost(string, tag = "5")]
    pub encrypted_value: String,
}
