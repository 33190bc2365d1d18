//! `GET /agent/ws`: AG-UI over a WebSocket.
//!
//! Framing (as in ag-ui PR 2085, which thinkwire follows): the client sends
//! one text frame holding a `RunAgentInput`; the server answers with one
//! text frame per event, the same JSON as an SSE `data:` line. A socket
//! carries any number of runs, one at a time: inputs that arrive while a run
//! is in progress wait their turn. Input that cannot start a run gets a
//! `RUN_ERROR` with a `code`, and the socket stays usable.
//!
//! thinkwire adds one control frame, since AG-UI defines none for sockets:
//! `{"type":"CANCEL_RUN","runId":"…"}` stops the run in progress (or, with
//! no `runId`, whichever run is in progress); it ends with `RUN_FINISHED`
//! and `outcome: {"type":"cancelled"}`. Runs are resumable (`resume/`):
//! each event's frame carries its `seq`, the first `RUN_STARTED` frame a
//! `resume` grant, and `{"type":"RESUME_RUN",…}` picks a run up again on
//! this socket, queued like an input. The server pings clients, closes a
//! socket that has heard nothing for `ws_idle_timeout` between runs, and
//! closes with 1001 on shutdown once the socket's run has ended
//! (`shutdown.rs`).

use std::collections::VecDeque;

use std::time::Duration;

use tokio::time::Instant;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use thinkwire_protocol::{RESUME_RUN, ResumeGrant, ResumeRun, ws_text_json, ws_text_json_seq};

use super::AppState;
use super::auth::{Identity, WS_PROTOCOL};
use super::limits::Client;
use super::listen::ConnectionSlot;
use super::rejection::Rejection;
use super::resume::{Attachment, ResumeRefused, STALLED_AFTER, SecretDigest, Sequenced};
use super::run;
use crate::agent::{Frame, RunRejected};
use crate::metrics::Transport;

/// The control frame's `type`.
const CANCEL_RUN: &str = "CANCEL_RUN";

/// The close code of a socket whose run another connection resumed.
const CLOSE_TAKEN_OVER: u16 = 4001;

/// The close code of a socket that took no events for too long: its run
/// is held for a resume.
const CLOSE_STALLED: u16 = 4002;

pub(super) async fn upgrade(
    State(state): State<AppState>,
    slot: Option<Extension<ConnectionSlot>>,
    identity: Option<Extension<Identity>>,
    client: Client,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // Browsers do not apply CORS to WebSockets: the page's origin is
    // checked here (src/server/origin.rs).
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let allowed = origin
            .to_str()
            .is_ok_and(|o| state.config.allowed_origins.allows(o, host));
        if !allowed {
            tracing::info!(
                code = "ORIGIN_NOT_ALLOWED",
                "WebSocket refused: its origin is not allowed"
            );
            state.agent.metrics().request_refused("ORIGIN_NOT_ALLOWED");
            return Rejection::new(
                StatusCode::FORBIDDEN,
                "ORIGIN_NOT_ALLOWED",
                "pages of this origin may not open a WebSocket here (serve --allowed-origins)",
            )
            .into_response();
        }
    }
    // Frames up to twice the limit are read and answered with a limit
    // error; larger ones end the connection before they are buffered.
    let hard_limit = state.config.max_input_bytes.saturating_mul(2);
    // A browser that sent its token as a subprotocol must get one of its
    // offers back: `thinkwire`, never the one holding the token.
    ws.protocols([WS_PROTOCOL])
        .max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        .on_upgrade(move |socket| {
            // The socket keeps its connection's place, and shutdown waits
            // for it.
            let tasks = state.shutdown.tasks().clone();
            let slot = slot.map(|Extension(s)| s);
            let identity = identity.map(|Extension(Identity(digest))| digest);
            tasks.track_future(session(socket, state, client, identity, slot))
        })
}

/// A frame a client sent: either the control frame or, by elimination, an
/// input. Parsing only `type` and `runId` keeps it cheap and tolerant.
#[derive(Deserialize)]
struct Control {
    #[serde(rename = "type")]
    kind: Option<serde_json::Value>,
    #[serde(rename = "runId")]
    run_id: Option<serde_json::Value>,
}

enum Incoming {
    Cancel(Option<String>),
    Resume(ResumeRun),
    Input(Bytes),
    Reject(RunRejected),
    RefuseResume(ResumeRefused),
}

