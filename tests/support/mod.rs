//! Shared test support: a Qwen3-tokenizer model over a scripted engine, a
//! live server on `127.0.0.1:0`, and small clients.
#![allow(dead_code, unused_imports)]

pub mod front;
pub mod logprobs;
pub mod provider;
pub mod recording;
pub mod scripted_engine;
pub mod sse;
pub mod v1;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire::server::{self, AppState, ServerConfig};
use thinkwire_chat::ChatModel;
use thinkwire_engine::ModelInfo;
use thinkwire_protocol::{Event, EventType, SseDecoder, Verifier};
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};
use tokio_util::sync::CancellationToken;

pub use scripted_engine::{Forced, Observed, ScriptedEngine};

/// The official Qwen3 tokenizer and chat template, fetched by setup.
///
/// Loaded once per test process: every clone shares the tokenizer and what
/// is derived from it.
pub fn qwen3_chat() -> ChatModel {
    static CHAT: std::sync::LazyLock<ChatModel> = std::sync::LazyLock::new(|| {
        chat_from_setup(&thinkwire_chat::assets::qwen3_tokenizer_dir(), "Qwen3")
    });
    CHAT.clone()
}

/// The tokenizer and template setup fetched into `dir`, named `what` in
/// the failure that says to run setup.
pub fn chat_from_setup(dir: &std::path::Path, what: &str) -> ChatModel {
    assert!(
        dir.join("tokenizer.json").is_file(),
        "the {what} tokenizer is missing at {} — run scripts/setup",
        dir.display()
    );
    ChatModel::load(dir).unwrap_or_else(|e| panic!("loading the {what} tokenizer: {e}"))
}

/// What a Qwen3 model says when it thinks, then answers.
pub fn qwen3_turn(reasoning: &str, answer: &str) -> String {
    format!("<think>\n{reasoning}\n</think>\n\n{answer}<|im_end|>")
}

/// A model with the real Qwen3 tokenizer and template whose engine replays
/// `scripts` (text, tokenized with that tokenizer), one per generation.
pub fn scripted_qwen3(scripts: &[String], step_delay: Duration) -> (LocalModel, Arc<Observed>) {
    scripted_qwen3_with(scripts, |engine| engine.with_step_delay(step_delay))
}

/// [`scripted_qwen3`] with the engine set up by `configure`.
pub fn scripted_qwen3_with(
    scripts: &[String],
    configure: impl FnOnce(ScriptedEngine) -> ScriptedEngine,
) -> (LocalModel, Arc<Observed>) {
    let chat = qwen3_chat();
    let ids: Vec<Vec<u32>> = scripts
        .iter()
        .map(|s| chat.tokenizer.encode(s, false).expect("encoding a script"))
        .collect();
    let info = ModelInfo {
        id: "Qwen3-0.6B-scripted".into(),
        architecture: "qwen3".into(),
        context_length: 4096,
        vocab_size: 151_936,
        quantization: None,
    };
    let engine = configure(ScriptedEngine::new(info.clone(), ids));
    let observed = Arc::clone(&engine.observed);
    // One model per test process, its tokenizer's grammar vocabulary built
    // once (seconds in a test build) for every server the test starts.
    static MODEL: std::sync::OnceLock<LocalModel> = std::sync::OnceLock::new();
    let model = MODEL
        .get_or_init(|| {
            let engine = Arc::new(ScriptedEngine::new(info, Vec::new()));
            LocalModel::new(engine, chat, &Registry::builtin()).expect("assembling the model")
        })
        .with_engine(Arc::new(engine))
        .expect("assembling the model");
    (model, observed)
}

/// A running server; dropping it does not stop it, `shutdown` does.
pub struct TestServer {
    pub addr: SocketAddr,
    pub agent: Arc<Agent>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Serves `agent` on `127.0.0.1:0`.
    pub async fn start(agent: Agent, config: ServerConfig) -> Self {
        Self::start_shared(Arc::new(agent), config).await
    }

