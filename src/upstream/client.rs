//! The HTTP side of an upstream: one streaming request per pass, read from
//! the run's blocking thread a piece at a time, so the run forwards each
//! piece as it comes and notices a client that left within one poll
//! interval. Dropping the stream closes the connection, which is how the
//! upstream learns that the client is gone.

use std::time::{Duration, Instant};

use serde_json::Value;
use thinkwire_reasoning::FormatSpec;
use tokio::runtime::Handle;

use super::completions::{self, CompletionParser, RawRequest};
use super::openai_chat::{self, UpstreamRequest};
use super::{UpstreamConfig, UpstreamError, UpstreamKind, anthropic, openai_responses};

/// How often a waiting read checks whether the client is still there.
const POLL: Duration = Duration::from_millis(20);

/// Most bytes of an error response's body read for its error's type: the
/// `{error: {type, code}}` object comes first; the rest is dropped unread,
/// so a hostile body costs no more than this per attempt.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Most bytes of a token count's answer (`{"input_tokens": N}`); past it
/// the answer is malformed.
const MAX_COUNT_BODY_BYTES: usize = 64 << 10;

/// A configured upstream, shared by every run.
pub struct Upstream {
    config: UpstreamConfig,
    client: reqwest::Client,
    runtime: Handle,
}

