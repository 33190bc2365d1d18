//! Every event, message, run input and capabilities document we produce
//! validates against the published AG-UI 1.0 JSON Schema, contains no `null`,
//! and decodes back to itself.

mod common;

use std::collections::BTreeSet;

use common::*;
use serde_json::json;
use thinkwire_protocol::*;

#[test]
fn every_event_type_is_covered() {
    let covered: BTreeSet<EventType> = all_events().iter().map(Event::event_type).collect();
    let all: BTreeSet<EventType> = EventType::ALL.iter().copied().collect();
    assert_eq!(covered, all);
    assert_eq!(all.len(), 31);
}

#[test]
fn events_validate_against_schema() {
    let event = validator("Event");
    for (i, ev) in all_events().iter().enumerate() {
        assert_valid(
            &event,
            &ev.to_value(),
            &format!("event #{i} {}", ev.event_type()),
        );
    }
}

#[test]
fn events_contain_no_null_and_round_trip() {
    for ev in all_events() {
        let json = ev.to_json();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_no_null(&value, ev.event_type().as_str());
        assert!(!json.contains('\n'), "event JSON must be one line");
        let back = decode_event(&json).unwrap().expect("known type");
        // Attribution on non-attributable types is not written, so compare
        // with what the wire can carry.
        let mut expected = ev.clone();
        if !ev.event_type().is_attributable() {
            expected.subagent_run_id = None;
        }
        assert_eq!(back, expected, "{json}");
        assert_eq!(back.to_json(), json);
    }
}

#[test]
fn common_fields_written_exactly_where_allowed() {
    for ev in all_events().into_iter().map(with_common) {
        let v = ev.to_value();
        let ty = ev.event_type();
        assert_eq!(v["type"], ty.as_str());
        assert!(v["timestamp"].is_i64());
        assert!(v["rawEvent"].is_object());
        assert!(v["metadata"].is_object());
        let own = matches!(
            ty,
            EventType::SubagentStarted | EventType::SubagentFinished | EventType::SubagentError
        );
        if ty.is_attributable() {
            assert_eq!(v["subagentRunId"], "sub-1", "{ty}");
        } else if !own {
            assert!(v.get("subagentRunId").is_none(), "{ty}");
        } else {
            assert_eq!(v["subagentRunId"], "s", "{ty}");
        }
    }
}

#[test]
fn messages_validate_against_schema() {
    let message = validator("Message");
    for m in messages() {
        let v = serde_json::to_value(&m).unwrap();
        assert_valid(&message, &v, m.id());
        assert_no_null(&v, m.id());
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
    }
}

#[test]
fn run_agent_input_validates_against_schema() {
    let validator = validator("RunAgentInput");
    for input in [full_input(), RunAgentInput::new("t", "r", vec![])] {
        let v = serde_json::to_value(&input).unwrap();
        assert_valid(&validator, &v, "RunAgentInput");
        assert_no_null(&v, "input");
        let back = decode_run_agent_input(v.to_string().as_bytes()).unwrap();
        assert_eq!(back, input);
    }
}

#[test]
fn capabilities_validate_against_schema() {
    let validator = validator("AgentCapabilities");
    let caps = AgentCapabilities {
        identity: Some(IdentityCapabilities {
            name: Some("thinkwire".into()),
            r#type: Some("local-llm".into()),
            description: Some("reasoning model on MLX".into()),
            version: Some("0.1.0".into()),
            provider: Some("thinkwire".into()),
            documentation_url: Some("https://example.invalid/docs".into()),
            metadata: Some(JsonObject::new()),
        }),
        transport: Some(TransportCapabilities {
            streaming: Some(true),
            websocket: Some(true),
            http_binary: Some(false),
            push_notifications: Some(false),
            resumable: Some(false),
        }),
        tools: Some(ToolsCapabilities {
            supported: Some(true),
            items: Some(vec![Tool {
                name: "n".into(),
                description: "d".into(),
                parameters: None,
                metadata: None,
            }]),
            parallel_calls: Some(false),
            client_provided: Some(true),
        }),
        output: Some(OutputCapabilities {
            structured_output: Some(false),
            supported_mime_types: Some(vec!["text/plain".into()]),
        }),
        state: Some(StateCapabilities {
            snapshots: Some(false),
            deltas: Some(false),
            memory: Some(false),
            persistent_state: Some(false),
        }),
        multi_agent: Some(MultiAgentCapabilities {
            supported: Some(false),
            delegation: Some(false),
            handoffs: Some(false),
            subagents: Some(vec![SubagentInfo {
                name: "x".into(),
                description: Some("y".into()),
            }]),
        }),
        reasoning: Some(ReasoningCapabilities::all()),
        multimodal: Some(MultimodalCapabilities {
            input: Some(MultimodalInputCapabilities {
                image: Some(false),
                audio: Some(false),
                video: Some(false),
                pdf: Some(false),
                file: Some(false),
            }),
            output: Some(MultimodalOutputCapabilities {
                image: Some(false),
                audio: Some(false),
            }),
        }),
        execution: Some(ExecutionCapabilities {
            code_execution: Some(false),
            sandboxed: Some(true),
            max_iterations: Some(8),
            max_execution_time: Some(60_000),
        }),
        human_in_the_loop: Some(HumanInTheLoopCapabilities {
            supported: Some(false),
            ..Default::default()
        }),
        custom: Some(serde_json::from_value(json!({"sealing": "xchacha20poly1305"})).unwrap()),
    };
    for caps in [caps, AgentCapabilities::default()] {
        let v = serde_json::to_value(&caps).unwrap();
        assert_valid(&validator, &v, "AgentCapabilities");
        assert_no_null(&v, "caps");
    }
}

/// The validator must be able to fail, or the tests above prove nothing.
#[test]
fn schema_rejects_what_we_must_not_send() {
    let event = validator("Event");
    let ok = Event::from(TextMessageEnd {
        message_id: "m".into(),
    })
    .to_value();
    assert!(event.is_valid(&ok));
    for bad in [
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1.5}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": null}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m", "extra": 1}),
        json!({"type": "TEXT_MESSAGE_END"}),
        json!({"type": "THINKING_START"}),
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "subagentRunId": "s"}),
        json!({"type": "REASONING_MESSAGE_START", "messageId": "m", "role": "assistant"}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": []}}),
    ] {
        assert!(!event.is_valid(&bad), "schema accepted {bad}");
    }
}
