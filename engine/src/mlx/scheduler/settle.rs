//! The process's exit waits for the MLX work every scheduler has queued.
//!
//! A scheduler queues its next step before it hands out a token (pipelined
//! decode), so a process can exit while MLX's stream thread still runs a
//! step nobody will read, and C++'s static destructors would free MLX's
//! memory under it (a test process aborted so: "malloc_consolidate():
//! unaligned fastbin chunk detected", with a quantized product still
//! running on the scheduler's stream). MLX's default streams are per
//! thread, and on CUDA only a stream's own thread can wait for it, so each
//! scheduler waits for its own work: before it blocks for new requests,
//! and, once the process is exiting, instead of queuing another step.
//! `exit` waits (a bounded time) until every scheduler has.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::mlx::kernels;

/// Set by the exit handler: schedulers stop queuing steps.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Schedulers with queued work they have not waited for.
static UNSETTLED: Mutex<usize> = Mutex::new(0);
static SETTLED: Condvar = Condvar::new();

/// The longest exit waits for the schedulers: a step is milliseconds to a
/// second, so this only bounds a scheduler that cannot finish one.
const EXIT_WAIT: Duration = Duration::from_secs(10);

fn unsettled() -> MutexGuard<'static, usize> {
    UNSETTLED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One scheduler's part, used on its thread only.
#[derive(Debug, Default)]
pub(super) struct Settle {
    queued: bool,
}

impl Settle {
    /// Notes that MLX work may be queued on this thread's stream.
    pub fn queued(&mut self) {
        if !self.queued {
            *unsettled() += 1;
            self.queued = true;
        }
    }

    /// Waits for the work queued on this thread's stream, and tells an
    /// exit that waits.
    pub fn settle(&mut self) {
        if self.queued {
            kernels::synchronize_this_thread();
            self.queued = false;
            *unsettled() -= 1;
            SETTLED.notify_all();
        }
    }
}

/// Whether the process is exiting (the scheduler then settles and stops).
pub(super) fn exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

/// Makes the process's exit wait for the schedulers (registered once,
/// after MLX's statics exist, so it runs before they are destroyed).
pub(super) fn wait_for_schedulers_at_exit() {
    kernels::at_exit(wait);
}

fn wait() {
    EXITING.store(true, Ordering::Release);
    // Work the exiting thread queued itself.
    kernels::synchronize_this_thread();
    let pending = SETTLED
        .wait_timeout_while(unsettled(), EXIT_WAIT, |n| *n > 0)
        .map(|(n, _)| *n)
        .unwrap_or_else(|e| *e.into_inner().0);
    if pending > 0 {
        tracing::warn!(
            pending,
            "exiting before MLX finished the schedulers' queued work"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduler_counts_as_unsettled_from_its_first_queued_work_until_it_settles() {
        let before = *unsettled();
        let mut s = Settle::default();
        s.queued();
        s.queued();
        assert_eq!(*unsettled(), before + 1);
        s.settle();
        assert_eq!(*unsettled(), before);
        // Settling with nothing queued changes nothing.
        s.settle();
        assert_eq!(*unsettled(), before);
    }
}