impl Upstream {
    /// An upstream whose requests run on `runtime` (the server's).
    pub fn new(config: UpstreamConfig, runtime: Handle) -> Result<Self, UpstreamError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|err| {
                tracing::error!(error = %err, "building the upstream HTTP client");
                UpstreamError::Unavailable("no HTTP client")
            })?;
        Ok(Self {
            config,
            client,
            runtime,
        })
    }

    /// The model the upstream is asked for.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// How its text-level reasoning is recognized.
    pub fn format(&self) -> &FormatSpec {
        &self.config.format
    }

    /// The operator's configuration.
    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// Sends `request` and waits for the response head, retrying (before
    /// any of the stream is read) while the upstream is unreachable or
    /// overloaded. `should_stop` is polled while waiting.
    pub fn open(
        &self,
        request: &UpstreamRequest<'_>,
        call_prefix: String,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<UpstreamStream>, UpstreamError> {
        let model = &self.config.model;
        let base = self.config.url.trim_end_matches('/');
        let (url, body) = match self.config.kind {
            UpstreamKind::OpenAiChat => (
                format!("{base}/chat/completions"),
                openai_chat::request_body(model, request),
            ),
            UpstreamKind::OpenAiResponses => (
                format!("{base}/responses"),
                openai_responses::request_body(model, request),
            ),
            UpstreamKind::Anthropic => (
                format!("{base}/messages"),
                anthropic::request_body(model, request),
            ),
        };
        let parser = || match self.config.kind {
            UpstreamKind::OpenAiChat => Parser::OpenAiChat(Box::new(
                openai_chat::StreamParser::new(&self.config.format, call_prefix.clone())
                    .reporting_logprobs(request.logprobs),
            )),
            UpstreamKind::OpenAiResponses => Parser::Responses(
                openai_responses::StreamParser::new().reporting_logprobs(request.logprobs),
            ),
            UpstreamKind::Anthropic => Parser::Anthropic(anthropic::StreamParser::new()),
        };
        let limit = output_limit(request.max_tokens, request.budget);
        self.open_at(&url, &body, parser, limit, should_stop)
    }

    /// Sends a raw completion (`POST {url}/completions`) as [`open`](Self::open)
    /// sends a conversation (`None`: the run stopped while it waited); an
    /// error where the wire has no raw completions (runs are refused that
    /// when prepared).
    pub fn open_completion(
        &self,
        request: &RawRequest<'_>,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<UpstreamStream>, UpstreamError> {
        if !self.config.kind.has_raw_completions() {
            return Err(UpstreamError::Protocol(
                "this upstream's wire has no raw completions".into(),
            ));
        }
        let base = self.config.url.trim_end_matches('/');
        let url = format!("{base}/completions");
        let body = completions::request_body(&self.config.model, request);
        let parser = || Parser::Completions(CompletionParser::new(request.logprobs));
        let limit = output_limit(request.max_tokens, 0);
        self.open_at(&url, &body, parser, limit, should_stop)
    }

    /// The request of [`open`](Self::open), retried as it says; `parser`
    /// reads the stream of the response that succeeds, which may carry
    /// `output_limit` bytes of output ([`output_limit`]).
    fn open_at(
        &self,
        url: &str,
        body: &Value,
        parser: impl Fn() -> Parser,
        output_limit: usize,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<UpstreamStream>, UpstreamError> {
        let mut attempt = 0;
        loop {
            let deadline = deadline(self.config.output_timeout);
            let builder = self.post(url, body);
            let sent = self.wait_until(deadline, builder.send(), should_stop);
            let err = match sent {
                Waited::Stopped => return Ok(None),
                Waited::TimedOut => UpstreamError::Unavailable("no response in time"),
                Waited::Done(Err(err)) => {
                    tracing::warn!(error = %chain(&err.without_url()), attempt, "upstream request failed");
                    UpstreamError::Unavailable("cannot connect")
                }
                Waited::Done(Ok(response)) if response.status().is_success() => {
                    return Ok(Some(UpstreamStream::new(
                        response,
                        parser(),
                        Timing {
                            idle: self.config.idle_timeout,
                            quiet: self.config.output_timeout,
                            deadline,
                        },
                        self.runtime.clone(),
                        output_limit,
                    )));
                }
                Waited::Done(Ok(response)) => self.refused(response, should_stop),
            };
            let retriable = match &err {
                UpstreamError::Unavailable(_) => true,
                UpstreamError::Refused { status, .. } => *status == 429 || *status >= 500,
                UpstreamError::Protocol(_) => false,
            };
            if !retriable || attempt >= self.config.retries {
                return Err(err);
            }
            attempt += 1;
            let backoff = Duration::from_millis(200 << attempt.min(5));
            // Built inside the runtime: a run thread may not be in its
            // context (`thinkwire chat`).
            let pause = async move { tokio::time::sleep(backoff).await };
            if let Waited::Stopped = self.wait(pause, should_stop) {
                return Ok(None);
            }
        }
    }

    /// The prompt tokens the upstream counts for `request`, asked of its
    /// own counting endpoint (Anthropic's `messages/count_tokens`, OpenAI's
    /// `responses/input_tokens`), once, without retries; `None` for the
    /// chat wire, which has none. `should_stop` (the client left) closes
    /// the request: an error nobody reads.
    pub fn count_input_tokens(
        &self,
        request: &UpstreamRequest<'_>,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<u64>, UpstreamError> {
        let model = &self.config.model;
        let base = self.config.url.trim_end_matches('/');
        let (url, body, fields) = match self.config.kind {
            UpstreamKind::OpenAiChat => return Ok(None),
            UpstreamKind::OpenAiResponses => (
                format!("{base}/responses/input_tokens"),
                openai_responses::request_body(model, request),
                openai_responses::COUNTED_FIELDS,
            ),
            UpstreamKind::Anthropic => (
                format!("{base}/messages/count_tokens"),
                anthropic::request_body(model, request),
                anthropic::COUNTED_FIELDS,
            ),
        };
        // The counting endpoints take the prompt's fields only (Anthropic's
        // refuses `max_tokens` and `stream`).
        let body: serde_json::Map<String, Value> = (body.as_object().into_iter().flatten())
            .filter(|(key, _)| fields.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let deadline = deadline(self.config.output_timeout);
        let sent = self.post(&url, &Value::Object(body)).send();
        let response = match self.wait_until(deadline, sent, should_stop) {
            Waited::Done(Ok(response)) => response,
            Waited::Done(Err(err)) => {
                tracing::warn!(error = %chain(&err.without_url()), "upstream count request failed");
                return Err(UpstreamError::Unavailable("cannot connect"));
            }
            Waited::Stopped => return Err(UpstreamError::Unavailable("the client left")),
            Waited::TimedOut => {
                return Err(UpstreamError::Unavailable("no response in time"));
            }
        };
        if !response.status().is_success() {
            return Err(self.refused(response, should_stop));
        }
        let malformed = || UpstreamError::Protocol("its token count is malformed".into());
        match self.wait_until(
            deadline,
            read_capped(response, MAX_COUNT_BODY_BYTES),
            should_stop,
        ) {
            // A count is a few bytes: one past the bound is no count.
            Waited::Done(Ok(body)) if body.over => Err(UpstreamError::Protocol(
                "its token count is too long".into(),
            )),
            Waited::Done(Ok(body)) => serde_json::from_slice::<Value>(&body.bytes)
                .ok()
                .and_then(|v| v.get("input_tokens").and_then(Value::as_u64))
                .map(Some)
                .ok_or_else(malformed),
            _ => Err(UpstreamError::Unavailable("no response in time")),
        }
    }

    /// A POST of `body` to `url` with the upstream's credentials and, for
    /// Anthropic, its API version.
    fn post(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        let builder = self.client.post(url).json(body);
        match (self.config.kind, &self.config.key) {
            (UpstreamKind::OpenAiChat | UpstreamKind::OpenAiResponses, Some(key)) => {
                builder.bearer_auth(key.expose())
            }
            (UpstreamKind::OpenAiChat | UpstreamKind::OpenAiResponses, None) => builder,
            (UpstreamKind::Anthropic, key) => {
                let builder = builder.header("anthropic-version", anthropic::API_VERSION);
                match key {
                    Some(key) => builder.header("x-api-key", key.expose()),
                    None => builder,
                }
            }
        }
    }

    /// The error of a non-success response: its status and the error's
    /// type or code (never its message, which may quote the conversation).
    /// At most [`MAX_ERROR_BODY_BYTES`] of the body are read.
    fn refused(
        &self,
        response: reqwest::Response,
        should_stop: &dyn Fn() -> bool,
    ) -> UpstreamError {
        let status = response.status();
        let read = self.wait(read_capped(response, MAX_ERROR_BODY_BYTES), should_stop);
        let (kind, cut) = match read {
            Waited::Done(Ok(body)) => (error_body_kind(&body.bytes), body.over),
            _ => (String::new(), false),
        };
        tracing::warn!(
            status = status.as_u16(),
            kind = %kind,
            body_cut = cut,
            "upstream refused a request"
        );
        UpstreamError::Refused {
            status: status.as_u16(),
            kind,
        }
    }

    fn wait<F: Future>(&self, future: F, should_stop: &dyn Fn() -> bool) -> Waited<F::Output> {
        self.wait_until(None, future, should_stop)
    }

    /// [`wait`] for at most the idle timeout, or until `deadline` if that
    /// comes first.
    fn wait_until<F: Future>(
        &self,
        deadline: Option<Instant>,
        future: F,
        should_stop: &dyn Fn() -> bool,
    ) -> Waited<F::Output> {
        let timeout = until(self.config.idle_timeout, deadline);
        wait(&self.runtime, timeout, future, should_stop)
    }
}

/// The start of a body, at most a bound's worth.
struct CappedBody {
    bytes: Vec<u8>,
    /// More followed the bound (left unread).
    over: bool,
}

impl CappedBody {
    fn new() -> Self {
        Self {
            bytes: Vec::new(),
            over: false,
        }
    }

    /// Takes `piece` up to `cap` bytes in all; `false` once the bound is
    /// passed (read no more).
    fn push(&mut self, piece: &[u8], cap: usize) -> bool {
        let room = cap.saturating_sub(self.bytes.len());
        if piece.len() > room {
            self.bytes
                .extend_from_slice(piece.get(..room).unwrap_or_default());
            self.over = true;
            return false;
        }
        self.bytes.extend_from_slice(piece);
        true
    }
}

/// At most `cap` bytes of `response`'s body: read a piece at a time and
/// stopped past the bound (the rest is dropped with the response, which
/// closes its connection).
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<CappedBody, reqwest::Error> {
    let mut body = CappedBody::new();
    while let Some(piece) = response.chunk().await? {
        if !body.push(&piece, cap) {
            break;
        }
    }
    Ok(body)
}

/// An error body's `error.type` or `code` (both APIs put `{type, code?,
/// message}` under `error`), from the first JSON value of `bytes`: a body
/// cut at its bound still names its error when the object came whole.
fn error_body_kind(bytes: &[u8]) -> String {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .and_then(|v| v.get("error").cloned())
        .map_or_else(String::new, |e| openai_chat::error_kind(&e))
}

/// An error and its causes, for the log (reqwest's own message names only
/// the outermost one).
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How long a stream may wait: silent at most `idle` at a time, and
/// without output at most `quiet` (its `deadline`, moved on at each
/// output).
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    pub idle: Duration,
    pub quiet: Option<Duration>,
    pub deadline: Option<Instant>,
}

impl Timing {
    /// Output arrived: the stream may go `quiet` from now.
    pub fn heard_output(&mut self) {
        if self.quiet.is_some() {
            self.deadline = deadline(self.quiet);
        }
    }
}

/// When output must have come by, `timeout` from now: a timeout past
/// what an `Instant` holds (`--upstream-output-timeout` of 2^63 s, meant
/// as "never") is no bound, not an overflow.
fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// The wait before `idle` passes, or `deadline` does if sooner.
fn until(idle: Duration, deadline: Option<Instant>) -> Duration {
    deadline.map_or(idle, |d| {
        idle.min(d.saturating_duration_since(Instant::now()))
    })
}

enum Waited<T> {
    Done(T),
    Stopped,
    TimedOut,
}

/// Runs `future` to completion on `runtime` from a blocking thread, unless
/// `should_stop` turns true or `timeout` passes first.
fn wait<F: Future>(
    runtime: &Handle,
    timeout: Duration,
    future: F,
    should_stop: &dyn Fn() -> bool,
) -> Waited<F::Output> {
    runtime.block_on(async {
        let stopped = async {
            while !should_stop() {
                tokio::time::sleep(POLL).await;
            }
        };
        tokio::select! {
            out = future => Waited::Done(out),
            () = stopped => Waited::Stopped,
            () = tokio::time::sleep(timeout) => Waited::TimedOut,
        }
    })
}

mod stream;

pub use stream::UpstreamStream;
use stream::{Parser, output_limit};

#[cfg(test)]
mod tests;
