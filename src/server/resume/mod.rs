//! Resumable runs (docs/protocol.md, "Resuming a run"): a run outlives the
//! connection that started it by up to `serve --resume-window-s`, and the
//! holder of its resume token can pick it up again on a new connection,
//! after the last event it saw.
//!
//! What the server keeps, and for how long: for each run, the events
//! already handed to its client (post visibility: nothing the client was
//! not going to see), encoded, in memory only, bounded per run and in total
//! (`--resume-buffer-mb`); the SHA-256 digests of the resume token and of
//! the bearer credential that started it. All of it is dropped when the
//! window ends with nobody attached, or a window after the run's end. None
//! of it is ever written to disk or logged.
//!
//! A second connection that resumes while the first is still attached
//! takes the run over: a dropped connection is often still open on the
//! server's side (a half-open TCP connection can look alive for minutes),
//! so refusing would lock the client out of its own run. The first
//! connection gets nothing more of the run (SSE and protobuf: its response
//! ends without a terminal event; WebSocket: the socket closes with 4001).

mod buffer;
mod relay;
mod secret;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use thinkwire_protocol::ResumeGrant;

use super::rejection::Rejection;
use super::run::ActiveRun;
use crate::agent::Frame;
use buffer::{Budget, ReplayBuffer};
use relay::{Ended, Held, TakeOverError};
use tokio::sync::Notify;
use tokio::time::Instant;

pub(crate) use relay::{Attachment, STALLED_AFTER, Sequenced};
pub(crate) use secret::SecretDigest;

/// The resume URL of run `id`.
pub(crate) fn resume_url(id: &str) -> String {
    format!("/agent/runs/{id}")
}

/// How runs are held (`serve --resume-window-s`, `--resume-buffer-mb`,
/// `--resume-run-buffer-mb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeConfig {
    /// How long a run waits for its client to come back; zero turns
    /// resumption off (a client that leaves stops its run at once).
    pub window: Duration,
    /// Bytes of replay buffer per run.
    pub run_buffer_bytes: usize,
    /// Bytes of replay buffer across every run.
    pub total_buffer_bytes: usize,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(30),
            run_buffer_bytes: 4 << 20,
            total_buffer_bytes: 64 << 20,
        }
    }
}

/// The runs held for resumption, by resume id.
pub(crate) struct Resumes {
    runs: Mutex<HashMap<String, Arc<Held>>>,
    budget: Arc<Budget>,
    config: ResumeConfig,
    /// Wakes the reaper when a run ends.
    ended: Notify,
}

/// A resume that was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResumeRefused {
    status: StatusCode,
    code: &'static str,
    message: String,
    path: Option<&'static str>,
}

impl ResumeRefused {
    /// The request itself is malformed (`field` names what).
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "INVALID_INPUT",
            message: message.into(),
            path: Some(field),
        }
    }

    /// Not the run's holder (or no token at all).
    pub fn refused(message: &str) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            code: "RESUME_REFUSED",
            message: message.into(),
            path: None,
        }
    }

    fn expired() -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "RUN_EXPIRED",
            message: "no run to resume here: it ended or expired, or the events after the last \
                      one seen are no longer held"
                .into(),
            path: None,
        }
    }

    /// The error code (for `/metrics`).
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The WebSocket form: a lone `RUN_ERROR`.
    pub fn run_error_frame(&self) -> Frame {
        let message = match self.path {
            Some(path) => format!("{} (at {path})", self.message),
            None => self.message.clone(),
        };
        Frame::run_error(&message, self.code)
    }
}

impl From<ResumeRefused> for Rejection {
    fn from(refused: ResumeRefused) -> Self {
        let rejection = Rejection::new(refused.status, refused.code, refused.message);
        match refused.path {
            Some(path) => rejection.at(path),
            None => rejection,
        }
    }
}

impl Resumes {
    /// An empty registry under `config`.
    pub fn new(config: ResumeConfig) -> Arc<Self> {
        Arc::new(Self {
            runs: Mutex::new(HashMap::new()),
            budget: Budget::new(config.total_buffer_bytes),
            config,
            ended: Notify::new(),
        })
    }

    /// Runs held now, running or ended (for `/metrics`).
    pub fn held(&self) -> usize {
        self.lock().len()
    }

    /// Bytes of every replay buffer now (for `/metrics`).
    pub fn buffered_bytes(&self) -> usize {
        self.budget.used()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Held>>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes a started run in: its events get sequence numbers and, with
    /// resumption on, are held for the window. The connection that started
    /// it is attached, with the grant to resume it.
    pub fn hold(self: &Arc<Self>, run: ActiveRun, identity: Option<&SecretDigest>) -> Attachment {
        let ActiveRun {
            frames,
            cancel,
            run_id,
        } = run;
        let on = !self.config.window.is_zero();
        let id = secret::resume_id();
        let token = secret::resume_token();
        let cap = if on { self.config.run_buffer_bytes } else { 0 };
        let (held, mut attachment) = Held::new(
            run_id,
            cancel,
            SecretDigest::of(&token),
            identity.copied(),
            ReplayBuffer::new(cap, Arc::clone(&self.budget)),
        );
        if on {
            attachment.grant = Some(ResumeGrant {
                url: resume_url(&id),
                id: id.clone(),
                token,
                window_secs: self.config.window.as_secs(),
            });
            self.lock().insert(id.clone(), Arc::clone(&held));
        }
        let registry = Arc::clone(self);
        let window = self.config.window;
        tokio::spawn(async move {
            match relay::relay(held, frames, window).await {
                Ended::Expired => {
                    registry.lock().remove(&id);
                }
                Ended::Run => registry.ended.notify_one(),
            }
        });
        attachment
    }

    /// Drops ended runs whose window is over, as each one's comes: one task
    /// for the server's life (`listen.rs` starts it), so a run's own task
    /// ends with the run.
    pub async fn reap(self: Arc<Self>) {
        loop {
            let now = Instant::now();
            let next = {
                let mut runs = self.lock();
                runs.retain(|_, held| {
                    let gone = held.expired_at(now);
                    if gone {
                        held.expire();
                    }
                    !gone
                });
                runs.values().filter_map(|held| held.expires_at()).min()
            };
            match next {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = self.ended.notified() => {}
                    }
                }
                None => self.ended.notified().await,
            }
        }
    }

    /// Attaches a connection to run `id` for the holder of `token` (and,
    /// with authentication on, of the same bearer `identity`), after event
    /// `last` (which the client sent as `last_field`).
    pub fn attach(
        &self,
        id: &str,
        token: Option<&str>,
        identity: Option<&SecretDigest>,
        (last, last_field): (u64, &'static str),
    ) -> Result<Attachment, ResumeRefused> {
        let Some(held) = self.lock().get(id).cloned() else {
            return Err(ResumeRefused::expired());
        };
        let Some(token) = token else {
            return Err(ResumeRefused::refused(
                "resuming a run takes the resume token its first response carried",
            ));
        };
        match held.take_over(token, identity, last) {
            Ok(attachment) => {
                tracing::info!(run_id = %held.run_id, after = last, "run resumed");
                Ok(attachment)
            }
            Err(TakeOverError::NotHolder) => Err(ResumeRefused::refused(
                "the resume token, or the identity presenting it, is not this run's",
            )),
            Err(TakeOverError::Expired) => Err(ResumeRefused::expired()),
            Err(TakeOverError::BeyondEnd { sent }) => Err(ResumeRefused::invalid(
                last_field,
                format!("the run has sent {sent} events; the last one seen cannot be later"),
            )),
        }
    }
}
