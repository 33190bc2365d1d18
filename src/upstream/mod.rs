//! Upstream backends: an OpenAI-compatible chat completions server (vLLM,
//! SGLang, llama.cpp server, Ollama, mlx-lm's server, thinkwire itself),
//! OpenAI's Responses API or Anthropic's Messages API generates instead of
//! the local engine. The adapter turns the run's
//! conversation into the upstream's request and its stream into the same
//! chunks a local pass produces, so events, visibility, sealing and replay
//! stay one code path (`agent::forward`).
//!
//! The upstream holds nothing between turns either: reasoning reaches it
//! again only because the client replays its sealed value, which the run
//! opens and hands back as the assistant turn's `reasoning_content`.

pub mod anthropic;
mod client;
pub mod completions;
pub mod openai_chat;
pub mod openai_responses;
mod sampling;

use std::time::Duration;

use thinkwire_reasoning::{Chunk, FormatSpec};
use thinkwire_seal::ProviderItem;

pub use client::{Upstream, UpstreamStream};
pub use completions::RawRequest;
pub use openai_chat::{AnswerConstraint, UpstreamRequest, UpstreamUsage};
pub use sampling::Uncarried;

/// Most tool calls one upstream stream may open, on every wire: far more
/// than a turn makes, and each costs a start and an end downstream; past
/// it the stream is malformed (`UPSTREAM_PROTOCOL`).
const MAX_TOOL_CALLS: usize = 128;

/// The protocol error of a stream opening more than [`MAX_TOOL_CALLS`].
fn too_many_calls() -> UpstreamError {
    UpstreamError::Protocol(format!("more than {MAX_TOOL_CALLS} tool calls"))
}

/// What an adapter reads out of its stream.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamOutput {
    /// Model output, as a local pass would produce it.
    Chunk(Chunk),
    /// The provider's own item for the open reasoning block, sealed with it.
    Provider(ProviderItem),
    /// Token log-probabilities of the answer text that follows, in
    /// OpenAI's shape (only for a run that asked).
    Logprobs(Vec<serde_json::Value>),
}

/// Which wire protocol the upstream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamKind {
    /// OpenAI chat completions (`POST {url}/chat/completions`).
    OpenAiChat,
    /// OpenAI Responses (`POST {url}/responses`), `store: false`.
    OpenAiResponses,
    /// Anthropic Messages (`POST {url}/messages`), with extended thinking.
    Anthropic,
}

impl UpstreamKind {
    /// Parses the `--upstream-kind` spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai-chat" => Some(Self::OpenAiChat),
            "openai-responses" => Some(Self::OpenAiResponses),
            "anthropic" => Some(Self::Anthropic),
            _ => None,
        }
    }

    /// Whether the wire carries the answer tokens' log-probabilities
    /// (OpenAI's two do; Anthropic's reports none).
    pub fn carries_logprobs(self) -> bool {
        matches!(self, Self::OpenAiChat | Self::OpenAiResponses)
    }

    /// Whether the wire has raw completions (OpenAI-compatible servers'
    /// legacy `/completions`; OpenAI's Responses and Anthropic's have
    /// none).
    pub fn has_raw_completions(self) -> bool {
        self == Self::OpenAiChat
    }

    /// The `--upstream-kind` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
        }
    }
}

/// How to reach the upstream: the operator's choices.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// The wire protocol.
    pub kind: UpstreamKind,
    /// Base URL, e.g. `http://127.0.0.1:8000/v1`.
    pub url: String,
    /// The `model` the upstream is asked for.
    pub model: String,
    /// The provider key, if any (read from the environment variable the
    /// operator named; never logged).
    pub key: Option<ApiKey>,
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest silence between two pieces of the stream (and before the
    /// response head) before the upstream counts as gone.
    pub idle_timeout: Duration,
    /// Longest the upstream may go without output (text, reasoning, a
    /// tool call), from the request on (`None`: no bound): an upstream that
    /// keeps a stream alive with empty deltas or pings, and no answer, is
    /// given up on, while one that streams an hour of reasoning is not.
    pub output_timeout: Option<Duration>,
    /// Extra attempts when the upstream cannot be reached or answers 5xx
    /// or 429, only before any of its stream was read.
    pub retries: u32,
    /// How text-level reasoning (`<think>` left in `content`) and tool
    /// calls in text are recognized.
    pub format: FormatSpec,
}

/// A provider key. Its `Debug` never shows it, so it cannot reach a log
/// through a derived `Debug` of what holds it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: String) -> Self {
        Self(key)
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

/// Why an upstream generation failed. Messages are safe for the client:
/// no upstream URL, key or conversation text (details go to the log).
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// Not reachable, timed out, or gone mid-stream.
    #[error("the upstream engine is unavailable ({0})")]
    Unavailable(&'static str),
    /// It answered with an error status, or an error inside its stream.
    #[error("the upstream engine refused the request (HTTP {status}{kind})")]
    Refused {
        /// HTTP status (200 for an error inside a stream).
        status: u16,
        /// The error's `type`/`code` as the upstream named it, prefixed by
        /// `: `, or empty.
        kind: String,
    },
    /// Its stream is not what the protocol says.
    #[error("the upstream engine's stream is malformed ({0})")]
    Protocol(String),
}

impl UpstreamError {
    /// The `RUN_ERROR` code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unavailable(_) => "UPSTREAM_UNAVAILABLE",
            Self::Refused { .. } => "UPSTREAM_ERROR",
            Self::Protocol(_) => "UPSTREAM_PROTOCOL",
        }
    }
}
