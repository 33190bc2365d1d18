//! The `/v1` request decoders as their handlers run them, for the fuzz
//! targets in `fuzz/` (feature `fuzzing`, never in a release build).
//!
//! Each handler reads JSON, decodes its wire request, builds the AG-UI run
//! input and has the agent prepare it; a refusal is an [`ApiError`] whose
//! status must be a 4xx. This runs the same steps without a socket or a
//! run: everything up to `RUN_STARTED`.
//!
//! ```ignore
//! let refused = thinkwire::server::fuzzing::prepare(Api::Messages, body, &agent);
//! assert!(refused.is_none_or(|r| r.status < 500));
//! ```

use serde_json::Value;

use super::error::ApiError;
use super::{chat, messages, responses};
use crate::agent::Agent;

/// Which wire API a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/chat/completions`.
    ChatCompletions,
    /// `POST /v1/responses`.
    Responses,
    /// `POST /v1/messages`.
    Messages,
}

/// A refusal as the client would get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status.
    pub status: u16,
    /// The error code.
    pub code: String,
    /// The wire parameter named, if any.
    pub param: Option<String>,
}

impl From<ApiError> for Refusal {
    fn from(err: ApiError) -> Self {
        Self {
            status: err.status.as_u16(),
            code: err.code,
            param: err.param,
        }
    }
}

/// Decodes `body` for `api` and prepares the run it asks for; `None` when
/// the run would start.
pub fn prepare(api: Api, body: &[u8], agent: &Agent) -> Option<Refusal> {
    let body: Value = match serde_json::from_slice(body) {
        Ok(body) => body,
        Err(_) => return Some(ApiError::malformed("the body is not valid JSON").into()),
    };
    let input = match api {
        Api::ChatCompletions => chat::decode(&body).map(|r| r.input),
        Api::Responses => responses::decode(&body, agent).map(|r| r.input),
        Api::Messages => messages::decode(&body, agent).map(|r| r.input),
    };
    let input = match input {
        Ok(input) => input,
        Err(err) => return Some(err.into()),
    };
    agent
        .prepare_input(input.to_input("run-fuzz", None))
        .err()
        .map(|rejected| input.refusal(rejected).into())
}
