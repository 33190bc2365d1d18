//! A stand-in provider for the upstream adapters' tests: a local axum
//! server that answers its N-th request at one path with the N-th
//! recorded stream (`tests/upstream/*.sse`) and keeps every request's
//! headers and body for the test to read.

use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::Value;

/// Each request the provider saw: its headers and JSON body, in order.
pub type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// The recorded stream `tests/upstream/NAME`.
pub fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstream")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Serves `POST {route}` (under `/v1`), request N answered with
/// `streams[N]` as an event stream (an empty one past the last); returns
/// the base URL (`http://…/v1`) and what it saw.
pub async fn provider(route: &'static str, streams: Vec<String>) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let router = axum::Router::new().route(
        route,
        post(
            move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
                let log = Arc::clone(&log);
                let streams = streams.clone();
                async move {
                    let n = {
                        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                        log.push((headers, body));
                        log.len() - 1
                    };
                    let stream = streams.get(n).cloned().unwrap_or_default();
                    ([("content-type", "text/event-stream")], stream).into_response()
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{addr}/v1"), seen)
}
