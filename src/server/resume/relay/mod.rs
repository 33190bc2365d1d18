//! One resumable run between the agent and whichever connection holds it.
//!
//! The relay (a task per run) reads the run's frames, numbers them, keeps
//! each in the run's replay buffer and hands it to the attached connection,
//! if any. A connection that goes away only detaches: the run goes on and
//! its events are held. A new connection with the run's token takes over
//! ([`Held::take_over`]): it gets the held events after the last one it
//! saw, then the live ones; the connection it replaces is told to stop.
//! Nobody attached for the window, the relay drops the run's receiver —
//! the run stops as when a client leaves — and the buffer with it. Once
//! the run has ended the relay's work is done: the buffer stays for the
//! window after the end (a client may have lost the last events in
//! flight), and the registry's reaper drops it then.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use thinkwire_protocol::{ResumeGrant, decode_event};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::buffer::ReplayBuffer;
use super::secret::SecretDigest;
use crate::agent::{CancelRun, Frame, RunRejected};

/// Events between the relay and a slow connection; when full the relay
/// (and so the run) waits, as without resumption, unless the connection
/// stalls.
const LINK_BUFFER: usize = 64;

/// Least time a connection may take no event at all, replayed or live,
/// before it counts as gone (its peer stopped reading, or is half-open):
/// with resuming on, the run is then held for the window as if it had
/// left, rather than waiting on it for as long as TCP keeps the socket.
/// A connection still reading a long replay is not stalled.
pub(crate) const STALLED_AFTER: Duration = Duration::from_secs(60);

/// What a connection did with its link, for the relay to tell a stall.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Events it has taken, replayed or live.
    taken: AtomicU64,
    /// The relay let go of it for taking none: its client should resume.
    stalled: AtomicBool,
}

/// An event with its sequence number in the run (the first is 1).
#[derive(Debug)]
pub(crate) struct Sequenced {
    /// Its place in the run.
    pub seq: u64,
    /// The event.
    pub frame: Frame,
}

/// A connection's hold on a run: held events first, then live ones.
pub(crate) struct Attachment {
    replay: VecDeque<(u64, Arc<str>)>,
    live: mpsc::Receiver<Sequenced>,
    detach: CancellationToken,
    progress: Arc<Progress>,
    /// The run's id (the client's `runId`), to match `CANCEL_RUN`.
    pub run_id: String,
    /// Stops the run (`CANCEL_RUN`).
    pub cancel: CancelRun,
    /// How to resume: only for the connection that started the run, and
    /// only with resumption on.
    pub grant: Option<ResumeGrant>,
}

impl Attachment {
    /// The next event; `None` once another connection took the run over
    /// (or, after the terminal event, once there is nothing more).
    /// Cancel-safe: nothing is lost when the future is dropped.
    pub async fn next(&mut self) -> Option<Sequenced> {
        // Taken over: not even the rest of the replay goes here.
        if self.detach.is_cancelled() {
            return None;
        }
        let next = match self.replay.pop_front() {
            Some((seq, json)) => Some(Sequenced {
                seq,
                frame: replayed(&json),
            }),
            None => tokio::select! {
                biased;
                item = self.live.recv() => item,
                () = self.detach.cancelled() => None,
            },
        };
        if next.is_some() {
            self.progress.taken.fetch_add(1, Ordering::Relaxed);
        }
        next
    }

    /// Whether the relay let go of this connection for taking no events
    /// (rather than another connection taking the run over): its client
    /// should resume.
    pub fn stalled(&self) -> bool {
        self.progress.stalled.load(Ordering::Relaxed)
    }

    /// Cancelled when another connection takes the run over, so a transport
    /// stuck writing to a dead peer stops too.
    pub fn detached(&self) -> CancellationToken {
        self.detach.clone()
    }
}

/// A held event as a frame again. The JSON is what was sent; decoding it
/// cannot fail for thinkwire's own events, but if it did the client gets a
/// terminal error instead of a hole.
fn replayed(json: &str) -> Frame {
    match decode_event(json) {
        Ok(Some(event)) => Frame {
            json: json.to_owned(),
            terminal: event.event_type().is_terminal(),
            event,
        },
        _ => {
            tracing::error!("a held event did not decode; the resumed stream ends");
            RunRejected::internal("a held event could not be replayed").run_error_frame()
        }
    }
}

/// The connection a run's events go to now.
#[derive(Clone)]
struct Link {
    id: u64,
    tx: mpsc::Sender<Sequenced>,
    detach: CancellationToken,
    progress: Arc<Progress>,
}