    /// Serves an agent shared with other servers (a model loaded once).
    pub async fn start_shared(agent: Arc<Agent>, config: ServerConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = AppState::new(Arc::clone(&agent), config);
        let shutdown = CancellationToken::new();
        let signal = shutdown.clone();
        let task = tokio::spawn(async move {
            server::serve(listener, state, async move { signal.cancelled().await })
                .await
                .unwrap();
        });
        Self {
            addr,
            agent,
            shutdown,
            task,
        }
    }

    /// A scripted Qwen3 server with a fresh key.
    pub async fn qwen3(scripts: &[String]) -> (Self, Arc<Observed>) {
        let (model, observed) = scripted_qwen3(scripts, Duration::ZERO);
        let keys = KeyRing::new(Key::generate().unwrap());
        let server = Self::start(
            Agent::new(model, keys, AgentConfig::default()),
            ServerConfig::default(),
        )
        .await;
        (server, observed)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/agent/ws", self.addr)
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// A minimal valid input with one user message.
pub fn input(
    thread: &str,
    run: &str,
    text: &str,
    forwarded: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "threadId": thread,
        "runId": run,
        "messages": [{"id": format!("{run}-user"), "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": forwarded,
    })
}

/// Posts JSON `body` to `path`; its status and JSON answer (the `/v1`
/// APIs', whole).
pub async fn post_json(
    server: &TestServer,
    path: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Posts `body` to `/agent` and reads the whole SSE stream; every event is
/// decoded and checked against the AG-UI sequence rules.
pub async fn post_run(server: &TestServer, body: &serde_json::Value) -> Vec<Event> {
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let bytes = response.bytes().await.unwrap();
    assert!(
        !bytes.windows(2).any(|w| w == b"\r\n"),
        "SSE frames must be LF-only"
    );
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("every frame decodes");
    verify(&events);
    events
}

/// Checks a run's events against the AG-UI sequence rules.
pub fn verify(events: &[Event]) {
    let mut verifier = Verifier::new();
    for event in events {
        verifier
            .check(event)
            .unwrap_or_else(|e| panic!("invalid sequence at {:?}: {e}", event.event_type()));
    }
    verifier.finish().expect("the stream ends properly");
}

/// Applies a run's events to a client's messages, kept as the JSON the
/// tests send back, with the protocol crate's client reducer (which does
/// what `@ag-ui/client` does: a reasoning message per
/// `REASONING_MESSAGE_START` with the `encryptedValue` sealed for it, an
/// assistant message for text and tool calls).
pub fn apply_events(messages: &mut Vec<serde_json::Value>, events: &[Event]) {
    let held: Vec<thinkwire_protocol::Message> =
        serde_json::from_value(serde_json::Value::Array(std::mem::take(messages)))
            .expect("the client holds valid AG-UI messages");
    let mut conversation = thinkwire_protocol::client::Conversation::new(held);
    conversation.apply_all(events);
    *messages = conversation
        .into_messages()
        .iter()
        .map(|m| serde_json::to_value(m).expect("messages serialize"))
        .collect();
}

/// The types of `events`, for compact assertions.
/// The roles of messages as a client rebuilt them (`@ag-ui/client`'s
/// summary), in order.
pub fn roles(messages: &[serde_json::Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["role"].as_str().expect("every message has a role"))
        .collect()
}

pub fn types(events: &[Event]) -> Vec<EventType> {
    events.iter().map(Event::event_type).collect()
}

/// Event types with the per-token content events left out.
pub fn kinds(events: &[Event]) -> Vec<EventType> {
    types(events)
        .into_iter()
        .filter(|t| *t != EventType::TextMessageContent && *t != EventType::ReasoningMessageContent)
        .collect()
}

/// A run that reasons, its reasoning sealed, then answers: [`kinds`] of
/// every shown visibility's events, content aside.
pub const REASONING_THEN_ANSWER: [EventType; 9] = [
    EventType::RunStarted,
    EventType::ReasoningStart,
    EventType::ReasoningMessageStart,
    EventType::ReasoningMessageEnd,
    EventType::ReasoningEncryptedValue,
    EventType::ReasoningEnd,
    EventType::TextMessageStart,
    EventType::TextMessageEnd,
    EventType::RunFinished,
];

/// The `RUN_ERROR` that ended `events`.
pub fn run_error(events: &[Event]) -> thinkwire_protocol::RunError {
    events
        .iter()
        .find_map(|e| match &e.kind {
            thinkwire_protocol::EventKind::RunError(err) => Some(err.clone()),
            _ => None,
        })
        .expect("the run ends in RUN_ERROR")
}

/// The answer text of `events`.
pub fn answer_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            thinkwire_protocol::EventKind::TextMessageContent(c) => Some(c.delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The streamed reasoning text of `events`.
pub fn reasoning_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            thinkwire_protocol::EventKind::ReasoningMessageContent(c) => Some(c.delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The reason of the run's `thinkwire.output_incomplete` event (`length`,
/// `constraint`), if the run reported one.
pub fn incomplete_reason(events: &[Event]) -> Option<String> {
    events.iter().find_map(|e| match &e.kind {
        thinkwire_protocol::EventKind::Custom(c) if c.name == "thinkwire.output_incomplete" => {
            Some(c.value["reason"].as_str().unwrap_or_default().to_owned())
        }
        _ => None,
    })
}

/// A WebSocket client connection.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The socket's next text frame (within 30 s; other frames skipped).
pub async fn next_text(socket: &mut Socket) -> String {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("a frame within 30 s")
            .expect("the socket stays open")
            .unwrap();
        if let Message::Text(text) = message {
            return text.to_string();
        }
    }
}

/// Reads a socket's events until a terminal one: the events and the text
/// frames they came in.
pub async fn read_run_frames(socket: &mut Socket) -> (Vec<Event>, Vec<String>) {
    let (mut events, mut frames) = (Vec::new(), Vec::new());
    loop {
        let text = next_text(socket).await;
        let event = thinkwire_protocol::decode_event(&text)
            .unwrap()
            .expect("a known event type");
        let terminal = event.event_type().is_terminal();
        events.push(event);
        frames.push(text);
        if terminal {
            return (events, frames);
        }
    }
}

/// Reads a socket's events until a terminal one.
pub async fn read_run(socket: &mut Socket) -> Vec<Event> {
    read_run_frames(socket).await.0
}

/// Opens a WebSocket to the server's `/agent/ws`.
pub async fn connect(server: &TestServer) -> Socket {
    let (socket, _) = tokio_tungstenite::connect_async(server.ws_url())
        .await
        .unwrap();
    socket
}

/// Runs `tests/node/agui-client.mjs` (the official `@ag-ui/client`
/// `HttpAgent`) against `url`; returns its JSON summary. Any verification
/// or schema error inside the client fails the test with its message.
pub fn run_official_client(url: &str, args: &[&str]) -> serde_json::Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("tests/node/node_modules/@ag-ui/client").is_dir(),
        "@ag-ui/client is not installed in tests/node — run scripts/setup"
    );
    let output = std::process::Command::new("node")
        .arg(root.join("tests/node/agui-client.mjs"))
        .arg(url)
        .args(args)
        .output()
        .expect("running node");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the official client failed:\n{stderr}"
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bad client output ({e}): {stderr}"))
}

/// The Python of the venv `scripts/setup` makes, where the official
/// `openai` and `anthropic` SDKs are installed.
pub fn sdk_python() -> std::path::PathBuf {
    let python = thinkwire_chat::assets::home().join("venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing — run scripts/setup",
        python.display()
    );
    python
}

/// Runs `tests/sdk/<script>` (an official SDK against a live server) with
/// `args`; what it printed, as JSON.
pub async fn run_sdk(script: &str, args: Vec<String>) -> serde_json::Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(script);
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(sdk_python())
            .arg(&script)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK script failed:\n{stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bad SDK script output ({e}): {stderr}"))
}

/// The model flags `serve` uses by default: the default model, `auto`.
pub fn default_model_args() -> thinkwire::cli::ModelArgs {
    thinkwire::cli::ModelArgs {
        model: None,
        precision: "auto".into(),
        formats: None,
        prefix_cache: false,
        prefix_cache_mb: 512,
        max_batch: None,
        prefill_chunk: None,
        kv_cache_mb: None,
        batch_window_ms: 4,
        share_prefixes: false,
        kv_cache_dtype: "auto".into(),
        sample_on: "auto".into(),
        overlap_steps: "auto".into(),
        split_one_row: "auto".into(),
    }
}
