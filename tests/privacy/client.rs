//! The AG-UI side of the conversations: a server on the scripted Qwen3
//! model, run inputs with the canary's lookup tool, and SSE and WebSocket
//! clients that keep the raw bytes they were sent.

use std::sync::Arc;
use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig, ReplayFailure};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{Event, EventKind, SseDecoder};
use thinkwire_seal::KeyRing;
use tokio_tungstenite::tungstenite::Message;

use super::support::*;

pub fn lookup_tool() -> Value {
    json!({
        "name": "lookup",
        "description": "Looks a city up",
        "parameters": {
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"],
        },
    })
}

pub fn run_input(thread: &str, run: &str, messages: &[Value], forwarded: Value) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "messages": messages,
        "tools": [lookup_tool()],
        "context": [],
        "state": {},
        "forwardedProps": forwarded,
    })
}

/// The tool result message answering the last tool call in `messages`.
pub fn tool_result(messages: &[Value], content: &str) -> Value {
    let call_id = messages
        .iter()
        .rev()
        .find_map(|m| m["toolCalls"][0]["id"].as_str())
        .expect("a tool call to answer");
    json!({
        "id": format!("result-{call_id}"),
        "role": "tool",
        "toolCallId": call_id,
        "content": content,
    })
}

/// Posts `body` to `/agent`: the status and the raw response body.
pub async fn sse_raw(server: &TestServer, body: &str) -> (u16, Vec<u8>) {
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

/// A successful SSE run: its events, and the raw stream.
pub async fn sse_run(server: &TestServer, input: &Value) -> (Vec<Event>, Vec<u8>) {
    let (status, bytes) = sse_raw(server, &input.to_string()).await;
    assert_eq!(status, 200);
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    verify(&events);
    (events, bytes)
}

/// Sends `text` as one frame and reads until a terminal event: the events
/// and the raw frames.
pub async fn ws_send(socket: &mut Socket, text: String) -> (Vec<Event>, Vec<u8>) {
    socket.send(Message::text(text)).await.unwrap();
    let (events, frames) = read_run_frames(socket).await;
    let raw = frames
        .iter()
        .flat_map(|f| f.bytes().chain([b'\n']))
        .collect();
    (events, raw)
}

pub fn run_error_code(events: &[Event]) -> String {
    assert_eq!(events.len(), 1, "a refusal is a lone RUN_ERROR");
    match &events[0].kind {
        EventKind::RunError(e) => e.code.clone().unwrap_or_default(),
        other => panic!("expected RUN_ERROR, got {other:?}"),
    }
}

/// `sealed` with one character of its ciphertext changed.
pub fn tamper(sealed: &str) -> String {
    let mut chars: Vec<char> = sealed.chars().collect();
    let at = chars.len() - 10;
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// A server on a scripted Qwen3 model.
pub async fn server(
    scripts: &[String],
    key_text: &str,
    on_failure: ReplayFailure,
) -> (TestServer, Arc<Observed>) {
    let (model, observed) = scripted_qwen3(scripts, Duration::ZERO);
    let mut config = AgentConfig::default();
    config.replay.on_failure = on_failure;
    let keys = KeyRing::from_key_list(key_text).unwrap();
    let server = TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
    (server, observed)
}
