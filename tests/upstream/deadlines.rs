//! Upstreams that take too long though never silent: a stream kept busy
//! with empty deltas ends once it has gone too long without output; a
//! count whose client left is closed, not waited out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::body::Body;
use axum::routing::post;
use futures_util::StreamExt as _;

use super::faults::{Dropped, delta, fake_upstream, sse_response};
use super::*;

/// An upstream that keeps its stream busy with empty deltas and never
/// answers is never silent for the idle wait; its time without output
/// ends the run with `UPSTREAM_UNAVAILABLE`, and the text it streamed
/// before stays sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_pings_forever_ends_when_its_output_stops() {
    let pinging = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let first = futures_util::stream::once(async { delta(json!({"content": "Hm"})) });
            let pings = futures_util::stream::repeat_with(|| delta(json!({"content": ""}))).then(
                |piece| async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    piece
                },
            );
            sse_response(Body::from_stream(
                first.chain(pings).map(Ok::<_, std::io::Error>),
            ))
        }),
    ))
    .await;
    let mut config = upstream_config(pinging);
    config.idle_timeout = Duration::from_millis(500);
    config.output_timeout = Some(Duration::from_secs(2));
    let front = front(config).await;
    let events = tokio::time::timeout(
        Duration::from_secs(30),
        post_run(&front, &input("t", "r", "Hello?", json!({}))),
    )
    .await
    .expect("the wait for output ends the run");
    verify(&events);
    assert_eq!(answer_text(&events), "Hm");
    let error = run_error(&events);
    assert_eq!(error.code.as_deref(), Some("UPSTREAM_UNAVAILABLE"));
    assert!(error.message.contains("no output"), "{}", error.message);
    front.shutdown().await;
}

/// A client that leaves while the upstream counts its prompt closes the
/// count request within a poll, rather than holding it (and its counting
/// slot) for the upstream's idle wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_whose_client_left_is_closed_upstream() {
    let closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    let slow = fake_upstream(axum::Router::new().route(
        "/v1/messages/count_tokens",
        post(move || {
            let guard = Dropped(Arc::clone(&flag));
            async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                drop(guard);
                axum::Json(json!({"input_tokens": 3}))
            }
        }),
    ))
    .await;
    let mut config = UpstreamConfig {
        kind: UpstreamKind::Anthropic,
        ..upstream_config(slow)
    };
    config.idle_timeout = Duration::from_secs(30);
    let front = front(config).await;
    let asked = reqwest::Client::new()
        .post(front.url("/v1/messages/count_tokens"))
        .timeout(Duration::from_millis(500))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await;
    assert!(asked.is_err(), "the client gave up first");
    let left = Instant::now();
    while !closed.load(Ordering::SeqCst) {
        assert!(
            left.elapsed() < Duration::from_secs(10),
            "the upstream count stayed open after the client left"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    front.shutdown().await;
}
