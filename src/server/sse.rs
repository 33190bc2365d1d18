//! `POST /agent`: one run per request, answered as `text/event-stream` with
//! LF-only `data: {json}\n\n` frames and `: keepalive` comments while the
//! model is busy (a long prefill sends nothing for seconds). The bytes are
//! the protocol crate's framing; events arrive here already encoded.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use thinkwire_protocol::{SSE_KEEPALIVE, sse_frame_json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::AppState;
use super::limits::{Client, read_body};
use super::rejection::Rejection;
use super::run;
use crate::agent::RunRejected;
use crate::metrics::Transport;

pub(super) async fn post_agent(
    State(state): State<AppState>,
    client: Client,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejection> {
    if !is_json(&headers) {
        return Err(Rejection::unsupported_media_type());
    }
    let body = read_body(&state, body).await?;
    let mut active = run::start(&state, client, body).await?;

    let keepalive = state.config.keepalive;
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    let open = state.agent.metrics().connection_opened(Transport::Sse);
    tokio::spawn(async move {
        let _open = open;
        loop {
            let next = tokio::time::timeout(keepalive, active.frames.recv()).await;
            let (bytes, ended) = match next {
                Ok(Some(frame)) => (Bytes::from(sse_frame_json(&frame.json)), frame.terminal),
                Ok(None) => {
                    // The run ended without a terminal event: only a crashed
                    // run thread does that. Say so rather than hang.
                    let frame =
                        RunRejected::internal("the run ended unexpectedly").run_error_frame();
                    (Bytes::from(sse_frame_json(&frame.json)), true)
                }
                Err(_) => (Bytes::from_static(SSE_KEEPALIVE.as_bytes()), false),
            };
            if tx.send(Ok(bytes)).await.is_err() || ended {
                break;
            }
        }
        // Dropping `active.frames` here tells a still-running agent the
        // client is gone; it stops the engine within one step.
    });

    let mut response = Body::from_stream(ReceiverStream::new(rx)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}
