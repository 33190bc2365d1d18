//! The binding's round trips, framing and refusals.

use serde_json::{Value as Json, json};

use super::*;
use crate::event::{EventType, decode_event_value};

mod depth;
mod proto_file;

/// JSON text → event → protobuf → event: the same event, the same JSON.
fn round_trip(json: Json) {
    let event = decode_event_value(&json)
        .unwrap_or_else(|e| panic!("{json}: {e}"))
        .expect("a known type");
    let bytes = proto_encode(&event).unwrap_or_else(|e| panic!("{json}: {e}"));
    let back = proto_decode(&bytes)
        .unwrap_or_else(|e| panic!("{json}: {e}"))
        .expect("a known type");
    assert_eq!(back, event, "{json}");
    assert_eq!(back.to_value(), json, "{json}");
}

/// One of each of the 31 event types, every optional field absent, then
/// one with every optional field present.
fn samples() -> Vec<(Json, Json)> {
    let base = json!({"timestamp": 1_700_000_000_123_i64, "rawEvent": {"provider": [1, "x", null]},
                      "metadata": {"k": "v", "n": 2}});
    let with = |minimal: Json, extra: Json| {
        let mut full = minimal.clone();
        for (k, v) in extra
            .as_object()
            .unwrap()
            .iter()
            .chain(base.as_object().unwrap())
        {
            full[k] = v.clone();
        }
        (minimal, full)
    };
    let message_all = json!([
        {"id": "d", "role": "developer", "content": "be brief", "name": "ops", "encryptedValue": "e0",
         "metadata": {"a": 1}, "subagentRunId": "s"},
        {"id": "s", "role": "system", "content": ""},
        {"id": "u", "role": "user", "content": [
            {"type": "text", "text": "look", "id": "p1", "metadata": {"m": true}},
            {"type": "image", "source": {"type": "data", "value": "AAAA", "mimeType": "image/png"}, "id": "p2"},
            {"type": "audio", "source": {"type": "url", "value": "https://a.invalid/x", "mimeType": "audio/wav"}},
            {"type": "video", "source": {"type": "url", "value": "https://a.invalid/y"}, "metadata": [1]},
            {"type": "document", "source": {"type": "file", "value": "f1", "provider": "p", "mimeType": "text/plain"}}
        ]},
        {"id": "u2", "role": "user", "content": []},
        {"id": "a", "role": "assistant", "content": "calling", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"q\":1}"},
             "encryptedValue": "e1", "metadata": {"x": "y"}}]},
        {"id": "a2", "role": "assistant"},
        {"id": "t", "role": "tool", "content": "42", "toolCallId": "c1", "error": "none"},
        {"id": "act", "role": "activity", "activityType": "plan", "content": {"steps": [1, 2]}},
        {"id": "r", "role": "reasoning", "content": "", "encryptedValue": "sealed"}
    ]);
    let patch = json!([
        {"op": "add", "path": "/a", "value": null},
        {"op": "remove", "path": "/b"},
        {"op": "replace", "path": "/c", "value": {"d": [1.5]}},
        {"op": "move", "from": "/e", "path": "/f"},
        {"op": "copy", "from": "/g", "path": "/h"},
        {"op": "test", "path": "/i", "value": "j"}
    ]);
    let usage = json!([{"provider": "thinkwire", "model": "m", "inputTokens": 3, "outputTokens": 5,
                        "totalTokens": 8, "reasoningTokens": 2, "cachedInputTokens": 0,
                        "cacheWriteInputTokens": 1}, {}]);
    let sub = json!({"subagentRunId": "sub-1"});
    let merged = |extra: Json| {
        let mut v = sub.clone();
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    vec![
        with(
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m"}),
            merged(json!({"role": "user", "name": "n"})),
        ),
        with(
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hé\n\u{1F600}"}),
            sub.clone(),
        ),
        with(
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
            sub.clone(),
        ),
        with(
            json!({"type": "TEXT_MESSAGE_CHUNK"}),
            merged(json!({"messageId": "m", "role": "assistant", "delta": "", "name": "n"})),
        ),
        with(
            json!({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "get"}),
            merged(json!({"parentMessageId": "m"})),
        ),
        with(
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{\"a\":"}),
            sub.clone(),
        ),
        with(
            json!({"type": "TOOL_CALL_END", "toolCallId": "c"}),
            sub.clone(),
        ),
        with(
            json!({"type": "TOOL_CALL_CHUNK"}),
            merged(
                json!({"toolCallId": "c", "toolCallName": "get", "parentMessageId": "m", "delta": "{}"}),
            ),
        ),
        with(
            json!({"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": "ok"}),
            merged(json!({"role": "tool"})),
        ),
        with(
            json!({"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": []}),
            merged(json!({"content": [{"type": "text", "text": "ok"}]})),
        ),
        with(
            json!({"type": "STATE_SNAPSHOT", "snapshot": null}),
            merged(json!({"snapshot": {"count": 1, "list": [], "o": {}}})),
        ),
        with(
            json!({"type": "STATE_DELTA", "delta": []}),
            merged(json!({"delta": patch})),
        ),
        with(
            json!({"type": "MESSAGES_SNAPSHOT", "messages": []}),
            json!({"messages": message_all}),
        ),
        with(
            json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "plan", "content": {}}),
            merged(json!({"replace": false, "content": {"a": {"b": 1}}})),
        ),
        with(
            json!({"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "plan", "patch": []}),
            merged(json!({"patch": patch})),
        ),
        with(
            json!({"type": "RAW", "event": "x"}),
            merged(json!({"source": "openai", "event": {"id": 1}})),
        ),
        with(
            json!({"type": "CUSTOM", "name": "thinkwire.output_incomplete", "value": {"reason": "length"}}),
            merged(json!({"value": [1, -2.75, "x", false, null]})),
        ),
        with(
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"parentRunId": "p", "protocolVersion": "1.0", "input": {
                 "threadId": "t", "runId": "r", "messages": message_all, "protocolVersion": "1.0",
                 "parentRunId": "p", "state": {"s": 1},
                 "tools": [{"name": "get", "description": "gets", "parameters": {"type": "object"},
                            "metadata": {"x": 1}}, {"name": "n", "description": ""}],
                 "context": [{"description": "d", "value": "v"}],
                 "forwardedProps": {"reasoning": {"visibility": "full"}},
                 "resume": [{"interruptId": "i", "status": "resolved", "payload": {"ok": true},
                             "metadata": {}}]}}),
        ),
        with(
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"input": {"threadId": "t", "runId": "r", "messages": []}}),
        ),
        with(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
            json!({"result": {"answer": 42}, "outcome": {"type": "success", "pendingToolCallIds": ["c1", "c2"]},
                    "usage": usage}),
        ),
        with(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}}),
            json!({"outcome": {"type": "cancelled"}}),
        ),
        with(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                    "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "approval"}]}}),
            json!({"outcome": {"type": "interrupt", "interrupts": [
                 {"id": "i", "reason": "approval", "message": "ok?", "toolCallId": "c", "responseSchema": {"type": "boolean"},
                  "expiresAt": "2030-01-01T00:00:00Z", "metadata": {"m": 1}, "subagentRunId": "s"}]}}),
        ),
        with(
            json!({"type": "RUN_ERROR", "message": "failed"}),
            json!({"code": "ENGINE_ERROR", "usage": usage}),
        ),
        with(
            json!({"type": "STEP_STARTED", "stepName": "s"}),
            sub.clone(),
        ),
        with(
            json!({"type": "STEP_FINISHED", "stepName": "s"}),
            sub.clone(),
        ),
        with(
            json!({"type": "REASONING_START", "messageId": "span"}),
            sub.clone(),
        ),
        with(
            json!({"type": "REASONING_MESSAGE_START", "messageId": "rm", "role": "reasoning"}),
            sub.clone(),
        ),
        with(
            json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "think"}),
            sub.clone(),
        ),
        with(
            json!({"type": "REASONING_MESSAGE_END", "messageId": "rm"}),
            sub.clone(),
        ),
        with(
            json!({"type": "REASONING_MESSAGE_CHUNK"}),
            merged(json!({"messageId": "rm", "delta": "d"})),
        ),
        with(
            json!({"type": "REASONING_END", "messageId": "span"}),
            sub.clone(),
        ),
        with(
            json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "rm",
                    "encryptedValue": "dHctc2VhbC12MQ"}),
            merged(json!({"subtype": "tool-call", "entityId": "c1"})),
        ),
        with(
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"}),
            json!({"description": "d", "parentSubagentRunId": "p", "parentToolCallId": "c",
                    "parentMessageId": "m"}),
        ),
        with(
            json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "s"}),
            json!({"result": [1], "outcome": {"type": "suspended", "interruptIds": ["i"]}}),
        ),
        with(
            json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "outcome": {"type": "success"}}),
            json!({"outcome": {"type": "suspended"}}),
        ),
        with(
            json!({"type": "SUBAGENT_ERROR", "subagentRunId": "s", "message": "m"}),
            json!({"code": "C"}),
        ),
    ]
}

