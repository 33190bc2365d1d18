//! The accept loop: hyper's HTTP/1 connection driven directly, for what
//! `axum::serve` does not expose (issue #13):
//! - a **header read timeout**, which is also the keep-alive idle timeout
//!   (hyper starts it whenever it waits for a request head): a slowloris
//!   client that trickles its headers is dropped, others are unaffected;
//! - a **header size** limit (431 beyond it, hyper's own answer);
//! - a **connection cap**: past it a connection is answered with one 503
//!   `TOO_MANY_CONNECTIONS` and closed; a WebSocket holds its place for as
//!   long as it is open;
//! - the **peer address** of each request (`ConnectInfo`), for the
//!   per-client run limit;
//! - **graceful shutdown** in the phases of [`super::shutdown`]: at the
//!   signal each connection finishes its response in progress and closes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use super::rejection::Rejection;
use super::{AppState, app};

/// A place among `max_connections`, held by the connection and, after an
/// upgrade, by its WebSocket.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionSlot(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// Serves `app(state)` on `listener` until `shutdown` resolves, then shuts
/// down gracefully (see [`super::shutdown`]).
pub(super) async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = app(state.clone());
    // Ended runs' replay buffers go when their window is over.
    let reaper = tokio::spawn(std::sync::Arc::clone(&state.resumes).reap());
    let _reaper = reaper_guard(reaper);
    // HTTP connections (a WebSocket leaves this set at its upgrade and is
    // tracked by the shutdown's own tracker from then on).
    let connections = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(state.config.max_connections));
    let mut signal = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of descriptors, mostly: back off, keep serving.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(permit) => connection(stream, peer, permit, &router, &state, &connections),
            Err(_) => refuse(stream, &state),
        }
    }
    drop(listener);
    tracing::info!(
        grace_s = state.config.shutdown_grace.as_secs_f64(),
        "shutting down: no new connections or runs; runs in progress get the grace period"
    );
    state.shutdown.begin();
    connections.close();
    state
        .shutdown
        .finish(state.config.shutdown_grace, connections.wait())
        .await;
    Ok(())
}

fn builder(state: &AppState) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(state.config.header_timeout)
        .max_header_size(state.config.max_header_bytes);
    builder
}

fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    permit: OwnedSemaphorePermit,
    router: &Router,
    state: &AppState,
    connections: &TaskTracker,
) {
    let _ = stream.set_nodelay(true);
    let slot = ConnectionSlot(Arc::new(permit));
    let router = router.clone();
    let request_slot = slot.clone();
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(request_slot.clone());
        router.clone().oneshot(request)
    });
    let conn = builder(state)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let metrics = Arc::clone(state.agent.metrics());
    let shutdown = state.shutdown.clone();
    connections.spawn(async move {
        let mut conn = std::pin::pin!(conn);
        let ended = tokio::select! {
            ended = conn.as_mut() => ended,
            () = shutdown.draining() => {
                // Finish the response in progress, then close (no more
                // keep-alive); an idle connection closes at once.
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        };
        if let Err(err) = ended {
            if err.is_timeout() {
                // A request head that did not arrive in time: a slow or
                // idle client, or a slowloris.
                tracing::debug!("connection closed: request head timed out");
                metrics.request_refused("HEADER_TIMEOUT");
            } else if err.is_parse_too_large() {
                metrics.request_refused("HEADERS_TOO_LARGE");
            } else {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        }
        drop(slot);
    });
}

/// Over `max_connections`: one 503 with a code, then close.
fn refuse(stream: TcpStream, state: &AppState) {
    let limit = state.config.max_connections;
    tracing::info!(limit, "connection refused: too many connections");
    state
        .agent
        .metrics()
        .request_refused("TOO_MANY_CONNECTIONS");
    let service = hyper::service::service_fn(move |_request: Request<Incoming>| async move {
        let mut response: Response = Rejection::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "TOO_MANY_CONNECTIONS",
            format!("the server holds its limit of {limit} connections; retry shortly"),
        )
        .into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        Ok::<_, Infallible>(response)
    });
    let mut builder = builder(state);
    builder.keep_alive(false);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    // Bounded by the header timeout; not part of graceful shutdown.
    tokio::spawn(async move {
        let _ = conn.await;
    });
}

/// Stops the resume reaper when the server's future ends.
fn reaper_guard(task: tokio::task::JoinHandle<()>) -> impl Drop {
    struct Abort(tokio::task::JoinHandle<()>);
    impl Drop for Abort {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    Abort(task)
}
