//! A `kill -9` in the middle of a conversation loses nothing the client
//! needs: the server holds nothing, so after a restart with the same key
//! the client's next turn replays its sealed values and the model gets its
//! earlier reasoning back. The real `thinkwire` binary is killed and
//! restarted; it generates through an upstream (a local server that
//! streams reasoning and records every request), so the test can see what
//! the model received.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::response::IntoResponse;
use axum::routing::post;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use support::*;
use thinkwire_protocol::{Event, SseDecoder};

const REASONING: &str = "The user asks about Lisbon; recall the population.";

/// Kills the process when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn delta(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

/// An upstream that thinks, then answers slowly, recording each request.
async fn upstream() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = Arc::clone(&seen);
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |axum::Json(body): axum::Json<Value>| {
            log.lock().unwrap().push(body);
            async move {
                let mut pieces = vec![delta(json!({"reasoning_content": REASONING}))];
                pieces.extend((0..40).map(|i| delta(json!({"content": format!("w{i} ")}))));
                pieces.push("data: [DONE]\n\n".to_owned());
                let stream = futures_util::stream::iter(pieces).then(|piece| async move {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                    Ok::<_, std::io::Error>(piece)
                });
                (
                    [("content-type", "text/event-stream")],
                    axum::body::Body::from_stream(stream),
                )
                    .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{addr}/v1"), seen)
}

/// `thinkwire serve` with `key_file`, in front of `upstream`.
async fn start(key_file: &std::path::Path, port: u16, upstream: &str) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--key-file")
        .arg(key_file)
        .args(["--upstream-url", upstream, "--upstream-model", "m"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let started = Instant::now();
    while reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
        .await
        .is_err()
    {
        assert!(started.elapsed() < Duration::from_secs(30), "no server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

async fn run(port: u16, body: &Value) -> Vec<Event> {
    let bytes = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/agent"))
        .json(body)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    verify(&events);
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_restarted_with_its_key_continues_the_conversation() {
    let dir = std::env::temp_dir().join(format!("thinkwire-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("thinkwire.key");
    let key = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .arg("keygen")
        .output()
        .unwrap();
    std::fs::write(&key_file, &key.stdout).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let (upstream, seen) = upstream().await;
    let port = free_port();

    // Turn 1 completes: the client holds the sealed reasoning.
    let server = start(&key_file, port, &upstream).await;
    let first = input(
        "t-restart",
        "r1",
        "How many people live in Lisbon?",
        json!({}),
    );
    let events = run(port, &first).await;
    let mut messages = first["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "reasoning" && m["encryptedValue"].is_string()),
        "{messages:#?}"
    );
    messages.push(json!({"id": "u2", "role": "user", "content": "And Porto?"}));
    let mut second = first.clone();
    second["runId"] = json!("r2");
    second["messages"] = json!(messages);

    // Turn 2 is cut off by kill -9 while it streams.
    let mut response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/agent"))
        .json(&second)
        .send()
        .await
        .unwrap();
    let mut seen_bytes = String::new();
    while !seen_bytes.contains("TEXT_MESSAGE_CONTENT") {
        let chunk = response.chunk().await.unwrap().expect("turn 2 streams");
        seen_bytes.push_str(&String::from_utf8_lossy(&chunk));
    }
    let mut server = server;
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = response.chunk().await {}
    })
    .await;
    assert!(drained.is_ok(), "the stream ended with the process");

    // Restarted with the same key: the client retries turn 2 as it was.
    let _restarted = start(&key_file, port, &upstream).await;
    let events = run(port, &second).await;
    assert!(answer_text(&events).starts_with("w0 w1"), "{events:?}");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 3, "turn 1, the killed turn 2, turn 2 again");
    // Every attempt at turn 2 carried turn 1's reasoning back to the model.
    for request in &requests[1..] {
        let assistant = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "assistant")
            .unwrap();
        assert_eq!(assistant["reasoning_content"], REASONING, "{request}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