struct State {
    /// `None` once the run has expired.
    buffer: Option<ReplayBuffer>,
    next_seq: u64,
    attached: Option<Link>,
    ended: bool,
    /// When an ended run's buffer goes.
    expires_at: Option<Instant>,
    links_made: u64,
}

/// A run held for resumption, shared by the registry, its relay and the
/// connections that attach to it.
pub(crate) struct Held {
    /// The client's `runId`.
    pub run_id: String,
    cancel: CancelRun,
    token: SecretDigest,
    identity: Option<SecretDigest>,
    state: Mutex<State>,
    changed: Notify,
}

/// Why [`Held::take_over`] did not attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TakeOverError {
    /// The token or identity is not the run's.
    NotHolder,
    /// The run is gone, or events after `last` are no longer held.
    Expired,
    /// `last` names an event the run has not sent.
    BeyondEnd {
        /// The last event the run has sent.
        sent: u64,
    },
}

impl Held {
    /// A run with its first connection attached.
    pub fn new(
        run_id: String,
        cancel: CancelRun,
        token: SecretDigest,
        identity: Option<SecretDigest>,
        buffer: ReplayBuffer,
    ) -> (Arc<Self>, Attachment) {
        let (link, live) = Self::link(0);
        let held = Arc::new(Self {
            run_id: run_id.clone(),
            cancel: cancel.clone(),
            token,
            identity,
            state: Mutex::new(State {
                buffer: Some(buffer),
                next_seq: 1,
                attached: Some(link.clone()),
                ended: false,
                expires_at: None,
                links_made: 1,
            }),
            changed: Notify::new(),
        });
        let attachment = Attachment {
            replay: VecDeque::new(),
            live,
            detach: link.detach.clone(),
            progress: Arc::clone(&link.progress),
            run_id,
            cancel,
            grant: None,
        };
        (held, attachment)
    }

