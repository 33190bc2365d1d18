//! Where a run's events go: each is checked by the protocol's sequence
//! verifier (debug builds and tests), encoded once, and handed to the
//! transport as a [`Frame`]. A failed hand-over means the client is gone,
//! which the run turns into stopping the engine.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use thinkwire_protocol::{Event, RunError, Verifier};
use tokio::sync::mpsc;

/// One encoded event: the JSON of an SSE `data:` line or a WebSocket text
/// frame, and the event itself for in-process codecs (the OpenAI and
/// Anthropic surfaces map typed events rather than re-parse the JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The event as JSON, one line.
    pub json: String,
    /// `RUN_FINISHED` or `RUN_ERROR`: nothing of this run follows.
    pub terminal: bool,
    /// The event the JSON encodes.
    pub event: Event,
}

impl Frame {
    /// Encodes `event`.
    pub fn event(event: &Event) -> Self {
        Self {
            json: event.to_json(),
            terminal: event.event_type().is_terminal(),
            event: event.clone(),
        }
    }

    /// A lone `RUN_ERROR`, for input refused before the run started.
    pub fn run_error(message: &str, code: &str) -> Self {
        Self::event(&Event::new(RunError::new(message, code)))
    }
}

/// Asks a run to stop between two decode steps; it then closes what is open
/// and finishes with `outcome: cancelled` — or, when the server is shutting
/// down, with `RUN_ERROR` code `SERVER_SHUTTING_DOWN`.
#[derive(Debug, Clone, Default)]
pub struct CancelRun(Arc<AtomicU8>);

/// [`CancelRun`]'s states.
const RUNNING: u8 = 0;
const CANCELLED: u8 = 1;
const SHUTTING_DOWN: u8 = 2;

impl CancelRun {
    /// Requests cancellation (the client's `CANCEL_RUN`).
    pub fn cancel(&self) {
        let _ = self
            .0
            .compare_exchange(RUNNING, CANCELLED, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Stops the run because the server is shutting down; this wins over a
    /// client's cancel, since the run ends in error either way.
    pub fn shut_down(&self) {
        self.0.store(SHUTTING_DOWN, Ordering::SeqCst);
    }

    /// Whether the run was asked to stop, for either reason.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst) != RUNNING
    }

    /// Whether the run was stopped by the server's shutdown.
    pub fn is_shutting_down(&self) -> bool {
        self.0.load(Ordering::SeqCst) == SHUTTING_DOWN
    }
}

/// The client went away: nothing more can be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

/// The sending end of a run, used from the run's blocking thread.
pub struct RunOutput {
    tx: mpsc::Sender<Frame>,
    cancel: CancelRun,
    verifier: Option<Verifier>,
}

impl RunOutput {
    /// Output into `tx`, cancellable through `cancel`. Debug builds verify
    /// every event against the AG-UI sequence rules.
    pub fn new(tx: mpsc::Sender<Frame>, cancel: CancelRun) -> Self {
        Self {
            tx,
            cancel,
            verifier: cfg!(debug_assertions).then(Verifier::new),
        }
    }

    /// Whether the client asked to stop, or is gone.
    pub fn should_stop(&self) -> bool {
        self.cancel.is_cancelled() || self.tx.is_closed()
    }

    /// Whether the client asked to stop (as opposed to leaving).
    pub fn cancel_requested(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Whether the server's shutdown stopped the run.
    pub fn shutting_down(&self) -> bool {
        self.cancel.is_shutting_down()
    }

    /// Sends one event, blocking while the client is slow.
    ///
    /// An event that breaks the AG-UI sequence rules is a bug in thinkwire:
    /// in debug builds it is replaced by a `RUN_ERROR` naming the rule (so a
    /// test fails instead of a user's frontend) and the run ends there.
    pub fn emit(&mut self, event: impl Into<Event>) -> Result<(), Disconnected> {
        let event = event.into();
        if let Some(verifier) = &mut self.verifier
            && let Err(err) = verifier.check(&event)
        {
            tracing::error!(error = %err, "thinkwire emitted an invalid AG-UI event sequence");
            // Reset so the RUN_ERROR itself is judged on a fresh state.
            self.verifier = None;
            let frame = Frame::run_error(
                &format!("internal error: invalid event sequence ({err})"),
                "EVENT_SEQUENCE_BUG",
            );
            let _ = self.tx.blocking_send(frame);
            return Err(Disconnected);
        }
        self.tx
            .blocking_send(Frame::event(&event))
            .map_err(|_| Disconnected)
    }
}
