//! Per-request limits (issue #13): a request body must fit in
//! `max_input_bytes` and arrive within `body_timeout`, and one client
//! address may have at most `max_runs_per_client` runs in flight. The
//! connection-level limits (header timeout and size, connection cap) are
//! the listener's (`listen.rs`); admission (`admission.rs`) is the
//! server-wide run limit.
//!
//! Each refusal has a code and is counted in `/metrics`
//! (`thinkwire_requests_refused_total` or `thinkwire_runs_refused_total`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::AppState;
use super::rejection::Rejection;
use super::v1::ApiError;
use crate::agent::{RejectKind, RunRejected};

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Over `max_input_bytes` (413 `INPUT_TOO_LARGE`).
    TooLarge(usize),
    /// Not in full within `body_timeout` (408 `BODY_TIMEOUT`).
    TimedOut(Duration),
    /// The connection failed while reading (400 `BODY_UNREADABLE`).
    Unreadable,
}

impl BodyError {
    fn code(self) -> &'static str {
        match self {
            Self::TooLarge(_) => "INPUT_TOO_LARGE",
            Self::TimedOut(_) => "BODY_TIMEOUT",
            Self::Unreadable => "BODY_UNREADABLE",
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Unreadable => StatusCode::BAD_REQUEST,
        }
    }

    fn message(self) -> String {
        match self {
            Self::TooLarge(limit) => {
                format!("the request body exceeds the limit of {limit} bytes")
            }
            Self::TimedOut(after) => format!(
                "the request body did not arrive within {} s",
                after.as_secs()
            ),
            Self::Unreadable => "the request body could not be read".into(),
        }
    }
}

impl From<BodyError> for Rejection {
    fn from(err: BodyError) -> Self {
        Rejection::new(err.status(), err.code(), err.message())
    }
}

impl From<BodyError> for ApiError {
    fn from(err: BodyError) -> Self {
        ApiError {
            status: err.status(),
            code: err.code().to_owned(),
            message: err.message(),
            param: None,
            retry_after_secs: 1,
        }
    }
}

/// Reads `body` under the size limit and the arrival deadline; a refusal
/// is counted.
pub(crate) async fn read_body(state: &AppState, body: Body) -> Result<Bytes, BodyError> {
    let limit = state.config.max_input_bytes;
    let deadline = state.config.body_timeout;
    let read = tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await;
    let err = match read {
        Ok(Ok(bytes)) => return Ok(bytes),
        Ok(Err(err)) => {
            // `to_bytes` reports the limit as a length-limit error anywhere
            // in its source chain.
            let mut source: Option<&dyn std::error::Error> = Some(&err);
            let mut too_large = false;
            while let Some(e) = source {
                too_large |= e.is::<http_body_util::LengthLimitError>();
                source = e.source();
            }
            if too_large {
                BodyError::TooLarge(limit)
            } else {
                BodyError::Unreadable
            }
        }
        Err(_) => BodyError::TimedOut(deadline),
    };
    tracing::info!(code = err.code(), "request body refused");
    state.agent.metrics().request_refused(err.code());
    Err(err)
}

/// The address a request came from (`None` when served without the
/// listener, as `app` alone is in some tests).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip()),
        ))
    }
}

/// Runs in flight per client address.
#[derive(Debug)]
pub(crate) struct ClientRuns {
    limit: usize,
    counts: Mutex<HashMap<IpAddr, usize>>,
}

/// One run of one address; given back when dropped.
#[derive(Debug)]
pub(crate) struct ClientPermit {
    owner: Arc<ClientRuns>,
    ip: IpAddr,
}

impl ClientRuns {
    /// At most `limit` runs per address; `0` means no limit.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            counts: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more run of `client`: `Ok(None)` when there is no
    /// limit or no address, `Err` with the refusal when the address is at
    /// its limit.
    pub fn try_admit(
        self: &Arc<Self>,
        client: Client,
    ) -> Result<Option<ClientPermit>, RunRejected> {
        let (Some(ip), true) = (client.0, self.limit > 0) else {
            return Ok(None);
        };
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let count = counts.entry(ip).or_insert(0);
        if *count >= self.limit {
            return Err(RunRejected::new(
                RejectKind::Busy,
                "CLIENT_BUSY",
                format!(
                    "this client address has {} runs in progress, the most allowed; retry when one ends",
                    self.limit
                ),
            ));
        }
        *count += 1;
        Ok(Some(ClientPermit {
            owner: Arc::clone(self),
            ip,
        }))
    }
}

impl Drop for ClientPermit {
    fn drop(&mut self) {
        let mut counts = self.owner.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = counts.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_runs_count_per_address_and_free_on_drop() {
        let runs = ClientRuns::new(2);
        let a = Client(Some("10.0.0.1".parse().unwrap()));
        let b = Client(Some("10.0.0.2".parse().unwrap()));
        let a1 = runs.try_admit(a).unwrap();
        let _a2 = runs.try_admit(a).unwrap();
        let refused = runs.try_admit(a).unwrap_err();
        assert_eq!(refused.code, "CLIENT_BUSY");
        assert!(runs.try_admit(b).unwrap().is_some());
        drop(a1);
        assert!(runs.try_admit(a).unwrap().is_some());
        // No address, or no limit: nothing to count.
        assert!(runs.try_admit(Client(None)).unwrap().is_none());
        assert!(ClientRuns::new(0).try_admit(a).unwrap().is_none());
    }
}
