//! The relay alone: its window against a resume, a run nobody resumes,
//! a connection that takes no events, one that reads a long replay.

use std::pin::pin;

use futures_util::FutureExt;

use thinkwire_protocol::{Event, RunStarted};

use super::super::buffer::Budget;
use super::*;

const TOKEN: &str = "the run's token";
const WINDOW: Duration = Duration::from_secs(30);

fn held() -> (Arc<Held>, Attachment) {
    let budget = Budget::new(1 << 20);
    Held::new(
        "r1".into(),
        CancelRun::default(),
        SecretDigest::of(TOKEN),
        None,
        ReplayBuffer::new(1 << 20, budget),
    )
}

#[test]
fn the_window_expires_a_run_only_with_nobody_attached() {
    let (held, first) = held();
    assert!(
        !held.expire_unless_attached(),
        "its first connection holds it"
    );
    drop(first);
    assert!(held.detach(0));
    // A resume that takes the lock before the deadline's check keeps
    // the run...
    let resumed = held.take_over(TOKEN, None, 0).unwrap();
    assert!(!held.expire_unless_attached());
    assert!(held.lock().buffer.is_some());
    // ...and one after it is refused.
    drop(resumed);
    assert!(held.detach(1));
    assert!(held.expire_unless_attached());
    assert_eq!(
        held.take_over(TOKEN, None, 0).err(),
        Some(TakeOverError::Expired)
    );
}

/// The relay is polled by hand, so the resume lands after its deadline
/// has fired and before it runs: both its deadline and its wake-up are
/// ready then, and `select!` picks one at random, so the two meet many
/// times over.
#[tokio::test(start_paused = true)]
async fn a_resume_as_the_window_closes_keeps_the_run() {
    for _ in 0..32 {
        let (held, first) = held();
        let (frames, rx) = mpsc::channel(4);
        let mut driving = pin!(relay(Arc::clone(&held), rx, WINDOW));
        drop(first);
        // The relay sees its client gone and waits out the window.
        assert!(driving.as_mut().now_or_never().is_none());
        assert!(held.lock().attached.is_none());
        tokio::time::sleep(WINDOW + Duration::from_millis(1)).await;
        let mut resumed = held.take_over(TOKEN, None, 0).unwrap();
        assert!(
            driving.as_mut().now_or_never().is_none(),
            "a resumed run was expired under its connection"
        );
        frames
            .try_send(Frame::run_error("stopped", "TEST"))
            .unwrap();
        assert_eq!(driving.as_mut().now_or_never(), Some(Ended::Run));
        let last = resumed
            .next()
            .now_or_never()
            .flatten()
            .expect("the run's end reaches the resumed connection");
        assert!(last.frame.terminal);
        assert_eq!(last.seq, 1);
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_nobody_resumes_expires_with_its_window() {
    let (held, first) = held();
    let (_frames, rx) = mpsc::channel(4);
    let start = Instant::now();
    let driving = tokio::spawn(relay(Arc::clone(&held), rx, WINDOW));
    drop(first);
    assert_eq!(driving.await.unwrap(), Ended::Expired);
    assert!(start.elapsed() >= WINDOW);
    assert_eq!(
        held.take_over(TOKEN, None, 0).err(),
        Some(TakeOverError::Expired)
    );
}

/// A connection that takes no event for a minute (its peer stopped
/// reading) counts as gone: its transport is told, the run is held for
/// the window, and a resume gets every event from the held ones.
#[tokio::test(start_paused = true)]
async fn a_connection_that_takes_no_events_counts_as_gone() {
    let (held, stalled) = held();
    let detached = stalled.detached();
    let (frames, rx) = mpsc::channel(LINK_BUFFER + 8);
    let driving = tokio::spawn(relay(Arc::clone(&held), rx, WINDOW));
    let started = || Frame::event(&Event::new(RunStarted::new("t", "r1")));
    for _ in 0..=LINK_BUFFER {
        frames.try_send(started()).unwrap();
    }
    tokio::time::sleep(STALLED_AFTER + Duration::from_secs(1)).await;
    assert!(detached.is_cancelled(), "the stalled transport is told");
    assert!(held.lock().attached.is_none(), "the run waits for a resume");
    // What it never took is held: a resume from the start gets it all.
    let mut resumed = held.take_over(TOKEN, None, 0).unwrap();
    frames
        .try_send(Frame::run_error("stopped", "TEST"))
        .unwrap();
    let seqs = read_to_end(&mut resumed, Duration::ZERO, &CancellationToken::new()).await;
    assert_eq!(seqs, (1..=LINK_BUFFER as u64 + 2).collect::<Vec<_>>());
    assert_eq!(driving.await.unwrap(), Ended::Run);
    // The stalled one gets nothing more, not even what was queued to it,
    // and knows it was let go for stalling, not taken over.
    let mut stalled = stalled;
    assert!(stalled.stalled());
    assert!(stalled.next().await.is_none());
}

/// A resumed connection working through a long replay, slower than the
/// run goes on, is behind, not stalled: the relay waits on it however long
/// the replay takes, as long as it keeps taking events.
#[tokio::test(start_paused = true)]
async fn a_connection_reading_its_replay_is_not_stalled() {
    let (held, first) = held();
    let (frames, rx) = mpsc::channel(1024);
    let driving = tokio::spawn(relay(Arc::clone(&held), rx, WINDOW));
    drop(first);
    let started = || Frame::event(&Event::new(RunStarted::new("t", "r1")));
    // Held while nobody is attached.
    for _ in 0..200 {
        frames.try_send(started()).unwrap();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut resumed = held.take_over(TOKEN, None, 0).unwrap();
    let detached = resumed.detached();
    // The run goes on: its live events fill the link while the replay is read.
    for _ in 0..100 {
        frames.try_send(started()).unwrap();
    }
    frames
        .try_send(Frame::run_error("stopped", "TEST"))
        .unwrap();
    // One event every 2 s: the whole replay takes minutes.
    let seqs = read_to_end(&mut resumed, Duration::from_secs(2), &detached).await;
    assert_eq!(seqs, (1..=301).collect::<Vec<_>>());
    assert!(!resumed.stalled());
    assert_eq!(driving.await.unwrap(), Ended::Run);
}

/// The sequence numbers `attachment` hands out to the run's end, a pause
/// after each; `detached` must stay uncancelled meanwhile.
async fn read_to_end(
    attachment: &mut Attachment,
    pause: Duration,
    detached: &CancellationToken,
) -> Vec<u64> {
    let mut seqs = Vec::new();
    while let Some(event) = attachment.next().await {
        seqs.push(event.seq);
        if event.frame.terminal {
            break;
        }
        tokio::time::sleep(pause).await;
        assert!(!detached.is_cancelled(), "let go at event {}", seqs.len());
    }
    seqs
}
