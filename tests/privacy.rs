//! Zero data retention, shown rather than claimed: conversations whose
//! prompts, reasoning, tool calls, tool results and answers all carry a
//! random canary run through the server over SSE and WebSocket, in hidden
//! and full visibility, with sealed reasoning replayed, tampered with,
//! dropped, and with inputs the server refuses; and the same over the
//! OpenAI and Anthropic surfaces (`privacy/v1.rs`); through an upstream
//! backend (`privacy/upstream.rs`, whose provider key carries the canary);
//! and a run whose engine panics with a message quoting the conversation,
//! and wrong bearer tokens holding the canary (`panic_and_auth`); and runs
//! cut and resumed, or left to expire, whose replay buffers held it all
//! (`privacy/resume.rs`; their resume tokens are secrets too). Every log line at TRACE
//! level goes to a file; afterwards the canary (and the sealing key, and the
//! sealed values themselves) must be in no log line and in no file written
//! during the test — in the test's own folder, in `$TMPDIR`, or in the
//! working directory.
//!
//! One test in this binary: it installs the global tracing subscriber.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared support; not every helper it exports is used here.
#[path = "privacy/resume.rs"]
mod resume;
#[path = "server/resume_client.rs"]
mod resume_client;
#[path = "support/mod.rs"]
mod support;
#[path = "privacy/upstream.rs"]
mod upstream;
#[path = "privacy/v1.rs"]
mod v1;

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig, ReplayFailure};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{Event, EventKind, SseDecoder, decode_event};
use thinkwire_seal::{Key, KeyRing};
use tokio_tungstenite::tungstenite::Message;

use support::*;

/// The secrets of the test: anything in here found in a log or a file is a
/// failure.
struct Secrets {
    canary: String,
    key_text: String,
    sealed: Mutex<Vec<String>>,
    /// Resume tokens of resumable runs.
    tokens: Mutex<Vec<String>>,
}

/// Words that carry the canary, one per place a conversation holds text.
struct Canaries {
    user: String,
    reasoning: String,
    tool_arg: String,
    tool_result: String,
    answer: String,
}

impl Canaries {
    fn new(canary: &str) -> Self {
        Self {
            user: format!("{canary}user"),
            reasoning: format!("{canary}reasoning"),
            tool_arg: format!("{canary}city"),
            tool_result: format!("{canary}result"),
            answer: format!("{canary}answer"),
        }
    }

    /// The model thinks, then calls the tool.
    fn tool_turn(&self) -> String {
        format!(
            "<think>\nThe user asks about {}. I will look it up.\n</think>\n\n<tool_call>\n{{\"name\": \"lookup\", \"arguments\": {{\"city\": \"{}\"}}}}\n</tool_call><|im_end|>",
            self.reasoning, self.tool_arg
        )
    }

    /// The model thinks, then answers.
    fn answer_turn(&self) -> String {
        qwen3_turn(
            &format!("Now I know about {}.", self.reasoning),
            &format!("Here it is: {}.", self.answer),
        )
    }
}

