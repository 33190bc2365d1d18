//! Graceful shutdown of the real `thinkwire serve` binary on the default
//! model (issue #13): SIGTERM while 8 WebSocket runs stream. Each run ends
//! with `RUN_FINISHED` or `RUN_ERROR` code `SERVER_SHUTTING_DOWN`; every
//! reasoning message that was opened is closed and its sealed
//! `REASONING_ENCRYPTED_VALUE` arrives before that terminal event; every
//! socket closes with 1001; the process exits 0 within the grace period;
//! and its log holds nothing of the prompts.
#![cfg(all(feature = "mlx", unix))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use thinkwire_protocol::{Event, EventKind, Verifier, decode_event};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

const CLIENTS: usize = 8;
const GRACE_SECS: u64 = 3;
/// In every prompt; must not reach the server's log.
const CANARY: &str = "zqxcanary";

/// The server process, its address and everything it logged.
struct Server {
    child: Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--ephemeral-key",
            "--max-reasoning-tokens",
            "16",
            "--max-tokens",
            "1000",
            "--shutdown-grace",
            &GRACE_SECS.to_string(),
        ])
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning thinkwire serve");
    let stderr = child.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("serving AG-UI on http://") {
                let rest = &line[at + "serving AG-UI on http://".len()..];
                let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
                let _ = tx.send(addr);
            }
            let mut log = sink.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("the server did not start:\n{}", log.lock().unwrap()));
    Server { child, addr, log }
}

/// What one client saw.
struct Seen {
    events: Vec<Event>,
    close: Option<CloseCode>,
}

/// Runs one conversation turn and reads until the server closes the
/// socket; says on `streaming` once the answer has begun (its reasoning
/// is then sealed and delivered).
async fn client(addr: String, index: usize, streaming: mpsc::Sender<usize>) -> Seen {
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/agent/ws"))
        .await
        .unwrap();
    let input = json!({
        "threadId": format!("thread-{index}"),
        "runId": format!("run-{index}"),
        "messages": [{"id": "u", "role": "user", "content":
            format!("{CANARY} Count from 1 to 1000 in words, one number per line.")}],
        "tools": [], "context": [], "state": {},
        "forwardedProps": {"reasoning": {"visibility": "full"},
                           "sampling": {"temperature": 0, "maxTokens": 1000}},
    });
    socket.send(Message::text(input.to_string())).await.unwrap();
    let mut seen = Seen {
        events: Vec::new(),
        close: None,
    };
    let mut told = false;
    while let Some(message) = tokio::time::timeout(Duration::from_secs(300), socket.next())
        .await
        .expect("the server answers or closes")
    {
        match message {
            Ok(Message::Text(text)) => {
                let event = decode_event(&text).unwrap().expect("a known event");
                if !told && matches!(event.kind, EventKind::TextMessageContent(_)) {
                    told = true;
                    let _ = streaming.send(index).await;
                }
                seen.events.push(event);
            }
            Ok(Message::Close(frame)) => {
                seen.close = frame.map(|f| f.code);
                break;
            }
            Ok(_) => {}
            Err(err) => panic!("client {index}: socket error {err}"),
        }
    }
    if !told {
        let _ = streaming.send(index).await;
    }
    seen
}

/// The terminal event's code: `None` for `RUN_FINISHED`.
fn ending(events: &[Event]) -> Option<String> {
    match &events.last().expect("events").kind {
        EventKind::RunFinished(_) => None,
        EventKind::RunError(e) => Some(e.code.clone().unwrap_or_default()),
        other => panic!("the run did not end: last event {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_during_8_runs_ends_each_properly_and_exits_0_within_the_grace() {
    let mut server = start();
    let (tx, mut streaming) = mpsc::channel(CLIENTS);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| tokio::spawn(client(server.addr.clone(), i, tx.clone())))
        .collect();
    // SIGTERM once every run streams its answer (its reasoning is sealed).
    for _ in 0..CLIENTS {
        tokio::time::timeout(Duration::from_secs(240), streaming.recv())
            .await
            .expect("every run reaches its answer");
    }
    let pid = server.child.id().to_string();
    let signalled = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let (status, exited_after) = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break (status, signalled.elapsed());
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(30),
            "the server is still running 30 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let log = server.log.lock().unwrap().clone();
    assert_eq!(status.code(), Some(0), "exit status; log:\n{log}");
    // The grace period, plus the time a process takes to end after `main`.
    assert!(
        exited_after <= Duration::from_millis(GRACE_SECS * 1000 + 500),
        "exited {exited_after:?} after SIGTERM (grace {GRACE_SECS} s)"
    );

    let mut shut_down = 0;
    for (i, client) in clients.into_iter().enumerate() {
        let seen = client.await.unwrap();
        let events = &seen.events;
        let mut verifier = Verifier::new();
        for event in events {
            verifier
                .check(event)
                .unwrap_or_else(|e| panic!("client {i}: {e}"));
        }
        match ending(events).as_deref() {
            None => {}
            Some("SERVER_SHUTTING_DOWN") => shut_down += 1,
            Some(other) => panic!("client {i} ended with {other}"),
        }
        // Every reasoning message opened was closed and sealed before the
        // terminal event.
        let mut opened = BTreeSet::new();
        let mut sealed = BTreeSet::new();
        for event in events {
            match &event.kind {
                EventKind::ReasoningMessageStart(s) => {
                    opened.insert(s.message_id.clone());
                }
                EventKind::ReasoningEncryptedValue(v) => {
                    sealed.insert(v.entity_id.clone());
                }
                _ => {}
            }
        }
        assert!(!opened.is_empty(), "client {i} saw no reasoning");
        assert_eq!(
            opened, sealed,
            "client {i}: a reasoning message went unsealed"
        );
        assert_eq!(
            seen.close,
            Some(CloseCode::Away),
            "client {i}: the socket closes with 1001"
        );
    }
    assert!(
        shut_down > 0,
        "every run finished before the grace period ended: the test did not stop one"
    );
    assert!(!log.contains(CANARY), "the prompt reached the log:\n{log}");
    eprintln!(
        "{shut_down} of {CLIENTS} runs ended SERVER_SHUTTING_DOWN; exit {exited_after:?} after SIGTERM"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once() {
    let mut server = start();
    let (tx, mut streaming) = mpsc::channel(1);
    let run = tokio::spawn(client(server.addr.clone(), 0, tx));
    tokio::time::timeout(Duration::from_secs(240), streaming.recv())
        .await
        .expect("the run reaches its answer");
    let pid = server.child.id().to_string();
    let kill = |pid: &str| {
        assert!(
            Command::new("kill")
                .args(["-TERM", pid])
                .status()
                .unwrap()
                .success()
        );
    };
    kill(&pid);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the first signal leaves the run its grace period"
    );
    let second = Instant::now();
    kill(&pid);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(second.elapsed() < Duration::from_secs(2), "still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // Ended at once (SIGKILL to itself: no exit handlers, no core dump).
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(9), "{status:?}");
    run.abort();
}
