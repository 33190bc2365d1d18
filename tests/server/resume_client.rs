//! Clients of resumable runs that lose their connection after a chosen
//! event and resume it: SSE and protobuf over HTTP, and WebSocket. Each
//! leg returns the events it received with their sequence numbers. Also
//! used by the privacy canary test (`tests/privacy/resume.rs`).
#![allow(dead_code)]

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::{ResumeConfig, ServerConfig};
use thinkwire_protocol::{
    Event, PROTO_MEDIA_TYPE, ProtoDecoder, ResumeGrant, ResumeRun, SseDecoder, decode_event,
    ws_frame_resume, ws_frame_seq,
};
use thinkwire_seal::{Key, KeyRing};
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

/// The model thinks for a while, then calls the tool.
pub fn reasoning_then_tool_call() -> String {
    let reasoning = "The user asks about the weather in Paris. ".repeat(6);
    format!(
        "<think>\n{reasoning}I will look it up.\n</think>\n\n<tool_call>\n{{\"name\": \"lookup\", \"arguments\": {{\"city\": \"Paris\"}}}}\n</tool_call><|im_end|>"
    )
}

/// An input that offers the tool and shows the reasoning.
pub fn tool_input() -> Value {
    let mut body = input(
        "resume-thread",
        "resume-run",
        "What is the weather in Paris?",
        json!({"reasoning": {"visibility": "full"}}),
    );
    body["tools"] = json!([{
        "name": "lookup",
        "description": "Looks a city's weather up",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }]);
    body
}

/// A scripted server whose runs say `script` (every run), `step` apart,
/// held for `window`, under `config` (its replay-buffer bounds kept).
pub async fn resumable_server(
    script: String,
    step: Duration,
    window: Duration,
    config: ServerConfig,
) -> (TestServer, std::sync::Arc<Observed>) {
    let (model, observed) = scripted_qwen3(&[script], step);
    let keys = KeyRing::new(Key::generate().unwrap());
    let config = ServerConfig {
        resume: ResumeConfig {
            window,
            ..config.resume
        },
        ..config
    };
    let server = TestServer::start(Agent::new(model, keys, AgentConfig::default()), config).await;
    (server, observed)
}

/// What one connection received.
#[derive(Debug, Default)]
pub struct Leg {
    /// Events with their sequence numbers, in order.
    pub events: Vec<(u64, Event)>,
    /// The grant to resume, on the connection that started the run.
    pub grant: Option<ResumeGrant>,
}

impl Leg {
    /// The last sequence number received (0: none).
    pub fn last_seq(&self) -> u64 {
        self.events.last().map_or(0, |(seq, _)| *seq)
    }
}

/// The HTTP binding of a leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Http {
    Sse,
    Proto,
}

impl Http {
    fn accept(self) -> &'static str {
        match self {
            Http::Sse => "text/event-stream",
            Http::Proto => PROTO_MEDIA_TYPE,
        }
    }
}

/// Reads an HTTP event stream until the terminal event, or until `cut`
/// events (then drops the connection); `first` is the sequence number of
/// the response's first event (protobuf frames carry none).
async fn read_http(
    binding: Http,
    mut response: reqwest::Response,
    cut: Option<usize>,
    first: u64,
) -> Vec<(u64, Event)> {
    let mut sse = SseDecoder::new();
    let mut proto = ProtoDecoder::new();
    let mut events = Vec::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), response.chunk())
            .await
            .expect("a chunk within 20 s")
            .expect("the stream reads");
        let Some(chunk) = chunk else {
            return events;
        };
        let decoded: Vec<(u64, Event)> = match binding {
            Http::Sse => sse
                .push(&chunk)
                .into_iter()
                .map(|m| {
                    let seq = m.id.expect("every event has an id").parse().unwrap();
                    (seq, decode_event(&m.data).unwrap().expect("a known event"))
                })
                .collect(),
            Http::Proto => proto
                .push(&chunk)
                .into_iter()
                .map(|e| e.expect("every frame decodes"))
                .map(|event| (0, event))
                .collect(),
        };
        for (seq, event) in decoded {
            let seq = if binding == Http::Proto {
                first + events.len() as u64
            } else {
                seq
            };
            let terminal = event.event_type().is_terminal();
            events.push((seq, event));
            if terminal || cut == Some(events.len()) {
                // Dropping the response closes the connection mid-stream.
                return events;
            }
        }
    }
}

