//! Refusals: values sealed for another thread or message, under another
//! key, altered, cut short or expired are refused before `RUN_STARTED`
//! (422 over SSE, a lone `RUN_ERROR` over WebSocket), or, when the server
//! drops them, the run goes on with a warning and without that reasoning.

use thinkwire::agent::{ReplayFailure, custom};

use super::tamper::flip_one_byte;
use super::*;

/// Turn 2 over WebSocket, expected to be refused: returns the lone event.
pub async fn ws_rejection(server: &TestServer, thread: &str, messages: &[Value]) -> Event {
    let mut socket = connect(server).await;
    let result = ws_run(
        &mut socket,
        &run_input(thread, "run-2", messages, json!({})),
    )
    .await;
    socket.close(None).await.unwrap();
    assert_eq!(
        result.events.len(),
        1,
        "a refusal is a lone RUN_ERROR, before RUN_STARTED: {:?}",
        types(&result.events)
    );
    result.events.into_iter().next().unwrap()
}

pub fn assert_rejected_naming(event: &Event, message_id: &str, why: &str) {
    let EventKind::RunError(error) = &event.kind else {
        panic!("expected RUN_ERROR, got {:?}", event.event_type())
    };
    assert_eq!(error.code.as_deref(), Some("SEALED_REASONING_REJECTED"));
    assert!(
        error.message.contains(message_id),
        "the error names the message: {}",
        error.message
    );
    assert!(error.message.contains(why), "{}", error.message);
    assert!(
        error.message.contains(".encryptedValue"),
        "the error points at the field: {}",
        error.message
    );
}