fn classify(text: &str, limit: usize) -> Incoming {
    if text.len() > limit {
        return Incoming::Reject(RunRejected::too_large(limit));
    }
    if let Ok(control) = serde_json::from_str::<Control>(text) {
        match control.kind.as_ref().and_then(|k| k.as_str()) {
            Some(CANCEL_RUN) => {
                let run_id = control.run_id.and_then(|id| id.as_str().map(str::to_owned));
                return Incoming::Cancel(run_id);
            }
            Some(RESUME_RUN) => {
                // Parsed again in full: resuming is rare, control frames small.
                let value = serde_json::from_str(text).unwrap_or_default();
                return match ResumeRun::from_value(&value) {
                    Ok(resume) => Incoming::Resume(resume),
                    Err(err) => {
                        Incoming::RefuseResume(ResumeRefused::invalid(err.field, err.reason))
                    }
                };
            }
            _ => {}
        }
    }
    Incoming::Input(Bytes::copy_from_slice(text.as_bytes()))
}

/// Queues `incoming` to be answered after the run in progress, unless
/// `max` are already waiting; whether it was queued. Every frame that
/// would get an answer counts, refusals (a binary frame, a bad input)
/// included: each one waits in `pending` while a run is in progress, so a
/// flood of them would otherwise grow it without bound.
#[must_use]
fn enqueue(pending: &mut VecDeque<Incoming>, incoming: Incoming, max: usize) -> bool {
    if pending.len() >= max {
        return false;
    }
    pending.push_back(incoming);
    true
}

async fn next_event(active: &mut Option<Attachment>) -> Option<Sequenced> {
    match active {
        Some(run) => run.next().await,
        None => std::future::pending().await,
    }
}

