//! HTTP surface of thinkwire: the AG-UI transports (`POST /agent` over SSE,
//! `GET /agent/ws` over WebSocket), health, capabilities and the web demo.
//!
//! The server moves bytes and enforces limits; everything about runs lives in
//! [`crate::agent`]. [`app`] builds the router apart from [`serve`] so tests
//! bind it to `127.0.0.1:0` and talk to it over real sockets.
//!
//! ```no_run
//! # async fn demo(agent: std::sync::Arc<thinkwire::agent::Agent>) -> std::io::Result<()> {
//! use thinkwire::server::{app, ServerConfig, AppState};
//! let state = AppState::new(agent, ServerConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! axum::serve(listener, app(state)).await
//! # }
//! ```

mod admission;
mod rejection;
mod run;
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
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;

pub use rejection::Rejection;
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
    /// Runs admitted to wait for a place in the batch, server-wide
    /// (`serve --max-queued`); beyond both, runs are refused with
    /// `SERVER_BUSY`.
    pub max_queued_runs: usize,
    /// The built web demo (`web-demo/dist`), served at `/`.
    pub web_dir: Option<PathBuf>,
    /// Where chat completions put reasoning text (`serve --reasoning-field`).
    pub openai_reasoning_field: ReasoningField,
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
            web_dir: None,
            openai_reasoning_field: ReasoningField::default(),
        }
    }
}

/// Shared state of every handler.
#[derive(Clone)]
pub struct AppState {
    agent: Arc<Agent>,
    config: Arc<ServerConfig>,
    admission: Arc<admission::Admission>,
    shutdown: CancellationToken,
}

impl AppState {
    /// State for `agent` under `config`.
    pub fn new(agent: Arc<Agent>, config: ServerConfig) -> Self {
        let admission = admission::Admission::new(config.max_active_runs + config.max_queued_runs);
        Self {
            agent,
            config: Arc::new(config),
            admission,
            shutdown: CancellationToken::new(),
        }
    }

    /// Cancelled when the server shuts down: WebSockets close with 1000 and
    /// runs in progress are cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}

/// The router: transports, health, capabilities, web demo.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/agent", post(sse::post_agent))
        .route("/agent/ws", get(ws::upgrade))
        .route("/healthz", get(healthz))
        .route("/capabilities", get(capabilities))
        .route("/metrics", get(metrics))
        .merge(v1::routes())
        .fallback_service(web_demo::service(state.config.web_dir.clone()))
        .with_state(state)
}

async fn healthz(State(state): State<AppState>) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({
        "status": "ok",
        "model": state.agent.model_id(),
    }))
}

/// Prometheus text exposition (`prometheus-client`'s encoder).
async fn metrics(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    let server = crate::metrics::ServerLoad {
        runs_in_flight: state.admission.in_flight(),
    };
    let text = state
        .agent
        .metrics()
        .render_with(&state.agent.model().engine().load(), &server);
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
    axum::Json(state.agent.capabilities())
}

/// Serves `app(state)` on `listener` until `shutdown` resolves; then closes
/// WebSockets with 1000, cancels runs in progress and drains connections.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = state.shutdown_token();
    let signal = async move {
        shutdown.await;
        token.cancel();
    };
    axum::serve(listener, app(state))
        .with_graceful_shutdown(signal)
        .await
}
