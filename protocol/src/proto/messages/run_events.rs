//! The run's other events: lifecycle and steps, state, messages and
//! activity snapshots, raw and custom events, subagents.

use super::*;

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StateSnapshotEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(message, optional, tag = "2")]
    pub snapshot: Option<Value>,
    #[prost(string, optional, tag = "3")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StateDeltaEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(message, repeated, tag = "2")]
    pub delta: Vec<JsonPatchOperation>,
    #[prost(string, optional, tag = "3")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct MessagesSnapshotEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(message, repeated, tag = "2")]
    pub messages: Vec<Message>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActivitySnapshotEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
    #[prost(string, tag = "4")]
    pub activity_type: String,
    #[prost(message, optional, tag = "5")]
    pub content: Option<Struct>,
    #[prost(bool, optional, tag = "6")]
    pub replace: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ActivityDeltaEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub subagent_run_id: Option<String>,
    #[prost(string, tag = "3")]
    pub message_id: String,
    #[prost(string, tag = "4")]
    pub activity_type: String,
    #[prost(message, repeated, tag = "5")]
    pub patch: Vec<JsonPatchOperation>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RawEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(message, optional, tag = "2")]
    pub event: Option<Value>,
    #[prost(string, optional, tag = "3")]
    pub source: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct CustomEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, optional, tag = "3")]
    pub value: Option<Value>,
    #[prost(string, optional, tag = "4")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RunStartedEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub thread_id: String,
    #[prost(string, tag = "3")]
    pub run_id: String,
    #[prost(string, optional, tag = "4")]
    pub parent_run_id: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub input: Option<RunAgentInput>,
    #[prost(string, optional, tag = "6")]
    pub protocol_version: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RunFinishedEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub thread_id: String,
    #[prost(string, tag = "3")]
    pub run_id: String,
    #[prost(message, optional, tag = "4")]
    pub result: Option<Value>,
    #[prost(string, tag = "5")]
    pub outcome: String,
    #[prost(message, repeated, tag = "6")]
    pub interrupts: Vec<Interrupt>,
    #[prost(message, repeated, tag = "7")]
    pub usage: Vec<Usage>,
    #[prost(string, repeated, tag = "8")]
    pub pending_tool_call_ids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RunErrorEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    pub code: Option<String>,
    #[prost(string, tag = "3")]
    pub message: String,
    #[prost(message, repeated, tag = "4")]
    pub usage: Vec<Usage>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StepStartedEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub step_name: String,
    #[prost(string, optional, tag = "3")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StepFinishedEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub step_name: String,
    #[prost(string, optional, tag = "3")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SubagentStartedEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub subagent_run_id: String,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, optional, tag = "4")]
    pub description: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub parent_subagent_run_id: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub parent_tool_call_id: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub parent_message_id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SubagentFinishedEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub subagent_run_id: String,
    #[prost(message, optional, tag = "3")]
    pub result: Option<Value>,
    #[prost(string, tag = "4")]
    pub outcome: String,
    #[prost(string, repeated, tag = "5")]
    pub interrupt_ids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SubagentErrorEvent {
    #[prost(message, optional, tag = "1")]
    pub base_event: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    pub subagent_run_id: String,
    #[prost(string, tag = "3")]
    pub message: String,
    #[prost(string, optional, tag = "4")]
    pub code: Option<String>,
}
