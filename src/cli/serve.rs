//! `thinkwire serve`: AG-UI over SSE and WebSocket, and the web demo.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use thinkwire_seal::{Key, KeyRing};

use super::ModelArgs;
use super::upstream::UpstreamArgs;
use crate::agent::{Agent, AgentConfig, Backend, ReplayFailure, Visibility};
use crate::server::{
    self, AllowedOrigins, AppState, AuthTokens, ReasoningField, ResumeConfig, ServerConfig,
};

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
    /// Listen as soon as the model is loaded, without the few warm-up
    /// generations that otherwise run first (so that what MLX does on
    /// first use, on a GPU compiling kernels, is not what the first
    /// requests wait for).
    #[arg(long, env = "THINKWIRE_NO_WARMUP")]
    no_warmup: bool,
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
    /// Most generated tokens per run (reasoning and answer together).
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
    /// Refuse a run (HTTP 429 / `SERVER_BUSY`, `Retry-After` the expected
    /// wait) whose prompt would wait longer than this many seconds for the
    /// prompts queued ahead of it (its request's other choices and prompts
    /// included), at the engine's recent pace; 0: never.
    #[arg(long, default_value_t = 30.0)]
    max_queue_wait: f64,
    /// The built web demo to serve at `/`.
    #[arg(long, env = "THINKWIRE_WEB_DIR")]
    web_dir: Option<PathBuf>,
    /// Chat completions' reasoning field(s) out: `both`, `reasoning` or
    /// `reasoning_content` (both are read in).
    #[arg(long, default_value = "both")]
    reasoning_field: String,
    /// Require a bearer token on every endpoint but `/healthz` and the web
    /// demo's files: a file with one token per line (at least 16 of the
    /// characters `A-Za-z0-9!#$%&'*+-.^_`|~`; `openssl rand -hex 32`), not
    /// readable by group or others. See docs/security.md.
    #[arg(long, env = "THINKWIRE_AUTH_TOKENS_FILE")]
    auth_tokens_file: Option<PathBuf>,
    /// Browser origins (`https://app.example.com`, comma-separated, or `*`)
    /// allowed to open the WebSocket and to read HTTP responses (CORS).
    /// Pages served by this server itself are always allowed; clients that
    /// send no `Origin` (SDKs, curl) are not browsers and are not checked.
    #[arg(long, value_delimiter = ',', env = "THINKWIRE_ALLOWED_ORIGINS")]
    allowed_origins: Vec<String>,
    /// Seconds from SIGTERM/SIGINT to exit at the latest: runs in progress
    /// may finish until a quarter (at most 2 s) before the end, then end
    /// with `SERVER_SHUTTING_DOWN`, their reasoning sealed first. A second
    /// signal exits at once.
    #[arg(long, default_value_t = 10.0)]
    shutdown_grace: f64,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    resume: ResumeArgs,
}

/// Resumable runs (docs/protocol.md, "Resuming a run"): what the server
/// holds in memory for a client whose connection dropped.
#[derive(clap::Args, Debug)]
struct ResumeArgs {
    /// Seconds a run goes on without its client, waiting to be resumed,
    /// and how long its events stay held after it ends; 0 turns resuming
    /// off (a client that leaves stops its run at once). At most a day:
    /// every run that ends is held that long.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    resume_window_s: u64,
    /// MiB of events held for resuming, every run together (memory only).
    #[arg(long, default_value_t = 64)]
    resume_buffer_mb: usize,
    /// MiB of events held for resuming one run; past it the oldest go, and
    /// resuming before them is refused (`RUN_EXPIRED`).
    #[arg(long, default_value_t = 4)]
    resume_run_buffer_mb: usize,
}

/// The limits of docs/security.md, each refusal a code in `/metrics`.
#[derive(clap::Args, Debug)]
struct LimitArgs {
    /// Largest request body or WebSocket input frame, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    max_input_bytes: usize,
    /// Most messages in one input (413 `INPUT_TOO_LARGE` past it).
    #[arg(long, default_value_t = 1024)]
    max_messages: usize,
    /// Most tools in one input.
    #[arg(long, default_value_t = 128)]
    max_tools: usize,
    /// Runs in flight per client address (`CLIENT_BUSY` past it); 0 = no
    /// limit. Behind a reverse proxy all clients share its address.
    #[arg(long, default_value_t = 0)]
    max_runs_per_client: usize,
    /// Connections open at once (`TOO_MANY_CONNECTIONS` past it); an open
    /// WebSocket counts.
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Seconds a request head may take to arrive; also how long an idle
    /// keep-alive connection stays open.
    #[arg(long, default_value_t = 10)]
    header_timeout_secs: u64,
    /// Seconds a request body may take to arrive in full.
    #[arg(long, default_value_t = 60)]
    body_timeout_secs: u64,
    /// Seconds a WebSocket between runs may go without hearing from its
    /// client (not even a pong to the server's pings).
    #[arg(long, default_value_t = 60)]
    ws_idle_timeout_secs: u64,
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
    config.max_messages = args.limits.max_messages;
    config.max_tools = args.limits.max_tools;
    Ok(config)
}