#[test]
fn every_event_type_round_trips_with_fields_absent_and_present() {
    let samples = samples();
    let mut seen = std::collections::BTreeSet::new();
    for (minimal, full) in samples {
        seen.insert(EventType::parse(minimal["type"].as_str().unwrap()).unwrap());
        round_trip(minimal);
        round_trip(full);
    }
    assert_eq!(seen.len(), EventType::ALL.len(), "one of each type");
}

/// Bytes `@ag-ui/proto` 1.0.0's own `encode` wrote for these events: the
/// same bytes, field for field.
#[test]
fn bytes_match_the_official_encoder() {
    let cases = [
        (
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
            "0a110a0012026d311a09617373697374616e74",
        ),
        (
            json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "r1",
                   "encryptedValue": "c2VhbGVk", "timestamp": 1_700_000_000_000_i64}),
            "fa01220a09081e1080d095ffbc311a076d657373616765220272312a08633256686247566b",
        ),
        (
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                   "outcome": {"type": "success", "pendingToolCallIds": ["c1"]},
                   "usage": [{"inputTokens": 3, "outputTokens": 5}]}),
            "6a1d0a02080c1201741a01722a07737563636573733a041803200542026331",
        ),
        (
            json!({"type": "CUSTOM", "name": "n", "value": {"a": [1, 2.5, null, true, "s"]}}),
            "5a370a02080a12016e1a2e2a2c0a2a0a0161122532230a0911000000000000f03f0a09110000000000000440\
             0a0208000a0220010a031a0173",
        ),
    ];
    for (json, hex) in cases {
        let event = decode_event_value(&json).unwrap().unwrap();
        let bytes = proto_encode(&event).unwrap();
        let ours: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(ours, hex, "{json}");
    }
}

