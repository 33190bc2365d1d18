//! thinkwire in front of an upstream OpenAI-compatible server: a second
//! thinkwire on a scripted Qwen3 model (its `/v1/chat/completions`), and
//! small axum servers that misbehave on purpose. Everything over real
//! sockets; the official `@ag-ui/client` drives the front.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::IntoResponse;
use axum::routing::post;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use support::*;
use thinkwire::agent::{Agent, AgentConfig, Backend, UpstreamBackend, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire::upstream::{Upstream, UpstreamConfig, UpstreamKind};
use thinkwire_protocol::{EventKind, EventType};
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

const END: &str = "<|im_end|>";
const REASONING: &str = "Need the weather tool for Paris.";

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    })
}

/// A thinkwire on a scripted Qwen3 model, configured as an upstream: it
/// shows reasoning in full and takes the reasoning its (trusted) front
/// sends back.
async fn upstream_thinkwire(scripts: &[String]) -> (TestServer, Arc<Observed>) {
    let (model, observed) = scripted_qwen3(scripts, Duration::ZERO);
    let mut config = AgentConfig::default();
    config.policy.default_visibility = Visibility::Full;
    config.replay.trust_client_reasoning = true;
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
    (server, observed)
}

fn upstream_config(url: String) -> UpstreamConfig {
    let registry = Registry::builtin();
    UpstreamConfig {
        kind: UpstreamKind::OpenAiChat,
        url,
        model: "Qwen3-0.6B".into(),
        key: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        retries: 0,
        format: registry.family("qwen3").unwrap().clone(),
    }
}

/// A thinkwire whose backend is the upstream `config` names.
async fn front(config: UpstreamConfig) -> TestServer {
    front_with_keys(config, KeyRing::new(Key::generate().unwrap())).await
}

/// The same, sealing with `keys` (replicas share a key ring).
async fn front_with_keys(config: UpstreamConfig, keys: KeyRing) -> TestServer {
    front_serving(config, keys, ServerConfig::default()).await
}

