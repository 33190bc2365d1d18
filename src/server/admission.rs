//! Server-wide admission: at most `max_active_runs + max_queued_runs` runs
//! in flight on every transport together (generating in the engine's batch,
//! or waiting for a place in it). Beyond that a run is refused before
//! `RUN_STARTED` — HTTP 429 with `Retry-After` on `POST /agent`, a
//! `RUN_ERROR` with code `SERVER_BUSY` on a WebSocket, whose socket stays
//! open — and nothing already admitted is touched.
//!
//! Work that is no run but takes a blocking thread (`/tokenize`,
//! `/detokenize`, the token counts) is bounded apart ([`WorkLimit`]), so
//! it can neither take the batch's places nor crowd the blocking threads
//! that runs are prepared and driven on.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Admission {
    limit: usize,
    in_flight: AtomicUsize,
}

/// A place taken; given back when dropped (the run's thread ends).
#[derive(Debug)]
pub(crate) struct Permit(Arc<Admission>);

impl Admission {
    /// Admits at most `limit` runs at once.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            in_flight: AtomicUsize::new(0),
        })
    }

    /// The most runs in flight.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Runs holding a place now (for `/metrics`).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// A place for one more run, if there is one.
    pub fn try_admit(self: &Arc<Self>) -> Option<Permit> {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Permit(Arc::clone(self)))
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long a request waits for a [`WorkLimit`] slot before it is
/// refused: long enough to ride out a burst of millisecond tokenizations,
/// short enough that a client of a saturated server hears so at once.
pub(crate) const WORK_WAIT: Duration = Duration::from_secs(1);

/// The CPU's cores (at least one): how many tokenizations can make
/// progress at once; more would only wait for a core while holding a
/// blocking thread and their text.
pub(crate) fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// At most `limit` pieces of blocking work at once; a request waits at
/// most `wait` for a slot (the waiters are bounded by the connection
/// cap). The slot travels into the blocking closure, so it is given back
/// only when the work has ended, whether or not its client is still
/// there: abandoned work can never pile up past the limit.
#[derive(Debug)]
pub(crate) struct WorkLimit {
    slots: Arc<Semaphore>,
    limit: usize,
    wait: Duration,
}

/// Why [`WorkLimit::run`] ran nothing, or ran it to no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkError {
    /// Every slot stayed taken for the whole wait.
    Busy,
    /// The work panicked (or the runtime is going away).
    Failed,
}

impl WorkLimit {
    /// `limit` slots (at least one), waited for at most `wait`.
    pub fn new(limit: usize, wait: Duration) -> Arc<Self> {
        let limit = limit.max(1);
        Arc::new(Self {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            wait,
        })
    }

    /// The most pieces of work at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Slots free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.slots.available_permits()
    }

    /// `work` on a blocking thread once a slot is free. It is handed a
    /// token cancelled when this future is dropped (hyper drops it when
    /// the client goes): a blocking thread cannot be stopped from outside,
    /// so the work checks the token between its steps and gives up early.
    pub async fn run<T, F>(&self, work: F) -> Result<T, WorkError>
    where
        T: Send + 'static,
        F: FnOnce(&CancellationToken) -> T + Send + 'static,
    {
        let slots = Arc::clone(&self.slots);
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => match tokio::time::timeout(self.wait, slots.acquire_owned()).await {
                Ok(Ok(slot)) => slot,
                // Timed out (a closed semaphore would be the same: none).
                _ => return Err(WorkError::Busy),
            },
        };
        let gone = CancellationToken::new();
        // Fires when this future is dropped; after the work has ended
        // (a normal return) nothing reads it any more.
        let _on_drop = gone.clone().drop_guard();
        let task = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work(&gone)
        });
        task.await.map_err(|_| WorkError::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_and_frees_on_drop() {
        let a = Admission::new(2);
        let p1 = a.try_admit().unwrap();
        let _p2 = a.try_admit().unwrap();
        assert!(a.try_admit().is_none());
        drop(p1);
        assert!(a.try_admit().is_some());
    }

    /// Waits until `done` holds, for at most five seconds.
    async fn eventually(done: impl Fn() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the condition never held");
    }

    #[tokio::test]
    async fn work_past_the_limit_waits_then_is_refused_busy() {
        let limit = WorkLimit::new(1, Duration::from_millis(20));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let first = tokio::spawn({
            let limit = Arc::clone(&limit);
            async move { limit.run(move |_| hold.recv().is_ok()).await }
        });
        eventually(|| limit.free() == 0).await;
        assert_eq!(limit.run(|_| ()).await, Err(WorkError::Busy));
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap(), Ok(true));
        assert_eq!(limit.run(|_| 7).await, Ok(7));
        assert_eq!(limit.free(), 1);
    }

    #[tokio::test]
    async fn a_waiter_gets_the_slot_its_work_frees() {
        let limit = WorkLimit::new(1, Duration::from_secs(5));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let first = tokio::spawn({
            let limit = Arc::clone(&limit);
            async move { limit.run(move |_| hold.recv().is_ok()).await }
        });
        eventually(|| limit.free() == 0).await;
        let second = tokio::spawn({
            let limit = Arc::clone(&limit);
            async move { limit.run(|_| "second").await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap(), Ok(true));
        assert_eq!(second.await.unwrap(), Ok("second"));
    }

    #[tokio::test]
    async fn work_whose_request_is_dropped_is_told_and_keeps_its_slot_until_it_ends() {
        let limit = WorkLimit::new(1, Duration::ZERO);
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let (report, told) = std::sync::mpsc::channel::<bool>();
        let request = tokio::spawn({
            let limit = Arc::clone(&limit);
            async move {
                limit
                    .run(move |gone| {
                        let _ = hold.recv();
                        let _ = report.send(gone.is_cancelled());
                    })
                    .await
            }
        });
        eventually(|| limit.free() == 0).await;
        // The client leaves: its request's future is dropped.
        request.abort();
        assert!(request.await.unwrap_err().is_cancelled());
        // The blocking work still runs, and still holds its slot.
        assert_eq!(limit.free(), 0);
        assert_eq!(limit.run(|_| ()).await, Err(WorkError::Busy));
        release.send(()).unwrap();
        let told = tokio::task::spawn_blocking(move || told.recv())
            .await
            .unwrap();
        assert_eq!(told, Ok(true), "the work learns that its client left");
        eventually(|| limit.free() == 1).await;
    }

    #[tokio::test]
    async fn a_panicking_piece_of_work_fails_and_gives_its_slot_back() {
        let limit = WorkLimit::new(1, Duration::ZERO);
        let failed: Result<(), _> = limit.run(|_| panic!("in the work")).await;
        assert_eq!(failed, Err(WorkError::Failed));
        assert_eq!(limit.free(), 1);
        assert_eq!(WorkLimit::new(0, Duration::ZERO).limit(), 1);
    }
}
