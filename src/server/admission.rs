//! Server-wide admission: at most `max_active_runs + max_queued_runs` runs
//! in flight on every transport together (generating in the engine's batch,
//! or waiting for a place in it). Beyond that a run is refused before
//! `RUN_STARTED` — HTTP 429 with `Retry-After` on `POST /agent`, a
//! `RUN_ERROR` with code `SERVER_BUSY` on a WebSocket, whose socket stays
//! open — and nothing already admitted is touched.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
}
