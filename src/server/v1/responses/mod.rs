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
use axum::response::Response;
use serde_json::Value;

use super::error::{ApiError, Dialect};
use super::events::RunStep;
use super::handler::{SdkEvent, Start, Surface, only, serve};
use super::unix_now;
use crate::server::AppState;
use crate::server::limits::Client;
use output::Builder;

/// An `input_tokens` body (a Responses request) as the run's input.
pub(super) fn counted_input(
    body: &Value,
    agent: &crate::agent::Agent,
) -> Result<super::bridge::RunInput, ApiError> {
    Ok(request::decode(body, agent)?.input)
}

pub(in crate::server) async fn create(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    serve(state, client, body, Dialect::OpenAi, |body, state| {
        let request = request::decode(body, &state.agent)?;
        let builder = Builder::new(
            format!("resp_{}", uuid::Uuid::new_v4().simple()),
            request
                .model
                .unwrap_or_else(|| state.agent.model_id().to_owned()),
            unix_now(),
            request.visibility,
            request.include_encrypted,
        );
        Ok(Start {
            inputs: vec![request.input],
            choices: 1,
            // Responses has no stop sequences.
            stops: Vec::new(),
            stream: request.stream,
            surface: builder,
        })
    })
    .await
}

fn named(events: output::Events) -> Vec<SdkEvent> {
    events
        .into_iter()
        .map(|(name, event)| (Some(name), event))
        .collect()
}

impl Surface for Builder {
    fn opening(&mut self) -> Vec<SdkEvent> {
        named(self.start())
    }

    fn map(&mut self, _choice: usize, piece: RunStep) -> Vec<SdkEvent> {
        named(Builder::map(self, piece))
    }

    fn answer(mut self, choices: Vec<Vec<RunStep>>) -> Result<Value, ApiError> {
        for piece in only(choices) {
            Builder::map(&mut self, piece);
        }
        match self.failure() {
            Some((code, message)) => Err(ApiError::server(code, message)),
            None => Ok(self.response(self.final_status())),
        }
    }
}
