//! The SSE framing the OpenAI and Anthropic SDKs read: `data:` lines (with
//! an `event:` line for typed streams), `: keepalive` comments while the
//! model is busy, and the run stopped when the client leaves.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::events::{Piece, RunPieces};

/// Sends SSE frames to the client.
pub struct SseSender {
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
}

impl SseSender {
    /// `data: {json}` (with `event: name` when given). `Err` when the
    /// client is gone.
    pub async fn send(&self, event: Option<&str>, data: &Value) -> Result<(), ()> {
        let mut frame = String::new();
        if let Some(event) = event {
            frame.push_str("event: ");
            frame.push_str(event);
            frame.push('\n');
        }
        frame.push_str("data: ");
        frame.push_str(&data.to_string());
        frame.push_str("\n\n");
        self.raw(frame).await
    }

    /// Bytes as they are (`data: [DONE]\n\n`, comments).
    pub async fn raw(&self, frame: String) -> Result<(), ()> {
        self.tx.send(Ok(Bytes::from(frame))).await.map_err(|_| ())
    }
}

/// A streaming response, and the sender that feeds it.
pub fn response() -> (SseSender, Response) {
    let (tx, rx) = mpsc::channel(32);
    let mut response = Body::from_stream(ReceiverStream::new(rx)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    (SseSender { tx }, response)
}

/// The next piece of `run`, sending `: keepalive` comments to `out` while
/// it takes longer than `every`; `None` when the client is gone.
pub async fn next_piece(run: &mut RunPieces, out: &SseSender, every: Duration) -> Option<Piece> {
    loop {
        match tokio::time::timeout(every, run.next()).await {
            Ok(piece) => return Some(piece),
            Err(_) => out.raw(": keepalive\n\n".into()).await.ok()?,
        }
    }
}
