//! HTTP surface of thinkwire: the AG-UI transports (`POST /agent` over SSE,
//! `GET /agent/ws` over WebSocket), health, capabilities and the web demo.
//!
//! The server moves bytes and enforces limits; everything about runs lives in
//! [`crate::agent`]. [`app`] builds the router apart from [`serve`] so tests
//! bind it to `127.0.0.1:0` and talk to it over real sockets.
//!
//! ```no_run
//! # async fn demo(agent: std::sync::Arc<thinkwire::agent::Agent>) -> std::io::Result<()> {
//! use thinkwire::server::{ServerConfig, AppState};
//! let state = AppState::new(agent, ServerConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! thinkwire::server::serve(listener, state, std::future::pending()).await
//! # }
//! ```

mod accept;
mod admission;
mod auth;
mod limits;
mod listen;
mod origin;
mod panics;
mod rejection;
mod resume;
mod run;
mod shutdown;
mod sse;
mod v1;
mod web_demo;
mod ws;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};

use crate::agent::Agent;

pub use auth::{AuthError, AuthTokens};
pub use origin::{AllowedOrigins, BadOrigin};
pub use panics::quiet_panics;
pub use rejection::Rejection;
pub use resume::ResumeConfig;
pub use v1::ReasoningField;
/// The `/v1` decoders for the fuzz targets (`fuzz/`).
#[cfg(feature = "fuzzing")]
pub use v1::fuzzing;

/// Limits and timings of the transports.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest accepted request body or WebSocket frame, in bytes.
    pub max_input_bytes: usize,
    /// How long an SSE stream may stay silent before a `: keepalive` comment.
    pub keepalive: Duration,
    /// How often the server pings a WebSocket client.
    pub ws_ping: Duration,
    /// Runs a WebSocket client may queue behind the one in progress.
    pub ws_max_queued_runs: usize,
    /// Runs generating at once (the engine's batch, `serve --max-batch`).
    pub max_active_runs: usize,
    /// Runs in flight (generating or waiting) per client address; `0`: no
    /// limit (`serve --max-runs-per-client`). Behind a reverse proxy every
    /// client has the proxy's address.
    pub max_runs_per_client: usize,
    /// Runs admitted to wait for a place in the batch, server-wide
    /// (`serve --max-queued`); beyond both, runs are refused with
    /// `SERVER_BUSY`.
    pub max_queued_runs: usize,
    /// A run whose prompt would wait longer than this for the prompts
    /// queued ahead of it (by the engine's recent pace) is refused with
    /// `SERVER_BUSY` and a `Retry-After` of that wait (`serve
    /// --max-queue-wait`); `None`: only the counts above limit the queue.
    pub max_queue_wait: Option<Duration>,
    /// The built web demo (`web-demo/dist`), served at `/`.
    pub web_dir: Option<PathBuf>,
    /// Where chat completions put reasoning text (`serve --reasoning-field`).
    pub openai_reasoning_field: ReasoningField,
    /// Bearer tokens every endpoint but `/healthz` and the web demo's files
    /// requires (`serve --auth-tokens-file`); `None`: no authentication.
    pub auth: Option<AuthTokens>,
    /// Browser origins allowed on the WebSocket and by CORS
    /// (`serve --allowed-origins`).
    pub allowed_origins: AllowedOrigins,
    /// Connections open at once; past it one 503 `TOO_MANY_CONNECTIONS`.
    pub max_connections: usize,
    /// How long a request head may take to arrive, and how long a
    /// keep-alive connection may sit idle (hyper's header read timeout).
    pub header_timeout: Duration,
    /// Largest request head (start line and headers), in bytes (431 past).
    pub max_header_bytes: usize,
    /// How long a request body may take to arrive in full (408 past).
    pub body_timeout: Duration,
    /// A WebSocket without a run that has heard nothing from its client
    /// (not even a pong) for this long is closed.
    pub ws_idle_timeout: Duration,
    /// From SIGTERM/SIGINT to exit at the latest (`serve --shutdown-grace`;
    /// the phases are in `shutdown.rs`).
    pub shutdown_grace: Duration,
    /// How runs outlive a lost connection (`resume/`).
    pub resume: ResumeConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_input_bytes: 4 * 1024 * 1024,
            keepalive: Duration::from_secs(10),
            ws_ping: Duration::from_secs(20),
            ws_max_queued_runs: 4,
            max_active_runs: 8,
            max_queued_runs: 64,
            max_queue_wait: None,
            max_runs_per_client: 0,
            web_dir: None,
            openai_reasoning_field: ReasoningField::default(),
            auth: None,
            allowed_origins: AllowedOrigins::default(),
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            max_header_bytes: 64 * 1024,
            body_timeout: Duration::from_secs(60),
            ws_idle_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            resume: ResumeConfig::default(),
        }
    }
}

