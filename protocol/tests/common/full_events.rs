//! Every event type with its optional fields set, and the outcomes,
//! interrupts and usage a terminal event can carry.

use serde_json::json;
use thinkwire_protocol::*;

use super::payloads::{full_input, messages, obj, parts, patch, usage};

/// Every event type with its optional fields present (some types more than
/// once, one per outcome).
pub(super) fn full_events() -> Vec<Event> {
    let interrupt = Interrupt {
        id: "i1".into(),
        reason: "tool_approval".into(),
        message: Some("ok?".into()),
        tool_call_id: Some("c1".into()),
        response_schema: Some(obj(json!({"type": "boolean"}))),
        expires_at: Some("2030-01-01T00:00:00Z".into()),
        metadata: Some(obj(json!({}))),
        subagent_run_id: Some("s".into()),
    };
    vec![
        TextMessageStart {
            message_id: "m".into(),
            role: Some(TextMessageRole::User),
            name: Some("n".into()),
        }
        .into(),
        TextMessageChunk {
            message_id: Some("m".into()),
            role: Some(TextMessageRole::Assistant),
            delta: Some("d".into()),
            name: Some("n".into()),
        }
        .into(),
        ToolCallStart {
            tool_call_id: "c".into(),
            tool_call_name: "f".into(),
            parent_message_id: Some("m".into()),
        }
        .into(),
        ToolCallChunk {
            tool_call_id: Some("c".into()),
            tool_call_name: Some("f".into()),
            parent_message_id: Some("m".into()),
            delta: Some("{}".into()),
        }
        .into(),
        ToolCallResult {
            message_id: "tm".into(),
            tool_call_id: "c".into(),
            content: Content::Parts(parts()),
            role: Some(ToolRole),
        }
        .into(),
        StateSnapshot {
            snapshot: json!({"a": {"b": [1, "x"]}}),
        }
        .into(),
        StateDelta { delta: patch() }.into(),
        MessagesSnapshot {
            messages: messages(),
        }
        .into(),
        ActivitySnapshot {
            message_id: "x".into(),
            activity_type: "progress".into(),
            content: obj(json!({"pct": 1})),
            replace: Some(false),
        }
        .into(),
        ActivityDelta {
            message_id: "x".into(),
            activity_type: "progress".into(),
            patch: patch(),
        }
        .into(),
        Raw {
            event: json!({"raw": [1]}),
            source: Some("provider".into()),
        }
        .into(),
        Custom {
            name: "ping".into(),
            value: json!({"deep": {"x": 1}}),
        }
        .into(),
        RunStarted {
            thread_id: "t".into(),
            run_id: "r".into(),
            parent_run_id: Some("p".into()),
            input: Some(Box::new(full_input())),
            protocol_version: Some(PROTOCOL_VERSION.into()),
        }
        .into(),
        RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: Some(json!({"answer": 42})),
            outcome: Some(Outcome::Success {
                pending_tool_call_ids: Some(vec!["c".into()]),
            }),
            usage: Some(vec![usage(), TokenUsage::default()]),
        }
        .into(),
        RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Some(Outcome::Success {
                pending_tool_call_ids: None,
            }),
            usage: None,
        }
        .into(),
        RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Some(Outcome::Interrupt {
                interrupts: vec![
                    interrupt,
                    Interrupt {
                        id: "i2".into(),
                        reason: "r".into(),
                        ..Default::default()
                    },
                ],
            }),
            usage: None,
        }
        .into(),
        RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: Some(json!(false)),
            outcome: Some(Outcome::Cancelled),
            usage: None,
        }
        .into(),
        RunError::new("failed", "ENGINE").into(),
        RunError {
            message: "failed".into(),
            code: Some("X".into()),
            usage: Some(vec![usage()]),
        }
        .into(),
        ReasoningMessageChunk {
            message_id: Some("rm".into()),
            delta: Some("d".into()),
        }
        .into(),
        ReasoningEncryptedValue {
            subtype: EncryptedValueSubtype::ToolCall,
            entity_id: "c".into(),
            encrypted_value: "v".into(),
        }
        .into(),
        SubagentStarted {
            subagent_run_id: "s".into(),
            name: "helper".into(),
            description: Some("d".into()),
            parent_subagent_run_id: Some("p".into()),
            parent_tool_call_id: Some("c".into()),
            parent_message_id: Some("m".into()),
        }
        .into(),
        SubagentFinished {
            subagent_run_id: "s".into(),
            result: Some(json!([1])),
            outcome: Some(SubagentOutcome::Success),
        }
        .into(),
        SubagentFinished {
            subagent_run_id: "s".into(),
            result: None,
            outcome: Some(SubagentOutcome::Suspended {
                interrupt_ids: Some(vec!["i".into()]),
            }),
        }
        .into(),
        SubagentFinished {
            subagent_run_id: "s".into(),
            result: None,
            outcome: Some(SubagentOutcome::Suspended {
                interrupt_ids: None,
            }),
        }
        .into(),
        SubagentError {
            subagent_run_id: "s".into(),
            message: "m".into(),
            code: Some("E".into()),
        }
        .into(),
    ]
}
