//! Upstreams that fail, served by small axum servers that misbehave on
//! purpose: each fault ends the run with a coded error and no conversation
//! text; a client that leaves closes the upstream stream.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use axum::body::Body;
use axum::response::IntoResponse;
use axum::routing::post;
use futures_util::StreamExt as _;
use thinkwire_protocol::{EventKind, EventType};

use super::*;

/// The `RUN_ERROR` of a run, how long the run took, and whether it had
/// started.
async fn failed_run(front: &TestServer) -> (String, String, Duration, bool) {
    let started = Instant::now();
    let events = post_run(front, &input("t", "r", "Hello?", json!({}))).await;
    let elapsed = started.elapsed();
    let error = run_error(&events);
    let started = types(&events).contains(&EventType::RunStarted);
    (
        error.code.unwrap_or_default(),
        error.message,
        elapsed,
        started,
    )
}

/// Serves `router` on a free port; its base URL (`…/v1`).
pub(super) async fn fake_upstream(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}/v1")
}

pub(super) fn sse_response(body: Body) -> axum::response::Response {
    ([("content-type", "text/event-stream")], body).into_response()
}

/// One chat completions chunk carrying `delta`, as an SSE message.
pub(super) fn delta(delta: Value) -> String {
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
pub(super) struct Dropped(pub(super) Arc<AtomicBool>);

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

/// A run cancelled while the upstream has not yet answered still starts
/// before it ends cancelled: AG-UI's first event is `RUN_STARTED` or
/// `RUN_ERROR`, never a lone `RUN_FINISHED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_before_the_upstream_answers_starts_and_ends_cancelled() {
    use futures_util::SinkExt as _;
    use tokio_tungstenite::tungstenite::Message;

    let silent = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            sse_response(Body::empty())
        }),
    ))
    .await;
    let front = front(upstream_config(silent)).await;
    let mut socket = connect(&front).await;
    socket
        .send(Message::text(
            input("t", "r-cancel", "Hello?", json!({})).to_string(),
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    socket
        .send(Message::text(
            json!({"type": "CANCEL_RUN", "runId": "r-cancel"}).to_string(),
        ))
        .await
        .unwrap();
    let events = read_run(&mut socket).await;
    verify(&events);
    assert_eq!(
        types(&events),
        [EventType::RunStarted, EventType::RunFinished],
        "{events:?}"
    );
    let EventKind::RunFinished(finished) = &events[1].kind else {
        unreachable!()
    };
    assert_eq!(
        finished.outcome,
        Some(thinkwire_protocol::Outcome::Cancelled)
    );
    front.shutdown().await;
}

/// A body that ends right after `data: [DONE]`, without the blank line
/// that would end that message, still ends the answer cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_last_message_has_no_blank_line_still_ends() {
    let unterminated = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
            sse_response(Body::from(format!(
                "{}data: {finish}\n\ndata: [DONE]",
                delta(json!({"content": "Hi there."}))
            )))
        }),
    ))
    .await;
    let front = front(upstream_config(unterminated)).await;
    let events = post_run(&front, &input("t", "r", "Hello?", json!({}))).await;
    verify(&events);
    assert_eq!(answer_text(&events), "Hi there.");
    assert_eq!(types(&events).last(), Some(&EventType::RunFinished));
    front.shutdown().await;
}

/// An error status whose body goes on far past what is read of it (here
/// it never ends): the run gets the usual `UPSTREAM_ERROR`, naming the
/// status and the error object at the body's start, at once and on each
/// retry, not after the idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_status_with_an_endless_body_ends_the_run_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let flooding = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                let head = json!({"error": {"type": "server_error", "message": "Hello? broke it"}})
                    .to_string();
                let padding = futures_util::stream::repeat_with(|| " ".repeat(64 * 1024));
                let body = futures_util::stream::once(async move { head })
                    .chain(padding)
                    .map(Ok::<_, std::io::Error>);
                (
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    Body::from_stream(body),
                )
                    .into_response()
            }
        }),
    ))
    .await;
    let mut config = upstream_config(flooding);
    config.retries = 1;
    config.idle_timeout = Duration::from_secs(30);
    let front = front(config).await;
    let (code, message, elapsed, started) =
        tokio::time::timeout(Duration::from_secs(20), failed_run(&front))
            .await
            .expect("the body is not read to its end");
    assert_eq!(code, "UPSTREAM_ERROR");
    assert!(!started, "refused before RUN_STARTED");
    assert!(
        message.contains("500") && message.contains("server_error"),
        "{message}"
    );
    assert!(!message.contains("Hello?"), "{message}");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "retried once");
    // Far under one idle timeout (30 s), with room for a loaded machine.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    front.shutdown().await;
}

/// An upstream that ignores the request's `max_tokens` and streams on is
/// cut off at a generous multiple of the run's limits, as if it had
/// stopped at them: the answer ends with `finish_reason: length`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_streaming_past_its_token_limit_is_cut_off_at_length() {
    let endless = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let text =
                futures_util::stream::repeat_with(|| delta(json!({"content": "a".repeat(1000)})))
                    .then(|piece| async move {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        piece
                    });
            sse_response(Body::from_stream(text.map(Ok::<_, std::io::Error>)))
        }),
    ))
    .await;
    let front = front(upstream_config(endless)).await;
    let body = json!({"messages": [{"role": "user", "content": "Talk."}], "max_tokens": 4});
    let (status, whole) = tokio::time::timeout(
        Duration::from_secs(20),
        post_json(&front, "/v1/chat/completions", &body),
    )
    .await
    .expect("the bound ends the answer");
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "length", "{whole}");
    let content = choice["message"]["content"].as_str().unwrap_or("");
    // 32 bytes a token of the limits (`max_tokens`, the reasoning budget,
    // the slack), and the last delta: far from endless.
    assert!(
        !content.is_empty() && content.len() <= 2 << 20,
        "{} bytes",
        content.len()
    );
    front.shutdown().await;
}