/// The server's settings from the flags; every flag an operator can get
/// wrong is checked here, before the model takes seconds to load.
fn server_config(args: &ServeArgs) -> Result<ServerConfig> {
    let web_dir = args.web_dir.clone().or_else(default_web_dir);
    let openai_reasoning_field =
        ReasoningField::parse(&args.reasoning_field).with_context(|| {
            format!(
                "--reasoning-field: expected both, reasoning or reasoning_content, not {:?}",
                args.reasoning_field
            )
        })?;
    let auth = args
        .auth_tokens_file
        .as_deref()
        .map(AuthTokens::from_file)
        .transpose()
        .context("loading --auth-tokens-file")?;
    let allowed_origins = AllowedOrigins::parse(&args.allowed_origins)?;
    if auth.is_none() && !args.listen.ip().is_loopback() {
        tracing::warn!(
            listen = %args.listen,
            "listening on a non-loopback address without authentication: anyone who can reach \
             it can run the model and read /metrics (pass --auth-tokens-file; docs/security.md)"
        );
    }
    let shutdown_grace = std::time::Duration::try_from_secs_f64(args.shutdown_grace)
        .context("--shutdown-grace: expected seconds, at least 0")?;
    let limits = &args.limits;
    if limits.max_connections == 0 {
        bail!("--max-connections must be at least 1");
    }
    let secs = std::time::Duration::from_secs;
    let mib = |n: usize| n.saturating_mul(1 << 20);
    let resume = ResumeConfig {
        window: secs(args.resume.resume_window_s),
        run_buffer_bytes: mib(args.resume.resume_run_buffer_mb),
        total_buffer_bytes: mib(args.resume.resume_buffer_mb),
    };
    Ok(ServerConfig {
        max_input_bytes: limits.max_input_bytes,
        max_runs_per_client: limits.max_runs_per_client,
        max_connections: limits.max_connections,
        header_timeout: secs(limits.header_timeout_secs),
        body_timeout: secs(limits.body_timeout_secs),
        ws_idle_timeout: secs(limits.ws_idle_timeout_secs),
        shutdown_grace,
        auth,
        allowed_origins,
        web_dir,
        max_active_runs: args.model.max_batch()?,
        max_queued_runs: args.max_queued,
        max_queue_wait: queue_wait(args.max_queue_wait)?,
        openai_reasoning_field,
        resume,
        ..ServerConfig::default()
    })
}

/// `--max-queue-wait`: seconds, 0 for no limit.
fn queue_wait(secs: f64) -> Result<Option<std::time::Duration>> {
    if secs == 0.0 {
        return Ok(None);
    }
    match std::time::Duration::try_from_secs_f64(secs) {
        Ok(wait) => Ok(Some(wait)),
        Err(_) => bail!("--max-queue-wait must be a number of seconds, 0 or more"),
    }
}

/// Runs `thinkwire serve` until Ctrl-C or SIGTERM.
pub fn serve(args: ServeArgs) -> Result<()> {
    let keys = load_keys(&args)?;
    let config = agent_config(&args)?;
    let server_config = server_config(&args)?;
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
        if !args.no_warmup {
            let took = (model.warm_up(crate::agent::WarmUp::for_this_device()))
                .context("warming the model up")?;
            tracing::info!(elapsed_ms = took.as_millis() as u64, "warmed up");
        }
        Backend::Local(model)
    };
    let agent = Arc::new(Agent::with_backend(backend, keys, config));
    // A panic's message may quote what it was working on: log where it
    // happened, never what (issue #13).
    server::quiet_panics();
    let served = runtime.block_on(async move {
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
    });
    // A run thread stuck past the grace period must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}

/// Resolves at the first SIGTERM or SIGINT; a second one ends the process
/// at once, for an operator who will not wait for the grace period.
async fn shutdown_signal() {
    let (first, signalled) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Some(mut signals) = Signals::new() else {
            return;
        };
        let name = signals.next().await;
        tracing::info!(
            signal = name,
            "shutting down (a second signal exits at once)"
        );
        let _ = first.send(());
        let name = signals.next().await;
        tracing::warn!(signal = name, "second signal: exiting at once");
        exit_now();
    });
    let _ = signalled.await;
}

/// Ends the process without running exit handlers — `exit` would run
/// MLX's C++ static destructors under an engine thread that is still
/// decoding, and crash — and without a core dump (which would hold
/// conversations): SIGKILL to itself.
fn exit_now() -> ! {
    #[cfg(unix)]
    {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
    std::process::exit(1)
}

/// SIGTERM and SIGINT, as a stream of names.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Option<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(int)) => Some(Self { term, int }),
                (Err(err), _) | (_, Err(err)) => {
                    tracing::error!(error = %err, "cannot listen for SIGTERM/SIGINT");
                    None
                }
            }
        }
        #[cfg(not(unix))]
        Some(Self {})
    }

    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
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
