//! What events carry, with every optional field: token usage, content
//! parts of every kind, messages of every role, a full run input and JSON
//! patch operations.

use serde_json::{Value, json};
use thinkwire_protocol::*;

pub(super) fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

pub fn usage() -> TokenUsage {
    TokenUsage {
        provider: Some("thinkwire".into()),
        model: Some("qwen3-0.6b".into()),
        input_tokens: Some(12),
        output_tokens: Some(34),
        total_tokens: Some(46),
        reasoning_tokens: Some(20),
        cached_input_tokens: Some(0),
        cache_write_input_tokens: Some(MAX_SAFE_INTEGER as u64),
    }
}

pub fn parts() -> Vec<ContentPart> {
    vec![
        ContentPart::Text(TextPart {
            text: "look".into(),
            id: Some("p0".into()),
            metadata: Some(json!({"k": 1})),
        }),
        ContentPart::Text(TextPart {
            text: "bare".into(),
            ..Default::default()
        }),
        ContentPart::Image(MediaPart {
            source: PartSource::Data(DataSource {
                value: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            }),
            id: Some("p1".into()),
            metadata: Some(json!("any")),
        }),
        ContentPart::Audio(MediaPart {
            source: PartSource::Url(UrlSource {
                value: "https://example.invalid/a.mp3".into(),
                mime_type: Some("audio/mpeg".into()),
            }),
            id: None,
            metadata: None,
        }),
        ContentPart::Video(MediaPart {
            source: PartSource::Url(UrlSource {
                value: "https://example.invalid/v".into(),
                mime_type: None,
            }),
            id: None,
            metadata: None,
        }),
        ContentPart::Document(MediaPart {
            source: PartSource::File(FileSource {
                value: "file-1".into(),
                provider: Some("x".into()),
                mime_type: Some("application/pdf".into()),
            }),
            id: None,
            metadata: None,
        }),
        ContentPart::Document(MediaPart {
            source: PartSource::File(FileSource {
                value: "file-2".into(),
                provider: None,
                mime_type: None,
            }),
            id: None,
            metadata: None,
        }),
    ]
}

/// Messages of every role, minimal and with every optional field.
pub fn messages() -> Vec<Message> {
    let meta = || Some(obj(json!({"source": "test"})));
    vec![
        DeveloperMessage {
            id: "d0".into(),
            content: "dev".into(),
            ..Default::default()
        }
        .into(),
        DeveloperMessage {
            id: "d1".into(),
            content: "dev".into(),
            name: Some("n".into()),
            encrypted_value: Some("e".into()),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
        SystemMessage {
            id: "s0".into(),
            content: "sys".into(),
            ..Default::default()
        }
        .into(),
        SystemMessage {
            id: "s1".into(),
            content: "sys".into(),
            name: Some("n".into()),
            encrypted_value: Some("e".into()),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
        AssistantMessage {
            id: "a0".into(),
            ..Default::default()
        }
        .into(),
        AssistantMessage {
            id: "a1".into(),
            content: Some("hello".into()),
            tool_calls: Some(vec![
                ToolCall::function("c0", "search", "{}"),
                ToolCall {
                    encrypted_value: Some("e".into()),
                    metadata: meta(),
                    ..ToolCall::function("c1", "f", "{\"a\":1}")
                },
            ]),
            name: Some("n".into()),
            encrypted_value: Some("e".into()),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
        UserMessage {
            id: "u0".into(),
            content: "hi".into(),
            name: None,
            encrypted_value: None,
            metadata: None,
            subagent_run_id: None,
        }
        .into(),
        UserMessage {
            id: "u1".into(),
            content: Content::Parts(parts()),
            name: Some("n".into()),
            encrypted_value: Some("e".into()),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
        ToolMessage {
            id: "t0".into(),
            content: "42".into(),
            tool_call_id: "c0".into(),
            error: None,
            encrypted_value: None,
            metadata: None,
            subagent_run_id: None,
        }
        .into(),
        ToolMessage {
            id: "t1".into(),
            content: Content::Parts(parts()),
            tool_call_id: "c1".into(),
            error: Some("boom".into()),
            encrypted_value: Some("e".into()),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
        ActivityMessage {
            id: "x0".into(),
            activity_type: "progress".into(),
            content: obj(json!({})),
            ..Default::default()
        }
        .into(),
        ActivityMessage {
            id: "x1".into(),
            activity_type: "progress".into(),
            content: obj(json!({"pct": 50, "label": "half"})),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
        ReasoningMessage {
            id: "r0".into(),
            content: String::new(),
            ..Default::default()
        }
        .into(),
        ReasoningMessage {
            id: "r1".into(),
            content: "thinking".into(),
            encrypted_value: Some("sealed".into()),
            metadata: meta(),
            subagent_run_id: Some("s".into()),
        }
        .into(),
    ]
}

pub fn full_input() -> RunAgentInput {
    RunAgentInput {
        thread_id: "t".into(),
        run_id: "r".into(),
        messages: messages(),
        protocol_version: Some(PROTOCOL_VERSION.into()),
        parent_run_id: Some("p".into()),
        state: Some(json!({"count": 1})),
        tools: vec![
            Tool {
                name: "search".into(),
                description: "Search".into(),
                parameters: Some(json!({"type": "object"})),
                metadata: Some(obj(json!({"v": 1}))),
            },
            Tool {
                name: "noop".into(),
                description: "Nothing".into(),
                parameters: None,
                metadata: None,
            },
        ],
        context: vec![Context {
            description: "tz".into(),
            value: "UTC".into(),
        }],
        forwarded_props: Some(json!({"x": [1, 2]})),
        resume: Some(vec![
            ResumeEntry {
                interrupt_id: "i1".into(),
                status: ResumeStatus::Resolved,
                payload: Some(json!({"ok": true})),
                metadata: Some(obj(json!({}))),
            },
            ResumeEntry {
                interrupt_id: "i2".into(),
                status: ResumeStatus::Cancelled,
                payload: None,
                metadata: None,
            },
        ]),
    }
}

pub(super) fn patch() -> Vec<PatchOp> {
    let p = |s: &str| JsonPointer::new(s).expect("valid pointer");
    vec![
        PatchOp::Add {
            path: p("/a"),
            value: json!(1),
        },
        PatchOp::Remove { path: p("/b") },
        PatchOp::Replace {
            path: p("/c"),
            value: json!({"d": [true]}),
        },
        PatchOp::Move {
            from: p("/e"),
            path: p("/f"),
        },
        PatchOp::Copy {
            from: p("/g"),
            path: p("/h~0~1"),
        },
        PatchOp::Test {
            path: p(""),
            value: json!("v"),
        },
    ]
}
