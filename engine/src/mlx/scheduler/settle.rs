//! The process's exit waits for every scheduler to stop touching MLX.
//!
//! A scheduler queues its next step before it hands out a token (pipelined
//! decode), so a process can exit while MLX's stream thread still runs a
//! step nobody will read, and C++'s static destructors would free MLX's
//! memory under it (a test process aborted so: "malloc_consolidate():
//! unaligned fastbin chunk detected", with a quantized product still
//! running on the scheduler's stream). Queued work is not the only hazard:
//! a scheduler that had just waited for its work and then handed MLX's
//! buffer cache back crashed a test process's exit (SIGSEGV after the test
//! passed), the allocator gone under the call. So a scheduler holds a
//! claim whenever it is awake, from the moment a message wakes it until
//! it has waited for its work and is about to block again, and each MLX
//! call it makes falls inside one. MLX's default streams are per thread,
//! and on CUDA only a stream's own thread can wait for it, so each
//! scheduler waits for its own work before it lets its claim go. `exit`
//! waits (a bounded time) until no scheduler holds one, and a scheduler
//! that wakes while the process exits takes none and touches nothing.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::mlx::kernels;

/// The schedulers holding a claim, and whether the process is exiting
/// (set under the same lock, so a claim is either counted before the exit
/// waits or refused).
static CLAIMS: Mutex<Claims> = Mutex::new(Claims {
    held: 0,
    exiting: false,
});
static RELEASED: Condvar = Condvar::new();

#[derive(Debug)]
struct Claims {
    held: usize,
    exiting: bool,
}

/// The longest exit waits for the schedulers: a step is milliseconds to a
/// second, so this only bounds a scheduler that cannot finish one.
const EXIT_WAIT: Duration = Duration::from_secs(10);

fn claims() -> MutexGuard<'static, Claims> {
    CLAIMS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One scheduler's claim, used on its thread only. Dropped with the
/// scheduler's state (after its model and caches, declared before it), it
/// waits for the work left and lets the claim go.
#[derive(Debug, Default)]
pub(super) struct Settle {
    claimed: bool,
}

impl Settle {
    /// Claims MLX for this thread (a second claim is the first): false
    /// once the process is exiting, when the thread must not touch MLX.
    pub fn claim(&mut self) -> bool {
        let mut claims = claims();
        if claims.exiting {
            return false;
        }
        if !self.claimed {
            claims.held += 1;
            self.claimed = true;
        }
        true
    }

    /// Waits for the work queued on this thread's stream.
    pub fn wait(&self) {
        if self.claimed {
            kernels::synchronize_this_thread();
        }
    }

    /// Waits for the work queued on this thread's stream and lets the
    /// claim go: the thread touches MLX again only after a new claim.
    pub fn release(&mut self) {
        if self.claimed {
            kernels::synchronize_this_thread();
            self.claimed = false;
            claims().held -= 1;
            RELEASED.notify_all();
        }
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        self.release();
    }
}

/// Makes the process's exit wait for the schedulers (registered once,
/// after MLX's statics exist, so it runs before they are destroyed).
pub(super) fn wait_for_schedulers_at_exit() {
    kernels::at_exit(wait);
}

fn wait() {
    let mut claims = claims();
    claims.exiting = true;
    drop(claims);
    // Work the exiting thread queued itself.
    kernels::synchronize_this_thread();
    let held = RELEASED
        .wait_timeout_while(self::claims(), EXIT_WAIT, |c| c.held > 0)
        .map(|(c, _)| c.held)
        .unwrap_or_else(|e| e.into_inner().0.held);
    if held > 0 {
        tracing::warn!(held, "exiting before the schedulers stopped using MLX");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduler_holds_one_claim_from_its_first_until_it_lets_go() {
        let before = claims().held;
        let mut s = Settle::default();
        assert!(s.claim());
        assert!(s.claim());
        assert_eq!(claims().held, before + 1);
        s.release();
        assert_eq!(claims().held, before);
        // Letting go of nothing changes nothing; a dropped claim is let go.
        s.release();
        assert_eq!(claims().held, before);
        let mut t = Settle::default();
        assert!(t.claim());
        drop(t);
        assert_eq!(claims().held, before);
    }
}
