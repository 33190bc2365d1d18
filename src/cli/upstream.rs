//! The upstream flags `serve` and `chat` share: with `--upstream-url`, an
//! OpenAI-compatible server generates instead of a local model.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use thinkwire_reasoning::{ModelFacts, ReasoningStyle, Registry};
use tokio::runtime::Handle;

use crate::agent::{Backend, UpstreamBackend};
use crate::upstream::{ApiKey, Upstream, UpstreamConfig, UpstreamKind};

/// Where generation happens when it is not this machine.
#[derive(clap::Args, Debug, Clone)]
pub struct UpstreamArgs {
    /// Base URL of an upstream server that generates instead of a local
    /// model, e.g. `http://127.0.0.1:8000/v1` (vLLM, SGLang, llama.cpp,
    /// Ollama, mlx-lm, thinkwire).
    #[arg(long, env = "THINKWIRE_UPSTREAM_URL")]
    pub upstream_url: Option<String>,
    /// The upstream's wire protocol: `openai-chat`, `openai-responses`
    /// (`store: false`, encrypted reasoning carried in the seal), or
    /// `anthropic` (Messages API with extended thinking; URL e.g.
    /// `https://api.anthropic.com/v1`).
    #[arg(long, default_value = "openai-chat")]
    pub upstream_kind: String,
    /// The model the upstream is asked for.
    #[arg(long, env = "THINKWIRE_UPSTREAM_MODEL")]
    pub upstream_model: Option<String>,
    /// Name of the environment variable holding the upstream's API key
    /// (the key itself is never a flag, so it stays out of `ps` and logs).
    #[arg(long)]
    pub upstream_key_env: Option<String>,
    /// Reasoning format family (see `formats.toml`) that splits reasoning
    /// left inline in the upstream's text; default: found from the model
    /// name, else `qwen3` (`<think>` tags, Hermes tool calls).
    #[arg(long)]
    pub upstream_format: Option<String>,
    /// Seconds to wait for a connection to the upstream.
    #[arg(long, default_value_t = 5)]
    pub upstream_connect_timeout: u64,
    /// Seconds the upstream may stay silent (before its response head, or
    /// between two pieces of its stream) before the run fails.
    #[arg(long, default_value_t = 120)]
    pub upstream_idle_timeout: u64,
    /// Seconds the upstream may go without output (text, reasoning, a
    /// tool call), from the request on, however busy it keeps the stream
    /// with pings or empty deltas (0: no bound).
    #[arg(long, default_value_t = 600)]
    pub upstream_output_timeout: u64,
    /// Extra attempts when the upstream is unreachable or answers 5xx/429,
    /// only before any of its answer was read.
    #[arg(long, default_value_t = 2)]
    pub upstream_retries: u32,
}

impl UpstreamArgs {
    /// Whether an upstream was asked for.
    pub fn enabled(&self) -> bool {
        self.upstream_url.is_some()
    }

    /// The upstream backend, its requests run on `runtime`.
    pub fn backend(&self, registry: &Registry, runtime: Handle) -> Result<Backend> {
        let Some(url) = &self.upstream_url else {
            bail!("no --upstream-url");
        };
        let kind = UpstreamKind::parse(&self.upstream_kind).with_context(|| {
            format!(
                "--upstream-kind: expected openai-chat, openai-responses or anthropic, not {:?}",
                self.upstream_kind
            )
        })?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("--upstream-url: expected an http:// or https:// URL");
        }
        let Some(model) = self.upstream_model.clone() else {
            bail!("--upstream-model is required with --upstream-url");
        };
        let key = match &self.upstream_key_env {
            Some(var) => {
                let key = std::env::var(var).with_context(|| {
                    format!("--upstream-key-env: the environment variable {var} is not set")
                })?;
                Some(ApiKey::new(key))
            }
            None => None,
        };
        let format = match &self.upstream_format {
            Some(family) => registry
                .family(family)
                .cloned()
                .with_context(|| format!("--upstream-format: no format family {family:?}"))?,
            None => {
                let resolved = registry.resolve(&ModelFacts::new(&model)).spec;
                // A model that does not think natively gets its reasoning
                // from a second pass here; upstream, it thinks or not.
                if matches!(resolved.reasoning, ReasoningStyle::SeparatePass(_)) {
                    registry
                        .family("qwen3")
                        .cloned()
                        .context("the built-in registry has no qwen3 family")?
                } else {
                    resolved
                }
            }
        };
        let config = UpstreamConfig {
            kind,
            url: url.clone(),
            model,
            key,
            connect_timeout: Duration::from_secs(self.upstream_connect_timeout),
            idle_timeout: Duration::from_secs(self.upstream_idle_timeout.max(1)),
            output_timeout: (self.upstream_output_timeout > 0)
                .then(|| Duration::from_secs(self.upstream_output_timeout)),
            retries: self.upstream_retries,
            format,
        };
        let upstream = Upstream::new(config, runtime).context("setting up the upstream")?;
        Ok(Backend::Upstream(Box::new(UpstreamBackend::new(
            upstream, registry,
        ))))
    }
}
