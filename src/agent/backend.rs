//! What generates a run's output: the local engine (tokens, detokenized
//! and split here) or an upstream server (chunks already split by its
//! adapter). Everything above the chunk level — controls, history replay,
//! events, visibility, sealing — does not care which (`forward`).

use thinkwire_reasoning::{FormatSpec, Registry, SeparatePassSpec};

use super::model::LocalModel;
use crate::upstream::Upstream;

/// The agent's backend; see the module docs.
// One per agent, built once: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Backend {
    /// A model on this machine.
    Local(LocalModel),
    /// An OpenAI-compatible server elsewhere.
    Upstream(Box<UpstreamBackend>),
}

/// An upstream with what the run needs beside it.
pub struct UpstreamBackend {
    /// The client.
    pub upstream: Upstream,
    /// Prompts of `summary` visibility's summary request (the registry's
    /// separate-pass prompts).
    pub summary: Option<SeparatePassSpec>,
}

impl UpstreamBackend {
    /// `upstream`, with the summary prompts of `registry`.
    pub fn new(upstream: Upstream, registry: &Registry) -> Self {
        Self {
            summary: registry.default_spec().separate_pass().cloned(),
            upstream,
        }
    }
}

impl Backend {
    /// The model's id (the upstream's model name).
    pub fn id(&self) -> &str {
        match self {
            Self::Local(model) => model.id(),
            Self::Upstream(up) => up.upstream.model(),
        }
    }

    /// How the model's output is split.
    pub fn format(&self) -> &FormatSpec {
        match self {
            Self::Local(model) => model.format(),
            Self::Upstream(up) => up.upstream.format(),
        }
    }

    /// Whether it runs raw completions: the local model, or an upstream
    /// whose wire has them (OpenAI-compatible servers' `/completions`).
    pub fn runs_raw_completions(&self) -> bool {
        match self {
            Self::Local(_) => true,
            Self::Upstream(up) => up.upstream.config().kind.has_raw_completions(),
        }
    }

    /// `local` or the upstream's kind, for `/capabilities`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Local(_) => "local",
            Self::Upstream(up) => up.upstream.config().kind.as_str(),
        }
    }
}
