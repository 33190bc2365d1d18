//! `POST /agent`: one run per request, answered in one of AG-UI's two HTTP
//! bindings, chosen by the request's `Accept` (`accept.rs`):
//!
//! - `text/event-stream` (the default): LF-only `id: <seq>\ndata: {json}\n\n`
//!   frames and `: keepalive` comments while the model is busy (a long
//!   prefill sends nothing for seconds);
//! - `application/vnd.ag-ui.event+proto`: each event as an `ag_ui.Event`
//!   message behind its 4-byte big-endian length. That framing has no
//!   comment, empty frame or event id, so this stream is silent while the
//!   model is, and an event's sequence number is its position.
//!
//! `GET /agent/runs/{id}` resumes a run after a lost connection
//! (`resume/`): the same stream, from the event after `Last-Event-ID`.
//!
//! The bytes are the protocol crate's framing; events arrive here already
//! built (and, for SSE, encoded).

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use thinkwire_protocol::{PROTO_MEDIA_TYPE, SSE_KEEPALIVE, proto_frame, sse_frame_json_seq};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::AppState;
use super::accept::{Binding, negotiate};
use super::auth::Identity;
use super::limits::{Client, read_body};
use super::rejection::Rejection;
use super::resume::{Attachment, ResumeRefused};
use super::run;
use crate::agent::{Frame, RunRejected};
use crate::metrics::Transport;

/// Response header: where the run is resumed (`/agent/runs/<id>`).
pub(crate) const RESUME_URL_HEADER: &str = "thinkwire-resume-url";
/// Response header: the run's resume token; request header on a resume.
pub(crate) const RESUME_TOKEN_HEADER: &str = "thinkwire-resume-token";
/// Response header: the resume window, in seconds.
pub(crate) const RESUME_WINDOW_HEADER: &str = "thinkwire-resume-window";
/// The SSE standard's reconnection header: the last sequence number seen.
const LAST_EVENT_ID: &str = "last-event-id";

pub(super) async fn post_agent(
    State(state): State<AppState>,
    client: Client,
    identity: Option<Extension<Identity>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Rejection> {
    if !is_json(&headers) {
        return Err(Rejection::unsupported_media_type());
    }
    let binding = negotiate(&headers)?;
    let body = read_body(&state, body).await?;
    let active = run::start(&state, client, body).await?;
    let identity = identity.map(|Extension(Identity(digest))| digest);
    let attachment = state.resumes.hold(active, identity.as_ref());
    Ok(stream(&state, binding, attachment))
}

/// `GET /agent/runs/{id}`: resumes a run with `Thinkwire-Resume-Token` and
/// `Last-Event-ID` (absent: from the first event still held).
pub(super) async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
    identity: Option<Extension<Identity>>,
    headers: HeaderMap,
) -> Result<Response, Rejection> {
    let binding = negotiate(&headers)?;
    let last = match headers.get(LAST_EVENT_ID) {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ResumeRefused::invalid(
                    "Last-Event-ID",
                    "expected the sequence number (the `id:`) of the last event received",
                )
            })?,
    };
    let token = headers
        .get(RESUME_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok());
    let identity = identity.map(|Extension(Identity(digest))| digest);
    let attachment = state
        .resumes
        .attach(&id, token, identity.as_ref(), (last, "Last-Event-ID"))
        .inspect_err(|refused| {
            tracing::info!(code = refused.code(), "resume refused");
            state.agent.metrics().request_refused(refused.code());
        })?;
    Ok(stream(&state, binding, attachment))
}

/// The response carrying `attachment`'s events in `binding`.
fn stream(state: &AppState, binding: Binding, mut attachment: Attachment) -> Response {
    let keepalive = state.config.keepalive;
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    let open = state.agent.metrics().connection_opened(match binding {
        Binding::Sse => Transport::Sse,
        Binding::Proto => Transport::Protobuf,
    });
    let grant = attachment.grant.take();
    let detached = attachment.detached();
    tokio::spawn(async move {
        let _open = open;
        let forward = async {
            loop {
                let next = tokio::time::timeout(keepalive, attachment.next()).await;
                let (bytes, ended) = match next {
                    Ok(Some(event)) => match binding.frame(event.seq, &event.frame) {
                        Ok(framed) => framed,
                        Err(failed) => {
                            // The client is told the run failed: so it
                            // does, and is not held for a resume that
                            // would meet the same event.
                            attachment.cancel.cancel();
                            (failed, true)
                        }
                    },
                    // Another connection resumed the run: this response
                    // ends without a terminal event.
                    Ok(None) => break,
                    Err(_) => match binding.keepalive() {
                        Some(bytes) => (bytes, false),
                        // Nothing to send; still notice a client that left.
                        None if tx.is_closed() => break,
                        None => continue,
                    },
                };
                if tx.send(Ok(bytes)).await.is_err() || ended {
                    break;
                }
            }
        };
        // A takeover also ends a send stuck on a peer that is gone.
        tokio::select! {
            () = forward => {}
            () = detached.cancelled() => {}
        }
        // Dropping the attachment detaches this connection: the run is held
        // for the resume window (or stopped, with resumption off).
        drop(attachment);
    });

    let mut response = Body::from_stream(ReceiverStream::new(rx)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(binding.content_type()),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::VARY, HeaderValue::from_static("accept"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if let Some(grant) = grant {
        let values: [(&'static str, String); 3] = [
            (RESUME_URL_HEADER, grant.url),
            (RESUME_TOKEN_HEADER, grant.token),
            (RESUME_WINDOW_HEADER, grant.window_secs.to_string()),
        ];
        for (name, value) in values {
            // Ids, hex and digits: always valid header values.
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
    }
    response
}

impl Binding {
    fn content_type(self) -> &'static str {
        match self {
            Binding::Sse => "text/event-stream",
            Binding::Proto => PROTO_MEDIA_TYPE,
        }
    }

    /// The bytes of `frame` (event `seq` of its run), and whether it ends
    /// the response; `Err`: the event cannot be sent, and these bytes (a
    /// `RUN_ERROR`) end the response and the run.
    fn frame(self, seq: u64, frame: &Frame) -> Result<(Bytes, bool), Bytes> {
        match self {
            Binding::Sse => Ok((
                Bytes::from(sse_frame_json_seq(seq, &frame.json)),
                frame.terminal,
            )),
            Binding::Proto => match proto_frame(&frame.event) {
                Ok(bytes) => Ok((Bytes::from(bytes), frame.terminal)),
                Err(err) => {
                    // A thinkwire event the binding cannot carry (the
                    // protocol crate's tests say none can get here): end
                    // the run visibly rather than send it shorter.
                    tracing::error!(event = %frame.event.event_type(), "{err}");
                    let failed =
                        RunRejected::internal("an event of this run cannot be sent over protobuf")
                            .run_error_frame();
                    let bytes = proto_frame(&failed.event).unwrap_or_default();
                    Err(Bytes::from(bytes))
                }
            },
        }
    }

    /// What to send when the run has been silent for the keepalive
    /// interval: an SSE comment; nothing in protobuf, whose framing has no
    /// message that says nothing (the official client fails on an empty
    /// one).
    fn keepalive(self) -> Option<Bytes> {
        match self {
            Binding::Sse => Some(Bytes::from_static(SSE_KEEPALIVE.as_bytes())),
            Binding::Proto => None,
        }
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}
