//! Admission: beyond `max_active_runs + max_queued_runs` runs in flight, a
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
use crate::ws::read_run;

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