/// Shared state of every handler.
#[derive(Clone)]
pub struct AppState {
    agent: Arc<Agent>,
    config: Arc<ServerConfig>,
    admission: Arc<admission::Admission>,
    client_runs: Arc<limits::ClientRuns>,
    /// `/tokenize` and `/detokenize` at once: tokenizer CPU work, so as
    /// many as the CPU has cores.
    tokenizing: Arc<admission::WorkLimit>,
    /// Token counts at once: each prepares a run (on an upstream, asks
    /// the upstream), so as many as the batch runs (`--max-batch`).
    counting: Arc<admission::WorkLimit>,
    resumes: Arc<resume::Resumes>,
    shutdown: shutdown::Shutdown,
}

impl AppState {
    /// State for `agent` under `config`.
    pub fn new(agent: Arc<Agent>, config: ServerConfig) -> Self {
        let admission = admission::Admission::new(config.max_active_runs + config.max_queued_runs);
        let client_runs = limits::ClientRuns::new(config.max_runs_per_client);
        let resumes = resume::Resumes::new(config.resume);
        let tokenizing = admission::WorkLimit::new(admission::cpu_count(), admission::WORK_WAIT);
        let counting = admission::WorkLimit::new(config.max_active_runs, admission::WORK_WAIT);
        Self {
            agent,
            config: Arc::new(config),
            admission,
            client_runs,
            tokenizing,
            counting,
            resumes,
            shutdown: shutdown::Shutdown::default(),
        }
    }
}

/// The router: transports, health, capabilities, web demo.
///
/// Every route but `/healthz` (a probe for load balancers) and the web
/// demo's static files requires a token when `auth` is set; CORS is the
/// outermost layer so preflight requests, which carry no credentials, are
/// answered before authentication.
pub fn app(state: AppState) -> Router {
    let protected = Router::new()
        .route("/agent", post(sse::post_agent))
        .route("/agent/runs/{id}", get(sse::resume))
        .route("/agent/ws", get(ws::upgrade))
        .route("/capabilities", get(capabilities))
        .route("/metrics", get(metrics))
        .merge(v1::routes())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    let cors = state.config.allowed_origins.cors();
    Router::new()
        .merge(protected)
        .route("/healthz", get(healthz))
        .fallback_service(web_demo::service(state.config.web_dir.clone()))
        .layer(cors)
        .with_state(state)
}

/// Liveness: `ok`, and the model's id unless tokens are required (an
/// unauthenticated probe learns nothing about the deployment).
async fn healthz(State(state): State<AppState>) -> axum::Json<serde_json::Value> {
    let mut body = serde_json::json!({ "status": "ok" });
    if state.config.auth.is_none() {
        body["model"] = state.agent.model_id().into();
    }
    axum::Json(body)
}

/// Prometheus text exposition (`prometheus-client`'s encoder).
async fn metrics(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    // An upstream's load is its own; the engine's figures are then zero.
    let load = state
        .agent
        .model()
        .map(|model| model.engine().load())
        .unwrap_or_default();
    let server = crate::metrics::ServerLoad {
        runs_in_flight: state.admission.in_flight(),
        resumable_runs: state.resumes.held(),
        resume_buffer_bytes: state.resumes.buffered_bytes(),
    };
    let text = state.agent.metrics().render_with(&load, &server);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

async fn capabilities(
    State(state): State<AppState>,
) -> axum::Json<thinkwire_protocol::AgentCapabilities> {
    let mut caps = state.agent.capabilities();
    // Where MLX runs a local model: `cpu`, `gpu (cuda)`, `gpu (metal)`.
    #[cfg(feature = "mlx")]
    if let (Some(custom), "local") = (caps.custom.as_mut(), state.agent.backend().kind()) {
        custom.insert("device".into(), thinkwire_engine::mlx::device_name().into());
    }
    // `POST /agent` answers in either HTTP binding (sse.rs): JSON over SSE
    // or, when `Accept` asks for it, protobuf.
    let transport = caps.transport.get_or_insert_with(Default::default);
    transport.http_binary = Some(true);
    // A dropped stream resumes from its last sequence number (`resume/`),
    // unless the operator turned that off.
    transport.resumable = Some(!state.config.resume.window.is_zero());
    if let Some(transports) = caps
        .custom
        .as_mut()
        .and_then(|custom| custom.get_mut("transports"))
        .and_then(|t| t.as_array_mut())
    {
        transports.push("protobuf".into());
    }
    axum::Json(caps)
}

/// Serves `app(state)` on `listener` until `shutdown` resolves, then shuts
/// down gracefully within `config.shutdown_grace`: runs in progress may
/// finish, or end with `SERVER_SHUTTING_DOWN` (their reasoning sealed
/// first), and WebSockets close with 1001 (`shutdown.rs`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listen::serve(listener, state, shutdown).await
}
