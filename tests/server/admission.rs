//! Admission: beyond `max_active_runs + max_queued_runs` runs in flight, or
//! where the engine expects a new prompt to wait past `max_queue_wait`, a
//! run is refused before `RUN_STARTED` — 429 with `Retry-After` over SSE, a
//! `RUN_ERROR` with code `SERVER_BUSY` over a WebSocket whose socket stays
//! usable — and the runs already admitted finish untouched.

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{EventKind, SseDecoder};
use thinkwire_seal::{Key, KeyRing};
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

#[tokio::test]
async fn a_full_server_refuses_with_server_busy_and_loses_nothing_admitted() {
    let answer = "word ".repeat(60);
    let script = qwen3_turn("x", answer.trim_end());
    let scripts: Vec<String> = (0..4).map(|_| script.clone()).collect();
    let (model, _) = scripted_qwen3(&scripts, Duration::from_millis(10));
    let server = TestServer::start(
        Agent::new(
            model,
            KeyRing::new(Key::generate().unwrap()),
            AgentConfig::default(),
        ),
        ServerConfig {
            max_active_runs: 1,
            max_queued_runs: 1,
            ..ServerConfig::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    let post = |run: &str| {
        client
            .post(server.url("/agent"))
            .header("content-type", "application/json")
            .json(&input(
                "t",
                run,
                "go",
                json!({"reasoning": {"visibility": "off"}}),
            ))
            .send()
    };
    // Two runs take both places and stream on.
    let first = post("r1").await.unwrap();
    let second = post("r2").await.unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );

    // A third is refused before it starts.
    let third = post("r3").await.unwrap();
    assert_eq!(third.status(), 429);
    assert_eq!(third.headers()["retry-after"], "1");
    let body: serde_json::Value = third.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SERVER_BUSY");

    // Over a WebSocket: a lone RUN_ERROR, and the socket stays open.
    let mut socket = connect(&server).await;
    socket
        .send(Message::text(input("t", "w1", "go", json!({})).to_string()))
        .await
        .unwrap();
    let refused = read_run(&mut socket).await;
    assert_eq!(refused.len(), 1);
    let EventKind::RunError(err) = &refused[0].kind else {
        panic!("expected RUN_ERROR, got {:?}", types(&refused))
    };
    assert_eq!(err.code.as_deref(), Some("SERVER_BUSY"));

    // The admitted runs finish with their whole answers.
    for response in [first, second] {
        let bytes = response.bytes().await.unwrap();
        let events: Vec<_> = SseDecoder::new()
            .push_events(&bytes)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        verify(&events);
        assert_eq!(answer_text(&events), answer.trim_end());
    }

    // Places free again: the same socket runs.
    socket
        .send(Message::text(
            input("t", "w2", "go", json!({"reasoning": {"visibility": "off"}})).to_string(),
        ))
        .await
        .unwrap();
    let events = read_run(&mut socket).await;
    verify(&events);
    assert_eq!(answer_text(&events), answer.trim_end());

    // Refusals are counted.
    let metrics = client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("thinkwire_runs_refused_total{code=\"SERVER_BUSY\"} 2"),
        "{metrics}"
    );
    server.shutdown().await;
}

/// A run whose prompt the engine expects to wait longer than
/// `max_queue_wait` for the work ahead of it is refused before it starts,
/// on every surface, with that wait as `Retry-After`; within the limit, it
/// runs.
#[tokio::test]
async fn a_queue_that_would_hold_a_run_past_the_limit_refuses_it_with_the_wait() {
    let config = ServerConfig {
        max_queue_wait: Some(Duration::from_secs(2)),
        ..ServerConfig::default()
    };
    let keys = || KeyRing::new(Key::generate().unwrap());
    let script = [qwen3_turn("x", "fine")];
    let (busy, busy_seen) = scripted_qwen3_with(&script, |engine| {
        engine.with_expected_wait(Duration::from_millis(7_400))
    });
    let busy = TestServer::start(
        Agent::new(busy, keys(), AgentConfig::default()),
        config.clone(),
    )
    .await;
    let client = reqwest::Client::new();
    let off = json!({"reasoning": {"visibility": "off"}});

    let agui = client
        .post(busy.url("/agent"))
        .json(&input("t", "r1", "go", off.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(agui.status(), 429);
    assert_eq!(agui.headers()["retry-after"], "8");
    let body: serde_json::Value = agui.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SERVER_BUSY");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("8 s") && message.contains("2 s"),
        "{message}"
    );

    let chat = client
        .post(busy.url("/v1/chat/completions"))
        .json(&json!({
            "model": "any",
            "messages": [{"role": "user", "content": "go"}],
            "reasoning_effort": "none",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 429);
    assert_eq!(chat.headers()["retry-after"], "8");
    let body: serde_json::Value = chat.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let mut socket = connect(&busy).await;
    socket
        .send(Message::text(
            input("t", "w1", "go", off.clone()).to_string(),
        ))
        .await
        .unwrap();
    let refused = read_run(&mut socket).await;
    let EventKind::RunError(err) = &refused[0].kind else {
        panic!("expected RUN_ERROR, got {:?}", types(&refused))
    };
    assert_eq!(err.code.as_deref(), Some("SERVER_BUSY"));
    assert_eq!(
        busy_seen.prompts.lock().unwrap().len(),
        0,
        "nothing reached the engine"
    );
    busy.shutdown().await;

    // Within the limit the same run goes ahead.
    let (calm, _) = scripted_qwen3_with(&script, |engine| {
        engine.with_expected_wait(Duration::from_millis(1_500))
    });
    let calm = TestServer::start(Agent::new(calm, keys(), AgentConfig::default()), config).await;
    let ok = client
        .post(calm.url("/agent"))
        .json(&input("t", "r2", "go", off))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let events: Vec<_> = SseDecoder::new()
        .push_events(&ok.bytes().await.unwrap())
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    verify(&events);
    assert_eq!(answer_text(&events), "fine");
    calm.shutdown().await;
}

/// The choices of one request are admitted together, so each one's wait
/// counts the prompts of those admitted before it: two choices that would
/// each go ahead alone are refused together when the second would wait
/// past the limit behind the first, before either starts.
#[tokio::test]
async fn a_requests_own_choices_count_in_the_wait_of_each_one() {
    let config = ServerConfig {
        max_queue_wait: Some(Duration::from_secs(2)),
        ..ServerConfig::default()
    };
    let script = [qwen3_turn("x", "fine"), qwen3_turn("x", "fine")];
    // 1.5 s alone; behind a prompt of a few tokens, past 2 s.
    let (model, seen) = scripted_qwen3_with(&script, |engine| {
        engine.with_expected_wait_behind(Duration::from_millis(1_500), Duration::from_millis(100))
    });
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(Agent::new(model, keys, AgentConfig::default()), config).await;
    let chat = |n: u64| {
        json!({"model": "any", "messages": [{"role": "user", "content": "go"}],
               "reasoning_effort": "none", "n": n})
    };
    let client = reqwest::Client::new();
    let two = client
        .post(server.url("/v1/chat/completions"))
        .json(&chat(2))
        .send()
        .await
        .unwrap();
    assert_eq!(two.status(), 429);
    let retry: u64 = two.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 2, "{retry}");
    assert_eq!(seen.prompts.lock().unwrap().len(), 0, "nothing ran");

    let (status, one) = post_json(&server, "/v1/chat/completions", &chat(1)).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["choices"][0]["message"]["content"], "fine");
    server.shutdown().await;
}
