//! Why a run could not start. Produced before `RUN_STARTED`, so a transport
//! can still answer with an HTTP status (SSE) or a lone `RUN_ERROR`
//! (WebSocket). Messages name fields, ids and limits, never user content.

use std::time::Duration;

use super::output::Frame;

/// The most characters of a client's string (a `role`, a block `type`, a
/// tool's name) that an error message quotes: enough to recognize it,
/// never a way to make a refusal as large as the body that caused it.
pub const MAX_QUOTED_CHARS: usize = 32;

/// `s` quoted for an error message: its first [`MAX_QUOTED_CHARS`]
/// characters (cut on a character boundary), escaped as Rust writes a
/// string, with `…` after the closing quote when it was cut.
pub fn quoted(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{:?}…", &s[..cut]),
        None => format!("{s:?}"),
    }
}
/// The class of a rejection, which transports map to a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectKind {
    /// Not JSON, or not a `RunAgentInput` (HTTP 400).
    Malformed,
    /// Over a size limit (HTTP 413).
    TooLarge,
    /// Well-formed but unusable: a sealed value that does not open, a prompt
    /// longer than the context, a control the server does not allow (422).
    Unprocessable,
    /// The server cannot run it now (503).
    Unavailable,
    /// The server is at capacity; retry shortly (429 with `Retry-After`).
    Busy,
}

/// A run refused before it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRejected {
    /// Status class.
    pub kind: RejectKind,
    /// Stable machine-readable code, also the `RUN_ERROR.code`.
    pub code: &'static str,
    /// Human-readable reason; never contains prompt, answer or reasoning.
    pub message: String,
    /// JSON path of the offending input field, when there is one.
    pub path: Option<String>,
    /// When a capacity refusal's client may try again (`Retry-After`);
    /// `None`: one second.
    pub retry_after: Option<Duration>,
}

impl RunRejected {
    /// A rejection of `kind` with `code` and `message`.
    pub fn new(kind: RejectKind, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            code,
            message: message.into(),
            path: None,
            retry_after: None,
        }
    }

    /// Points the rejection at an input field.
    #[must_use]
    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Input over the byte limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            RejectKind::TooLarge,
            "INPUT_TOO_LARGE",
            format!("the input exceeds the limit of {limit} bytes"),
        )
    }

    /// A binary WebSocket frame, where a text frame holding JSON is expected.
    pub fn binary_frame() -> Self {
        Self::new(
            RejectKind::Malformed,
            "BINARY_FRAME",
            "send the RunAgentInput as a text frame holding JSON",
        )
    }

    /// Every place for a run is taken (`serve --max-batch` + `--max-queued`).
    pub fn busy(limit: usize) -> Self {
        Self::new(
            RejectKind::Busy,
            "SERVER_BUSY",
            format!(
                "the server is at capacity ({limit} runs in progress or waiting); retry shortly"
            ),
        )
    }

    /// The prompts queued ahead would hold this one for about `wait`,
    /// longer than the server's `limit` (`serve --max-queue-wait`).
    pub fn overloaded(wait: Duration, limit: Duration) -> Self {
        let mut rejected = Self::new(
            RejectKind::Busy,
            "SERVER_BUSY",
            format!(
                "the server is overloaded: this run would wait about {:.0} s for the prompts queued \
                 ahead of it, more than its limit of {:.0} s; retry later",
                wait.as_secs_f64().ceil(),
                limit.as_secs_f64()
            ),
        );
        rejected.retry_after = Some(wait);
        rejected
    }

    /// `Retry-After`'s value: whole seconds, at least one.
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after
            .map_or(1, |wait| wait.as_secs_f64().ceil().max(1.0) as u64)
    }

    /// The server is shutting down and starts no more runs.
    pub fn shutting_down() -> Self {
        Self::new(
            RejectKind::Unavailable,
            "SERVER_SHUTTING_DOWN",
            "the server is shutting down; retry on another instance or after it restarts",
        )
    }

    /// Something on our side failed; details go to the log, not the client.
    pub fn internal(message: &str) -> Self {
        Self::new(RejectKind::Unavailable, "INTERNAL_ERROR", message)
    }

    /// The `RUN_ERROR` event a socket client gets instead of an HTTP status.
    pub fn run_error_frame(&self) -> Frame {
        let message = match &self.path {
            Some(path) => format!("{} (at {path})", self.message),
            None => self.message.clone(),
        };
        Frame::run_error(&message, self.code)
    }
}