async fn front_serving(config: UpstreamConfig, keys: KeyRing, server: ServerConfig) -> TestServer {
    let upstream = Upstream::new(config, tokio::runtime::Handle::current()).unwrap();
    let backend = Backend::Upstream(Box::new(UpstreamBackend::new(
        upstream,
        &Registry::builtin(),
    )));
    let agent = Agent::with_backend(backend, keys, AgentConfig::default());
    TestServer::start(agent, server).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_keeps_reasoning_through_an_upstream() {
    let arguments = r#"{"city": "Paris"}"#;
    let scripts = [
        format!(
            "<think>\n{REASONING}\n</think>\n\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call>{END}"
        ),
        qwen3_turn("The tool answered.", "Sunny, 18 °C."),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;

    let capabilities: Value = reqwest::get(front.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(capabilities["custom"]["backend"], "openai-chat");
    assert_eq!(capabilities["identity"]["type"], "upstream");

    let url = front.url("/agent");
    let tools = json!([weather_tool()]).to_string();
    let summary = tokio::task::spawn_blocking(move || {
        run_official_client(
            &url,
            &[
                "--turns",
                "2",
                "--prompt",
                "Weather in Paris?",
                "--tools",
                &tools,
                "--tool-result",
                "18 °C, sunny",
                "--forwarded",
                r#"{"reasoning": {"visibility": "full"}}"#,
            ],
        )
    })
    .await
    .unwrap();

    let events: Vec<&str> = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for ty in [
        "REASONING_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_ENCRYPTED_VALUE",
        "TOOL_CALL_START",
        "TEXT_MESSAGE_CONTENT",
    ] {
        assert!(events.contains(&ty), "{ty} missing: {events:?}");
    }
    let messages = summary["messages"].as_array().unwrap();
    assert_eq!(
        support::roles(messages),
        [
            "user",
            "reasoning",
            "assistant",
            "tool",
            "reasoning",
            "assistant"
        ],
        "{messages:#?}"
    );
    assert_eq!(messages[1]["content"].as_str().unwrap().trim(), REASONING);
    assert!(
        messages[1]["encryptedValue"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let call = &messages[2]["toolCalls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], arguments);
    assert_eq!(messages[5]["content"], "Sunny, 18 °C.");

    // The upstream got the first turn's reasoning back on the second turn,
    // opened by the front from the client's sealed value.
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2);
    let second = upstream.agent.model().unwrap().decode(&prompts[1]).unwrap();
    assert!(
        second.contains(&format!("<think>\n{REASONING}\n</think>")),
        "{second}"
    );
    assert!(second.contains("<tool_response>\n18 °C, sunny\n</tool_response>"));
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_visibility_asks_the_upstream_for_a_summary() {
    let scripts = [
        qwen3_turn("Paris is the capital; long chain of thought.", "Paris."),
        // The summary request: thinking off, answer only.
        "The capital question.<|im_end|>".to_owned(),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let events = post_run(
        &front,
        &input(
            "t",
            "r1",
            "Capital of France?",
            json!({"reasoning": {"visibility": "summary"}}),
        ),
    )
    .await;
    assert_eq!(reasoning_text(&events), "The capital question.");
    assert_eq!(answer_text(&events), "Paris.");
    assert!(types(&events).contains(&EventType::ReasoningEncryptedValue));
    assert_eq!(observed.prompts.lock().unwrap().len(), 2);
    front.shutdown().await;
    upstream.shutdown().await;
}

/// The `RUN_ERROR` of a run, how long the run took, and whether it had
/// started.
async fn failed_run(front: &TestServer) -> (String, String, Duration, bool) {
    let started = Instant::now();
    let events = post_run(front, &input("t", "r", "Hello?", json!({}))).await;
    let elapsed = started.elapsed();
    let error = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunError(err) => Some(err.clone()),
            _ => None,
        })
        .expect("the run ends in RUN_ERROR");
    let started = types(&events).contains(&EventType::RunStarted);
    (
        error.code.unwrap_or_default(),
        error.message,
        elapsed,
        started,
    )
}

/// Serves `handler` at `/v1/chat/completions` on a free port.
async fn fake_upstream(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}/v1")
}

fn sse_response(body: Body) -> axum::response::Response {
    ([("content-type", "text/event-stream")], body).into_response()
}

fn delta(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_faults_end_the_run_with_a_coded_error_and_no_conversation_text() {
    // Nothing listens.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let front_a = front(upstream_config(format!("http://{closed}/v1"))).await;
    let (code, _, _, started) = failed_run(&front_a).await;
    assert_eq!(code, "UPSTREAM_UNAVAILABLE");
    assert!(!started, "refused before RUN_STARTED");

    // An error status whose message quotes the prompt.
    let refusing = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            (
                axum::http::StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {"message": "Hello? is too long", "type": "invalid_request_error"}})),
            )
        }),
    ))
    .await;
    let front_b = front(upstream_config(refusing)).await;
    let (code, message, _, started) = failed_run(&front_b).await;
    assert_eq!(code, "UPSTREAM_ERROR");
    assert!(!started, "refused before RUN_STARTED");
    assert!(
        message.contains("400") && message.contains("invalid_request_error"),
        "{message}"
    );
    assert!(!message.contains("Hello?"), "{message}");

    // Not an event stream.
    let garbled = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async { sse_response(Body::from("data: {\"choices\": [\n\n")) }),
    ))
    .await;
    let front_c = front(upstream_config(garbled)).await;
    let (code, _, _, _) = failed_run(&front_c).await;
    assert_eq!(code, "UPSTREAM_PROTOCOL");

    // Dies mid-stream: one delta, then the connection breaks.
    let dying = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            // The error comes after the first delta has gone out.
            let first = futures_util::stream::iter([Ok::<_, std::io::Error>(delta(
                json!({"content": "Hel"}),
            ))]);
            let death = futures_util::stream::once(async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(std::io::Error::other("upstream died"))
            });
            let pieces = futures_util::StreamExt::chain(first, death);
            sse_response(Body::from_stream(pieces))
        }),
    ))
    .await;
    let front_d = front(upstream_config(dying)).await;
    let (code, _, elapsed, started) = failed_run(&front_d).await;
    assert_eq!(code, "UPSTREAM_UNAVAILABLE");
    assert!(started, "it died after answering");
    // Ended by the broken connection, not by the 5 s idle timeout (the
    // bound leaves a loaded CI machine room).
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    // One message that never ends.
    let endless_line = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let pieces = futures_util::stream::repeat_with(|| {
                Ok::<_, std::io::Error>("x".repeat(64 * 1024))
            });
            sse_response(Body::from_stream(futures_util::StreamExt::take(
                futures_util::stream::once(async { Ok("data: ".to_owned()) }).chain(pieces),
                1000,
            )))
        }),
    ))
    .await;
    let front_f = front(upstream_config(endless_line)).await;
    let (code, _, _, _) = failed_run(&front_f).await;
    assert_eq!(code, "UPSTREAM_PROTOCOL");
    front_f.shutdown().await;

    // Overloaded once, then answers: retried before any byte was read.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let flaky = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let call = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if call == 0 {
                    axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response()
                } else {
                    sse_response(Body::from(format!(
                        "{}data: [DONE]\n\n",
                        delta(json!({"content": "Back."}))
                    )))
                }
            }
        }),
    ))
    .await;
    let mut config = upstream_config(flaky);
    config.retries = 1;
    let front_e = front(config).await;
    let events = post_run(&front_e, &input("t", "r", "Hello?", json!({}))).await;
    assert_eq!(answer_text(&events), "Back.");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    for server in [front_a, front_b, front_c, front_d, front_e] {
        server.shutdown().await;
    }
}

