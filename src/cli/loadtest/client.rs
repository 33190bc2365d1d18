//! One simulated user: a WebSocket session or an SSE client that runs its
//! runs one after another and records, for each, when every event arrived
//! and whether the events obey the AG-UI sequence rules
//! ([`thinkwire_protocol::Verifier`]).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use thinkwire_protocol::client::Conversation;
use thinkwire_protocol::{Event, EventKind, Message, SseDecoder, Verifier, decode_event};
use tokio_tungstenite::tungstenite;

use super::LoadConfig;

/// How one run went.
#[derive(Debug, Default)]
pub struct RunRecord {
    /// From sending the input to each event, in order.
    pub arrivals: Vec<Duration>,
    /// Index of the first event carrying generated content (text,
    /// reasoning or tool-call arguments), if any.
    pub first_content: Option<usize>,
    /// What went wrong, as a short fixed key (`run_error:CODE`, `timeout`,
    /// `http_429`, `connect`…); `None` for a run that finished.
    pub error: Option<String>,
    /// The verifier's objection, if the events broke a sequence rule.
    pub verify_error: Option<String>,
}

/// Which transport a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One socket on `/agent/ws` for all its runs.
    WebSocket,
    /// One `POST /agent` per run (HTTP keep-alive between them).
    Sse,
}

/// Builds the input of a client's next run, and keeps its conversation
/// (sealed reasoning included) when runs continue one another.
struct Inputs {
    thread: String,
    conversation: Conversation,
    history: bool,
}

impl Inputs {
    fn next(&mut self, run: usize, config: &LoadConfig) -> Value {
        let user = json!({
            "id": format!("{}-u{run}", self.thread),
            "role": "user",
            "content": config.prompt,
        });
        if let Ok(message) = serde_json::from_value::<Message>(user) {
            if !self.history {
                self.conversation.messages.clear();
            }
            self.conversation.messages.push(message);
        }
        json!({
            "threadId": self.thread,
            "runId": format!("{}-r{run}", self.thread),
            "messages": self.conversation.messages,
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": config.forwarded_props,
        })
    }
}

/// Reads one run's events as they arrive.
struct Recorder {
    started: Instant,
    verifier: Verifier,
    record: RunRecord,
    events: Vec<Event>,
}

impl Recorder {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            verifier: Verifier::new(),
            record: RunRecord::default(),
            events: Vec::new(),
        }
    }

    /// Takes one event; true once the run has ended.
    fn event(&mut self, event: Event) -> bool {
        self.record.arrivals.push(self.started.elapsed());
        let content = matches!(
            event.kind,
            EventKind::TextMessageContent(_)
                | EventKind::TextMessageChunk(_)
                | EventKind::ReasoningMessageContent(_)
                | EventKind::ReasoningMessageChunk(_)
                | EventKind::ToolCallArgs(_)
        );
        if content && self.record.first_content.is_none() {
            self.record.first_content = Some(self.record.arrivals.len() - 1);
        }
        if self.record.verify_error.is_none()
            && let Err(e) = self.verifier.check(&event)
        {
            self.record.verify_error = Some(format!("{:?}: {e}", event.event_type()));
        }
        let terminal = event.is_terminal();
        if let EventKind::RunError(e) = &event.kind {
            let code = e.code.as_deref().unwrap_or("none");
            self.record.error = Some(format!("run_error:{code}"));
        }
        self.events.push(event);
        terminal
    }

    fn fail(mut self, error: &str) -> (RunRecord, Vec<Event>) {
        self.record.error = Some(error.to_owned());
        (self.record, self.events)
    }

    fn finish(mut self) -> (RunRecord, Vec<Event>) {
        if self.record.verify_error.is_none()
            && let Err(e) = self.verifier.finish()
        {
            self.record.verify_error = Some(format!("at the end: {e}"));
        }
        (self.record, self.events)
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Runs `config.runs` runs for client `index`; one record per run.
pub async fn client(transport: Transport, index: usize, config: &LoadConfig) -> Vec<RunRecord> {
    let prefix = match transport {
        Transport::WebSocket => "ws",
        Transport::Sse => "sse",
    };
    let mut inputs = Inputs {
        thread: format!("load-{prefix}{index}"),
        conversation: Conversation::new(Vec::new()),
        history: config.history,
    };
    let http = reqwest::Client::new();
    let mut socket: Option<Socket> = None;
    let mut records = Vec::with_capacity(config.runs);
    for run in 0..config.runs {
        let input = inputs.next(run, config);
        let outcome = match transport {
            Transport::WebSocket => {
                tokio::time::timeout(config.run_timeout, ws_run(&mut socket, &input, config)).await
            }
            Transport::Sse => {
                tokio::time::timeout(config.run_timeout, sse_run(&http, &input, config)).await
            }
        };
        let (record, events) = outcome.unwrap_or_else(|_| {
            // The socket may be mid-run: start the next run on a new one.
            socket = None;
            (
                RunRecord {
                    error: Some("timeout".into()),
                    ..RunRecord::default()
                },
                Vec::new(),
            )
        });
        inputs.conversation.apply_all(&events);
        records.push(record);
    }
    if let Some(mut socket) = socket {
        let _ = socket.close(None).await;
    }
    records
}

async fn connect(config: &LoadConfig) -> Result<Socket> {
    let url = config.ws_url();
    let (socket, _) = tokio_tungstenite::connect_async(&url)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    Ok(socket)
}

async fn ws_run(
    socket: &mut Option<Socket>,
    input: &Value,
    config: &LoadConfig,
) -> (RunRecord, Vec<Event>) {
    let mut recorder = Recorder::new();
    if socket.is_none() {
        match connect(config).await {
            Ok(s) => *socket = Some(s),
            Err(_) => return recorder.fail("connect"),
        }
    }
    let Some(ws) = socket.as_mut() else {
        return recorder.fail("connect");
    };
    recorder.started = Instant::now();
    if ws
        .send(tungstenite::Message::text(input.to_string()))
        .await
        .is_err()
    {
        *socket = None;
        return recorder.fail("ws_send");
    }
    loop {
        let text = match ws.next().await {
            Some(Ok(tungstenite::Message::Text(text))) => text,
            Some(Ok(tungstenite::Message::Close(_))) | Some(Err(_)) | None => {
                *socket = None;
                return recorder.fail("ws_closed");
            }
            Some(Ok(_)) => continue,
        };
        match decode_event(&text) {
            Ok(Some(event)) => {
                if recorder.event(event) {
                    return recorder.finish();
                }
            }
            Ok(None) => {}
            Err(_) => {
                *socket = None;
                return recorder.fail("decode");
            }
        }
    }
}

async fn sse_run(
    http: &reqwest::Client,
    input: &Value,
    config: &LoadConfig,
) -> (RunRecord, Vec<Event>) {
    let mut recorder = Recorder::new();
    let response = match http
        .post(format!("{}/agent", config.url))
        .header("accept", "text/event-stream")
        .json(input)
        .send()
        .await
    {
        Ok(r) => r,
        Err(_) => return recorder.fail("connect"),
    };
    if !response.status().is_success() {
        return recorder.fail(&format!("http_{}", response.status().as_u16()));
    }
    let mut response = response;
    let mut decoder = SseDecoder::new();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return recorder.fail("sse_closed"),
            Err(_) => return recorder.fail("sse_read"),
        };
        for event in decoder.push_events(&chunk) {
            let Ok(event) = event else {
                return recorder.fail("decode");
            };
            if recorder.event(event) {
                return recorder.finish();
            }
        }
    }
}
