//! AG-UI 1.0 on the wire: the events, messages and run input as JSON, the
//! SSE and WebSocket framing, input decoding with precise error paths, and
//! the event-sequence rules the official client enforces.
//!
//! Pure data: no I/O, no async. The server builds [`Event`]s, frames them
//! with [`sse_frame`] or [`ws_text`], and (in tests, or in debug builds)
//! checks its own stream with a [`Verifier`]. A client reads the frames
//! with [`SseDecoder`] and keeps its messages, sealed reasoning included,
//! with a [`client::Conversation`]. The protobuf binding ([`proto_frame`],
//! [`ProtoDecoder`]) carries the same events as length-prefixed
//! `ag_ui.Event` messages.
//!
//! ```
//! use thinkwire_protocol::*;
//!
//! let input = decode_run_agent_input(
//!     br#"{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Hi"}]}"#,
//! )
//! .unwrap();
//!
//! let events: Vec<Event> = vec![
//!     RunStarted::new(&input.thread_id, &input.run_id).into(),
//!     ReasoningStart { message_id: "r1-think".into() }.into(),
//!     ReasoningMessageStart::new("r1-think").into(),
//!     ReasoningMessageEnd { message_id: "r1-think".into() }.into(),
//!     ReasoningEncryptedValue::message("r1-think", "c2VhbGVk").into(),
//!     ReasoningEnd { message_id: "r1-think".into() }.into(),
//!     TextMessageStart::assistant("m1").into(),
//!     TextMessageContent { message_id: "m1".into(), delta: "Hello".into() }.into(),
//!     TextMessageEnd { message_id: "m1".into() }.into(),
//!     RunFinished::new(&input.thread_id, &input.run_id).into(),
//! ];
//!
//! let mut verifier = Verifier::new();
//! let mut body = String::new();
//! for event in &events {
//!     verifier.check(event).unwrap();
//!     body.push_str(&sse_frame(event));
//! }
//! verifier.finish().unwrap();
//! assert!(events.last().unwrap().is_terminal());
//!
//! // A client reading the body gets the same events back.
//! let decoded: Vec<Event> = SseDecoder::new()
//!     .push_events(body.as_bytes())
//!     .into_iter()
//!     .collect::<Result<_, _>>()
//!     .unwrap();
//! assert_eq!(decoded, events);
//! ```

#![forbid(unsafe_code)]

mod capabilities;
mod chunk;
pub mod client;
mod decode;
mod event;
mod input;
mod message;
mod outcome;
mod patch;
mod proto;
mod resume;
mod sse;
mod verify;
mod wire;

pub use capabilities::{
    AgentCapabilities, ExecutionCapabilities, HumanInTheLoopCapabilities, IdentityCapabilities,
    MultiAgentCapabilities, MultimodalCapabilities, MultimodalInputCapabilities,
    MultimodalOutputCapabilities, OutputCapabilities, ReasoningCapabilities, StateCapabilities,
    SubagentInfo, ToolsCapabilities, TransportCapabilities,
};
pub use decode::DecodeError;
pub use event::{
    ActivityDelta, ActivitySnapshot, Custom, EncryptedValueSubtype, Event, EventKind, EventType,
    MessagesSnapshot, Raw, ReasoningEncryptedValue, ReasoningEnd, ReasoningMessageChunk,
    ReasoningMessageContent, ReasoningMessageEnd, ReasoningMessageStart, ReasoningRole,
    ReasoningStart, RunError, RunFinished, RunStarted, StateDelta, StateSnapshot, StepFinished,
    StepStarted, SubagentError, SubagentFinished, SubagentStarted, TextMessageChunk,
    TextMessageContent, TextMessageEnd, TextMessageRole, TextMessageStart, ToolCallArgs,
    ToolCallChunk, ToolCallEnd, ToolCallResult, ToolCallStart, ToolRole, decode_event,
    decode_event_value, now_millis,
};
pub use input::{
    Context, InputError, ResumeEntry, ResumeStatus, RunAgentInput, Tool, decode_run_agent_input,
};
pub use message::{
    ActivityMessage, AssistantMessage, Content, ContentPart, DataSource, DeveloperMessage,
    FileSource, FunctionCall, FunctionType, MediaPart, Message, PartSource, ReasoningMessage, Role,
    SystemMessage, TextPart, ToolCall, ToolMessage, UrlSource, UserMessage,
};
pub use outcome::{Interrupt, Outcome, SubagentOutcome, TokenUsage};
pub use patch::{JsonPointer, PatchOp};
pub use proto::{
    PROTO_MAX_FRAME_BYTES, PROTO_MEDIA_TYPE, ProtoDecoder, ProtoError, proto_decode, proto_encode,
    proto_frame,
};
pub use resume::{
    RESUME_RUN, ResumeGrant, ResumeRun, ResumeRunError, sse_frame_json_seq, ws_frame_resume,
    ws_frame_seq, ws_text_json_seq,
};
pub use sse::{
    SSE_KEEPALIVE, SSE_MAX_EVENT_BYTES, SseDecoder, SseMessage, sse_frame, sse_frame_json,
    sse_frame_named, ws_text, ws_text_json,
};
pub use verify::{Entity, Verifier, VerifyError};
pub use wire::{JsonObject, MAX_SAFE_INTEGER};

/// The protocol version thinkwire speaks (`RunStarted.protocol_version`).
pub const PROTOCOL_VERSION: &str = "1.0";