async fn session(
    socket: WebSocket,
    state: AppState,
    client: Client,
    identity: Option<SecretDigest>,
    _slot: Option<ConnectionSlot>,
) {
    let _open = state
        .agent
        .metrics()
        .connection_opened(Transport::WebSocket);
    let (mut tx, mut rx) = socket.split();
    let mut pending: VecDeque<Incoming> = VecDeque::new();
    let mut active: Option<Attachment> = None;
    // The first connection's grant, sent once with its RUN_STARTED.
    let mut grant: Option<ResumeGrant> = None;
    let mut ping = tokio::time::interval(state.config.ws_ping);
    ping.tick().await;
    // Checked a few times per timeout, so a silent client goes within
    // 1.25 timeouts.
    let mut idle =
        tokio::time::interval((state.config.ws_idle_timeout / 4).max(Duration::from_millis(10)));
    idle.tick().await;
    let limit = state.config.max_input_bytes;
    let mut last_heard = Instant::now();
    let mut draining = false;

    loop {
        // Between runs, take the next waiting input (refused with
        // SERVER_SHUTTING_DOWN once the server drains).
        while active.is_none() {
            let Some(next) = pending.pop_front() else {
                break;
            };
            let refusal = match next {
                Incoming::Cancel(_) => continue,
                Incoming::Reject(rejected) => rejected.run_error_frame(),
                Incoming::RefuseResume(refused) => refused.run_error_frame(),
                Incoming::Input(body) => match run::start(&state, client, body).await {
                    Ok(run) => {
                        let mut attachment = state.resumes.hold(run, identity.as_ref());
                        grant = attachment.grant.take();
                        active = Some(attachment);
                        continue;
                    }
                    Err(rejected) => rejected.run_error_frame(),
                },
                Incoming::Resume(resume) => match state.resumes.attach(
                    &resume.resume_id,
                    Some(&resume.token),
                    identity.as_ref(),
                    (resume.last_seq, "lastSeq"),
                ) {
                    Ok(attachment) => {
                        grant = None;
                        active = Some(attachment);
                        continue;
                    }
                    Err(refused) => {
                        tracing::info!(code = refused.code(), "resume refused");
                        state.agent.metrics().request_refused(refused.code());
                        refused.run_error_frame()
                    }
                },
            };
            if send(&mut tx, &refusal).await.is_err() {
                return;
            }
        }
        // Shutting down: a socket goes as soon as its run has ended.
        if active.is_none() && state.shutdown.is_draining() {
            let _ = close(&mut tx, 1001, "server shutting down").await;
            return;
        }

        tokio::select! {
            next = next_event(&mut active) => {
                let Some(event) = next else {
                    // Another connection resumed this socket's run, or
                    // the run let go of this one.
                    let (code, reason) = why_detached(active.as_ref());
                    closing(&mut tx, code, reason).await;
                    return;
                };
                let detached = active.as_ref().map(Attachment::detached);
                let first = if event.seq == 1 { grant.take() } else { None };
                let text = ws_text_json_seq(&event.frame.json, event.seq, first.as_ref());
                let send = send_within(&mut tx, Message::Text(Utf8Bytes::from(text)));
                // A peer that stopped reading holds this write; the run,
                // taken over or counted gone, lets go of it.
                let sent = match detached {
                    Some(detached) => tokio::select! {
                        sent = send => Some(sent),
                        () = detached.cancelled() => None,
                    },
                    None => Some(send.await),
                };
                match sent {
                    Some(Ok(())) => {}
                    Some(Err(())) => return,
                    None => {
                        let (code, reason) = why_detached(active.as_ref());
                        closing(&mut tx, code, reason).await;
                        return;
                    }
                }
                if event.frame.terminal {
                    active = None;
                }
            }
            message = rx.next() => {
                last_heard = Instant::now();
                let incoming = match message {
                    Some(Ok(Message::Text(text))) => match classify(&text, limit) {
                        Incoming::Cancel(run_id) => {
                            if let Some(run) = &active
                                && run_id.as_deref().is_none_or(|id| id == run.run_id)
                            {
                                run.cancel.cancel();
                            }
                            None
                        }
                        incoming => Some(incoming),
                    },
                    Some(Ok(Message::Binary(_))) => {
                        Some(Incoming::Reject(RunRejected::binary_frame()))
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => None,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => {
                        // The client is gone: dropping `active` detaches it;
                        // the run is held for the resume window.
                        return;
                    }
                };
                if let Some(incoming) = incoming
                    && !enqueue(&mut pending, incoming, state.config.ws_max_queued_runs)
                {
                    state.agent.metrics().request_refused("TOO_MANY_QUEUED_RUNS");
                    let _ = close(&mut tx, 1008, "too many runs queued on this socket").await;
                    return;
                }
            }
            _ = ping.tick() => {
                if send_within(&mut tx, Message::Ping(Bytes::new())).await.is_err() {
                    return;
                }
            }
            _ = idle.tick() => {
                if active.is_none() && last_heard.elapsed() >= state.config.ws_idle_timeout {
                    // Nothing from the client, not even a pong: it is gone
                    // or holding a socket for nothing.
                    state.agent.metrics().request_refused("WS_IDLE_TIMEOUT");
                    let _ = close(&mut tx, 1001, "idle timeout").await;
                    return;
                }
            }
            () = state.shutdown.draining(), if !draining => {
                // Checked at the top of the loop; a run in progress goes on
                // until it ends or the grace period stops it.
                draining = true;
            }
        }
    }
}

type WsSink = futures_util::stream::SplitSink<WebSocket, Message>;

async fn send(tx: &mut WsSink, frame: &Frame) -> Result<(), ()> {
    send_within(
        tx,
        Message::Text(Utf8Bytes::from(ws_text_json(&frame.json))),
    )
    .await
}

/// Sends `message`, unless its peer takes nothing for [`STALLED_AFTER`]:
/// it is then gone, or has stopped reading, and the socket is dropped
/// rather than kept (with its connection slot) for as long as TCP would.
async fn send_within(tx: &mut WsSink, message: Message) -> Result<(), ()> {
    match tokio::time::timeout(STALLED_AFTER, tx.send(message)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// The close code and reason of a socket its run let go of: stalled (it
/// took no events; the client should resume) or taken over.
fn why_detached(active: Option<&Attachment>) -> (u16, &'static str) {
    match active {
        Some(run) if run.stalled() => (
            CLOSE_STALLED,
            "no events taken for too long; resume the run",
        ),
        _ => (CLOSE_TAKEN_OVER, "run resumed on another connection"),
    }
}

/// [`close`] within a second: a peer that stopped reading gets no close
/// frame, only the socket dropped.
async fn closing(tx: &mut WsSink, code: u16, reason: &'static str) {
    let _ = tokio::time::timeout(Duration::from_secs(1), close(tx, code, reason)).await;
}

async fn close(tx: &mut WsSink, code: u16, reason: &'static str) -> Result<(), axum::Error> {
    tx.send(Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    })))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_frames_count_against_the_queue_bound() {
        let mut pending = VecDeque::new();
        let binary = || Incoming::Reject(RunRejected::binary_frame());
        let input = || Incoming::Input(Bytes::from_static(b"{}"));
        assert!(enqueue(&mut pending, input(), 4));
        for _ in 0..3 {
            assert!(enqueue(&mut pending, binary(), 4));
        }
        // The fifth waiting frame is refused, whatever kind it is.
        assert!(!enqueue(&mut pending, binary(), 4));
        assert!(!enqueue(&mut pending, input(), 4));
        assert_eq!(pending.len(), 4);
        assert!(pending.pop_front().is_some());
        assert!(
            enqueue(&mut pending, binary(), 4),
            "room again once one is taken"
        );
        assert!(!enqueue(&mut VecDeque::new(), binary(), 0));
    }
}
