//! `POST /v1/responses`: OpenAI Responses over the agent's run, for
//! zero-data-retention use (`store: false` only), streaming or not.
//!
//! Output items: a `reasoning` item per reasoning message (its `id` is the
//! AG-UI message id; `encrypted_content` is the sealed carrier when the
//! request includes `reasoning.encrypted_content`; `summary` parts in
//! `summary` visibility, `reasoning_text` content in `full`, neither in
//! `hidden`), a `message` item for the answer, a `function_call` item per
//! tool call. The stream uses OpenAI's event names and order, each event
//! with its `sequence_number`.

mod output;
mod request;

#[cfg(feature = "fuzzing")]
pub(super) use request::decode;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, Dialect};
use super::events::RunPieces;
use super::stop::StopText;
use super::{read_json, sse, unix_now};
use crate::server::AppState;
use crate::server::limits::Client;
use output::Builder;

pub(in crate::server) async fn create(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    match run(state, client, body).await {
        Ok(response) => response,
        Err(err) => err.response(Dialect::OpenAi),
    }
}

async fn run(state: AppState, client: Client, body: Body) -> Result<Response, ApiError> {
    let body = read_json(&state, body).await?;
    let request = request::decode(&body, &state.agent)?;
    let run = request.input.start(&state, client).await?;
    // Responses has no stop sequences.
    let mut active = RunPieces::new(run, StopText::default());
    let mut builder = Builder::new(
        format!("resp_{}", uuid::Uuid::new_v4().simple()),
        request
            .model
            .unwrap_or_else(|| state.agent.model_id().to_owned()),
        unix_now(),
        request.visibility,
        request.include_encrypted,
    );
    if !request.stream {
        loop {
            let piece = active.next().await;
            let last = piece.is_last();
            builder.map(piece);
            if last {
                break;
            }
        }
        return match builder.failure() {
            Some((code, message)) => Err(ApiError::server(code, message)),
            None => Ok(axum::Json(builder.response("completed")).into_response()),
        };
    }
    let (out, response) = sse::response();
    let keepalive = state.config.keepalive;
    tokio::spawn(async move {
        for (name, event) in builder.start() {
            if out.send(Some(name), &event).await.is_err() {
                return;
            }
        }
        while let Some(piece) = sse::next_piece(&mut active, &out, keepalive).await {
            let last = piece.is_last();
            for (name, event) in builder.map(piece) {
                if out.send(Some(name), &event).await.is_err() {
                    // Dropping the run stops the engine within one step.
                    return;
                }
            }
            if last {
                break;
            }
        }
    });
    Ok(response)
}