/// Turn 2 over SSE, expected to be refused with 422: returns the error body.
async fn sse_rejection(server: &TestServer, thread: &str, messages: &[Value]) -> Value {
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(&run_input(thread, "run-2", messages, json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    response.json().await.unwrap()
}

fn assert_422_naming(body: &Value, message_id: &str, why: &str) {
    let error = &body["error"];
    assert_eq!(error["code"], "SEALED_REASONING_REJECTED", "{body}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(message_id), "{message}");
    assert!(message.contains(why), "{message}");
    assert_eq!(error["path"], "messages[1].encryptedValue", "{body}");
}

/// One kind of bad value: how to make it, and what the error says.
struct BadCase {
    name: &'static str,
    /// The thread turn 2 is sent on.
    thread: &'static str,
    /// The value replayed.
    value: String,
    why: &'static str,
}

/// Runs every case against a `Reject` server (422 over SSE, `RUN_ERROR` over
/// WebSocket, the engine never called) and a `Drop` server (the run goes on,
/// a `CUSTOM` warning names the message, the reasoning is not in the
/// prompt).
async fn refused_then_dropped(server_keys: &str, turn1: &Turn1, cases: &[BadCase]) {
    let (rejecting, observed) =
        server_with(&scripts(), ring(server_keys), AgentConfig::default()).await;
    for case in cases {
        let messages = turn1.with_sealed(&case.value);
        let body = sse_rejection(&rejecting, case.thread, &messages).await;
        assert_422_naming(&body, &turn1.reasoning_id, case.why);
        let event = ws_rejection(&rejecting, case.thread, &messages).await;
        assert_rejected_naming(&event, &turn1.reasoning_id, case.why);
        assert_eq!(
            prompt_count(&observed),
            0,
            "{}: a refused run never reaches the engine",
            case.name
        );
    }
    rejecting.shutdown().await;

    let mut config = AgentConfig::default();
    config.replay.on_failure = ReplayFailure::Drop;
    let dropping_scripts = vec![turn_2_script(); cases.len()];
    let (dropping, observed) = server_with(&dropping_scripts, ring(server_keys), config).await;
    for (n, case) in cases.iter().enumerate() {
        let messages = turn1.with_sealed(&case.value);
        let mut socket = connect(&dropping).await;
        let result = ws_run(
            &mut socket,
            &run_input(case.thread, "run-2", &messages, json!({})),
        )
        .await;
        socket.close(None).await.unwrap();
        let events = result.events;
        verify(&events);
        assert_eq!(
            events[0].event_type(),
            EventType::RunStarted,
            "{}",
            case.name
        );
        let EventKind::Custom(warning) = &events[1].kind else {
            panic!(
                "{}: expected CUSTOM after RUN_STARTED, got {:?}",
                case.name,
                types(&events)
            )
        };
        assert_eq!(warning.name, custom::REASONING_DROPPED);
        assert_eq!(warning.value["messageId"], json!(turn1.reasoning_id));
        assert!(
            warning.value["reason"].as_str().unwrap().contains(case.why),
            "{}: {}",
            case.name,
            warning.value
        );
        assert_eq!(
            answer_text(&events),
            ANSWER_2,
            "{}: the run went on",
            case.name
        );
        let prompt = prompt_text(&dropping, &observed, n);
        assert!(
            !prompt.contains(REASONING_1),
            "{}: dropped reasoning is not in the prompt:\n{prompt}",
            case.name
        );
        // The rest of the conversation is: the call and its result.
        assert!(
            prompt.contains("<tool_call>\n{\"name\": \"get_weather\""),
            "{prompt}"
        );
        assert!(prompt.contains(TOOL_RESULT), "{prompt}");
    }
    dropping.shutdown().await;
}

#[tokio::test]
async fn another_key_another_thread_a_flipped_byte_or_a_truncated_value_is_refused() {
    let key = new_key_text();
    let (first, _) = server_with(&scripts(), ring(&key), AgentConfig::default()).await;
    let turn1 = turn_1(&first, THREAD).await;
    first.shutdown().await;

    let sealed = turn1.sealed.clone();
    let cut = sealed.len() / 2;
    let cases = [
        BadCase {
            name: "another thread",
            thread: "thread-seal-2",
            value: sealed.clone(),
            why: "belongs to another thread or message",
        },
        BadCase {
            name: "a flipped byte",
            thread: THREAD,
            value: flip_one_byte(&sealed),
            why: "does not authenticate",
        },
        // Cut inside the ciphertext: still shaped like an envelope, so it
        // fails where an altered one does.
        BadCase {
            name: "a truncated value",
            thread: THREAD,
            value: sealed[..cut].to_owned(),
            why: "does not authenticate",
        },
        // Cut shorter than an envelope can be.
        BadCase {
            name: "the header alone",
            thread: THREAD,
            value: sealed[..44].to_owned(),
            why: "malformed or truncated",
        },
        BadCase {
            name: "not base64url",
            thread: THREAD,
            value: format!("{}!", &sealed[..cut]),
            why: "malformed or truncated",
        },
    ];
    refused_then_dropped(&key, &turn1, &cases).await;

    // Under another key (a server that never held the sealing key).
    let other = new_key_text();
    let cases = [BadCase {
        name: "another key",
        thread: THREAD,
        value: sealed,
        why: "key this server does not hold",
    }];
    refused_then_dropped(&other, &turn1, &cases).await;
}

#[tokio::test]
async fn a_value_under_another_message_id_is_refused() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let turn1 = turn_1(&server, THREAD).await;
    let mut messages = turn1.with_tool_result();
    reasoning_message(&mut messages)["id"] = json!("reasoning-msg-forged");
    let event = ws_rejection(&server, THREAD, &messages).await;
    assert_rejected_naming(&event, "reasoning-msg-forged", "another thread or message");
    assert_eq!(prompt_count(&observed), 1, "only turn 1 reached the engine");
    server.shutdown().await;
}

#[tokio::test]
async fn an_expired_value_is_refused_or_dropped() {
    let key = new_key_text();

    // Within its lifetime a value carrying an expiry opens. The lifetime is
    // long so that a loaded machine cannot outlast it; the short lifetime
    // below is only ever waited out, never raced.
    let long = AgentConfig {
        seal_ttl: Some(Duration::from_secs(600)),
        ..AgentConfig::default()
    };
    let (first, observed) = server_with(&scripts(), ring(&key), long).await;
    let turn1 = turn_1(&first, THREAD).await;
    let early = turn_2_ok(&first, THREAD, &turn1.with_tool_result()).await;
    assert!(!types(&early).contains(&EventType::Custom));
    assert!(prompt_text(&first, &observed, 1).contains(&restored_turn_1()));
    first.shutdown().await;

    let ttl = Duration::from_millis(500);
    let mut config = AgentConfig {
        seal_ttl: Some(ttl),
        ..AgentConfig::default()
    };
    let (short, _) = server_with(&scripts(), ring(&key), config.clone()).await;
    let turn1 = turn_1(&short, THREAD).await;
    short.shutdown().await;
    tokio::time::sleep(ttl + Duration::from_millis(100)).await;
    let cases = [BadCase {
        name: "expired",
        thread: THREAD,
        value: turn1.sealed.clone(),
        why: "has expired",
    }];
    refused_then_dropped(&key, &turn1, &cases).await;

    // Expiry is the sealer's decision, carried inside the value: a server
    // without a TTL of its own still refuses it.
    config.seal_ttl = None;
    let (later, _) = server_with(&scripts(), ring(&key), config).await;
    let event = ws_rejection(&later, THREAD, &turn1.with_tool_result()).await;
    assert_rejected_naming(&event, &turn1.reasoning_id, "has expired");
    later.shutdown().await;
}