/// Starts a run over HTTP, reading `cut` events (or all of them).
pub async fn http_start(
    server: &TestServer,
    binding: Http,
    body: &Value,
    bearer: Option<&str>,
    cut: Option<usize>,
) -> Leg {
    let mut request = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("accept", binding.accept())
        .json(body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let grant = header("thinkwire-resume-url").map(|url| ResumeGrant {
        id: url.rsplit('/').next().unwrap().to_owned(),
        url,
        token: header("thinkwire-resume-token").expect("a token with the url"),
        window_secs: header("thinkwire-resume-window").unwrap().parse().unwrap(),
    });
    let events = read_http(binding, response, cut, 1).await;
    Leg { events, grant }
}

/// Resumes over HTTP after event `last`; a refusal is its status and body.
pub async fn http_resume(
    server: &TestServer,
    binding: Http,
    url: &str,
    token: Option<&str>,
    last: Option<&str>,
    bearer: Option<&str>,
) -> Result<Leg, (u16, Value)> {
    let mut request = reqwest::Client::new()
        .get(server.url(url))
        .header("accept", binding.accept());
    if let Some(token) = token {
        request = request.header("thinkwire-resume-token", token);
    }
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        return Err((status, response.json().await.unwrap()));
    }
    assert!(
        response.headers().get("thinkwire-resume-token").is_none(),
        "the token is returned once, in the first response"
    );
    let first = last.map_or(1, |l| l.parse::<u64>().unwrap() + 1);
    let events = read_http(binding, response, None, first).await;
    Ok(Leg {
        events,
        grant: None,
    })
}

/// Reads WebSocket frames until the terminal event or `cut` events.
pub async fn ws_read(socket: &mut Socket, cut: Option<usize>) -> Leg {
    let mut leg = Leg::default();
    loop {
        let text = next_text(socket).await;
        let event = decode_event(&text).unwrap().expect("a known event");
        let seq = ws_frame_seq(&text).unwrap_or(0);
        if let Some(grant) = ws_frame_resume(&text) {
            assert_eq!(seq, 1, "the grant rides on RUN_STARTED");
            leg.grant = Some(grant);
        }
        let terminal = event.event_type().is_terminal();
        leg.events.push((seq, event));
        if terminal || cut == Some(leg.events.len()) {
            return leg;
        }
    }
}

/// Starts a run on a new socket, reading `cut` events (then dropping the
/// socket without a close frame, as a network failure would) or all.
pub async fn ws_start(server: &TestServer, body: &Value, cut: Option<usize>) -> Leg {
    let mut socket = connect(server).await;
    socket.send(Message::text(body.to_string())).await.unwrap();
    ws_read(&mut socket, cut).await
}

/// Sends `RESUME_RUN` on `socket`.
pub async fn ws_send_resume(socket: &mut Socket, grant: &ResumeGrant, token: &str, last: u64) {
    let frame = ResumeRun {
        resume_id: grant.id.clone(),
        token: token.to_owned(),
        last_seq: last,
    };
    socket.send(Message::text(frame.to_json())).await.unwrap();
}

/// The events of `legs` joined, without sequence numbers, after checking
/// the numbers run 1, 2, 3… with nothing repeated or missing.
pub fn joined(legs: &[&Leg]) -> Vec<Event> {
    let all: Vec<&(u64, Event)> = legs.iter().flat_map(|leg| &leg.events).collect();
    let seqs: Vec<u64> = all.iter().map(|(seq, _)| *seq).collect();
    let want: Vec<u64> = (1..=all.len() as u64).collect();
    assert_eq!(seqs, want, "sequence numbers");
    all.into_iter().map(|(_, event)| event.clone()).collect()
}

/// A run's events as JSON with what differs between two runs of the same
/// script replaced: the ids thinkwire makes (numbered by first
/// appearance, wherever they are), sealed values (fresh nonces) and
/// timestamps.
pub fn normalized(events: &[Event]) -> Vec<Value> {
    let mut ids: Vec<String> = Vec::new();
    events
        .iter()
        .map(|event| {
            let mut value: Value = serde_json::from_str(&event.to_json()).unwrap();
            value.as_object_mut().unwrap().remove("timestamp");
            normalize(&mut value, &mut ids);
            value
        })
        .collect()
}

fn normalize(value: &mut Value, ids: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, field) in object.iter_mut() {
                let made_by_thinkwire = key != "threadId" && key != "runId";
                match field {
                    _ if key == "encryptedValue" => *field = json!("<sealed>"),
                    Value::String(id) if key.ends_with("Id") && made_by_thinkwire => {
                        *field = number(ids, id);
                    }
                    Value::Array(list) if key.ends_with("Ids") => {
                        for id in list.iter_mut() {
                            if let Some(text) = id.as_str() {
                                *id = number(ids, text);
                            }
                        }
                    }
                    _ => normalize(field, ids),
                }
            }
        }
        Value::Array(list) => list.iter_mut().for_each(|v| normalize(v, ids)),
        _ => {}
    }
}

/// `id` as the number of its first appearance among `ids`.
fn number(ids: &mut Vec<String>, id: &str) -> Value {
    let n = ids.iter().position(|seen| seen == id).unwrap_or_else(|| {
        ids.push(id.to_owned());
        ids.len() - 1
    });
    json!(format!("<id {n}>"))
}

/// A gauge of `/metrics`.
pub async fn gauge(server: &TestServer, name: &str) -> f64 {
    let text = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

/// Waits (up to 30 s) until `/metrics` shows no run held and no byte
/// buffered: the server is back to where it started.
pub async fn wait_for_nothing_held(server: &TestServer) {
    for _ in 0..300 {
        if gauge(server, "thinkwire_resumable_runs").await == 0.0
            && gauge(server, "thinkwire_resume_buffer_bytes").await == 0.0
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("runs still held after the window");
}
