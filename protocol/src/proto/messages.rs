//! The protobuf messages of `proto/ag_ui.proto`, declared by hand for
//! `prost` (field for field, same names and numbers; `tests.rs` holds the
//! two together). `google.protobuf.Value`/`Struct`/`ListValue` are declared
//! here too, wire-compatible with `struct.proto` (`Struct`'s map as its
//! repeated entries, so a JSON object keeps its key order).
//!
//! Why by hand rather than `prost-build`: it needs `protoc` (a system
//! binary the setup would have to install), and the pure-Rust `protox` +
//! `prost-build` pair adds about twenty build dependencies to a crate that
//! is otherwise pure data, for one file that changes with the protocol's
//! version only. The messages are plain declarations; what they mean is in
//! `encode.rs`/`decode.rs`.

#![allow(missing_docs)]

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Usage {
    #[prost(string, optional, tag = "1")]
    pub provider: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub model: Option<String>,
    #[prost(int64, optional, tag = "3")]
    pub input_tokens: Option<i64>,
    #[prost(int64, optional, tag = "4")]
    pub output_tokens: Option<i64>,
    #[prost(int64, optional, tag = "5")]
    pub total_tokens: Option<i64>,
    #[prost(int64, optional, tag = "6")]
    pub reasoning_tokens: Option<i64>,
    #[prost(int64, optional, tag = "7")]
    pub cached_input_tokens: Option<i64>,
    #[prost(int64, optional, tag = "8")]
    pub cache_write_input_tokens: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TextInputPart {
    #[prost(string, tag = "1")]
    pub text: String,
    #[prost(string, optional, tag = "2")]
    pub id: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub metadata: Option<Value>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InputContentDataSource {
    #[prost(string, tag = "1")]
    pub value: String,
    #[prost(string, tag = "2")]
    pub mime_type: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InputContentUrlSource {
    #[prost(string, tag = "1")]
    pub value: String,
    #[prost(string, optional, tag = "2")]
    pub mime_type: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InputContentFileSource {
    #[prost(string, tag = "1")]
    pub value: String,
    #[prost(string, optional, tag = "2")]
    pub provider: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub mime_type: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InputContentSource {
    #[prost(oneof = "Source", tags = "1, 2, 3")]
    pub source: Option<Source>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Source {
    #[prost(message, tag = "1")]
    Data(InputContentDataSource),
    #[prost(message, tag = "2")]
    Url(InputContentUrlSource),
    #[prost(message, tag = "3")]
    File(InputContentFileSource),
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ImageInputPart {
    #[prost(message, optional, tag = "1")]
    pub source: Option<InputContentSource>,
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<Value>,
    #[prost(string, optional, tag = "3")]
    pub id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct AudioInputPart {
    #[prost(message, optional, tag = "1")]
    pub source: Option<InputContentSource>,
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<Value>,
    #[prost(string, optional, tag = "3")]
    pub id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct VideoInputPart {
    #[prost(message, optional, tag = "1")]
    pub source: Option<InputContentSource>,
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<Value>,
    #[prost(string, optional, tag = "3")]
    pub id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DocumentInputPart {
    #[prost(message, optional, tag = "1")]
    pub source: Option<InputContentSource>,
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<Value>,
    #[prost(string, optional, tag = "3")]
    pub id: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct InputContent {
    #[prost(oneof = "Part", tags = "1, 2, 3, 4, 5")]
    pub part: Option<Part>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Part {
    #[prost(message, tag = "1")]
    Text(TextInputPart),
    #[prost(message, tag = "2")]
    Image(ImageInputPart),
    #[prost(message, tag = "3")]
    Audio(AudioInputPart),
    #[prost(message, tag = "4")]
    Video(VideoInputPart),
    #[prost(message, tag = "5")]
    Document(DocumentInputPart),
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCallFunction {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub arguments: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ToolCall {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub r#type: String,
    #[prost(message, optional, tag = "3")]
    pub function: Option<ToolCallFunction>,
    #[prost(message, optional, tag = "4")]
    pub metadata: Option<Struct>,
    #[prost(string, optional, tag = "5")]
    pub encrypted_value: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Message {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub role: String,
    #[prost(string, optional, tag = "3")]
    pub content: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub tool_calls: Vec<ToolCall>,
    #[prost(string, optional, tag = "6")]
    pub tool_call_id: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub error: Option<String>,
    #[prost(message, repeated, tag = "8")]
    pub content_parts: Vec<InputContent>,
    #[prost(message, optional, tag = "9")]
    pub metadata: Option<Struct>,
    #[prost(string, optional, tag = "10")]
    pub subagent_run_id: Option<String>,
    #[prost(string, optional, tag = "11")]
    pub encrypted_value: Option<String>,
    #[prost(string, optional, tag = "12")]
    pub activity_type: Option<String>,
    #[prost(message, optional, tag = "13")]
    pub activity_content: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Tool {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, optional, tag = "3")]
    pub parameters: Option<Value>,
    #[prost(message, optional, tag = "4")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Context {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ResumeEntry {
    #[prost(string, tag = "1")]
    pub interrupt_id: String,
    #[prost(string, tag = "2")]
    pub status: String,
    #[prost(message, optional, tag = "3")]
    pub payload: Option<Value>,
    #[prost(message, optional, tag = "4")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RunAgentInput {
    #[prost(string, tag = "1")]
    pub thread_id: String,
    #[prost(string, tag = "2")]
    pub run_id: String,
    #[prost(string, optional, tag = "3")]
    pub parent_run_id: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub state: Option<Value>,
    #[prost(message, repeated, tag = "5")]
    pub messages: Vec<Message>,
    #[prost(message, repeated, tag = "6")]
    pub tools: Vec<Tool>,
    #[prost(message, repeated, tag = "7")]
    pub context: Vec<Context>,
    #[prost(message, optional, tag = "8")]
    pub forwarded_props: Option<Value>,
    #[prost(message, repeated, tag = "9")]
    pub resume: Vec<ResumeEntry>,
    #[prost(string, optional, tag = "10")]
    pub protocol_version: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Interrupt {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub reason: String,
    #[prost(string, optional, tag = "3")]
    pub message: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub tool_call_id: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub response_schema: Option<Value>,
    #[prost(string, optional, tag = "6")]
    pub expires_at: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub metadata: Option<Value>,
    #[prost(string, optional, tag = "8")]
    pub subagent_run_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum JsonPatchOperationType {
    Add = 0,
    Remove = 1,
    Replace = 2,
    Move = 3,
    Copy = 4,
    Test = 5,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct JsonPatchOperation {
    #[prost(enumeration = "JsonPatchOperationType", tag = "1")]
    pub op: i32,
    #[prost(string, tag = "2")]
    pub path: String,
    #[prost(string, optional, tag = "3")]
    pub from: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub value: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum EventType {
    TextMessageStart = 0,
    TextMessageContent = 1,
    TextMessageEnd = 2,
    ToolCallStart = 3,
    ToolCallArgs = 4,
    ToolCallEnd = 5,
    StateSnapshot = 6,
    StateDelta = 7,
    MessagesSnapshot = 8,
    Raw = 9,
    Custom = 10,
    RunStarted = 11,
    RunFinished = 12,
    RunError = 13,
    StepStarted = 14,
    StepFinished = 15,
    SubagentStarted = 16,
    SubagentFinished = 17,
    SubagentError = 18,
    TextMessageChunk = 19,
    ToolCallChunk = 20,
    ToolCallResult = 21,
    ActivitySnapshot = 22,
    ActivityDelta = 23,
    ReasoningStart = 24,
    ReasoningMessageStart = 25,
    ReasoningMessageContent = 26,
    ReasoningMessageEnd = 27,
    ReasoningMessageChunk = 28,
    ReasoningEnd = 29,
    ReasoningEncryptedValue = 30,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct BaseEvent {
    #[prost(enumeration = "EventType", tag = "1")]
    pub r#type: i32,
    #[prost(int64, optional, tag = "2")]
    pub timestamp: Option<i64>,
    #[prost(message, optional, tag = "3")]
    pub raw_event: Option<Value>,
    #[prost(message, optional, tag = "4")]
    pub metadata: Option<Struct>,
}

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

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Event {
    #[prost(
        oneof = "EventKind",
        tags = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31"
    )]
    pub event: Option<EventKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum EventKind {
    #[prost(message, tag = "1")]
    TextMessageStart(TextMessageStartEvent),
    #[prost(message, tag = "2")]
    TextMessageContent(TextMessageContentEvent),
    #[prost(message, tag = "3")]
    TextMessageEnd(TextMessageEndEvent),
    #[prost(message, tag = "4")]
    ToolCallStart(ToolCallStartEvent),
    #[prost(message, tag = "5")]
    ToolCallArgs(ToolCallArgsEvent),
    #[prost(message, tag = "6")]
    ToolCallEnd(ToolCallEndEvent),
    #[prost(message, tag = "7")]
    StateSnapshot(StateSnapshotEvent),
    #[prost(message, tag = "8")]
    StateDelta(StateDeltaEvent),
    #[prost(message, tag = "9")]
    MessagesSnapshot(MessagesSnapshotEvent),
    #[prost(message, tag = "10")]
    Raw(RawEvent),
    #[prost(message, tag = "11")]
    Custom(CustomEvent),
    #[prost(message, tag = "12")]
    RunStarted(RunStartedEvent),
    #[prost(message, tag = "13")]
    RunFinished(RunFinishedEvent),
    #[prost(message, tag = "14")]
    RunError(RunErrorEvent),
    #[prost(message, tag = "15")]
    StepStarted(StepStartedEvent),
    #[prost(message, tag = "16")]
    StepFinished(StepFinishedEvent),
    #[prost(message, tag = "17")]
    TextMessageChunk(TextMessageChunkEvent),
    #[prost(message, tag = "18")]
    ToolCallChunk(ToolCallChunkEvent),
    #[prost(message, tag = "19")]
    SubagentStarted(SubagentStartedEvent),
    #[prost(message, tag = "20")]
    SubagentFinished(SubagentFinishedEvent),
    #[prost(message, tag = "21")]
    SubagentError(SubagentErrorEvent),
    #[prost(message, tag = "22")]
    ToolCallResult(ToolCallResultEvent),
    #[prost(message, tag = "23")]
    ActivitySnapshot(ActivitySnapshotEvent),
    #[prost(message, tag = "24")]
    ActivityDelta(ActivityDeltaEvent),
    #[prost(message, tag = "25")]
    ReasoningStart(ReasoningStartEvent),
    #[prost(message, tag = "26")]
    ReasoningMessageStart(ReasoningMessageStartEvent),
    #[prost(message, tag = "27")]
    ReasoningMessageContent(ReasoningMessageContentEvent),
    #[prost(message, tag = "28")]
    ReasoningMessageEnd(ReasoningMessageEndEvent),
    #[prost(message, tag = "29")]
    ReasoningMessageChunk(ReasoningMessageChunkEvent),
    #[prost(message, tag = "30")]
    ReasoningEnd(ReasoningEndEvent),
    #[prost(message, tag = "31")]
    ReasoningEncryptedValue(ReasoningEncryptedValueEvent),
}

// ---- google/protobuf/struct.proto -------------------------------------------

/// `google.protobuf.Value`: one JSON value (no arm set: no value).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Value {
    #[prost(oneof = "ValueKind", tags = "1, 2, 3, 4, 5, 6")]
    pub kind: Option<ValueKind>,
}

/// The arms are named as `google.protobuf.Value`'s oneof names them.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum ValueKind {
    /// `NullValue.NULL_VALUE` (0), the enum's only value.
    #[prost(int32, tag = "1")]
    NullValue(i32),
    #[prost(double, tag = "2")]
    NumberValue(f64),
    #[prost(string, tag = "3")]
    StringValue(String),
    #[prost(bool, tag = "4")]
    BoolValue(bool),
    #[prost(message, tag = "5")]
    StructValue(Struct),
    #[prost(message, tag = "6")]
    ListValue(ListValue),
}

/// `google.protobuf.Struct`: `map<string, Value> fields = 1`, whose wire
/// form is this repeated entry message.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Struct {
    #[prost(message, repeated, tag = "1")]
    pub fields: Vec<FieldsEntry>,
}

/// One entry of [`Struct::fields`].
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FieldsEntry {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Value>,
}

/// `google.protobuf.ListValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ListValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}
