//! Where a run's events go: each is checked by the protocol's sequence
//! verifier (debug builds and tests), encoded once, and handed to the
//! transport as a [`Frame`]. A failed hand-over means the client is gone,
//! which the run turns into stopping the engine.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
/// and finishes with `outcome: cancelled`.
#[derive(Debug, Clone, Default)]
pub struct CancelRun(Arc<AtomicBool>);

impl CancelRun {
    /// Requests cancellation.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether cancellation was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
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
