//! Graceful shutdown (issue #13): what the server does between the first
//! SIGTERM/SIGINT and its exit.
//!
//! 1. **Draining** (at the signal): the listener closes; keep-alive HTTP
//!    connections close after the response in progress; new runs on open
//!    connections are refused with `SERVER_SHUTTING_DOWN` (503); idle
//!    WebSockets close with 1001 at once, busy ones after their run.
//! 2. **Stopping runs** (at `grace - reserve`): runs still going are
//!    stopped like a cancel — each closes what is open, so every reasoning
//!    message already said gets its sealed `REASONING_ENCRYPTED_VALUE` — and
//!    ends with `RUN_ERROR` code `SERVER_SHUTTING_DOWN`; their WebSockets
//!    then close with 1001.
//! 3. **Exit** (at the latest at `grace`): [`super::serve`] returns once
//!    every connection, socket and run has ended, or when the grace period
//!    is over, whichever comes first.
//!
//! The reserve is a quarter of the grace period, at most 2 s: the time a
//! stopped run needs to finish its decode step and flush its last events.
//! A second signal is the binary's business: it exits at once
//! (`thinkwire serve`).

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The phases above, shared by the listener, the transports and the runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shutdown {
    /// Cancelled at the signal.
    draining: CancellationToken,
    /// Cancelled when runs in progress must stop.
    stop_runs: CancellationToken,
    /// Runs and WebSocket sessions (the listener tracks HTTP connections
    /// itself); exit waits for them.
    tasks: TaskTracker,
}

impl Shutdown {
    /// Whether the server is draining (or further along).
    pub fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// Resolves when draining begins.
    pub async fn draining(&self) {
        self.draining.cancelled().await;
    }

    /// Resolves when runs in progress must stop.
    pub async fn runs_stopping(&self) {
        self.stop_runs.cancelled().await;
    }

    /// The tracker runs and sessions register with.
    pub fn tasks(&self) -> &TaskTracker {
        &self.tasks
    }

    /// Begins draining now.
    pub fn begin(&self) {
        self.draining.cancel();
    }

    /// Drives phases 2 and 3 after [`Self::begin`]: `connections` resolves
    /// when the listener's HTTP connections have all ended.
    pub async fn finish(&self, grace: Duration, connections: impl Future<Output = ()>) {
        let started = Instant::now();
        let reserve = (grace / 4).min(Duration::from_secs(2));
        let deadline = started + grace;
        self.tasks.close();
        let everything = async {
            tokio::join!(connections, self.tasks.wait());
        };
        tokio::pin!(everything);
        // Phase 2 at `grace - reserve`, unless all is done by then.
        let done = tokio::select! {
            () = &mut everything => true,
            () = tokio::time::sleep_until(deadline - reserve) => false,
        };
        if done {
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "every run and connection ended within the grace period"
            );
            return;
        }
        tracing::info!(
            runs_and_sockets = self.tasks.len(),
            "grace period nearly over: stopping runs in progress (SERVER_SHUTTING_DOWN)"
        );
        self.stop_runs.cancel();
        if tokio::time::timeout_at(deadline, everything).await.is_err() {
            tracing::warn!(
                runs_and_sockets = self.tasks.len(),
                "grace period over with work still in progress; exiting anyway"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn runs_stop_at_the_reserve_and_exit_comes_by_the_deadline() {
        let shutdown = Shutdown::default();
        let watcher = shutdown.clone();
        // A run that only ends when told to stop, 100 ms after.
        shutdown.tasks().spawn(async move {
            watcher.runs_stopping().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        });
        // A run that never ends.
        shutdown.tasks().spawn(std::future::pending::<()>());
        let start = Instant::now();
        shutdown.begin();
        assert!(shutdown.is_draining());
        shutdown
            .finish(Duration::from_secs(10), std::future::ready(()))
            .await;
        // Stopped at 8 s, exit at the 10 s deadline (the second run hangs).
        assert_eq!(start.elapsed(), Duration::from_secs(10));
        assert_eq!(shutdown.tasks().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn exit_is_immediate_when_nothing_runs() {
        let shutdown = Shutdown::default();
        let start = Instant::now();
        shutdown.begin();
        shutdown
            .finish(Duration::from_secs(10), std::future::ready(()))
            .await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert!(!shutdown.stop_runs.is_cancelled());
    }
}
