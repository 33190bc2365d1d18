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
//! reasoning, `protocol` defines the events.

pub mod controls;
mod events;
pub mod history;
pub mod model;
mod output;
mod rejection;
mod run;
mod sampling;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use thinkwire_engine::SamplingParams;
use thinkwire_protocol::{
    AgentCapabilities, IdentityCapabilities, ReasoningCapabilities, RunAgentInput, Tool,
    ToolsCapabilities, TransportCapabilities, decode_run_agent_input,
};
use thinkwire_seal::KeyRing;

pub use controls::{Effort, ReasoningControls, ReasoningPolicy, Visibility};
pub use events::custom;
pub use history::{ReplayFailure, ReplayPolicy};
pub use model::Model;
pub use output::{CancelRun, Disconnected, Frame, RunOutput};
pub use rejection::{RejectKind, RunRejected};

/// How the agent runs: the operator's choices.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Bounds on the reasoning controls clients may ask for.
    pub policy: ReasoningPolicy,
    /// What happens to replayed reasoning.
    pub replay: ReplayPolicy,
    /// Sealed values stop opening after this long (`None`: never).
    pub seal_ttl: Option<Duration>,
    /// Default and upper bound of generated tokens per pass.
    pub max_new_tokens: usize,
    /// Sampling when the client says nothing.
    pub sampling: SamplingParams,
    /// Most messages accepted in one input.
    pub max_messages: usize,
    /// Most tools accepted in one input.
    pub max_tools: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            policy: ReasoningPolicy::default(),
            replay: ReplayPolicy::default(),
            seal_ttl: None,
            max_new_tokens: 1024,
            // No repetition penalty by default, as in mlx-lm, vLLM and
            // llama.cpp: it changes greedy decoding too, so a client asking
            // for `temperature: 0` would not get the model's argmax answer.
            sampling: SamplingParams {
                temperature: 0.7,
                top_p: 0.9,
                ..SamplingParams::greedy()
            },
            max_messages: 1024,
            max_tools: 128,
        }
    }
}

/// A loaded model with its keys and policy, shared by every run.
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    model: Model,
    keys: KeyRing,
    config: AgentConfig,
}

impl Agent {
    /// An agent serving `model`, sealing with `keys`.
    pub fn new(model: Model, keys: KeyRing, config: AgentConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                model,
                keys,
                config,
            }),
        }
    }

    /// The served model's id.
    pub fn model_id(&self) -> &str {
        self.inner.model.id()
    }

    /// The served model.
    pub fn model(&self) -> &Model {
        &self.inner.model
    }

    /// AG-UI's capability object (schema `AgentCapabilities`) for
    /// `GET /capabilities`; thinkwire's own facts go under `custom`.
    pub fn capabilities(&self) -> AgentCapabilities {
        let model = &self.inner.model;
        let policy = &self.inner.config.policy;
        let custom = json!({
            "model": model.id(),
            "reasoningFormat": model.format().family,
            "visibility": policy.allowed_visibility.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
            "defaultVisibility": policy.default_visibility.as_str(),
            "maxReasoningTokens": policy.max_reasoning_tokens,
            "transports": ["sse", "websocket"],
        });
        AgentCapabilities {
            identity: Some(IdentityCapabilities {
                name: Some("thinkwire".into()),
                r#type: Some("local".into()),
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
                ..ToolsCapabilities::default()
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
        run::prepare(Arc::clone(&self.inner), input)
    }
}

/// A validated run, ready to execute.
pub struct PreparedRun {
    inner: Arc<Inner>,
    thread_id: String,
    run_id: String,
    controls: ReasoningControls,
    sampling: SamplingParams,
    max_new_tokens: usize,
    plan: run::Plan,
    tools: Vec<Tool>,
    dropped: Vec<history::DroppedReasoning>,
}

impl PreparedRun {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// Runs to completion on this thread, emitting into `out`.
    pub fn execute(self, mut out: RunOutput) {
        run::execute(self, &mut out);
    }
}