/// Sets a flag when dropped: hyper drops a response body when its client
/// goes away.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// With resuming off (`--resume-window-s 0`) a client that leaves ends its
/// run at once, and the upstream stream with it; with resuming on, the run
/// waits out the window first (`tests/server/resume_refusals.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_closes_the_upstream_stream() {
    let closed = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let (closed_flag, sent_count) = (Arc::clone(&closed), Arc::clone(&sent));
    let endless = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let guard = Dropped(Arc::clone(&closed_flag));
            let sent = Arc::clone(&sent_count);
            async move {
                let pieces =
                    futures_util::stream::unfold((guard, sent), |(guard, sent)| async move {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        sent.fetch_add(1, Ordering::SeqCst);
                        Some((
                            Ok::<_, std::io::Error>(delta(json!({"content": "word "}))),
                            (guard, sent),
                        ))
                    });
                sse_response(Body::from_stream(pieces))
            }
        }),
    ))
    .await;
    let no_resume = ServerConfig {
        resume: thinkwire::server::ResumeConfig {
            window: Duration::ZERO,
            ..Default::default()
        },
        ..ServerConfig::default()
    };
    let front = front_serving(
        upstream_config(endless),
        KeyRing::new(Key::generate().unwrap()),
        no_resume,
    )
    .await;
    let mut response = reqwest::Client::new()
        .post(front.url("/agent"))
        .json(&input("t", "r", "Talk forever.", json!({})))
        .send()
        .await
        .unwrap();
    // Read until the answer streams, then leave.
    let mut seen = String::new();
    while !seen.contains("TEXT_MESSAGE_CONTENT") {
        let chunk = response.chunk().await.unwrap().expect("the run streams");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(response);
    let left = Instant::now();
    while !closed.load(Ordering::SeqCst) {
        assert!(
            left.elapsed() < Duration::from_secs(5),
            "the upstream stream stayed open after the client left"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at_close = sent.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        sent.load(Ordering::SeqCst),
        at_close,
        "nothing more was generated"
    );
    front.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_replicas_sharing_a_key_ring_continue_each_others_conversations() {
    let arguments = r#"{"city": "Paris"}"#;
    let scripts = [
        format!(
            "<think>\n{REASONING}\n</think>\n\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call>{END}"
        ),
        qwen3_turn("The tool answered.", "Sunny, 18 °C."),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let old = Key::generate().unwrap().to_text().as_str().to_owned();
    let new = Key::generate().unwrap().to_text().as_str().to_owned();
    let url = upstream.url("/v1");
    // A seals with the old key; B has rotated (new key active, old one
    // still opening); C is another deployment.
    let a = front_with_keys(
        upstream_config(url.clone()),
        KeyRing::from_key_list(&old).unwrap(),
    )
    .await;
    let b = front_with_keys(
        upstream_config(url.clone()),
        KeyRing::from_key_list(&format!("{new}\n{old}")).unwrap(),
    )
    .await;
    let c = front(upstream_config(url)).await;

    let full = json!({"reasoning": {"visibility": "full"}});
    let mut first = input("t-replicas", "r1", "Weather in Paris?", full.clone());
    first["tools"] = json!([weather_tool()]);
    let events = post_run(&a, &first).await;
    let mut messages = first["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    let call_id = messages
        .iter()
        .find_map(|m| m["toolCalls"][0]["id"].as_str())
        .unwrap()
        .to_owned();
    messages.push(
        json!({"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": "18 °C, sunny"}),
    );
    let mut second = first.clone();
    second["runId"] = json!("r2");
    second["messages"] = json!(messages);

    // C cannot open A's value: refused before RUN_STARTED, naming it.
    let refused = reqwest::Client::new()
        .post(c.url("/agent"))
        .json(&second)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.unwrap();
    let reasoning_id = messages
        .iter()
        .find(|m| m["role"] == "reasoning")
        .and_then(|m| m["id"].as_str())
        .unwrap()
        .to_owned();
    assert_eq!(body["error"]["code"], "SEALED_REASONING_REJECTED", "{body}");
    assert!(body.to_string().contains(&reasoning_id), "{body}");

    // B continues A's conversation: the upstream gets the reasoning back.
    let events = post_run(&b, &second).await;
    assert_eq!(answer_text(&events), "Sunny, 18 °C.");
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2, "the refusal never reached the upstream");
    let prompt = upstream.agent.model().unwrap().decode(&prompts[1]).unwrap();
    assert!(
        prompt.contains(&format!("<think>\n{REASONING}\n</think>")),
        "{prompt}"
    );
    for server in [a, b, c, upstream] {
        server.shutdown().await;
    }
}
