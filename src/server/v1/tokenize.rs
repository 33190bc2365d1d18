//! `POST /tokenize` and `POST /detokenize`, as llama.cpp's and vLLM's
//! servers answer them: text to the served model's token ids and back,
//! with its own tokenizer. Either server's request is taken (llama.cpp's
//! `content` and `add_special`, `with_pieces`; vLLM's `prompt` and
//! `add_special_tokens`) and the answer holds both's fields (`tokens`;
//! vLLM's `count` and `max_model_len`; `content` and vLLM's `prompt` back
//! from ids). A conversation's prompt is counted by
//! `/v1/messages/count_tokens` and `/v1/responses/input_tokens`, which
//! render it as a run would.

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::error::{ApiError, Dialect};
use super::read_json;
use super::wire::At;
use crate::agent::LocalModel;
use crate::server::AppState;

pub(in crate::server) async fn tokenize(State(state): State<AppState>, body: Body) -> Response {
    let answer = async {
        let body = read_json(&state, body).await?;
        let asked = Tokenize::decode(&body)?;
        off_workers(&state, move |model| asked.answer(model)).await
    };
    match answer.await {
        Ok(answer) => axum::Json(answer).into_response(),
        Err(err) => err.response(Dialect::OpenAi),
    }
}

pub(in crate::server) async fn detokenize(State(state): State<AppState>, body: Body) -> Response {
    let answer = async {
        let body = read_json(&state, body).await?;
        let root = At::root(&body)?;
        let field = root.get("tokens");
        if field.value.is_none() {
            return Err(field.invalid("is required"));
        }
        let ids = field.token_ids()?;
        off_workers(&state, move |model| {
            if let Some((at, message)) = model.unknown_token(&ids) {
                return Err(ApiError::invalid(format!("tokens[{at}]"), message));
            }
            let text = model.decode(&ids).map_err(|_| {
                ApiError::invalid("tokens", "the tokenizer cannot decode these ids")
            })?;
            Ok(json!({ "content": text, "prompt": text }))
        })
        .await
    };
    match answer.await {
        Ok(answer) => axum::Json(answer).into_response(),
        Err(err) => err.response(Dialect::OpenAi),
    }
}

/// `work` with the model's tokenizer, on a blocking thread: encoding a
/// long text or decoding many ids is CPU work, kept off the async workers.
async fn off_workers(
    state: &AppState,
    work: impl FnOnce(&LocalModel) -> Result<Value, ApiError> + Send + 'static,
) -> Result<Value, ApiError> {
    let agent = std::sync::Arc::clone(&state.agent);
    tokio::task::spawn_blocking(move || work(local(agent.model())?))
        .await
        .map_err(|_| ApiError::server("INTERNAL_ERROR", "the tokenizer failed"))?
}

/// The model's tokenizer, or the refusal of a backend without one.
fn local(model: Option<&LocalModel>) -> Result<&LocalModel, ApiError> {
    model.ok_or_else(|| ApiError {
        code: "UNSUPPORTED_TOKENIZE".into(),
        ..ApiError::malformed(
            "this server's backend is an upstream: its tokenizer is the upstream's, not here",
        )
    })
}

/// A `/tokenize` request, in either server's terms.
struct Tokenize {
    text: String,
    /// The request's name for it (`content` or `prompt`).
    field: &'static str,
    /// Add the tokenizer's own beginning (and end) tokens.
    add_special: bool,
    /// Answer `{id, piece}` objects instead of bare ids (llama.cpp's).
    with_pieces: bool,
}

impl Tokenize {
    fn decode(body: &Value) -> Result<Self, ApiError> {
        let root = At::root(body)?;
        if root.get("messages").value.is_some() {
            return Err(root.get("messages").invalid(
                "a conversation's prompt is counted by /v1/messages/count_tokens or /v1/responses/input_tokens, which render it as a run would",
            ));
        }
        // llama.cpp's `content` adds nothing unless asked; vLLM's `prompt`
        // adds the tokenizer's specials unless told not to.
        let (text, field, add_special) = match root.get("content").str()? {
            Some(text) => (
                text,
                "content",
                root.get("add_special").bool()?.unwrap_or(false),
            ),
            None => match root.get("prompt").str()? {
                Some(text) => (
                    text,
                    "prompt",
                    root.get("add_special_tokens").bool()?.unwrap_or(true),
                ),
                None => return Err(root.get("content").invalid("is required (or prompt)")),
            },
        };
        Ok(Self {
            text: text.to_owned(),
            field,
            add_special,
            with_pieces: root.get("with_pieces").bool()?.unwrap_or(false),
        })
    }

    fn answer(self, model: &LocalModel) -> Result<Value, ApiError> {
        let encoded = match self.add_special {
            true => model.encode_raw(&self.text),
            false => model.encode(&self.text),
        };
        let ids =
            encoded.map_err(|_| ApiError::invalid(self.field, "the tokenizer cannot encode it"))?;
        let tokens: Vec<Value> = match self.with_pieces {
            false => ids.iter().map(|&id| json!(id)).collect(),
            true => (ids.iter())
                .map(|&id| {
                    let (_, bytes) = model.token_piece(id);
                    let piece = match String::from_utf8(bytes) {
                        Ok(text) => json!(text),
                        Err(err) => json!(err.into_bytes()),
                    };
                    json!({ "id": id, "piece": piece })
                })
                .collect(),
        };
        Ok(json!({
            "tokens": tokens,
            "count": ids.len(),
            "max_model_len": model.context_length(),
        }))
    }
}
