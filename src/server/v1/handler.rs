//! The one `/v1` handler: read the body under the server's limits, decode
//! the wire request, start its run (a run per choice when chat asks for
//! `n`), then answer it whole or stream it in
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
use futures_util::future::try_join_all;
use futures_util::stream::{self, BoxStream, SelectAll, StreamExt, select_all};
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

/// What one API makes of a run, or of the runs of several choices (chat's
/// `n`; the other APIs write one).
pub trait Surface: Send + 'static {
    /// The `data:` that ends a stream after its last event (`[DONE]`).
    const DONE: Option<&'static str> = None;

    /// Every run of the request was admitted: the prompt each starts
    /// from, in choice order, where it is known before the run (a local
    /// model's prepared prompt; not an upstream's). Before [`Self::opening`].
    fn admitted(&mut self, _prompt_tokens: &[Option<usize>]) {}

    /// Events before the first piece of any choice.
    fn opening(&mut self) -> Vec<SdkEvent> {
        Vec::new()
    }

    /// The events `piece` of choice `choice` becomes on the stream.
    fn map(&mut self, choice: usize, piece: RunStep) -> Vec<SdkEvent>;

    /// Events after every choice finished.
    fn closing(&mut self) -> Vec<SdkEvent> {
        Vec::new()
    }

    /// The whole answer of a request that does not stream: each choice's
    /// pieces in order, the last one ending it.
    fn answer(self, choices: Vec<Vec<RunStep>>) -> Result<Value, ApiError>;
}

/// The pieces of the one choice of an API that writes one.
pub fn only(choices: Vec<Vec<RunStep>>) -> Vec<RunStep> {
    choices.into_iter().next().unwrap_or_default()
}

/// A decoded request, ready to run.
pub struct Start<S> {
    /// The runs' inputs: one, or one per prompt of a completions request
    /// that sends several.
    pub inputs: Vec<RunInput>,
    /// How many answers to each to write, each a run of its own: the
    /// answer `j` to input `i` is choice `i * choices + j`.
    pub choices: usize,
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
        inputs,
        choices,
        stops,
        stream,
        mut surface,
    } = decode(&body, &state)?;
    let mut admitted = Vec::with_capacity(inputs.len() * choices);
    // The prompts of the runs admitted so far, queued ahead of the next.
    let mut ahead = Vec::with_capacity(inputs.len() * choices);
    for input in &inputs {
        // Several choices draw from seeds of their own: the client's, or
        // one picked here, counted up from it (each input's the same).
        let base = (choices > 1).then(|| input.seed().unwrap_or_else(random_seed));
        let first = admitted.len();
        for choice in 0..choices as u64 {
            let seed = base.map(|base| base.wrapping_add(choice));
            // A refusal of any choice refuses the request before any run
            // starts: the places already taken are given back as dropped.
            // The first choice is prepared; the others are it, reseeded.
            let run = match (admitted.get(first), seed) {
                (Some(prepared), Some(seed)) => {
                    input.admit_sibling(&state, client, prepared, seed, &ahead)?
                }
                _ => input.admit(&state, client, seed, &ahead).await?,
            };
            ahead.extend(run.prompt_tokens());
            admitted.push(run);
        }
    }
    let prompts: Vec<Option<usize>> = admitted.iter().map(|run| run.prompt_tokens()).collect();
    surface.admitted(&prompts);
    let mut runs: Vec<_> = (admitted.into_iter())
        .map(|run| RunPieces::new(run.launch(&state), stops.clone()))
        .collect();
    let choices = runs.len();
    if !stream {
        let all = try_join_all(runs.iter_mut().map(whole)).await?;
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
        let mut pieces = merged(runs);
        let mut open = choices;
        while let Some((choice, piece)) = next_piece(&mut pieces, &out, keepalive).await {
            let failed = matches!(piece, RunStep::Failed { .. });
            open -= usize::from(piece.is_last());
            for event in surface.map(choice, piece) {
                if out.send(&event).await.is_err() {
                    // Dropping the runs stops the engine within one step.
                    return;
                }
            }
            if failed {
                // The SDKs raise at an error: no choice goes on after it.
                break;
            }
            if open == 0 {
                for event in surface.closing() {
                    if out.send(&event).await.is_err() {
                        return;
                    }
                }
                break;
            }
        }
        if let Some(done) = S::DONE {
            let _ = out.raw(sse_frame_named(None, done)).await;
        }
    });
    Ok(response)
}

/// A seed for choices the client gave none.
fn random_seed() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

/// Every piece of `run`, or its failure as the API's error.
async fn whole(run: &mut RunPieces) -> Result<Vec<RunStep>, ApiError> {
    let all = run.drain().await;
    match all.last() {
        Some(RunStep::Failed { code, message }) => Err(ApiError::server(code, message)),
        _ => Ok(all),
    }
}

/// The pieces of every choice as they come, each with its choice's index;
/// a choice's stream ends after its last piece.
fn merged(runs: Vec<RunPieces>) -> SelectAll<BoxStream<'static, (usize, RunStep)>> {
    select_all(runs.into_iter().enumerate().map(|(choice, run)| {
        stream::unfold(Some(run), move |run| async move {
            let mut run = run?;
            let piece = run.next().await;
            let rest = (!piece.is_last()).then_some(run);
            Some(((choice, piece), rest))
        })
        .boxed()
    }))
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

/// The next piece of any choice, sending `: keepalive` comments to `out`
/// while it takes longer than `every`; `None` when the client is gone.
async fn next_piece(
    pieces: &mut SelectAll<BoxStream<'static, (usize, RunStep)>>,
    out: &SseSender,
    every: Duration,
) -> Option<(usize, RunStep)> {
    loop {
        match tokio::time::timeout(every, pieces.next()).await {
            Ok(piece) => return piece,
            Err(_) => out.raw(SSE_KEEPALIVE.into()).await.ok()?,
        }
    }
}
