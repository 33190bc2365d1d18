//! Reading events and run inputs the way the official client does.

use serde_json::json;
use thinkwire_protocol::*;

#[test]
fn unknown_event_types_are_ignored() {
    for ty in [
        "THINKING_START",
        "THINKING_TEXT_MESSAGE_CONTENT",
        "FUTURE_EVENT",
        "",
    ] {
        let json = json!({"type": ty, "messageId": 5}).to_string();
        assert_eq!(decode_event(&json).unwrap(), None, "{ty}");
    }
}

#[test]
fn unknown_fields_are_tolerated() {
    let ev = decode_event(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d","newField":{"x":null},"another":[1]}"#,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        ev,
        Event::from(TextMessageContent {
            message_id: "m".into(),
            delta: "d".into()
        })
    );
    // Dropped on re-serialization.
    assert_eq!(
        ev.to_json(),
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}"#
    );

    let input = decode_run_agent_input(
        br#"{"threadId":"t","runId":"r","future":1,"messages":[{"id":"u","role":"user","content":"hi","extra":true}],
            "tools":[{"name":"n","description":"d","x":1}],"context":[{"description":"d","value":"v","y":2}]}"#,
    )
    .unwrap();
    assert_eq!(input.messages.len(), 1);
    assert_eq!(input.tools[0].name, "n");
}

#[test]
fn malformed_known_fields_name_their_path() {
    let cases = [
        (r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}"#, ""),
        (
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":7}"#,
            "delta",
        ),
        (
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"tool"}"#,
            "role",
        ),
        (
            r#"{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text"}]}"#,
            "content[0]",
        ),
        (
            r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"nope","value":1}]}"#,
            "delta[0].path",
        ),
        (
            r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"reasoning","content":"x"},{"id":"b","role":"reasoning","content":3}]}"#,
            "messages[1].content",
        ),
        (
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":"many"}]}"#,
            "usage[0].inputTokens",
        ),
        (
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}"#,
            "outcome.interrupts",
        ),
        (
            r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"secret","entityId":"e","encryptedValue":"v"}"#,
            "subtype",
        ),
        (
            r#"{"type":"ACTIVITY_SNAPSHOT","messageId":"m","activityType":"a","content":[]}"#,
            "content",
        ),
        (r#"{"type":"CUSTOM","name":"n"}"#, ""),
        (
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"n","description":4}]}}"#,
            "input.tools[0].description",
        ),
    ];
    for (json, path) in cases {
        let err = decode_event(json).expect_err(json);
        assert_eq!(err.path(), path, "{json}: {err}");
    }
}

#[test]
fn timestamps_must_be_safe_integers() {
    let with = |ts: &str| {
        decode_event(&format!(
            r#"{{"type":"RUN_ERROR","message":"m","timestamp":{ts}}}"#
        ))
    };
    assert_eq!(
        with("1700000000000").unwrap().unwrap().timestamp,
        Some(1_700_000_000_000)
    );
    assert_eq!(with("-5").unwrap().unwrap().timestamp, Some(-5));
    for bad in ["1.5", "1e3", "null", "\"1\"", "9007199254740992", "true"] {
        let err = with(bad).expect_err(bad);
        assert_eq!(err.path(), "timestamp", "{bad}");
    }
}

#[test]
fn errors_never_echo_input() {
    let secret = "TOP-SECRET-PROMPT";
    let docs = [
        format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":["{secret}"]}}"#),
        format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"m","role":"{secret}"}}"#),
        format!(r#"{{"type":"RUN_ERROR","message":"m","timestamp":"{secret}"}}"#),
        format!(r#"{{"type":"RUN_ERROR","message":{{"{secret}":1}}}}"#),
        format!(r#"{{"type":"RUN_ERROR" "{secret}"}}"#),
    ];
    for doc in docs {
        let err = decode_event(&doc).unwrap_err();
        assert!(!err.to_string().contains(secret), "{err}");
        assert!(!format!("{err:?}").contains(secret), "{err:?}");
    }
    let body = format!(
        r#"{{"threadId":"t","runId":"r","messages":[{{"id":"u","role":"user","content":{{"text":"{secret}"}}}}]}}"#
    );
    let err = decode_run_agent_input(body.as_bytes()).unwrap_err();
    assert_eq!(err.path(), "messages[0].content");
    assert!(!err.to_string().contains(secret), "{err}");
}

#[test]
fn reasoning_messages_keep_encrypted_value_across_turns() {
    let body = br#"{"threadId":"t","runId":"r2","messages":[
        {"id":"u1","role":"user","content":"q"},
        {"id":"r1","role":"reasoning","content":"","encryptedValue":"sealed-bytes"},
        {"id":"a1","role":"assistant","content":"answer"},
        {"id":"u2","role":"user","content":"follow-up"}]}"#;
    let input = decode_run_agent_input(body).unwrap();
    let Message::Reasoning(r) = &input.messages[1] else {
        panic!("reasoning role lost")
    };
    assert_eq!(r.encrypted_value.as_deref(), Some("sealed-bytes"));
    // Reasoning without content is rejected (the schema requires it).
    let err = decode_run_agent_input(
        br#"{"threadId":"t","runId":"r","messages":[{"id":"r","role":"reasoning"}]}"#,
    )
    .unwrap_err();
    assert_eq!(err.path(), "messages[0]");
}

/// Found by the `run_agent_input` fuzz target (issue #13): a long mantissa
/// in `forwardedProps` came back an ulp off after a decode/encode round
/// trip; application values must pass through untouched.
#[test]
fn long_numbers_survive_a_round_trip() {
    let body = br#"{"threadId":"t","runId":"r","messages":[],
        "forwardedProps":{"a":77777777777777777388.88,
            "b":7777777777777777777777738877777777777773877777777777388.88,
            "c":0.30000000000000004441, "d":1e-320}}"#;
    let input = decode_run_agent_input(body).unwrap();
    let again = decode_run_agent_input(&serde_json::to_vec(&input).unwrap()).unwrap();
    assert_eq!(again, input);
    let exact: f64 = "7777777777777777777777738877777777777773877777777777388.88"
        .parse()
        .unwrap();
    assert_eq!(input.forwarded_props.unwrap()["b"].as_f64(), Some(exact));
}