    fn link(id: u64) -> (Link, mpsc::Receiver<Sequenced>) {
        let (tx, rx) = mpsc::channel(LINK_BUFFER);
        let link = Link {
            id,
            tx,
            detach: CancellationToken::new(),
            progress: Arc::default(),
        };
        (link, rx)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves consistent state (every
        // update is a few assignments), so a poisoned lock is still used.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Attaches a new connection for the holder of `token` (and, with
    /// authentication, of `identity`) that has seen events up to `last`;
    /// the connection attached before is detached.
    pub fn take_over(
        &self,
        token: &str,
        identity: Option<&SecretDigest>,
        last: u64,
    ) -> Result<Attachment, TakeOverError> {
        let same_identity = match (&self.identity, identity) {
            (None, None) => true,
            (Some(held), Some(presented)) => held.same(presented),
            _ => false,
        };
        // Both checks run whatever the first says.
        if !(self.token.matches(token) & same_identity) {
            return Err(TakeOverError::NotHolder);
        }
        let mut state = self.lock();
        let sent = state.next_seq - 1;
        let Some(buffer) = &state.buffer else {
            return Err(TakeOverError::Expired);
        };
        if last > sent {
            return Err(TakeOverError::BeyondEnd { sent });
        }
        if state.ended && last == sent {
            // The client has every event, its terminal one included.
            return Err(TakeOverError::Expired);
        }
        let Some(replay) = buffer.after(last) else {
            return Err(TakeOverError::Expired);
        };
        let replay = replay.into();
        let (link, live) = Self::link(state.links_made);
        state.links_made += 1;
        // An ended run sends nothing live: the replay ends with its
        // terminal event, and the link is not kept.
        let kept = (!state.ended).then(|| link.clone());
        if let Some(old) = std::mem::replace(&mut state.attached, kept) {
            old.detach.cancel();
        }
        drop(state);
        self.changed.notify_one();
        Ok(Attachment {
            replay,
            live,
            detach: link.detach.clone(),
            progress: Arc::clone(&link.progress),
            run_id: self.run_id.clone(),
            cancel: self.cancel.clone(),
            grant: None,
        })
    }

    /// Detaches link `id` if it is still the attached one; whether it was.
    fn detach(&self, id: u64) -> bool {
        let mut state = self.lock();
        if state.attached.as_ref().is_some_and(|link| link.id == id) {
            state.attached = None;
            return true;
        }
        false
    }

    /// Numbers and holds `frame`; where to send it.
    fn record(&self, frame: &Frame) -> (u64, Option<Link>) {
        let mut state = self.lock();
        let seq = state.next_seq;
        state.next_seq += 1;
        if let Some(buffer) = &mut state.buffer {
            buffer.push(seq, &frame.json);
        }
        state.ended |= frame.terminal;
        (seq, state.attached.clone())
    }

    /// Whether an ended run's window is over at `now`.
    pub fn expired_at(&self, now: Instant) -> bool {
        self.lock().expires_at.is_some_and(|at| at <= now)
    }

    /// When an ended run's buffer goes.
    pub fn expires_at(&self) -> Option<Instant> {
        self.lock().expires_at
    }

    /// Drops the buffer and the attached link: the run is gone.
    pub fn expire(&self) {
        let mut state = self.lock();
        state.buffer = None;
        state.attached = None;
    }

    /// Drops the buffer if no connection is attached; whether it did. The
    /// relay's window can close just as a resume comes in: decided under
    /// the lock [`Held::take_over`] attaches under, so a resume that got
    /// in first keeps the run (it was handed the replay and told yes), and
    /// one that comes after finds no buffer and is refused.
    fn expire_unless_attached(&self) -> bool {
        let mut state = self.lock();
        if state.attached.is_some() {
            return false;
        }
        state.buffer = None;
        true
    }
}

/// How a relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// The run ended; its buffer stays until its `expires_at`.
    Run,
    /// Nobody came back within the window: the run was stopped and its
    /// buffer dropped.
    Expired,
}

/// Drives `held`: `frames` are the run's; `window` how long it waits with
/// nobody attached, and how long its events stay held after its end.
pub(super) async fn relay(
    held: Arc<Held>,
    mut frames: mpsc::Receiver<Frame>,
    window: Duration,
) -> Ended {
    // When the run last lost its connection.
    let mut since = Instant::now();
    // With resuming on, a connection stalls for the window, and never for
    // less than a minute; with it off, a slow one is waited for as before.
    let stall = (!window.is_zero()).then(|| window.max(STALLED_AFTER));
    loop {
        let link = held.lock().attached.clone();
        // A window past what an `Instant` holds is no deadline.
        let deadline = if link.is_none() {
            since.checked_add(window)
        } else {
            None
        };
        tokio::select! {
            frame = frames.recv() => {
                // A closed channel without a terminal event: the run's
                // thread died. Its client is told, now or on resuming.
                let frame = frame.unwrap_or_else(|| {
                    RunRejected::internal("the run ended unexpectedly").run_error_frame()
                });
                let terminal = frame.terminal;
                let (seq, target) = held.record(&frame);
                if let Some(link) = target {
                    let delivered = deliver(&link, Sequenced { seq, frame }, stall).await;
                    if !delivered && held.detach(link.id) && !terminal {
                        since = Instant::now();
                        tracing::info!(run_id = %held.run_id, "client gone; run held for resumption");
                    }
                }
                if terminal {
                    let mut state = held.lock();
                    // `None` (a window past any `Instant`): kept until the
                    // budget needs its bytes.
                    state.expires_at = Instant::now().checked_add(window);
                    // What was sent stays in the link's channel for its
                    // connection; nothing more will be.
                    state.attached = None;
                    return Ended::Run;
                }
            }
            () = closed(link.as_ref()) => {
                if let Some(link) = &link
                    && held.detach(link.id)
                {
                    since = Instant::now();
                    tracing::info!(run_id = %held.run_id, "client gone; run held for resumption");
                }
            }
            () = sleep_until(deadline) => {
                // A connection that attached since `link` was read keeps
                // the run: the loop goes on with it.
                if held.expire_unless_attached() {
                    break;
                }
            }
            () = held.changed.notified() => {}
        }
    }
    tracing::info!(run_id = %held.run_id, "run not resumed within the window; stopped");
    // Dropping `frames` stops the run, as a client leaving does.
    drop(frames);
    Ended::Expired
}

/// Sends `event` on `link`; `false` when its connection is gone or
/// detached, or stalled: it took no event, replayed or live, for `stall`.
/// A stalled connection's transport is told (`detach`), so a socket stuck
/// writing to its peer lets go too.
async fn deliver(link: &Link, event: Sequenced, stall: Option<Duration>) -> bool {
    let send = link.tx.send(event);
    tokio::pin!(send);
    loop {
        let taken = link.progress.taken.load(Ordering::Relaxed);
        let waited = async {
            match stall {
                Some(stall) => tokio::time::sleep(stall).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            sent = &mut send => return sent.is_ok(),
            () = link.detach.cancelled() => return false,
            () = waited => {
                // Still taking its replay: not stalled, only behind.
                if link.progress.taken.load(Ordering::Relaxed) == taken {
                    link.progress.stalled.store(true, Ordering::Relaxed);
                    link.detach.cancel();
                    return false;
                }
            }
        }
    }
}

async fn closed(link: Option<&Link>) {
    match link {
        Some(link) => link.tx.closed().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
