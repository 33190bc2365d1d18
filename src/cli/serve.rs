//! `thinkwire serve`: AG-UI over SSE and WebSocket, and the web demo.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use thinkwire_seal::{Key, KeyRing};

use super::ModelArgs;
use super::upstream::UpstreamArgs;
use crate::agent::{Agent, AgentConfig, Backend, ReplayFailure, Visibility};
use crate::server::{self, AppState, ReasoningField, ServerConfig};

/// `thinkwire serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    upstream: UpstreamArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", env = "THINKWIRE_LISTEN")]
    listen: SocketAddr,
    /// Key file for sealing reasoning: one `tw-key-v1:…` key per line, the
    /// first one active. Must not be readable by group or others.
    #[arg(long, env = "THINKWIRE_KEY_FILE")]
    key_file: Option<PathBuf>,
    /// Generate a key at start instead: sealed reasoning does not survive a
    /// restart.
    #[arg(long, conflicts_with = "key_file")]
    ephemeral_key: bool,
    /// Visibility modes clients may ask for (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "hidden,summary,full,off")]
    allow_visibility: Vec<String>,
    /// Visibility when a client does not ask.
    #[arg(long, default_value = "hidden")]
    default_visibility: String,
    /// Most reasoning tokens per run, whatever a client asks.
    #[arg(long, default_value_t = 2048)]
    max_reasoning_tokens: usize,
    /// Most generated tokens per pass.
    #[arg(long, default_value_t = 1024)]
    max_tokens: usize,
    /// When replayed sealed reasoning does not open: `reject` the run, or
    /// `drop` that reasoning with a visible warning event.
    #[arg(long, default_value = "reject")]
    on_bad_reasoning: String,
    /// Sealed reasoning stops opening after this many seconds.
    #[arg(long)]
    seal_ttl_secs: Option<u64>,
    /// Accept a reasoning message's plaintext content as the model's own
    /// reasoning when it carries no sealed value. Only for trusted clients.
    #[arg(long)]
    trust_client_reasoning: bool,
    /// Runs that may wait for a place in the batch, server-wide; beyond
    /// `--max-batch` + this, runs are refused (HTTP 429 / `SERVER_BUSY`).
    #[arg(long, default_value_t = 64)]
    max_queued: usize,
    /// The built web demo to serve at `/`.
    #[arg(long, env = "THINKWIRE_WEB_DIR")]
    web_dir: Option<PathBuf>,
    /// Chat completions' reasoning field(s) out: `both`, `reasoning` or
    /// `reasoning_content` (both are read in).
    #[arg(long, default_value = "both")]
    reasoning_field: String,
}

/// The environment variable holding sealing keys.
const KEYS_ENV: &str = "THINKWIRE_KEYS";

fn load_keys(args: &ServeArgs) -> Result<KeyRing> {
    if let Some(path) = &args.key_file {
        return KeyRing::from_key_file(path).context("loading the sealing keys");
    }
    if std::env::var_os(KEYS_ENV).is_some() {
        return KeyRing::from_env(KEYS_ENV).context("loading the sealing keys");
    }
    if args.ephemeral_key {
        tracing::warn!(
            "using an ephemeral sealing key: reasoning sealed now will not open after a restart, \
             so conversations lose their earlier reasoning (use --key-file or {KEYS_ENV})"
        );
        return Ok(KeyRing::new(Key::generate().context("generating a key")?));
    }
    bail!(
        "no sealing key: pass --key-file FILE (create one with `thinkwire keygen > FILE && chmod 600 FILE`), \
         set {KEYS_ENV}, or use --ephemeral-key to accept that continuity ends at restart"
    )
}

fn agent_config(args: &ServeArgs) -> Result<AgentConfig> {
    let mut config = AgentConfig::default();
    let mut allowed = std::collections::BTreeSet::new();
    for name in &args.allow_visibility {
        let v = Visibility::parse(name.trim())
            .with_context(|| format!("--allow-visibility: unknown mode {name:?}"))?;
        allowed.insert(v);
    }
    let default = Visibility::parse(&args.default_visibility).with_context(|| {
        format!(
            "--default-visibility: unknown mode {:?}",
            args.default_visibility
        )
    })?;
    if !allowed.contains(&default) {
        bail!("--default-visibility {default:?} is not among --allow-visibility");
    }
    config.policy.allowed_visibility = allowed;
    config.policy.default_visibility = default;
    config.policy.max_reasoning_tokens = args.max_reasoning_tokens;
    config.max_new_tokens = args.max_tokens;
    config.replay.on_failure = match args.on_bad_reasoning.as_str() {
        "reject" => ReplayFailure::Reject,
        "drop" => ReplayFailure::Drop,
        other => bail!("--on-bad-reasoning: expected reject or drop, not {other:?}"),
    };
    config.replay.trust_client_reasoning = args.trust_client_reasoning;
    config.seal_ttl = args.seal_ttl_secs.map(std::time::Duration::from_secs);
    Ok(config)
}

/// Runs `thinkwire serve` until Ctrl-C or SIGTERM.
pub fn serve(args: ServeArgs) -> Result<()> {
    let keys = load_keys(&args)?;
    let config = agent_config(&args)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let backend = if args.upstream.enabled() {
        let backend = args
            .upstream
            .backend(&args.model.registry()?, runtime.handle().clone())?;
        // The URL and model are the operator's own; the key is never logged.
        tracing::info!(
            kind = backend.kind(),
            model = backend.id(),
            format = %backend.format().family,
            "generating upstream"
        );
        backend
    } else {
        let model = args.model.load()?;
        tracing::info!(model = model.id(), format = %model.format().family, "model loaded");
        Backend::Local(model)
    };
    let agent = Arc::new(Agent::with_backend(backend, keys, config));
    let web_dir = args.web_dir.clone().or_else(default_web_dir);
    let openai_reasoning_field =
        ReasoningField::parse(&args.reasoning_field).with_context(|| {
            format!(
                "--reasoning-field: expected both, reasoning or reasoning_content, not {:?}",
                args.reasoning_field
            )
        })?;
    let server_config = ServerConfig {
        web_dir,
        max_active_runs: args.model.max_batch,
        max_queued_runs: args.max_queued,
        openai_reasoning_field,
        ..ServerConfig::default()
    };
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("binding {}", args.listen))?;
        let addr = listener.local_addr()?;
        tracing::info!(
            "serving AG-UI on http://{addr} (POST /agent, GET /agent/ws; web demo at /)"
        );
        let state = AppState::new(agent, server_config);
        server::serve(listener, state, shutdown_signal()).await?;
        tracing::info!("shut down");
        Ok(())
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutting down: closing sockets and cancelling runs");
}

/// Where `scripts/setup` builds the web demo, if this binary runs from a
/// checkout.
pub fn default_web_dir() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("web-demo/dist"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("web-demo/dist"),
    ];
    candidates
        .into_iter()
        .find(|dir| dir.join("index.html").is_file())
}
