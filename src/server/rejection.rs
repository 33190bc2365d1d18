//! How a request that cannot start a run is answered over HTTP: a status and
//! a JSON body naming the problem, never echoing the request's content.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::agent::{RejectKind, RunRejected};

/// A refusal's path as a log may show it: the request's field, without
/// the pointer after it into the client's own document (a schema's
/// property names, a pattern key are the client's content).
pub(crate) fn logged_path(path: &str) -> &str {
    path.split_once('/').map_or(path, |(field, _)| field)
}

/// A request refused before `RUN_STARTED`.
#[derive(Debug)]
pub struct Rejection {
    status: StatusCode,
    code: &'static str,
    message: String,
    path: Option<String>,
    /// A 429's `Retry-After`, in seconds.
    retry_after_secs: u64,
}

impl Rejection {
    /// A refusal with `status`, `code` and a message that quotes nothing
    /// the client sent.
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            path: None,
            retry_after_secs: 1,
        }
    }

    /// The refusal blamed on the request field `path`.
    pub(crate) fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The body was not `application/json`.
    pub fn unsupported_media_type() -> Self {
        Self {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "UNSUPPORTED_MEDIA_TYPE",
            message: "send the RunAgentInput as Content-Type: application/json".into(),
            path: None,
            retry_after_secs: 1,
        }
    }
}

impl From<RunRejected> for Rejection {
    fn from(rejected: RunRejected) -> Self {
        let status = match rejected.kind {
            RejectKind::Malformed => StatusCode::BAD_REQUEST,
            RejectKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RejectKind::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
            RejectKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            RejectKind::Busy => StatusCode::TOO_MANY_REQUESTS,
        };
        Self {
            status,
            code: rejected.code,
            retry_after_secs: rejected.retry_after_secs(),
            message: rejected.message,
            path: rejected.path,
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let mut error = serde_json::json!({ "code": self.code, "message": self.message });
        if let Some(path) = self.path {
            error["path"] = serde_json::Value::String(path);
        }
        let mut response =
            (self.status, Json(serde_json::json!({ "error": error }))).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            // Runs take seconds; a client retrying sooner only adds load.
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
    use super::logged_path;

    #[test]
    fn a_logged_path_stops_where_the_clients_document_starts() {
        assert_eq!(
            logged_path("forwardedProps.responseFormat.schema/properties/ssn/pattern"),
            "forwardedProps.responseFormat.schema"
        );
        assert_eq!(logged_path("messages[2].content"), "messages[2].content");
        assert_eq!(logged_path(""), "");
    }
}
