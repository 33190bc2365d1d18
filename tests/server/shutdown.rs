//! Shutdown with a reasoning message still open (issue #13): when the grace
//! period ends in the middle of a run's reasoning, the message is closed
//! and sealed — the sealed value opens to exactly the reasoning streamed —
//! before `RUN_ERROR` `SERVER_SHUTTING_DOWN`; an input sent after the signal
//! is refused with `SERVER_SHUTTING_DOWN`; the socket closes with 1001.
//! (`tests/shutdown.rs` does the same on the real binary, after reasoning.)

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{Event, EventKind, EventType, decode_event};
use thinkwire_seal::{Key, KeyRing};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::support::*;

/// Reads events until the server closes; returns them and the close code.
async fn read_to_close(socket: &mut Socket) -> (Vec<Event>, Option<CloseCode>) {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the server answers or closes")
        {
            Some(Ok(Message::Text(text))) => events.push(decode_event(&text).unwrap().unwrap()),
            Some(Ok(Message::Close(frame))) => return (events, frame.map(|f| f.code)),
            Some(Ok(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_cut_off_by_the_grace_period_is_sealed_before_server_shutting_down() {
    let reasoning = "step ".repeat(400);
    let (model, _) = scripted_qwen3(
        &[qwen3_turn(reasoning.trim_end(), "Done.")],
        Duration::from_millis(10),
    );
    let server = TestServer::start(
        Agent::new(
            model,
            KeyRing::new(Key::generate().unwrap()),
            AgentConfig::default(),
        ),
        ServerConfig {
            shutdown_grace: Duration::from_millis(1200),
            ..ServerConfig::default()
        },
    )
    .await;
    let agent = std::sync::Arc::clone(&server.agent);
    let mut socket = connect(&server).await;
    let input = |run: &str| {
        Message::text(
            input(
                "thread-cut",
                run,
                "think",
                json!({"reasoning": {"visibility": "full"}}),
            )
            .to_string(),
        )
    };
    socket.send(input("run-1")).await.unwrap();
    // Wait for the reasoning to stream, then signal.
    let mut events = Vec::new();
    while !events
        .iter()
        .any(|e: &Event| e.event_type() == EventType::ReasoningMessageContent)
    {
        let Some(Ok(Message::Text(text))) = socket.next().await else {
            panic!("the socket closed early");
        };
        events.push(decode_event(&text).unwrap().unwrap());
    }
    let signalled = Instant::now();
    let stopping = tokio::spawn(server.shutdown());
    // An input sent after the signal waits, then is refused.
    socket.send(input("run-2")).await.unwrap();
    let (rest, close) = read_to_close(&mut socket).await;
    stopping.await.unwrap();
    let stopped_after = signalled.elapsed();
    events.extend(rest);

    let refused = events.pop().expect("the second input's answer");
    match &refused.kind {
        EventKind::RunError(e) => assert_eq!(e.code.as_deref(), Some("SERVER_SHUTTING_DOWN")),
        other => panic!("the second input got {other:?}"),
    }
    verify(&events);
    let tail: Vec<EventType> = types(&events).into_iter().rev().take(4).rev().collect();
    assert_eq!(
        tail,
        [
            EventType::ReasoningMessageEnd,
            EventType::ReasoningEncryptedValue,
            EventType::ReasoningEnd,
            EventType::RunError,
        ],
        "the open reasoning is closed and sealed first"
    );
    match &events.last().unwrap().kind {
        EventKind::RunError(e) => assert_eq!(e.code.as_deref(), Some("SERVER_SHUTTING_DOWN")),
        other => panic!("{other:?}"),
    }
    // The run was stopped, not finished: its reasoning was cut short.
    let streamed = reasoning_text(&events);
    assert!(streamed.len() < reasoning.trim_end().len(), "{streamed:?}");
    let (message_id, sealed) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningEncryptedValue(v) => {
                Some((v.entity_id.clone(), v.encrypted_value.clone()))
            }
            _ => None,
        })
        .unwrap();
    let opened = agent
        .open_reasoning("thread-cut", &message_id, &sealed)
        .expect("the sealed value opens");
    assert_eq!(opened.trim(), streamed.trim(), "sealed = what was said");
    assert_eq!(close, Some(CloseCode::Away));
    // Stopped a quarter of the grace period before its end, gone by the end.
    assert!(
        stopped_after >= Duration::from_millis(800) && stopped_after < Duration::from_millis(1500),
        "{stopped_after:?}"
    );
}
