//! The envelope: `EventType`, `BaseEvent`, and the `Event` message whose
//! oneof arm names the event type.

use super::*;

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
