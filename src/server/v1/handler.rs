//! The one `/v1` handler: read the body under the server's limits, decode
//! the wire request, start the run, then answer it whole or stream it in
//! the SSE the OpenAI and Anthropic SDKs read (`data:` frames, an `event:`
//! line on typed streams, `: keepalive` comments while the model is busy),
//! and map refusals to the API's error shape. Each API supplies only its
//! decoder and its [`Surface`]: how pieces become its events and its whole
//! answer.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use thinkwire_protocol::{SSE_KEEPALIVE, sse_frame_named};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::bridge::RunInput;
use super::error::{ApiError, Dialect};
use super::events::{RunPieces, RunStep};
use super::read_json;
use crate::server::AppState;
use crate::server::limits::Client;

/// One event of an SDK stream: its `event:` name on typed streams, and its
/// `data:`.
pub type SdkEvent = (Option<&'static str>, Value);

/// What one API makes of a run.
pub trait Surface: Send + 'static {
    /// The `data:` that ends a stream after its last event (`[DONE]`).
    const DONE: Option<&'static str> = None;

    /// Events before the run's first piece.
    fn opening(&mut self) -> Vec<SdkEvent> {
        Vec::new()
    }

    /// The events `piece` becomes on the stream.
    fn map(&mut self, piece: RunStep) -> Vec<SdkEvent>;

    /// The whole answer of a request that does not stream: the run's
    /// pieces in order, the last one ending it.
    fn answer(self, pieces: Vec<RunStep>) -> Result<Value, ApiError>;
}

/// A decoded request, ready to run.
pub struct Start<S> {
    /// The run's input.
    pub input: RunInput,
    /// Stop sequences on the answer text.
    pub stops: Vec<String>,
    /// Answer as an SSE stream.
    pub stream: bool,
    /// How the answer is written.
    pub surface: S,
}

/// Answers one request: `decode` turns its JSON body into a [`Start`];
/// any refusal is written in `dialect`'s error shape.
pub async fn serve<S: Surface>(
    state: AppState,
    client: Client,
    body: Body,
    dialect: Dialect,
    decode: impl FnOnce(&Value, &AppState) -> Result<Start<S>, ApiError>,
) -> Response {
    match run(state, client, body, decode).await {
        Ok(response) => response,
        Err(err) => err.response(dialect),
    }
}

async fn run<S: Surface>(
    state: AppState,
    client: Client,
    body: Body,
    decode: impl FnOnce(&Value, &AppState) -> Result<Start<S>, ApiError>,
) -> Result<Response, ApiError> {
    let body = read_json(&state, body).await?;
    let Start {
        input,
        stops,
        stream,
        mut surface,
    } = decode(&body, &state)?;
    let run = input.start(&state, client).await?;
    let mut pieces = RunPieces::new(run, stops);
    if !stream {
        let all = pieces.drain().await;
        return Ok(axum::Json(surface.answer(all)?).into_response());
    }
    let (out, response) = sse_response();
    let keepalive = state.config.keepalive;
    tokio::spawn(async move {
        for event in surface.opening() {
            if out.send(&event).await.is_err() {
                return;
            }
        }
        while let Some(piece) = next_piece(&mut pieces, &out, keepalive).await {
            let last = piece.is_last();
            for event in surface.map(piece) {
                if out.send(&event).await.is_err() {
                    // Dropping the run stops the engine within one step.
                    return;
                }
            }
            if last {
                break;
            }
        }
        if let Some(done) = S::DONE {
            let _ = out.raw(sse_frame_named(None, done)).await;
        }
    });
    Ok(response)
}

/// Sends SSE frames to the client.
struct SseSender {
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
}

impl SseSender {
    /// One event, framed by the protocol crate. `Err` when the client is
    /// gone.
    async fn send(&self, (name, data): &SdkEvent) -> Result<(), ()> {
        self.raw(sse_frame_named(*name, &data.to_string())).await
    }

    /// A frame as it is.
    async fn raw(&self, frame: String) -> Result<(), ()> {
        self.tx.send(Ok(Bytes::from(frame))).await.map_err(|_| ())
    }
}

/// A streaming response, and the sender that feeds it.
fn sse_response() -> (SseSender, Response) {
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
async fn next_piece(run: &mut RunPieces, out: &SseSender, every: Duration) -> Option<RunStep> {
    loop {
        match tokio::time::timeout(every, run.next()).await {
            Ok(piece) => return Some(piece),
            Err(_) => out.raw(SSE_KEEPALIVE.into()).await.ok()?,
        }
    }
}
