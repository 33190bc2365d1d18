//! The HTTP side of an upstream: one streaming request per pass, read from
//! the run's blocking thread a piece at a time, so the run forwards each
//! piece as it comes and notices a client that left within one poll
//! interval. Dropping the stream closes the connection, which is how the
//! upstream learns that the client is gone.

use std::time::Duration;

use serde_json::Value;
use thinkwire_protocol::SseDecoder;
use thinkwire_reasoning::FormatSpec;
use tokio::runtime::Handle;

use super::completions::{self, CompletionParser, RawRequest};
use super::openai_chat::{self, UpstreamRequest, UpstreamUsage};
use super::{
    UpstreamConfig, UpstreamError, UpstreamKind, UpstreamOutput, anthropic, openai_responses,
};

/// How often a waiting read checks whether the client is still there.
const POLL: Duration = Duration::from_millis(20);

/// Largest message the upstream may send in its stream (a chat chunk is a
/// few hundred bytes); beyond it, the stream is malformed.
const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Most bytes one upstream answer may stream, whatever its token count
/// says: a stream that never ends is cut off here.
const MAX_STREAM_BYTES: usize = 256 << 20;

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
        self.open_at(&url, &body, parser, should_stop)
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
        self.open_at(&url, &body, parser, should_stop)
    }

    /// The request of [`open`](Self::open), retried as it says; `parser`
    /// reads the stream of the response that succeeds.
    fn open_at(
        &self,
        url: &str,
        body: &Value,
        parser: impl Fn() -> Parser,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<UpstreamStream>, UpstreamError> {
        let mut attempt = 0;
        loop {
            let builder = self.post(url, body);
            let sent = self.wait(builder.send(), should_stop);
            let err = match sent {
                Waited::Stopped => return Ok(None),
                Waited::TimedOut => UpstreamError::Unavailable("no response in time"),
                Waited::Done(Err(err)) => {
                    tracing::warn!(error = %chain(&err.without_url()), attempt, "upstream request failed");
                    UpstreamError::Unavailable("cannot connect")
                }
                Waited::Done(Ok(response)) if response.status().is_success() => {
                    return Ok(Some(UpstreamStream {
                        response,
                        decoder: SseDecoder::new(),
                        parser: parser(),
                        idle_timeout: self.config.idle_timeout,
                        runtime: self.runtime.clone(),
                        ended: false,
                        read: 0,
                    }));
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
    /// chat wire, which has none.
    pub fn count_input_tokens(
        &self,
        request: &UpstreamRequest<'_>,
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
        let never = || false;
        let response = match self.wait(self.post(&url, &Value::Object(body)).send(), &never) {
            Waited::Done(Ok(response)) => response,
            Waited::Done(Err(err)) => {
                tracing::warn!(error = %chain(&err.without_url()), "upstream count request failed");
                return Err(UpstreamError::Unavailable("cannot connect"));
            }
            Waited::Stopped | Waited::TimedOut => {
                return Err(UpstreamError::Unavailable("no response in time"));
            }
        };
        if !response.status().is_success() {
            return Err(self.refused(response, &never));
        }
        let malformed = || UpstreamError::Protocol("its token count is malformed".into());
        match self.wait(response.bytes(), &never) {
            Waited::Done(Ok(bytes)) => serde_json::from_slice::<Value>(&bytes)
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
    fn refused(
        &self,
        response: reqwest::Response,
        should_stop: &dyn Fn() -> bool,
    ) -> UpstreamError {
        let status = response.status();
        let kind = match self.wait(response.bytes(), should_stop) {
            // Both APIs put `{type, code?, message}` under `error`.
            Waited::Done(Ok(bytes)) => serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v.get("error").cloned())
                .map_or_else(String::new, |e| openai_chat::error_kind(&e)),
            _ => String::new(),
        };
        tracing::warn!(status = status.as_u16(), kind = %kind, "upstream refused a request");
        UpstreamError::Refused {
            status: status.as_u16(),
            kind,
        }
    }

    fn wait<F: Future>(&self, future: F, should_stop: &dyn Fn() -> bool) -> Waited<F::Output> {
        wait(&self.runtime, self.config.idle_timeout, future, should_stop)
    }
}

/// One streaming response.
pub struct UpstreamStream {
    response: reqwest::Response,
    decoder: SseDecoder,
    parser: Parser,
    idle_timeout: Duration,
    runtime: Handle,
    ended: bool,
    /// Bytes read so far.
    read: usize,
}

impl UpstreamStream {
    /// The next chunks: `Ok(None)` when the stream ended (or the client
    /// stopped the run: the connection is then closed by dropping this).
    pub fn next(
        &mut self,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<UpstreamOutput>>, UpstreamError> {
        if self.ended {
            return Ok(None);
        }
        let piece = wait(
            &self.runtime,
            self.idle_timeout,
            self.response.chunk(),
            should_stop,
        );
        let bytes = match piece {
            Waited::Stopped => {
                self.ended = true;
                return Ok(None);
            }
            Waited::TimedOut => return Err(UpstreamError::Unavailable("the stream went silent")),
            Waited::Done(Err(err)) => {
                tracing::warn!(error = %chain(&err.without_url()), "upstream stream broke off");
                return Err(UpstreamError::Unavailable("the stream broke off"));
            }
            Waited::Done(Ok(None)) => {
                self.ended = true;
                // A body that ends without the blank line after its last
                // message (`data: [DONE]` and nothing more) still ends it.
                let mut chunks = Vec::new();
                if let Some(last) = self.decoder.finish()
                    && !self.parser.done()
                {
                    chunks.extend(self.parser.push(&last.data)?);
                }
                if !self.parser.done() {
                    return Err(UpstreamError::Unavailable("the stream ended before [DONE]"));
                }
                chunks.extend(self.parser.finish());
                return Ok(Some(chunks));
            }
            Waited::Done(Ok(Some(bytes))) => bytes,
        };
        self.read += bytes.len();
        if self.read > MAX_STREAM_BYTES {
            return Err(UpstreamError::Protocol("the stream is too long".into()));
        }
        let mut chunks = Vec::new();
        let messages = self.decoder.push(&bytes);
        if self.decoder.pending_len() > MAX_MESSAGE_BYTES
            || messages.iter().any(|m| m.data.len() > MAX_MESSAGE_BYTES)
        {
            return Err(UpstreamError::Protocol("a message is too long".into()));
        }
        for message in messages {
            if self.parser.done() {
                break;
            }
            chunks.extend(self.parser.push(&message.data)?);
        }
        Ok(Some(chunks))
    }

    /// Whether the upstream stopped at its token limit.
    pub fn cut_off(&self) -> bool {
        match &self.parser {
            Parser::OpenAiChat(p) => p.cut_off(),
            Parser::Responses(p) => p.cut_off(),
            Parser::Anthropic(p) => p.cut_off(),
            Parser::Completions(p) => p.cut_off(),
        }
    }

    /// Whether the upstream's answer arrived to its end (`[DONE]`,
    /// `message_stop`, Responses' completed or incomplete response), as
    /// opposed to a stream stopped, cut or broken before it.
    pub fn complete(&self) -> bool {
        self.parser.done()
    }

    /// What the upstream counted so far, if it said: read at any point,
    /// a stream cut short included. Anthropic's prompt tokens come first
    /// (`message_start`); the OpenAI wires' usage comes last, so a stream
    /// cut before its end has none there, unless the server counts with
    /// every chunk (vLLM's and SGLang's `continuous_usage_stats`).
    pub fn usage(&self) -> Option<UpstreamUsage> {
        match &self.parser {
            Parser::OpenAiChat(p) => p.usage(),
            Parser::Responses(p) => p.usage(),
            Parser::Anthropic(p) => Some(p.usage()),
            Parser::Completions(p) => p.usage(),
        }
    }
}

/// The stream's reader, per wire protocol.
enum Parser {
    // Boxed: its splitter is large, and one parser lives per stream.
    OpenAiChat(Box<openai_chat::StreamParser>),
    Responses(openai_responses::StreamParser),
    Anthropic(anthropic::StreamParser),
    Completions(CompletionParser),
}

impl Parser {
    fn push(&mut self, data: &str) -> Result<Vec<UpstreamOutput>, UpstreamError> {
        match self {
            Self::OpenAiChat(p) => p.push(data),
            Self::Responses(p) => p.push(data),
            Self::Anthropic(p) => p.push(data),
            Self::Completions(p) => p.push(data),
        }
    }

    fn finish(&mut self) -> Vec<UpstreamOutput> {
        match self {
            Self::OpenAiChat(p) => p.finish(),
            Self::Responses(p) => p.finish(),
            Self::Anthropic(p) => p.finish(),
            Self::Completions(_) => Vec::new(),
        }
    }

    fn done(&self) -> bool {
        match self {
            Self::OpenAiChat(p) => p.done(),
            Self::Responses(p) => p.done(),
            Self::Anthropic(p) => p.done(),
            Self::Completions(p) => p.done(),
        }
    }
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
