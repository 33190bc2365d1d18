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
#[derive(Debug)]
pub(super) struct Ledger {
    claims: Mutex<Claims>,
    released: Condvar,
}

#[derive(Debug)]
struct Claims {
    held: usize,
    exiting: bool,
}

/// The process's: every scheduler's claims, which its exit waits for.
static LEDGER: Ledger = Ledger::new();

/// The longest exit waits for the schedulers: a step is milliseconds to a
/// second, so this only bounds a scheduler that cannot finish one.
const EXIT_WAIT: Duration = Duration::from_secs(10);

impl Ledger {
    const fn new() -> Self {
        Self {
            claims: Mutex::new(Claims {
                held: 0,
                exiting: false,
            }),
            released: Condvar::new(),
        }
    }

    fn claims(&self) -> MutexGuard<'_, Claims> {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the process exiting, then waits (a bounded time) until no
    /// claim is held; the claims still held.
    fn close(&self, timeout: Duration) -> usize {
        self.claims().exiting = true;
        self.released
            .wait_timeout_while(self.claims(), timeout, |c| c.held > 0)
            .map(|(c, _)| c.held)
            .unwrap_or_else(|e| e.into_inner().0.held)
    }
}

/// One scheduler's claim, used on its thread only. Dropped with the
/// scheduler's state (after its model and caches, declared before it), it
/// waits for the work left and lets the claim go.
#[derive(Debug)]
pub(super) struct Settle {
    ledger: &'static Ledger,
    claimed: bool,
}

impl Default for Settle {
    fn default() -> Self {
        Self {
            ledger: &LEDGER,
            claimed: false,
        }
    }
}

impl Settle {
    /// Claims MLX for this thread (a second claim is the first): false
    /// once the process is exiting, when the thread must not touch MLX.
    pub fn claim(&mut self) -> bool {
        let mut claims = self.ledger.claims();
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
            self.ledger.claims().held -= 1;
            self.ledger.released.notify_all();
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
    // Work the exiting thread queued itself.
    kernels::synchronize_this_thread();
    let held = LEDGER.close(EXIT_WAIT);
    if held > 0 {
        tracing::warn!(held, "exiting before the schedulers stopped using MLX");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ledger of the test's own (the process's is shared by every
    /// scheduler the tests start).
    fn ledger() -> &'static Ledger {
        Box::leak(Box::new(Ledger::new()))
    }

    #[test]
    fn a_scheduler_holds_one_claim_from_its_first_until_it_lets_go() {
        let ledger = ledger();
        let settle = || Settle {
            ledger,
            claimed: false,
        };
        let mut s = settle();
        assert!(s.claim());
        assert!(s.claim());
        assert_eq!(ledger.claims().held, 1);
        s.release();
        assert_eq!(ledger.claims().held, 0);
        // Letting go of nothing changes nothing; a dropped claim is let go.
        s.release();
        assert_eq!(ledger.claims().held, 0);
        let mut t = settle();
        assert!(t.claim());
        drop(t);
        assert_eq!(ledger.claims().held, 0);
    }

    #[test]
    fn an_exit_waits_for_a_claim_and_then_none_is_taken() {
        let ledger = ledger();
        let mut s = Settle {
            ledger,
            claimed: false,
        };
        assert!(s.claim());
        std::thread::scope(|scope| {
            let exit = scope.spawn(|| ledger.close(Duration::from_secs(30)));
            // The exit waits while the claim is held.
            while !ledger.claims().exiting {
                std::thread::yield_now();
            }
            assert!(!exit.is_finished());
            assert!(!s.claim(), "no claim once the process exits");
            s.release();
            assert_eq!(exit.join().unwrap(), 0);
        });
        let mut late = Settle {
            ledger,
            claimed: false,
        };
        assert!(!late.claim());
    }
}
