//! Errors in each API's own shape, produced before any streaming starts.
//!
//! - OpenAI: `{"error": {"message", "type", "param", "code"}}`.
//! - Anthropic: `{"type": "error", "error": {"type", "message"}}`; the
//!   parameter path leads the message, since the shape has no field for it.
//!
//! Messages name fields, ids and limits, never the conversation's content.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::agent::{RejectKind, RunRejected};

pub use crate::agent::quoted;

/// Which API's error shape to answer in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI (chat completions, responses, models).
    OpenAi,
    /// Anthropic (messages).
    Anthropic,
}

/// A refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code (thinkwire's, e.g. `SEALED_REASONING_REJECTED`).
    pub code: String,
    /// What is wrong; never quotes the conversation.
    pub message: String,
    /// The request parameter at fault, as a path (`messages[2].content`).
    pub param: Option<String>,
    /// A 429's `Retry-After`, in seconds.
    pub retry_after_secs: u64,
}

impl ApiError {
    /// A 400 about `param`.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_request".into(),
            message: message.into(),
            param: Some(param.into()),
            retry_after_secs: 1,
        }
    }

    /// A 400 without a parameter (the body is not JSON, ...).
    pub fn malformed(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_json".into(),
            message: message.into(),
            param: None,
            retry_after_secs: 1,
        }
    }

    /// A 404 for a path this server does not serve.
    pub fn not_found(path: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "not_found".into(),
            message: format!("no endpoint at {path}"),
            param: None,
            retry_after_secs: 1,
        }
    }

    /// A 500 for a run that failed on our side after it was accepted — a
    /// 503 when the server's shutdown stopped it (retry elsewhere).
    pub fn server(code: &str, message: &str) -> Self {
        Self {
            status: if code == "SERVER_SHUTTING_DOWN" {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            },
            code: code.to_owned(),
            message: message.to_owned(),
            param: None,
            retry_after_secs: 1,
        }
    }

    /// A run refused by the agent, its AG-UI path already translated to
    /// the wire's (`param`).
    pub fn rejected(rejected: RunRejected, param: Option<String>) -> Self {
        let status = match rejected.kind {
            RejectKind::Malformed | RejectKind::Unprocessable => StatusCode::BAD_REQUEST,
            RejectKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            // Capacity refusals (`SERVER_BUSY`) are 429s on every surface.
            _ if rejected.code == "SERVER_BUSY" => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        Self {
            status,
            code: rejected.code.to_owned(),
            retry_after_secs: rejected.retry_after_secs(),
            message: rejected.message,
            param,
        }
    }

    /// The OpenAI error type of this status.
    fn openai_type(&self) -> &'static str {
        match self.status.as_u16() {
            // OpenAI answers a bad key with a 401 of this type too.
            400 | 401 | 404 | 413 | 422 => "invalid_request_error",
            429 => "rate_limit_error",
            503 => "service_unavailable_error",
            _ => "server_error",
        }
    }

    /// The Anthropic error type of this status.
    fn anthropic_type(&self) -> &'static str {
        match self.status.as_u16() {
            400 | 422 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            503 => "overloaded_error",
            _ => "api_error",
        }
    }

    /// The error body in `dialect`'s shape.
    pub fn body(&self, dialect: Dialect) -> Value {
        match dialect {
            Dialect::OpenAi => json!({
                "error": {
                    "message": self.message,
                    "type": self.openai_type(),
                    "param": self.param,
                    "code": self.code,
                }
            }),
            Dialect::Anthropic => {
                let message = match &self.param {
                    Some(param) => format!("{param}: {}", self.message),
                    None => self.message.clone(),
                };
                json!({
                    "type": "error",
                    "error": { "type": self.anthropic_type(), "message": message },
                })
            }
        }
    }

    /// The response in `dialect`'s shape.
    pub fn response(self, dialect: Dialect) -> Response {
        // The code and the parameter's path only: the message may name ids,
        // and nothing of the request's content belongs in a log.
        tracing::info!(
            status = self.status.as_u16(),
            code = %self.code,
            param = crate::server::rejection::logged_path(self.param.as_deref().unwrap_or("")),
            "v1 request refused"
        );
        let mut response = (self.status, Json(self.body(dialect))).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(self.retry_after_secs),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::MAX_QUOTED_CHARS;

    #[test]
    fn openai_shape_names_the_param() {
        let body = ApiError::invalid("messages[0].role", "unknown role").body(Dialect::OpenAi);
        assert_eq!(body["error"]["param"], "messages[0].role");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["message"], "unknown role");
    }

    #[test]
    fn a_run_stopped_by_shutdown_is_a_503() {
        assert_eq!(
            ApiError::server("SERVER_SHUTTING_DOWN", "the server is shutting down").status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            ApiError::server("ENGINE_ERROR", "generation failed").status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn client_strings_are_quoted_within_a_bound() {
        assert_eq!(quoted("robot"), "\"robot\"");
        let exact = "a".repeat(MAX_QUOTED_CHARS);
        assert_eq!(quoted(&exact), format!("\"{exact}\""));
        let long = "b".repeat(10_000);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"…", "b".repeat(MAX_QUOTED_CHARS))
        );
        // Cut on a character boundary: 32 two-byte characters kept whole.
        let wide = "é".repeat(40);
        assert_eq!(
            quoted(&wide),
            format!("\"{}\"…", "é".repeat(MAX_QUOTED_CHARS))
        );
        // Four-byte characters, and control characters escaped.
        let emoji = "🦀".repeat(33);
        assert_eq!(
            quoted(&emoji),
            format!("\"{}\"…", "🦀".repeat(MAX_QUOTED_CHARS))
        );
        assert_eq!(quoted("a\nb"), "\"a\\nb\"");
        assert_eq!(quoted(""), "\"\"");
    }

    #[test]
    fn anthropic_shape_leads_with_the_param() {
        let body = ApiError::invalid("max_tokens", "is required").body(Dialect::Anthropic);
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["message"], "max_tokens: is required");
    }
}
