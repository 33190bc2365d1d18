//! A resumable run's replay buffer: the encoded events already handed to
//! its client, by sequence number, in memory only, bounded per run and
//! across the server ([`Budget`]). When a bound is reached the oldest
//! events go first; a client asking for one of them is told the run has
//! expired rather than given a stream with a hole.
//!
//! The server-wide bound is shared fairly: a run that finds it full takes
//! room from the run holding the most, as long as that run holds more than
//! it does, before it drops its own oldest events. So a new run is never
//! left holding nothing because older (often ended) runs filled the budget
//! first, and every run's share tends to the same size.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Bytes counted per held event beyond its JSON: the deque slot and the
/// `Arc` header, so many tiny events cannot slip past the bound.
const PER_EVENT_OVERHEAD: usize = 48;

/// The server-wide bound on replay buffers (`serve --resume-buffer-mb`),
/// and the buffers drawing on it (so a full budget can be shared).
#[derive(Debug)]
pub(crate) struct Budget {
    cap: usize,
    used: AtomicUsize,
    holders: Mutex<Vec<Weak<Mutex<Events>>>>,
}

impl Budget {
    /// A budget of `cap` bytes.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            used: AtomicUsize::new(0),
            holders: Mutex::new(Vec::new()),
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

    fn holders(&self) -> MutexGuard<'_, Vec<Weak<Mutex<Events>>>> {
        self.holders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn register(&self, events: &Arc<Mutex<Events>>) {
        let mut holders = self.holders();
        holders.retain(|weak| weak.strong_count() > 0);
        holders.push(Arc::downgrade(events));
    }

    /// Frees up to `wanted` bytes from the buffer holding the most, if it
    /// holds more than `mine` (the asking buffer's bytes, `me` itself
    /// being skipped); whether anything was freed. Other buffers are only
    /// tried, never waited for: the asker holds its own lock, and one
    /// that is busy is passed over.
    fn reclaim(&self, me: &Arc<Mutex<Events>>, mine: usize, wanted: usize) -> bool {
        let holders = self.holders();
        let largest = holders
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|other| !Arc::ptr_eq(other, me))
            .filter_map(|other| {
                let bytes = other.try_lock().ok()?.bytes;
                (bytes > mine).then_some((bytes, other))
            })
            .max_by_key(|(bytes, _)| *bytes);
        drop(holders);
        let Some((_, victim)) = largest else {
            return false;
        };
        let Ok(mut events) = victim.try_lock() else {
            return false;
        };
        let mut freed = 0;
        while freed < wanted && events.bytes > mine {
            match events.drop_oldest(self) {
                Some(size) => freed += size,
                None => break,
            }
        }
        freed > 0
    }
}

/// What one buffer holds.
#[derive(Debug, Default)]
struct Events {
    events: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
    /// The highest sequence number no longer held (0: none dropped).
    dropped_through: u64,
}

impl Events {
    /// Drops the oldest event, giving its bytes back to `budget`; its size.
    fn drop_oldest(&mut self, budget: &Budget) -> Option<usize> {
        let (seq, json) = self.events.pop_front()?;
        let size = json.len() + PER_EVENT_OVERHEAD;
        self.bytes -= size;
        budget.give_back(size);
        self.dropped_through = seq;
        Some(size)
    }
}

/// One run's held events.
#[derive(Debug)]
pub(crate) struct ReplayBuffer {
    events: Arc<Mutex<Events>>,
    cap: usize,
    budget: Arc<Budget>,
}

