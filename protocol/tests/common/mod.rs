//! Fixtures shared by the integration tests: every event type with its
//! optional fields both absent and present, messages of every role, a full
//! run input, and the schema validator.

#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::{Value, json};
use thinkwire_protocol::*;

/// Loads `schema-1.0.json` from `THINKWIRE_AGUI_SCHEMA` or from the
/// `shared/` directory beside the repository.
pub fn schema() -> Value {
    let path = std::env::var_os("THINKWIRE_AGUI_SCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/agui/schema-1.0.json")
        });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "AG-UI schema not found at {} ({e}); set THINKWIRE_AGUI_SCHEMA to schema-1.0.json",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("schema-1.0.json is JSON")
}

/// A validator for `#/$defs/<def>` of the AG-UI schema.
pub fn validator(def: &str) -> jsonschema::Validator {
    let mut schema = schema();
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("schema compiles")
}

/// Asserts `value` is valid, printing every schema error otherwise.
pub fn assert_valid(validator: &jsonschema::Validator, value: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} is not schema-valid: {errors:#?}\n{value:#}"
    );
}

/// Panics if `null` appears anywhere in `value`.
pub fn assert_no_null(value: &Value, path: &str) {
    match value {
        Value::Null => panic!("null at {path}"),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                assert_no_null(v, &format!("{path}[{i}]"));
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                assert_no_null(v, &format!("{path}.{k}"));
            }
        }
        _ => {}
    }
}

fn obj(v: Value) -> JsonObject {
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

fn patch() -> Vec<PatchOp> {
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

/// Adds every common field the event's type allows.
pub fn with_common(e: Event) -> Event {
    e.with_timestamp(1_700_000_000_123)
        .with_raw_event(json!({"provider": "x", "n": [1]}))
        .with_metadata(obj(json!({"trace": "abc"})))
        .with_subagent_run_id("sub-1")
}

/// Every event type: minimal and full forms.
pub fn all_events() -> Vec<Event> {
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
    let minimal: Vec<Event> = vec![
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
    ];
    let full: Vec<Event> = vec![
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
    ];
    let mut out = minimal.clone();
    // Every minimal event again with all common fields.
    out.extend(minimal.into_iter().map(with_common));
    out.extend(full.clone());
    out.extend(full.into_iter().map(with_common));
    out
}
