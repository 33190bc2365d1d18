//! The agent loop: from a `RunAgentInput` to the AG-UI event stream of one
//! run.
//!
//! A run has two halves. [`Agent::prepare`] does everything that can fail
//! because of the input — decoding, limits, reasoning controls, opening
//! sealed reasoning, rendering the chat template, tokenizing, the context
//! check — so a bad request is refused before `RUN_STARTED`. Then
//! [`PreparedRun::execute`] drives the engine on the calling (blocking)
//! thread and emits events through a [`RunOutput`], until `RUN_FINISHED` or
//! `RUN_ERROR`; a client that leaves stops the engine within one step.
//!
//! This is where the crates meet: `chat` renders and tokenizes, the engine
//! generates, `reasoning` splits its output, `seal` seals and opens
//! reasoning, `protocol` defines the events. The files follow a run:
//! `prepare` (with `controls`, `history`, `prompt` and `model`), then
//! `execute`, whose passes (`pass`) emit through `events` and `output`.

mod backend;
mod completion;
mod config;
mod constraint;
pub mod controls;
mod events;
mod execute;
mod forward;
mod generation;
pub mod history;
mod ids;
mod logprobs;
pub mod model;
mod output;
mod prepare;
mod prompt;
mod rejection;
mod sampling;
mod tool_grammar;
mod upstream_generation;
mod warmup;

use std::sync::Arc;

use serde_json::json;
use thinkwire_protocol::{
    AgentCapabilities, IdentityCapabilities, OutputCapabilities, ReasoningCapabilities,
    RunAgentInput, ToolsCapabilities, TransportCapabilities, decode_run_agent_input,
};
use thinkwire_seal::KeyRing;

use crate::metrics::Metrics;

pub use backend::{Backend, UpstreamBackend};
pub use completion::{RawCompletion, RawPrompt};
pub use config::AgentConfig;
pub use controls::{Effort, ReasoningControls, ReasoningPolicy, Visibility};
pub use events::{custom, incomplete};
pub use history::{ReplayFailure, ReplayPolicy};
pub use model::LocalModel;
pub use output::{CancelRun, Disconnected, Frame, RunOutput};
pub use prepare::PreparedRun;
use prepare::Shared;
pub use rejection::{MAX_QUOTED_CHARS, RejectKind, RunRejected, quoted};
pub use warmup::WarmUp;

/// A loaded model with its keys and policy, shared by every run.
pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    /// An agent serving `model`, sealing with `keys`.
    pub fn new(model: LocalModel, keys: KeyRing, config: AgentConfig) -> Self {
        Self::with_backend(Backend::Local(model), keys, config)
    }

    /// An agent generating through `backend` (a local model or an
    /// upstream server).
    pub fn with_backend(backend: Backend, keys: KeyRing, config: AgentConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                backend,
                keys,
                config,
                metrics: Arc::new(Metrics::new()),
            }),
        }
    }

    /// The served model's id.
    pub fn model_id(&self) -> &str {
        self.shared.backend.id()
    }

    /// The metrics its runs record (`GET /metrics`).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// The served model, when it runs on this machine.
    pub fn model(&self) -> Option<&LocalModel> {
        match &self.shared.backend {
            Backend::Local(model) => Some(model),
            Backend::Upstream(_) => None,
        }
    }

    /// What generates.
    pub fn backend(&self) -> &Backend {
        &self.shared.backend
    }

    /// AG-UI's capability object (schema `AgentCapabilities`) for
    /// `GET /capabilities`; thinkwire's own facts go under `custom`.
    pub fn capabilities(&self) -> AgentCapabilities {
        let backend = &self.shared.backend;
        let policy = &self.shared.config.policy;
        let custom = json!({
            "model": backend.id(),
            "backend": backend.kind(),
            "reasoningFormat": backend.format().family,
            "visibility": policy.allowed_visibility.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
            "defaultVisibility": policy.default_visibility.as_str(),
            "maxReasoningTokens": policy.max_reasoning_tokens,
            "transports": ["sse", "websocket"],
            // The most alternatives `forwardedProps.logprobs` may ask for;
            // 0 where none are reported (an Anthropic upstream).
            "maxTopLogprobs": match backend {
                Backend::Upstream(up) if !up.upstream.config().kind.carries_logprobs() => 0,
                _ => thinkwire_engine::MAX_TOP_LOGPROBS,
            },
        });
        AgentCapabilities {
            identity: Some(IdentityCapabilities {
                name: Some("thinkwire".into()),
                r#type: Some(match backend {
                    Backend::Local(_) => "local".into(),
                    Backend::Upstream(_) => "upstream".into(),
                }),
                version: Some(env!("CARGO_PKG_VERSION").into()),
                ..IdentityCapabilities::default()
            }),
            transport: Some(TransportCapabilities {
                streaming: Some(true),
                websocket: Some(true),
                ..TransportCapabilities::default()
            }),
            tools: Some(ToolsCapabilities {
                supported: Some(true),
                client_provided: Some(true),
                // Several calls in a turn, unless a run asks for one
                // (`parallelToolCalls: false`).
                parallel_calls: Some(true),
                ..ToolsCapabilities::default()
            }),
            // `responseFormat`: a grammar here, the upstream's own API there.
            output: Some(OutputCapabilities {
                structured_output: Some(true),
                supported_mime_types: Some(vec!["text/plain".into(), "application/json".into()]),
            }),
            reasoning: Some(ReasoningCapabilities::all()),
            custom: custom.as_object().cloned(),
            ..AgentCapabilities::default()
        }
    }

    /// Validates `body` as a `RunAgentInput` and prepares its run. Every
    /// failure here is the client's to fix and happens before `RUN_STARTED`.
    pub fn prepare(&self, body: &[u8]) -> Result<PreparedRun, RunRejected> {
        let input = decode_run_agent_input(body).map_err(|err| {
            let path = err.path().to_owned();
            let rejected =
                RunRejected::new(RejectKind::Malformed, "INVALID_INPUT", err.to_string());
            if path.is_empty() {
                rejected
            } else {
                rejected.at(path)
            }
        })?;
        self.prepare_input(input)
    }

    /// Prepares an already decoded input.
    pub fn prepare_input(&self, input: RunAgentInput) -> Result<PreparedRun, RunRejected> {
        prepare::prepare(Arc::clone(&self.shared), input)
    }

    /// Prepares a raw completion of `prompt` (OpenAI's legacy
    /// completions): `input` carries only its `forwardedProps` (sampling,
    /// `maxTokens`, log-probabilities); its messages are not read.
    pub fn prepare_completion(
        &self,
        input: RunAgentInput,
        raw: RawCompletion,
    ) -> Result<PreparedRun, RunRejected> {
        completion::prepare(Arc::clone(&self.shared), input, raw)
    }

    /// The operator's reasoning policy (what clients may ask for).
    pub fn policy(&self) -> &ReasoningPolicy {
        &self.shared.config.policy
    }

    /// Opens a sealed reasoning value of `thread_id` and message
    /// `message_id`, for a codec that must compare it with what its client
    /// shows (Anthropic's thinking blocks). `None` when it does not open;
    /// the run's own history replay then refuses it with the reason.
    pub fn open_reasoning(
        &self,
        thread_id: &str,
        message_id: &str,
        sealed: &str,
    ) -> Option<String> {
        let binding = thinkwire_seal::Binding::new(thread_id, message_id);
        self.shared
            .keys
            .open(sealed, binding, thinkwire_seal::now_unix_ms())
            .ok()
            .map(|opened| opened.text)
    }
}