impl ReplayBuffer {
    /// An empty buffer of at most `cap` bytes, drawing on `budget`.
    pub fn new(cap: usize, budget: Arc<Budget>) -> Self {
        let events = Arc::new(Mutex::new(Events::default()));
        if cap > 0 {
            budget.register(&events);
        }
        Self {
            events,
            cap,
            budget,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Events> {
        // Every update leaves the counts consistent, so a poisoned lock is
        // still used.
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds event `seq` (sequence numbers rise by one per call), making
    /// room first from a fuller buffer, then from its own oldest events;
    /// an event that fits no bound is not held, and neither is anything
    /// before it.
    pub fn push(&mut self, seq: u64, json: &str) {
        let size = json.len() + PER_EVENT_OVERHEAD;
        let mut events = self.lock();
        loop {
            if events.bytes + size <= self.cap {
                if self.budget.try_take(size) {
                    events.events.push_back((seq, Arc::from(json)));
                    events.bytes += size;
                    return;
                }
                // An event larger than the whole budget takes nothing.
                if size <= self.budget.cap && self.budget.reclaim(&self.events, events.bytes, size)
                {
                    continue;
                }
            }
            if events.drop_oldest(&self.budget).is_none() {
                events.dropped_through = seq;
                return;
            }
        }
    }

    /// The held events after `last`, oldest first, if every one of them is
    /// still held. One look under the lock: another run's reclaim may drop
    /// this buffer's oldest events at any time, so a check then a read
    /// could hand out a stream with a hole.
    pub fn after(&self, last: u64) -> Option<Vec<(u64, Arc<str>)>> {
        let events = self.lock();
        (last >= events.dropped_through).then(|| {
            events
                .events
                .iter()
                .filter(|(seq, _)| *seq > last)
                .cloned()
                .collect()
        })
    }

    /// Whether every event after `last` is still held.
    #[cfg(test)]
    fn holds_after(&self, last: u64) -> bool {
        self.after(last).is_some()
    }

    /// Bytes this buffer holds.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

impl Drop for ReplayBuffer {
    fn drop(&mut self) {
        let mut events = self.lock();
        self.budget.give_back(events.bytes);
        // Emptied, so a reclaim still holding these events (upgraded just
        // before this drop) finds nothing to give back a second time.
        events.bytes = 0;
        events.events.clear();
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
        let after: Vec<u64> = buffer.after(3).unwrap().iter().map(|(s, _)| *s).collect();
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
        assert_eq!(buffer.after(2).map(|held| held.len()), Some(3));
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
        // No room left, and a holds more than b: a's oldest goes.
        b.push(2, &json(100));
        assert_eq!(budget.used(), 3 * one);
        assert!(!a.holds_after(0) && a.holds_after(1));
        assert!(b.holds_after(0), "b kept both of its events");
        // Now b holds the more: it drops its own oldest to hold its next.
        b.push(3, &json(100));
        assert_eq!((a.bytes(), b.bytes()), (one, 2 * one));
        assert!(!b.holds_after(0) && b.holds_after(1));
        // An event larger than any bound is not held, nor what came before.
        a.push(3, &json(20 * one));
        assert!(!a.holds_after(2) && a.holds_after(3));
        assert!(a.after(0).is_none());
        assert_eq!(a.after(3).map(|held| held.len()), Some(0));
        drop((a, b));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_run_that_finds_the_budget_full_takes_room_from_the_fullest() {
        let one = 100 + PER_EVENT_OVERHEAD;
        let budget = Budget::new(6 * one);
        // An ended run that filled the server's budget, and a smaller one.
        let mut full = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        for seq in 1..=5 {
            full.push(seq, &json(100));
        }
        let mut small = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        small.push(1, &json(100));
        let mut new = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        for seq in 1..=2 {
            new.push(seq, &json(100));
        }
        assert!(new.holds_after(0), "the new run holds all it sent");
        assert_eq!(new.bytes(), 2 * one);
        assert_eq!(full.bytes(), 3 * one, "the fullest gave its oldest");
        assert!(!full.holds_after(1) && full.holds_after(2));
        assert!(small.holds_after(0), "a run holding less gives nothing");
        // Shares level out: the new run takes while the fullest holds more.
        for seq in 3..=6 {
            new.push(seq, &json(100));
        }
        assert_eq!((full.bytes(), new.bytes()), (2 * one, 3 * one));
        assert_eq!(small.bytes(), one);
        assert_eq!(budget.used(), 6 * one);
        drop(full);
        assert_eq!(budget.used(), 4 * one);
        drop((small, new));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn an_event_larger_than_the_whole_budget_takes_nothing_from_others() {
        let one = 100 + PER_EVENT_OVERHEAD;
        let budget = Budget::new(3 * one);
        let mut a = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        a.push(1, &json(100));
        a.push(2, &json(100));
        let mut b = ReplayBuffer::new(10 * one, Arc::clone(&budget));
        b.push(1, &json(4 * one));
        assert!(b.after(0).is_none() && b.holds_after(1), "not held");
        assert_eq!(a.bytes(), 2 * one, "a lost nothing for it");
    }

    #[test]
    fn a_buffer_with_resumption_off_holds_nothing_and_is_not_a_holder() {
        let budget = Budget::new(1000);
        let mut off = ReplayBuffer::new(0, Arc::clone(&budget));
        off.push(1, &json(10));
        assert!(!off.holds_after(0) && off.holds_after(1));
        assert_eq!(budget.used(), 0);
        assert!(budget.holders().is_empty());
    }
}