#[test]
fn what_the_binding_cannot_carry_is_refused_with_its_path() {
    let refused = |json: Json, path: &str| {
        let err = encode::encode_json(json.clone()).unwrap_err();
        match &err {
            ProtoError::Unrepresentable { path: at, .. } => assert_eq!(at, path, "{json}"),
            other => panic!("{json}: {other}"),
        }
    };
    // A field no message has.
    refused(
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m", "extra": 1}),
        "extra",
    );
    refused(
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
               "outcome": {"type": "cancelled", "why": "user"}}),
        "outcome.why",
    );
    // Empty arrays that would arrive absent.
    refused(
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
               "outcome": {"type": "success", "pendingToolCallIds": []}}),
        "outcome.pendingToolCallIds",
    );
    refused(
        json!({"type": "RUN_ERROR", "message": "m", "usage": []}),
        "usage",
    );
    // Integers a double does not hold.
    refused(
        json!({"type": "CUSTOM", "name": "n", "value": {"id": 9_007_199_254_740_993_i64}}),
        "value.id",
    );
    refused(
        json!({"type": "CUSTOM", "name": "n", "value": 1, "metadata": {"big": [u64::MAX]}}),
        "metadata.big[0]",
    );
    // Through the public API, a typed event with an empty list.
    let mut finished = crate::RunFinished::new("t", "r");
    finished.usage = Some(Vec::new());
    assert!(matches!(
        proto_frame(&Event::from(finished)),
        Err(ProtoError::Unrepresentable { .. })
    ));
}

