//! Limits (issue #13), each refusal with a code and counted in `/metrics`:
//! a slowloris client (headers trickled) times out while another client's
//! run proceeds; a trickled body times out (408 `BODY_TIMEOUT`); past
//! `max_connections` a connection gets one 503 `TOO_MANY_CONNECTIONS`;
//! past `max_runs_per_client` a run is refused (429 `CLIENT_BUSY`); too
//! many messages (413 `INPUT_TOO_LARGE`, naming `messages`), an id too
//! long or unprintable (naming it); a silent
//! WebSocket is closed (1001) after `ws_idle_timeout`.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_seal::{Key, KeyRing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::support::*;

async fn server(config: ServerConfig, step_delay: Duration) -> TestServer {
    server_saying(qwen3_turn("thoughts", "An answer."), config, step_delay).await
}

async fn server_saying(script: String, config: ServerConfig, step_delay: Duration) -> TestServer {
    let (model, _) = scripted_qwen3(&[script], step_delay);
    TestServer::start(
        Agent::new(
            model,
            KeyRing::new(Key::generate().unwrap()),
            AgentConfig {
                max_messages: 4,
                ..AgentConfig::default()
            },
        ),
        config,
    )
    .await
}

async fn metrics(server: &TestServer) -> String {
    reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

fn counted(metrics: &str, family: &str, code: &str) -> bool {
    metrics
        .lines()
        .any(|l| l.starts_with(&format!("thinkwire_{family}_total{{code=\"{code}\"}}")))
}

/// Reads what the server sends until it closes the connection, or fails
/// after `within`.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return all,
            Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the connection is still open after {within:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_client_times_out_while_others_proceed() {
    let server = server(
        ServerConfig {
            header_timeout: Duration::from_millis(600),
            ..ServerConfig::default()
        },
        Duration::ZERO,
    )
    .await;
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    let started = Instant::now();
    // One header byte every 100 ms: the head never completes. Returns when
    // the server has cut the connection (a write fails).
    let trickle = async {
        slow.write_all(b"POST /agent HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if slow.write_all(b"a").await.is_err() {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the slow client is still connected after 5 s"
            );
        }
    };
    // Meanwhile another client runs a whole turn.
    let other = async {
        let events = post_run(&server, &input("t", "r", "hi", json!({}))).await;
        assert_eq!(answer_text(&events), "An answer.");
        started.elapsed()
    };
    let (cut_off, other_done) = tokio::join!(trickle, other);
    assert!(other_done < Duration::from_secs(2), "{other_done:?}");
    // Cut off at the header timeout (plus a write or two to notice).
    assert!(
        cut_off >= Duration::from_millis(600) && cut_off < Duration::from_millis(1500),
        "cut off after {cut_off:?}"
    );
    assert!(counted(
        &metrics(&server).await,
        "requests_refused",
        "HEADER_TIMEOUT"
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn a_trickled_body_times_out_with_408() {
    let server = server(
        ServerConfig {
            body_timeout: Duration::from_millis(400),
            ..ServerConfig::default()
        },
        Duration::ZERO,
    )
    .await;
    for path in ["/agent", "/v1/chat/completions"] {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream
            .write_all(
                format!(
                    "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let response = read_until_closed(&mut stream, Duration::from_secs(3)).await;
        let text = String::from_utf8_lossy(&response);
        assert!(text.starts_with("HTTP/1.1 408"), "{path}: {text}");
        assert!(text.contains("BODY_TIMEOUT"), "{path}: {text}");
    }
    assert!(counted(
        &metrics(&server).await,
        "requests_refused",
        "BODY_TIMEOUT"
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn past_the_connection_cap_a_connection_gets_503() {
    let server = server(
        ServerConfig {
            max_connections: 2,
            ..ServerConfig::default()
        },
        Duration::ZERO,
    )
    .await;
    let held: Vec<TcpStream> = vec![
        TcpStream::connect(server.addr).await.unwrap(),
        TcpStream::connect(server.addr).await.unwrap(),
    ];
    // Let the server take both before the third arrives.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let response = read_until_closed(&mut third, Duration::from_secs(3)).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("TOO_MANY_CONNECTIONS"), "{text}");
    // A place freed is a place taken.
    drop(held);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let metrics = metrics(&server).await;
    assert!(counted(
        &metrics,
        "requests_refused",
        "TOO_MANY_CONNECTIONS"
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_address_past_its_run_limit_is_refused() {
    // A run of seconds, so the first is surely in flight for the second.
    let answer = "word ".repeat(100);
    let server = server_saying(
        qwen3_turn("thoughts", answer.trim_end()),
        ServerConfig {
            max_runs_per_client: 1,
            ..ServerConfig::default()
        },
        Duration::from_millis(30),
    )
    .await;
    let client = reqwest::Client::new();
    let post = |run: &str| {
        client
            .post(server.url("/agent"))
            .json(&input("t", run, "hi", json!({})))
            .send()
    };
    let first = post("r1").await.unwrap();
    assert_eq!(first.status(), 200);
    let second = post("r2").await.unwrap();
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CLIENT_BUSY");
    // Once the first run ends, the address may run again (its place is
    // given back just after its last event, so allow a moment).
    let _ = first.bytes().await.unwrap();
    let mut third = post("r3").await.unwrap();
    for _ in 0..40 {
        if third.status() == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        third = post("r3").await.unwrap();
    }
    assert_eq!(third.status(), 200);
    let _ = third.bytes().await.unwrap();
    assert!(counted(
        &metrics(&server).await,
        "runs_refused",
        "CLIENT_BUSY"
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn too_many_messages_are_refused_naming_the_field() {
    let server = server(ServerConfig::default(), Duration::ZERO).await;
    let messages: Vec<Value> = (0..5)
        .map(|i| json!({"id": format!("m{i}"), "role": "user", "content": "x"}))
        .collect();
    let mut body = input("t", "r", "x", json!({}));
    body["messages"] = Value::Array(messages);
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INPUT_TOO_LARGE");
    assert_eq!(body["error"]["path"], "messages");
    assert!(counted(
        &metrics(&server).await,
        "runs_refused",
        "INPUT_TOO_LARGE"
    ));
    server.shutdown().await;
}

/// An id past 512 bytes, or one holding a newline (which would forge a
/// log line), is refused naming its field, on AG-UI and on `/v1` (there
/// at the client's own message), before anything runs.
#[tokio::test]
async fn an_oversized_or_unprintable_id_is_refused_naming_the_field() {
    let server = server(ServerConfig::default(), Duration::ZERO).await;
    let client = reqwest::Client::new();
    for (run_id, status, code) in [
        ("r\nFAKE LOG LINE".to_owned(), 400, "INVALID_INPUT"),
        ("r".repeat(513), 413, "INPUT_TOO_LARGE"),
    ] {
        let response = (client.post(server.url("/agent")))
            .json(&input("t", &run_id, "x", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
        assert_eq!(body["error"]["path"], "runId", "{body}");
        assert!(!body.to_string().contains("FAKE"), "{body}");
    }
    let chat = json!({"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c".repeat(600), "content": "19"}]});
    let response = (client.post(server.url("/v1/chat/completions")))
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    let said = body.to_string();
    assert!(said.contains("messages[2]"), "{said}");
    assert!(
        !said.contains(&"c".repeat(64)),
        "the id is not quoted: {said}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_silent_websocket_is_closed_after_the_idle_timeout() {
    let server = server(
        ServerConfig {
            // No ping in the test's time: tungstenite would answer one on
            // the next read, after the server has gone.
            ws_ping: Duration::from_secs(30),
            ws_idle_timeout: Duration::from_millis(400),
            ..ServerConfig::default()
        },
        Duration::ZERO,
    )
    .await;
    let mut socket = connect(&server).await;
    // The client says nothing.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(3), socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    let close = close.expect("a close frame with a code");
    assert_eq!(close.code, CloseCode::Away);
    assert_eq!(close.reason.as_str(), "idle timeout");
    assert!(counted(
        &metrics(&server).await,
        "requests_refused",
        "WS_IDLE_TIMEOUT"
    ));
    server.shutdown().await;
}
