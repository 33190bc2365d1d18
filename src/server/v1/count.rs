//! Counting a request's prompt tokens without running it, as the SDKs
//! ask: Anthropic's `POST /v1/messages/count_tokens` (`{input_tokens}`)
//! and OpenAI's `POST /v1/responses/input_tokens` (`{object:
//! "response.input_tokens", input_tokens}`). Each decodes its body as its
//! API's create endpoint does and prepares the run as it would be
//! prepared (the template rendered, tools and sealed reasoning included),
//! so the count is the prompt that run would start from, and a request
//! the run would refuse is refused here the same way.

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::bridge::RunInput;
use super::error::{ApiError, Dialect};
use super::{messages, read_json, responses};
use crate::agent::Agent;
use crate::server::AppState;
use crate::server::limits::Client;

pub(in crate::server) async fn messages_count_tokens(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    let counted = count(&state, client, body, messages::counted_input).await;
    match counted {
        Ok(tokens) => axum::Json(json!({ "input_tokens": tokens })).into_response(),
        Err(err) => err.response(Dialect::Anthropic),
    }
}

pub(in crate::server) async fn responses_input_tokens(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    let counted = count(&state, client, body, responses::counted_input).await;
    match counted {
        Ok(tokens) => {
            let count = json!({ "object": "response.input_tokens", "input_tokens": tokens });
            axum::Json(count).into_response()
        }
        Err(err) => err.response(Dialect::OpenAi),
    }
}

/// The prompt tokens of the run `decode` makes of `body`.
async fn count(
    state: &AppState,
    client: Client,
    body: Body,
    decode: fn(&serde_json::Value, &Agent) -> Result<RunInput, ApiError>,
) -> Result<usize, ApiError> {
    let body = read_json(state, body).await?;
    let input = decode(&body, &state.agent)?;
    input.count(state, client).await
}
