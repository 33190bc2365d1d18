//! Every event type in its minimal form (required fields only), and the
//! whole list the tests walk: minimal and full forms, each again with every
//! common field.

use serde_json::json;
use thinkwire_protocol::*;

use super::full_events::full_events;
use super::payloads::obj;

/// Adds every common field the event's type allows.
pub fn with_common(e: Event) -> Event {
    e.with_timestamp(1_700_000_000_123)
        .with_raw_event(json!({"provider": "x", "n": [1]}))
        .with_metadata(obj(json!({"trace": "abc"})))
        .with_subagent_run_id("sub-1")
}

/// Every event type: minimal and full forms.
pub fn all_events() -> Vec<Event> {
    let minimal = minimal_events();
    let full = full_events();
    let mut out = minimal.clone();
    // Every minimal event again with all common fields.
    out.extend(minimal.into_iter().map(with_common));
    out.extend(full.clone());
    out.extend(full.into_iter().map(with_common));
    out
}

/// Every event type with its required fields only.
fn minimal_events() -> Vec<Event> {
    vec![
        TextMessageStart {
            message_id: "m".into(),
            role: None,
            name: None,
        }
        .into(),
        TextMessageContent {
            message_id: "m".into(),
            delta: "Hi ✓ 😀".into(),
        }
        .into(),
        TextMessageEnd {
            message_id: "m".into(),
        }
        .into(),
        TextMessageChunk::default().into(),
        ToolCallStart {
            tool_call_id: "c".into(),
            tool_call_name: "f".into(),
            parent_message_id: None,
        }
        .into(),
        ToolCallArgs {
            tool_call_id: "c".into(),
            delta: "{\"a\":".into(),
        }
        .into(),
        ToolCallEnd {
            tool_call_id: "c".into(),
        }
        .into(),
        ToolCallChunk::default().into(),
        ToolCallResult {
            message_id: "tm".into(),
            tool_call_id: "c".into(),
            content: "42".into(),
            role: None,
        }
        .into(),
        StateSnapshot {
            snapshot: json!({}),
        }
        .into(),
        StateDelta { delta: vec![] }.into(),
        MessagesSnapshot { messages: vec![] }.into(),
        ActivitySnapshot {
            message_id: "x".into(),
            activity_type: "progress".into(),
            content: JsonObject::new(),
            replace: None,
        }
        .into(),
        ActivityDelta {
            message_id: "x".into(),
            activity_type: "progress".into(),
            patch: vec![],
        }
        .into(),
        Raw {
            event: json!("anything"),
            source: None,
        }
        .into(),
        Custom {
            name: "ping".into(),
            value: json!(0),
        }
        .into(),
        RunStarted::new("t", "r").into(),
        RunFinished::new("t", "r").into(),
        RunError {
            message: "failed".into(),
            code: None,
            usage: None,
        }
        .into(),
        StepStarted {
            step_name: "s".into(),
        }
        .into(),
        StepFinished {
            step_name: "s".into(),
        }
        .into(),
        ReasoningStart {
            message_id: "rs".into(),
        }
        .into(),
        ReasoningMessageStart::new("rm").into(),
        ReasoningMessageContent {
            message_id: "rm".into(),
            delta: "hmm".into(),
        }
        .into(),
        ReasoningMessageEnd {
            message_id: "rm".into(),
        }
        .into(),
        ReasoningMessageChunk::default().into(),
        ReasoningEnd {
            message_id: "rs".into(),
        }
        .into(),
        ReasoningEncryptedValue::message("rm", "c2VhbGVk").into(),
        SubagentStarted {
            subagent_run_id: "s".into(),
            name: "helper".into(),
            ..Default::default()
        }
        .into(),
        SubagentFinished {
            subagent_run_id: "s".into(),
            result: None,
            outcome: None,
        }
        .into(),
        SubagentError {
            subagent_run_id: "s".into(),
            message: "m".into(),
            code: None,
        }
        .into(),
    ]
}
