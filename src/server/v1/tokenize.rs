//! `POST /tokenize` and `POST /detokenize`, as llama.cpp's and vLLM's
//! servers answer them: text to the served model's token ids and back,
//! with its own tokenizer. Either server's request is taken (llama.cpp's
//! `content` and `add_special`, `with_pieces`; vLLM's `prompt` and
//! `add_special_tokens`) and the answer holds both's fields (`tokens`;
//! vLLM's `count` and `max_model_len`; `content` and vLLM's `prompt` back
//! from ids). A conversation's prompt is counted by
//! `/v1/messages/count_tokens` and `/v1/responses/input_tokens`, which
//! render it as a run would.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::{ApiError, Dialect};
use super::read_json;
use super::wire::At;
use crate::agent::{LocalModel, RejectKind, RunRejected};
use crate::server::AppState;
use crate::server::admission::WorkError;

/// How many of the model's context lengths one `/tokenize` answer or one
/// `/detokenize` request may hold: room for a document a client measures
/// before cutting it into chunks (vLLM and llama.cpp set no bound), while
/// a body of the size limit (4 MiB of U+007F is about 4M tokens) cannot
/// make an answer of hundreds of contexts.
const CONTEXTS_PER_REQUEST: usize = 32;

/// The most tokens one request may hold for a model of `context_length`.
fn token_limit(context_length: usize) -> usize {
    context_length.max(1).saturating_mul(CONTEXTS_PER_REQUEST)
}

/// `count` tokens at `field`, refused past [`token_limit`] naming the
/// field and the limit.
fn within_limit(field: &str, count: usize, context_length: usize) -> Result<(), ApiError> {
    let limit = token_limit(context_length);
    if count <= limit {
        return Ok(());
    }
    Err(ApiError::invalid(
        field,
        format!(
            "holds {count} tokens, more than the {limit} one request may hold \
             ({CONTEXTS_PER_REQUEST} times the model's context length of {context_length})"
        ),
    ))
}

pub(in crate::server) async fn tokenize(State(state): State<AppState>, body: Body) -> Response {
    let answer = async {
        let body = read_json(&state, body).await?;
        let asked = Tokenize::decode(&body)?;
        off_workers(&state, move |model, gone| asked.answer(model, gone)).await
    };
    match answer.await {
        Ok(answer) => json_response(answer),
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
        // Counted before the ids are read: reading builds a path per id.
        let context_length = local(state.agent.model())?.context_length();
        if let Some(ids) = field.value.and_then(Value::as_array) {
            within_limit("tokens", ids.len(), context_length)?;
        }
        let ids = field.token_ids()?;
        off_workers(&state, move |model, _| {
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
/// At most `AppState::tokenizing` at once; `work` holds its slot until it
/// ends, and is told (`gone`) when its client has left.
async fn off_workers<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&LocalModel, &CancellationToken) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    // An upstream has no tokenizer here: refused without taking a slot.
    local(state.agent.model())?;
    let agent = Arc::clone(&state.agent);
    let done = state.tokenizing.run(move |gone| {
        if gone.is_cancelled() {
            return Err(client_left());
        }
        work(local(agent.model())?, gone)
    });
    match done.await {
        Ok(answer) => answer,
        Err(WorkError::Busy) => {
            let limit = state.tokenizing.limit();
            tracing::info!(
                limit,
                "tokenizer request refused: the server is tokenizing its most"
            );
            state.agent.metrics().request_refused("SERVER_BUSY");
            let busy = RunRejected::new(
                RejectKind::Busy,
                "SERVER_BUSY",
                format!(
                    "the server is tokenizing {limit} requests at once, its most; retry shortly"
                ),
            );
            Err(ApiError::rejected(busy, None))
        }
        Err(WorkError::Failed) => {
            tracing::error!("tokenizer work panicked");
            Err(ApiError::server("INTERNAL_ERROR", "the tokenizer failed"))
        }
    }
}

/// What work whose client left ends with; nobody reads it.
fn client_left() -> ApiError {
    ApiError::server("INTERNAL_ERROR", "the client left")
}

/// A JSON body serialized already.
fn json_response(body: Vec<u8>) -> Response {
    let mut response = Body::from(body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
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

    /// The answer's JSON: refused past [`token_limit`] before anything is
    /// built per token.
    fn answer(self, model: &LocalModel, gone: &CancellationToken) -> Result<Vec<u8>, ApiError> {
        let encoded = match self.add_special {
            true => model.encode_raw(&self.text),
            false => model.encode(&self.text),
        };
        let ids =
            encoded.map_err(|_| ApiError::invalid(self.field, "the tokenizer cannot encode it"))?;
        within_limit(self.field, ids.len(), model.context_length())?;
        let answer = Answer {
            tokens: Tokens {
                ids: &ids,
                pieces: self.with_pieces.then_some(model),
                gone,
            },
            count: ids.len(),
            max_model_len: model.context_length(),
        };
        // Only a client that left stops it (`Tokens`); the answer is
        // dropped unread then.
        serde_json::to_vec(&answer).map_err(|_| client_left())
    }
}

/// `/tokenize`'s answer, in both servers' fields.
#[derive(Serialize)]
struct Answer<'a> {
    tokens: Tokens<'a>,
    count: usize,
    max_model_len: usize,
}

/// The answer's `tokens`, written straight into the body: a `Value` per
/// token (an object per piece) would cost hundreds of bytes each.
struct Tokens<'a> {
    ids: &'a [u32],
    /// llama.cpp's `{id, piece}` objects, each piece this model's.
    pieces: Option<&'a LocalModel>,
    /// Cancelled when the client left: no more pieces are looked up.
    gone: &'a CancellationToken,
}

impl Serialize for Tokens<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.ids.len()))?;
        for &id in self.ids {
            let Some(model) = self.pieces else {
                seq.serialize_element(&id)?;
                continue;
            };
            if self.gone.is_cancelled() {
                return Err(<S::Error as serde::ser::Error>::custom("the client left"));
            }
            let (_, bytes) = model.token_piece(id);
            let piece = match String::from_utf8(bytes) {
                Ok(text) => Piece::Text(text),
                Err(err) => Piece::Bytes(err.into_bytes()),
            };
            seq.serialize_element(&TokenPiece { id, piece })?;
        }
        seq.end()
    }
}

