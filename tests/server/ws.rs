//! `GET /agent/ws`: several runs per socket, errors that leave the socket
//! usable, cancellation, close 1008 past the queue bound (binary frames
//! included), and close 1001 on shutdown.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{Event, EventKind, EventType, Outcome, decode_event};
use thinkwire_seal::{Key, KeyRing};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::support::*;

fn run_error_code(events: &[Event]) -> String {
    assert_eq!(
        events.len(),
        1,
        "a refusal is a lone RUN_ERROR: {:?}",
        types(events)
    );
    match &events[0].kind {
        EventKind::RunError(e) => e.code.clone().unwrap_or_default(),
        other => panic!("expected RUN_ERROR, got {other:?}"),
    }
}

/// A server whose model writes one scripted token per 20 ms, so a run is
/// still going when the test acts on it.
async fn slow_server(scripts: &[String]) -> (TestServer, Arc<Observed>) {
    let (model, observed) = scripted_qwen3(scripts, Duration::from_millis(20));
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(
        Agent::new(model, keys, AgentConfig::default()),
        ServerConfig::default(),
    )
    .await;
    (server, observed)
}

/// Starts run `r1` with thinking off: its first events are the answer's.
async fn start_answer(socket: &mut Socket) {
    socket
        .send(Message::text(
            input("t", "r1", "go", json!({"reasoning": {"visibility": "off"}})).to_string(),
        ))
        .await
        .unwrap();
}

/// The close frame the server sends next, skipping whatever comes first.
async fn close_frame(socket: &mut Socket) -> Option<CloseFrame> {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn two_runs_with_bad_frames_between_them_on_one_socket() {
    let scripts = [
        qwen3_turn("first thoughts", "First."),
        qwen3_turn("second thoughts", "Second."),
    ];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let mut socket = connect(&server).await;

    socket
        .send(Message::text(
            input("t", "r1", "one", json!({})).to_string(),
        ))
        .await
        .unwrap();
    let first = read_run(&mut socket).await;
    verify(&first);
    assert_eq!(answer_text(&first), "First.");

    socket
        .send(Message::text("{ this is not json"))
        .await
        .unwrap();
    assert_eq!(
        run_error_code(&read_run(&mut socket).await),
        "INVALID_INPUT"
    );

    let mut invalid = input("t", "r2", "two", json!({}));
    invalid.as_object_mut().unwrap().remove("runId");
    socket
        .send(Message::text(invalid.to_string()))
        .await
        .unwrap();
    assert_eq!(
        run_error_code(&read_run(&mut socket).await),
        "INVALID_INPUT"
    );

    socket.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    assert_eq!(run_error_code(&read_run(&mut socket).await), "BINARY_FRAME");

    socket
        .send(Message::text(
            input("t", "r3", "three", json!({})).to_string(),
        ))
        .await
        .unwrap();
    let second = read_run(&mut socket).await;
    verify(&second);
    assert_eq!(answer_text(&second), "Second.");
    assert_eq!(
        observed.prompts.lock().unwrap().len(),
        2,
        "refusals never reached the engine"
    );

    socket.close(None).await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn cancel_run_ends_with_a_cancelled_outcome_and_the_socket_goes_on() {
    let long = format!("{}<|im_end|>", "word ".repeat(300));
    let (server, observed) = slow_server(&[long, qwen3_turn("x", "Next.")]).await;
    let mut socket = connect(&server).await;
    start_answer(&mut socket).await;
    // Wait for the answer to start, then cancel.
    let mut events = Vec::new();
    while !events
        .iter()
        .any(|e: &Event| e.event_type() == EventType::TextMessageContent)
    {
        let Some(Ok(Message::Text(text))) = socket.next().await else {
            panic!("socket closed early")
        };
        events.push(decode_event(&text).unwrap().unwrap());
    }
    socket
        .send(Message::text(
            json!({"type": "CANCEL_RUN", "runId": "r1"}).to_string(),
        ))
        .await
        .unwrap();
    events.extend(read_run(&mut socket).await);
    verify(&events);
    let EventKind::RunFinished(finished) = &events.last().unwrap().kind else {
        panic!("expected RUN_FINISHED, got {:?}", types(&events).last())
    };
    assert_eq!(finished.outcome, Some(Outcome::Cancelled));
    assert!(observed.steps.load(std::sync::atomic::Ordering::SeqCst) < 300);

    socket
        .send(Message::text(
            input("t", "r2", "again", json!({})).to_string(),
        ))
        .await
        .unwrap();
    let next = read_run(&mut socket).await;
    assert_eq!(answer_text(&next), "Next.");
    server.shutdown().await;
}

#[tokio::test]
async fn binary_frames_past_the_queue_bound_close_the_socket_with_1008() {
    let long = format!("{}<|im_end|>", "word ".repeat(100));
    let (server, _) = slow_server(&[long]).await;
    let mut socket = connect(&server).await;
    start_answer(&mut socket).await;
    // Once the run is in progress, each binary frame's refusal waits
    // behind it, and counts against the queue as an input would.
    match socket.next().await {
        Some(Ok(Message::Text(text))) => assert!(text.contains("RUN_STARTED"), "{text}"),
        other => panic!("expected RUN_STARTED, got {other:?}"),
    }
    for _ in 0..=ServerConfig::default().ws_max_queued_runs {
        socket.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    }
    let close = close_frame(&mut socket)
        .await
        .expect("a close frame with a code");
    assert_eq!(close.code, CloseCode::Policy);
    assert_eq!(close.reason.as_str(), "too many runs queued on this socket");
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_an_idle_socket_with_1001() {
    let (server, _) = TestServer::qwen3(&[qwen3_turn("x", "y")]).await;
    let mut socket = connect(&server).await;
    server.shutdown().await;
    let close = close_frame(&mut socket).await;
    // 1001 "going away": the server is shutting down.
    assert_eq!(close.map(|f| f.code), Some(CloseCode::Away));
}
