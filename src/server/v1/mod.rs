//! The OpenAI- and Anthropic-compatible surfaces (issue #12): thin codecs
//! over the same run as AG-UI.
//!
//! Each surface decodes its wire request (refusals name the parameter, in
//! the API's error shape, before anything streams), builds the AG-UI
//! `RunAgentInput` ([`bridge::RunInput`]), starts it through the same path
//! as `POST /agent`, and maps the run's typed events ([`events::RunStep`])
//! onto its wire stream. Sealed reasoning travels in each API's own field
//! as one carrier string ([`carrier`]).
//!
//! | route | module |
//! |---|---|
//! | `GET /v1/models` | here |
//! | `POST /v1/chat/completions` | [`chat`] |
//! | `POST /v1/completions` | [`completions`] (a raw prompt, no template) |
//! | `POST /v1/responses` | [`responses`] |
//! | `POST /v1/messages` | [`messages`] |
//! | `POST /v1/messages/count_tokens`, `POST /v1/responses/input_tokens` | [`count`] |
//! | `POST /tokenize`, `POST /detokenize` (llama.cpp's and vLLM's) | [`tokenize`] |
//! | anything else under `/v1` | a JSON 404 in the API's error shape |

mod bridge;
mod carrier;
mod chat;
mod completions;
mod content;
mod count;
mod error;
mod events;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handler;
mod messages;
mod responses;
mod tokenize;
mod wire;
mod wire_path;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};

pub use error::{ApiError, Dialect};

use super::AppState;

/// Which chat completions field(s) carry reasoning text out. Both are read
/// on input whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningField {
    /// `reasoning` and `reasoning_content` (the default: every client that
    /// reads either finds it).
    #[default]
    Both,
    /// `reasoning` only (vLLM, Ollama, mlx-lm).
    Reasoning,
    /// `reasoning_content` only (llama.cpp, SGLang, DeepSeek).
    ReasoningContent,
}

impl ReasoningField {
    /// Parses `both`, `reasoning` or `reasoning_content`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "both" => Some(Self::Both),
            "reasoning" => Some(Self::Reasoning),
            "reasoning_content" => Some(Self::ReasoningContent),
            _ => None,
        }
    }

    /// The field names written.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Self::Both => &["reasoning", "reasoning_content"],
            Self::Reasoning => &["reasoning"],
            Self::ReasoningContent => &["reasoning_content"],
        }
    }
}

/// The `/v1` routes, merged into the server's router.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/tokenize", post(tokenize::tokenize))
        .route("/detokenize", post(tokenize::detokenize))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/completions", post(completions::create))
        .route("/v1/responses", post(responses::create))
        .route(
            "/v1/responses/input_tokens",
            post(count::responses_input_tokens),
        )
        .route("/v1/messages", post(messages::create))
        .route(
            "/v1/messages/count_tokens",
            post(count::messages_count_tokens),
        )
        .route("/v1", any(not_found))
        .route("/v1/", any(not_found))
        .route("/v1/{*rest}", any(not_found))
}

fn model_object(state: &AppState) -> Value {
    json!({
        "id": state.agent.model_id(),
        "object": "model",
        "created": 0,
        "owned_by": "thinkwire",
    })
}

async fn models(State(state): State<AppState>) -> axum::Json<Value> {
    axum::Json(json!({ "object": "list", "data": [model_object(&state)] }))
}

async fn model(
    State(state): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    if id == state.agent.model_id() {
        return axum::Json(model_object(&state)).into_response();
    }
    let mut err = ApiError::not_found("/v1/models/{id}");
    err.message = "this server serves one model; GET /v1/models names it".into();
    err.code = "model_not_found".into();
    err.param = Some("model".into());
    err.response(Dialect::OpenAi)
}

async fn not_found(uri: Uri) -> Response {
    let path = uri.path();
    let dialect = if path.starts_with("/v1/messages") {
        Dialect::Anthropic
    } else {
        Dialect::OpenAi
    };
    // The path only (never the query): it is the route, not content.
    ApiError::not_found(path).response(dialect)
}

/// Reads a JSON body under the server's size limit.
async fn read_json(state: &AppState, body: Body) -> Result<Value, ApiError> {
    let bytes = super::limits::read_body(state, body).await?;
    serde_json::from_slice(&bytes).map_err(|err| {
        ApiError::malformed(format!(
            "the body is not valid JSON (line {}, column {})",
            err.line(),
            err.column()
        ))
    })
}

/// Seconds since the epoch, for `created` fields.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
