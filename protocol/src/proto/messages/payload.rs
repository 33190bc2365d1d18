//! What events carry: messages and their content parts, tool calls, tools,
//! context, the run input, usage, interrupts and JSON Patch operations.

use super::*;

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