/// One of llama.cpp's `with_pieces` tokens.
#[derive(Serialize)]
struct TokenPiece {
    id: u32,
    piece: Piece,
}

/// A token's text, or its bytes where they are not whole UTF-8.
#[derive(Serialize)]
#[serde(untagged)]
enum Piece {
    Text(String),
    Bytes(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_thirty_two_contexts_and_never_zero() {
        assert_eq!(token_limit(4096), 131_072);
        assert_eq!(token_limit(40_960), 1_310_720);
        assert_eq!(token_limit(0), CONTEXTS_PER_REQUEST);
        assert_eq!(token_limit(usize::MAX), usize::MAX);
    }

    #[test]
    fn counts_past_the_limit_are_refused_naming_the_field_and_the_limit() {
        assert!(within_limit("content", 0, 4096).is_ok());
        assert!(within_limit("content", 131_072, 4096).is_ok());
        for field in ["content", "prompt", "tokens"] {
            let refused = within_limit(field, 131_073, 4096).unwrap_err();
            assert_eq!(refused.status, axum::http::StatusCode::BAD_REQUEST);
            assert_eq!(refused.param.as_deref(), Some(field));
            assert!(
                refused.message.contains("131073 tokens"),
                "{}",
                refused.message
            );
            assert!(
                refused.message.contains("the 131072 one request"),
                "{}",
                refused.message
            );
            assert!(
                refused.message.contains("context length of 4096"),
                "{}",
                refused.message
            );
        }
    }

    #[test]
    fn tokens_serialize_as_bare_ids_without_pieces() {
        let gone = CancellationToken::new();
        let answer = Answer {
            tokens: Tokens {
                ids: &[3, 1, 4],
                pieces: None,
                gone: &gone,
            },
            count: 3,
            max_model_len: 8,
        };
        let body: Value = serde_json::from_slice(&serde_json::to_vec(&answer).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"tokens": [3, 1, 4], "count": 3, "max_model_len": 8})
        );
    }

    #[test]
    fn pieces_serialize_as_text_or_bytes() {
        let text = serde_json::to_value(TokenPiece {
            id: 7,
            piece: Piece::Text("hi".into()),
        })
        .unwrap();
        assert_eq!(text, json!({"id": 7, "piece": "hi"}));
        let bytes = serde_json::to_value(TokenPiece {
            id: 8,
            piece: Piece::Bytes(vec![0xE2, 0x82]),
        })
        .unwrap();
        assert_eq!(bytes, json!({"id": 8, "piece": [226, 130]}));
    }

    #[test]
    fn a_body_is_answered_as_json() {
        let response = json_response(b"{}".to_vec());
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }
}