#[test]
fn frames_split_anywhere_decode_in_order() {
    let events: Vec<Event> = samples()
        .into_iter()
        .map(|(_, full)| decode_event_value(&full).unwrap().unwrap())
        .collect();
    let stream: Vec<u8> = events
        .iter()
        .flat_map(|e| proto_frame(e).unwrap())
        .collect();
    for step in [1, 2, 3, 7, 64, stream.len()] {
        let mut decoder = ProtoDecoder::new();
        let mut got = Vec::new();
        for chunk in stream.chunks(step) {
            got.extend(decoder.push(chunk).into_iter().map(Result::unwrap));
        }
        decoder.finish().unwrap();
        assert_eq!(got, events, "chunks of {step}");
    }
    // Cut inside the last frame.
    let mut decoder = ProtoDecoder::new();
    assert_eq!(
        decoder.push(&stream[..stream.len() - 1]).len(),
        events.len() - 1
    );
    assert!(decoder.pending_len() > 0);
    assert!(decoder.finish().is_err());
}

#[test]
fn malformed_and_unknown_frames() {
    // A zero-length frame names no event: the official client fails on it
    // too, which is why the binding has no keepalive.
    let mut decoder = ProtoDecoder::new();
    let got = decoder.push(&[0, 0, 0, 0]);
    assert!(matches!(got.as_slice(), [Err(ProtoError::Malformed(_))]));
    assert!(
        decoder
            .push(
                &proto_frame(&Event::from(crate::StepStarted {
                    step_name: "s".into()
                }))
                .unwrap()
            )
            .is_empty(),
        "nothing is read after an error"
    );

    // An arm from a later protocol (field 99, an empty message) is skipped.
    let future = [0x9a, 0x06, 0x00];
    assert_eq!(proto_decode(&future).unwrap(), None);

    // The envelope's arm and base_event.type disagree.
    let mut wrong = pb_event("TEXT_MESSAGE_END");
    if let Some(messages::EventKind::TextMessageEnd(e)) = &mut wrong.event {
        e.base_event.as_mut().unwrap().r#type = messages::EventType::RunError as i32;
    }
    let err = proto_decode(&prost::Message::encode_to_vec(&wrong)).unwrap_err();
    assert!(err.to_string().contains("TEXT_MESSAGE_END"), "{err}");

    // No base_event at all.
    let mut bare = pb_event("TEXT_MESSAGE_END");
    if let Some(messages::EventKind::TextMessageEnd(e)) = &mut bare.event {
        e.base_event = None;
    }
    assert!(proto_decode(&prost::Message::encode_to_vec(&bare)).is_err());

    // A length over the official client's limit.
    let mut decoder = ProtoDecoder::new();
    let got = decoder.push(&u32::MAX.to_be_bytes());
    assert!(matches!(got.as_slice(), [Err(ProtoError::TooLarge(_))]));

    // A frame whose event breaks AG-UI's rules.
    let mut start = pb_event("REASONING_MESSAGE_START");
    if let Some(messages::EventKind::ReasoningMessageStart(e)) = &mut start.event {
        e.role = "assistant".into();
    }
    let err = proto_decode(&prost::Message::encode_to_vec(&start)).unwrap_err();
    assert!(matches!(err, ProtoError::Event(_)), "{err}");
}

#[test]
fn a_tool_call_without_its_function_is_malformed() {
    let mut snapshot = encode::encode_json(json!({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "a", "role": "assistant", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]}]}))
    .unwrap();
    assert!(
        proto_decode(&prost::Message::encode_to_vec(&snapshot))
            .unwrap()
            .is_some(),
        "as encoded, it decodes"
    );
    let Some(messages::EventKind::MessagesSnapshot(e)) = &mut snapshot.event else {
        panic!("expected a MESSAGES_SNAPSHOT arm");
    };
    // What the encoder refuses to make: no empty name and arguments instead.
    e.messages[0].tool_calls[0].function = None;
    let err = proto_decode(&prost::Message::encode_to_vec(&snapshot)).unwrap_err();
    assert!(
        matches!(&err, ProtoError::Malformed(m) if m.contains("function")),
        "{err}"
    );
}

fn pb_event(ty: &str) -> messages::Event {
    let json = match ty {
        "TEXT_MESSAGE_END" => json!({"type": ty, "messageId": "m"}),
        _ => json!({"type": ty, "messageId": "m", "role": "reasoning"}),
    };
    encode::encode_json(json).unwrap()
}

#[test]
fn frames_are_refused_past_the_clients_limit() {
    let big = "x".repeat(PROTO_MAX_FRAME_BYTES);
    let event = Event::from(crate::TextMessageContent {
        message_id: "m".into(),
        delta: big,
    });
    assert!(matches!(proto_frame(&event), Err(ProtoError::TooLarge(_))));
}
