//! A resumable run's replay buffer: the encoded events already handed to
//! its client, by sequence number, in memory only, bounded per run and
//! across the server ([`Budget`]). When a bound is reached the oldest
//! events go first; a client asking for one of them is told the run has
//! expired rather than given a stream with a hole.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes counted per held event beyond its JSON: the deque slot and the
/// `Arc` header, so many tiny events cannot slip past the bound.
const PER_EVENT_OVERHEAD: usize = 48;

/// The server-wide bound on replay buffers (`serve --resume-buffer-mb`).
#[derive(Debug)]
pub(crate) struct Budget {
    cap: usize,
    used: AtomicUsize,
}

impl Budget {
    /// A budget of `cap` bytes.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes held by every buffer now (for `/metrics`).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.cap)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// One run's held events.
#[derive(Debug)]
pub(crate) struct ReplayBuffer {
    events: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
    cap: usize,
    budget: Arc<Budget>,
    /// The highest sequence number no longer held (0: none dropped).
    dropped_through: u64,
}

impl ReplayBuffer {
    /// An empty buffer of at most `cap` bytes, drawing on `budget`.
    pub fn new(cap: usize, budget: Arc<Budget>) -> Self {
        Self {
            events: VecDeque::new(),
            bytes: 0,
            cap,
            budget,
            dropped_through: 0,
        }
    }

    /// Holds event `seq` (sequence numbers rise by one per call), dropping
    /// the oldest events to make room; an event that fits no bound is not
    /// held, and neither is anything before it.
    pub fn push(&mut self, seq: u64, json: &str) {
        let size = json.len() + PER_EVENT_OVERHEAD;
        loop {
            if self.bytes + size <= self.cap && self.budget.try_take(size) {
                self.events.push_back((seq, Arc::from(json)));
                self.bytes += size;
                return;
            }
            if !self.drop_oldest() {
                self.dropped_through = seq;
                return;
            }
        }
    }

    /// Whether every event after `last` is still held.
    pub fn holds_after(&self, last: u64) -> bool {
        last >= self.dropped_through
    }

    /// The held events after `last`, oldest first.
    pub fn after(&self, last: u64) -> Vec<(u64, Arc<str>)> {
        self.events
            .iter()
            .filter(|(seq, _)| *seq > last)
            .cloned()
            .collect()
    }

    /// Bytes this buffer holds.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn drop_oldest(&mut self) -> bool {
        let Some((seq, json)) = self.events.pop_front() else {
            return false;
        };
        let size = json.len() + PER_EVENT_OVERHEAD;
        self.bytes -= size;
        self.budget.give_back(size);
        self.dropped_through = seq;
        true
    }
}

impl Drop for ReplayBuffer {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(n: usize) -> String {
        "x".repeat(n)
    }

    #[test]
    fn holds_everything_within_its_bound_and_gives_it_back() {
        let budget = Budget::new(10_000);
        let mut buffer = ReplayBuffer::new(10_000, Arc::clone(&budget));
        for seq in 1..=5 {
            buffer.push(seq, &json(10));
        }
        assert_eq!(budget.used(), 5 * (10 + PER_EVENT_OVERHEAD));
        assert!(buffer.holds_after(0));
        let after: Vec<u64> = buffer.after(3).iter().map(|(s, _)| *s).collect();
        assert_eq!(after, vec![4, 5]);
        drop(buffer);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn the_run_bound_drops_the_oldest() {
        let budget = Budget::new(1_000_000);
        let one = 100 + PER_EVENT_OVERHEAD;
        let mut buffer = ReplayBuffer::new(3 * one, Arc::clone(&budget));
        for seq in 1..=5 {
            buffer.push(seq, &json(100));
        }
        assert_eq!(buffer.bytes(), 3 * one);
        assert!(!buffer.holds_after(1), "events 1 and 2 are gone");
        assert!(buffer.holds_after(2));
        assert_eq!(buffer.after(2).len(), 3);
    }

    #[test]
    fn the_server_bound_is_shared() {
        let one = 100 + PER_EVENT_OVERHEAD;
        let budget = Budget::new(3 * one);
        let mut a = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        let mut b = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        a.push(1, &json(100));
        a.push(2, &json(100));
        b.push(1, &json(100));
        // No room left: b drops its own oldest to hold its next.
        b.push(2, &json(100));
        assert_eq!(budget.used(), 3 * one);
        assert!(!b.holds_after(0) && b.holds_after(1));
        // An event larger than any bound is not held, nor what came before.
        a.push(3, &json(20 * one));
        assert!(!a.holds_after(2) && a.holds_after(3));
        assert!(a.after(0).is_empty());
        drop((a, b));
        assert_eq!(budget.used(), 0);
    }
}
