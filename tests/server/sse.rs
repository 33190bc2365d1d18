//! `POST /agent`: the event stream of a run, keepalives, and refusals
//! before `RUN_STARTED`.

use std::time::Duration;

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{EventKind, Outcome};
use thinkwire_seal::{Key, KeyRing};

use crate::support::*;

#[tokio::test]
async fn a_thinking_run_streams_reasoning_then_text_and_finishes_with_usage() {
    let script = qwen3_turn("The user wants a greeting.", "Hello there!");
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input(
            "t1",
            "r1",
            "Hi",
            json!({"reasoning": {"visibility": "full"}}),
        ),
    )
    .await;
    assert_eq!(
        kinds(&events),
        REASONING_THEN_ANSWER,
        "content events aside"
    );
    assert_eq!(reasoning_text(&events), "The user wants a greeting.");
    assert_eq!(answer_text(&events), "Hello there!");
    let EventKind::RunFinished(finished) = &events.last().unwrap().kind else {
        panic!("no RUN_FINISHED")
    };
    assert_eq!(
        finished.outcome,
        Some(Outcome::Success {
            pending_tool_call_ids: None
        })
    );
    let usage = &finished.usage.as_ref().unwrap()[0];
    let prompt = observed.prompts.lock().unwrap()[0].len() as u64;
    assert_eq!(usage.input_tokens, Some(prompt));
    assert!(usage.reasoning_tokens.unwrap() > 5, "{usage:?}");
    assert_eq!(
        usage.total_tokens,
        Some(usage.input_tokens.unwrap() + usage.output_tokens.unwrap())
    );
    server.shutdown().await;
}

#[tokio::test]
async fn hidden_reasoning_sends_an_empty_message_and_the_sealed_value_only() {
    let script = qwen3_turn("SECRET-PLAN-42 is my plan.", "Done.");
    let (server, _) = TestServer::qwen3(&[script]).await;
    let events = post_run(&server, &input("t1", "r1", "Hi", json!({}))).await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), "");
    let wire: String = events.iter().map(|e| e.to_json()).collect();
    assert!(!wire.contains("SECRET-PLAN-42"), "hidden reasoning leaked");
    let message_id = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningMessageStart(s) => Some(s.message_id.clone()),
            _ => None,
        })
        .unwrap();
    let sealed = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningEncryptedValue(v) => Some(v.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(sealed.entity_id, message_id);
    server.shutdown().await;
}

#[tokio::test]
async fn refuses_bad_input_before_run_started_with_a_precise_status() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn("x", "y")]).await;
    let client = reqwest::Client::new();
    let post = |body: String, content_type: &'static str| {
        client
            .post(server.url("/agent"))
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    // Not JSON.
    let r = post("{not json".into(), "application/json").await.unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INVALID_INPUT");
    // A known field malformed: the path is named.
    let mut bad = input("t", "r", "hi", json!({}));
    bad["messages"][0]["role"] = json!(42);
    let r = post(bad.to_string(), "application/json").await.unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["path"], "messages[0].role", "{body}");
    // Wrong media type.
    let r = post(input("t", "r", "hi", json!({})).to_string(), "text/plain")
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    // Too large.
    let huge = input("t", "r", &"a".repeat(5 * 1024 * 1024), json!({}));
    let r = post(huge.to_string(), "application/json").await.unwrap();
    assert_eq!(r.status(), 413);
    // Well-formed but not allowed / not usable.
    let r = post(
        input("t", "r", "hi", json!({"reasoning": {"visibility": "loud"}})).to_string(),
        "application/json",
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 422);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["path"], "forwardedProps.reasoning.visibility");
    // None of them reached the engine.
    assert!(observed.prompts.lock().unwrap().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn a_prompt_longer_than_the_context_is_refused_naming_the_limit() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn("x", "y")]).await;
    let long = "word ".repeat(5000);
    let r = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .body(input("t", "r", &long, json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CONTEXT_OVERFLOW");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("4096"),
        "{body}"
    );
    assert!(observed.prompts.lock().unwrap().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn keepalive_comments_flow_while_the_model_is_busy() {
    let (model, _) = scripted_qwen3(
        &[qwen3_turn("slow thoughts", "ok")],
        Duration::from_millis(60),
    );
    let keys = KeyRing::new(Key::generate().unwrap());
    let config = ServerConfig {
        keepalive: Duration::from_millis(20),
        ..ServerConfig::default()
    };
    let server = TestServer::start(Agent::new(model, keys, AgentConfig::default()), config).await;
    let bytes = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .body(input("t", "r", "hi", json!({})).to_string())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.contains(": keepalive\n\n"), "no keepalive in {text}");
    assert!(text.trim_end().ends_with('}'), "stream ends with an event");
    server.shutdown().await;
}

/// With resuming off (`--resume-window-s 0`) a client that hangs up stops
/// its run at once; with it on, after the window (`resume_refusals.rs`).
#[tokio::test]
async fn a_client_that_disconnects_stops_the_engine() {
    // 400 scripted tokens at 20 ms each would take 8 s.
    let long_answer = "word ".repeat(400);
    let (model, observed) = scripted_qwen3(
        &[format!("{long_answer}<|im_end|>")],
        Duration::from_millis(20),
    );
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(
        Agent::new(model, keys, AgentConfig::default()),
        ServerConfig {
            resume: thinkwire::server::ResumeConfig {
                window: Duration::ZERO,
                ..Default::default()
            },
            ..ServerConfig::default()
        },
    )
    .await;
    let mut response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .body(input("t", "r", "hi", json!({"reasoning": {"visibility": "off"}})).to_string())
        .send()
        .await
        .unwrap();
    // Read until the answer is streaming, then hang up.
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("TEXT_MESSAGE_CONTENT") {
        seen.extend_from_slice(&response.chunk().await.unwrap().unwrap());
    }
    drop(response);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while observed.cancelled.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the engine kept generating"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let steps = observed.steps.load(std::sync::atomic::Ordering::SeqCst);
    assert!(steps < 400, "stopped after {steps} of 400 steps");
    server.shutdown().await;
}