fn lookup_tool() -> Value {
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

fn run_input(thread: &str, run: &str, messages: &[Value], forwarded: Value) -> Value {
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
fn tool_result(messages: &[Value], content: &str) -> Value {
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

impl Secrets {
    fn remember_sealed(&self, events: &[Event]) {
        for event in events {
            if let EventKind::ReasoningEncryptedValue(v) = &event.kind {
                self.sealed.lock().unwrap().push(v.encrypted_value.clone());
            }
        }
    }

    /// The first secret `text` contains, named (never printed).
    fn found_in(&self, text: &[u8]) -> Option<String> {
        if contains(text, self.canary.as_bytes()) {
            return Some("the canary".into());
        }
        // The key's text, and its base64 body alone.
        let body = self.key_text.split(':').nth(1).unwrap_or_default();
        if contains(text, self.key_text.as_bytes()) || contains(text, body.as_bytes()) {
            return Some("the sealing key".into());
        }
        for (n, token) in self.tokens.lock().unwrap().iter().enumerate() {
            if contains(text, token.as_bytes()) {
                return Some(format!("resume token #{n}"));
            }
        }
        for (n, sealed) in self.sealed.lock().unwrap().iter().enumerate() {
            if contains(text, sealed.as_bytes()) {
                return Some(format!("sealed value #{n}"));
            }
        }
        None
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Posts `body` to `/agent`: the status and the raw response body.
async fn sse_raw(server: &TestServer, body: &str) -> (u16, Vec<u8>) {
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
async fn sse_run(server: &TestServer, input: &Value) -> (Vec<Event>, Vec<u8>) {
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
async fn ws_send(socket: &mut Socket, text: String) -> (Vec<Event>, Vec<u8>) {
    socket.send(Message::text(text)).await.unwrap();
    let mut events = Vec::new();
    let mut raw = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("an event within 20 s")
            .expect("the socket stays open")
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        raw.extend_from_slice(text.as_bytes());
        raw.push(b'\n');
        let event = decode_event(&text).unwrap().unwrap();
        let terminal = event.event_type().is_terminal();
        events.push(event);
        if terminal {
            return (events, raw);
        }
    }
}

fn run_error_code(events: &[Event]) -> String {
    assert_eq!(events.len(), 1, "a refusal is a lone RUN_ERROR");
    match &events[0].kind {
        EventKind::RunError(e) => e.code.clone().unwrap_or_default(),
        other => panic!("expected RUN_ERROR, got {other:?}"),
    }
}

/// `sealed` with one character of its ciphertext changed.
fn tamper(sealed: &str) -> String {
    let mut chars: Vec<char> = sealed.chars().collect();
    let at = chars.len() - 10;
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// Files under `dir` (recursively, not following links) modified at or
/// after `since`, skipping folders named in `skip`.
fn files_written_since(dir: &Path, since: SystemTime, skip: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let name = entry.file_name();
            if skip.iter().any(|s| name == *s) {
                continue;
            }
            files_written_since(&path, since, skip, out);
        } else if kind.is_file()
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since)
        {
            out.push(path);
        }
    }
}

/// Reads up to 64 MiB of `path`; `None` if it cannot be read (another
/// user's file, or gone already).
fn read_capped(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    fs::File::open(path)
        .ok()?
        .take(64 << 20)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// A server on a scripted Qwen3 model.
async fn server(
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

#[test]
fn no_prompt_reasoning_answer_or_key_is_logged_or_written() {
    let started = SystemTime::now() - Duration::from_secs(2);
    let canary = format!("zq{}", uuid::Uuid::new_v4().simple());
    let dir = std::env::temp_dir().join(format!(
        "thinkwire-privacy-{}",
        uuid::Uuid::new_v4().simple()
    ));
    fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("trace.log");
    let log_file = fs::File::create(&log_path).unwrap();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(Mutex::new(log_file))
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let secrets = Secrets {
        canary: canary.clone(),
        key_text: Key::generate().unwrap().to_text().as_str().to_owned(),
        sealed: Mutex::new(Vec::new()),
        tokens: Mutex::new(Vec::new()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run_ids = runtime.block_on(conversations(&secrets));
    drop(runtime);

    // The log says what happened, so this test could catch a leak in it.
    let log = fs::read_to_string(&log_path).unwrap();
    for run_id in &run_ids {
        assert!(log.contains(run_id.as_str()), "the log names run {run_id}");
    }
    for code in [
        "SEALED_REASONING_REJECTED",
        "CONTEXT_OVERFLOW",
        "UNSUPPORTED_CONTENT",
        "INVALID_INPUT",
        "upstream refused a request",
        "INVALID_TOKEN",
        "run panicked",
        "its message is withheld",
        "run resumed",
        "run held for resumption",
        "run not resumed within the window",
    ] {
        assert!(log.contains(code), "the log records the {code} refusal");
    }
    assert!(
        log.lines().count() >= run_ids.len() * 2,
        "{} log lines",
        log.lines().count()
    );
    for (n, line) in log.lines().enumerate() {
        if let Some(what) = secrets.found_in(line.as_bytes()) {
            panic!("log line {} holds {what}", n + 1);
        }
    }

    // No file written during the test holds a secret, nor is named after
    // one: the test's folder, $TMPDIR, and the working directory (less the
    // build and dependency folders, which other builds write meanwhile).
    let mut written = Vec::new();
    files_written_since(&dir, started, &[], &mut written);
    files_written_since(&std::env::temp_dir(), started, &[], &mut written);
    let cwd = std::env::current_dir().unwrap();
    files_written_since(
        &cwd,
        started,
        &["target", ".git", "node_modules"],
        &mut written,
    );
    written.sort();
    written.dedup();
    assert!(written.contains(&log_path), "the scan sees the log file");
    for path in &written {
        assert!(
            !path.to_string_lossy().contains(&canary),
            "a file is named after the canary"
        );
        if let Some(bytes) = read_capped(path)
            && let Some(what) = secrets.found_in(&bytes)
        {
            panic!("{} holds {what}", path.display());
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// Every kind of exchange, on two servers; returns the ids of the runs.
async fn conversations(secrets: &Secrets) -> Vec<String> {
    let c = Canaries::new(&secrets.canary);
    let mut run_ids = Vec::new();
    // Generations in order: SSE tool turn, its answer, a follow-up answer;
    // WS tool turn, its answer.
    let scripts = [
        c.tool_turn(),
        c.answer_turn(),
        c.answer_turn(),
        c.tool_turn(),
        c.answer_turn(),
        c.answer_turn(),
    ];
    let (server_a, observed) = server(&scripts, &secrets.key_text, ReplayFailure::Reject).await;

    // SSE, hidden visibility: three turns, sealed reasoning replayed.
    let thread = "privacy-thread-sse";
    let mut messages =
        vec![json!({ "id": "u1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let (events, raw) = sse_run(
        &server_a,
        &run_input(thread, "privacy-sse-1", &messages, json!({})),
    )
    .await;
    assert!(
        !contains(&raw, c.reasoning.as_bytes()),
        "hidden reasoning stays hidden"
    );
    assert!(reasoning_text(&events).is_empty());
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages.push(tool_result(&messages, &format!("Found {}", c.tool_result)));
    let (events, raw) = sse_run(
        &server_a,
        &run_input(thread, "privacy-sse-2", &messages, json!({})),
    )
    .await;
    assert!(!contains(&raw, c.reasoning.as_bytes()));
    assert_eq!(answer_text(&events), format!("Here it is: {}.", c.answer));
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages
        .push(json!({ "id": "u2", "role": "user", "content": format!("More about {}", c.user) }));
    let (events, _) = sse_run(
        &server_a,
        &run_input(thread, "privacy-sse-3", &messages, json!({})),
    )
    .await;
    secrets.remember_sealed(&events);
    run_ids.extend(["privacy-sse-1", "privacy-sse-2", "privacy-sse-3"].map(String::from));
    let prompt = server_a
        .agent
        .model()
        .unwrap()
        .decode(&observed.prompts.lock().unwrap()[1])
        .unwrap();
    assert!(
        prompt.contains(&c.reasoning),
        "the replayed reasoning reached the model"
    );
    let sealed_sse = messages
        .iter()
        .find_map(|m| m["encryptedValue"].as_str())
        .unwrap()
        .to_owned();

    // A tampered value: 422 over SSE, whose body does not echo the input.
    let mut tampered = messages.clone();
    let reasoning = tampered
        .iter_mut()
        .find(|m| m["role"] == "reasoning")
        .unwrap();
    reasoning["encryptedValue"] = json!(tamper(&sealed_sse));
    let (status, body) = sse_raw(
        &server_a,
        &run_input(thread, "privacy-tampered-sse", &tampered, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        secrets.found_in(&body).is_none(),
        "the refusal echoes nothing secret"
    );
    // A prompt longer than the context.
    let long = vec![
        json!({ "id": "u-long", "role": "user", "content": format!("{} ", c.user).repeat(2000) }),
    ];
    let (status, body) = sse_raw(
        &server_a,
        &run_input(thread, "privacy-overflow", &long, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422);
    assert!(secrets.found_in(&body).is_none());
    // Content this text model cannot read, holding the canary.
    let image = vec![json!({ "id": "u-image", "role": "user", "content": [
        { "type": "text", "text": c.user },
        { "type": "image", "source": { "type": "url", "value": format!("https://example.com/{}.png", c.user) } },
    ] })];
    let (status, body) = sse_raw(
        &server_a,
        &run_input(thread, "privacy-image", &image, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422);
    assert!(secrets.found_in(&body).is_none());
    // Input that is not a RunAgentInput, with the canary where a list should be.
    let mut invalid = run_input(thread, "privacy-invalid", &[], json!({}));
    invalid["messages"] = json!(c.user);
    let (status, _) = sse_raw(&server_a, &invalid.to_string()).await;
    assert_eq!(status, 400);
    // The metrics of a server that ran all of that: counts and timings,
    // nothing of the conversations and no ids.
    let metrics = reqwest::get(server_a.url("/metrics"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(secrets.found_in(&metrics).is_none(), "metrics leak");
    assert!(!contains(&metrics, thread.as_bytes()), "metrics carry ids");
    assert!(contains(&metrics, b"thinkwire_runs_total"));
    // Broken JSON holding the canary.
    let (status, _) = sse_raw(&server_a, &format!("{{\"threadId\": \"{}\"", c.user)).await;
    assert_eq!(status, 400);

    // WebSocket, full visibility: the reasoning is streamed, then replayed.
    let thread = "privacy-thread-ws";
    let full = json!({ "reasoning": { "visibility": "full" } });
    let mut socket = connect(&server_a).await;
    let mut messages =
        vec![json!({ "id": "w1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let (events, raw) = ws_send(
        &mut socket,
        run_input(thread, "privacy-ws-1", &messages, full.clone()).to_string(),
    )
    .await;
    verify(&events);
    assert!(
        reasoning_text(&events).contains(&c.reasoning),
        "full visibility streams the reasoning"
    );
    assert!(!raw.is_empty());
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages.push(tool_result(&messages, &format!("Found {}", c.tool_result)));
    let (events, _) = ws_send(
        &mut socket,
        run_input(thread, "privacy-ws-2", &messages, full.clone()).to_string(),
    )
    .await;
    verify(&events);
    assert_eq!(answer_text(&events), format!("Here it is: {}.", c.answer));
    secrets.remember_sealed(&events);
    run_ids.extend(["privacy-ws-1", "privacy-ws-2"].map(String::from));
    // Refusals on the socket: a value replayed into another thread, broken
    // JSON with the canary.
    let (events, _) = ws_send(
        &mut socket,
        run_input(
            "privacy-thread-other",
            "privacy-tampered-ws",
            &messages,
            full,
        )
        .to_string(),
    )
    .await;
    assert_eq!(run_error_code(&events), "SEALED_REASONING_REJECTED");
    let (events, _) = ws_send(&mut socket, format!("{{\"messages\": [\"{}\"", c.user)).await;
    assert_eq!(run_error_code(&events), "INVALID_INPUT");
    // A constrained answer: the scripted one is not JSON, so the grammar
    // refuses it (logged without the text) and the run says incomplete.
    let ask =
        [json!({ "id": "u-json", "role": "user", "content": format!("JSON about {}", c.user) })];
    let format = json!({"responseFormat": {"type": "json_schema",
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
    let (events, _) = ws_send(
        &mut socket,
        run_input("privacy-thread-json", "privacy-json", &ask, format).to_string(),
    )
    .await;
    verify(&events);
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::Custom(x) if x.name == "thinkwire.output_incomplete")));
    secrets.remember_sealed(&events);
    run_ids.push("privacy-json".into());
    socket.close(None).await.unwrap();
    assert_eq!(
        observed.prompts.lock().unwrap().len(),
        6,
        "refusals never reached the engine"
    );
    server_a.shutdown().await;

    // A server in drop mode (same key) given the tampered value: the run
    // goes on without it.
    let (server_b, _) = server(&[c.answer_turn()], &secrets.key_text, ReplayFailure::Drop).await;
    let (events, _) = sse_run(
        &server_b,
        &run_input(
            "privacy-thread-sse",
            "privacy-dropped",
            &tampered,
            json!({}),
        ),
    )
    .await;
    assert!(
        events.iter().any(|e| matches!(&e.kind, EventKind::Custom(c) if c.name == thinkwire::agent::custom::REASONING_DROPPED)),
        "the dropped value is announced"
    );
    run_ids.push("privacy-dropped".into());
    server_b.shutdown().await;

    // The OpenAI and Anthropic surfaces (same key, full visibility).
    let scripts = [
        c.tool_turn(),
        c.answer_turn(),
        c.tool_turn(),
        c.answer_turn(),
        c.tool_turn(),
        c.answer_turn(),
    ];
    let (server_c, observed) = server(&scripts, &secrets.key_text, ReplayFailure::Reject).await;
    v1::conversations(&server_c, &c, secrets).await;
    assert_eq!(
        observed.prompts.lock().unwrap().len(),
        6,
        "refusals never reached the engine"
    );
    server_c.shutdown().await;

    // Through an upstream backend.
    run_ids.extend(upstream::conversations(&c, secrets).await);
    run_ids.extend(panic_and_auth(&c, secrets).await);
    run_ids.extend(resume::conversations(&c, secrets).await);
    run_ids
}

/// A run whose engine panics with a message quoting the conversation ends
/// with `RUN_ERROR`, the server goes on, and the panic is logged without
/// its message; with tokens required, a wrong token holding the canary is
/// refused without being logged, on AG-UI and on `/v1`.
async fn panic_and_auth(c: &Canaries, secrets: &Secrets) -> Vec<String> {
    thinkwire::server::quiet_panics();
    let token = format!("{}token", secrets.canary);
    let (model, _) = scripted_qwen3_with(&[c.answer_turn()], |engine| {
        engine.with_panic(3, format!("engine bug while saying {}", c.answer))
    });
    let keys = KeyRing::from_key_list(&secrets.key_text).unwrap();
    let server = TestServer::start(
        Agent::new(model, keys, AgentConfig::default()),
        ServerConfig {
            auth: Some(thinkwire::server::AuthTokens::parse("good-token-0123456789").unwrap()),
            ..ServerConfig::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    for (path, body) in [
        ("/agent", run_input("t", "r", &[], json!({})).to_string()),
        ("/v1/chat/completions", json!({"messages": []}).to_string()),
    ] {
        let refused = client
            .post(server.url(path))
            .header("content-type", "application/json")
            .bearer_auth(&token)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{path}");
        let text = refused.text().await.unwrap();
        assert!(!text.contains(&token), "{path} echoes the token");
    }

    let messages =
        vec![json!({ "id": "u1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let visible = json!({"reasoning": {"visibility": "full"}});
    let mut run_ids = Vec::new();
    let mut run = |id: &'static str| {
        run_ids.push(id.to_owned());
        client
            .post(server.url("/agent"))
            .header("content-type", "application/json")
            .bearer_auth("good-token-0123456789")
            .json(&run_input("privacy-panic", id, &messages, visible.clone()))
            .send()
    };
    let panicked = run("privacy-panic-1").await.unwrap().bytes().await.unwrap();
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&panicked)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(matches!(
        events.first().map(|e| &e.kind),
        Some(EventKind::RunStarted(_))
    ));
    match &events.last().unwrap().kind {
        EventKind::RunError(e) => assert_eq!(e.code.as_deref(), Some("INTERNAL_ERROR")),
        other => panic!("the panicked run ended with {other:?}"),
    }
    assert!(
        !contains(&panicked, c.answer.as_bytes()),
        "the panic's message reached the client"
    );
    // The server goes on.
    let next = run("privacy-panic-2").await.unwrap().bytes().await.unwrap();
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&next)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(matches!(
        events.last().map(|e| &e.kind),
        Some(EventKind::RunFinished(_))
    ));
    secrets.remember_sealed(&events);
    server.shutdown().await;
    run_ids
}
