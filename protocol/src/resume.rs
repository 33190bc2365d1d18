//! thinkwire's resumable runs on the wire (docs/protocol.md, "Resuming a
//! run"). AG-UI has no resumption yet (ag-ui issues #1852, #2105); these
//! additions are shaped so a client that does not know them can ignore
//! them:
//!
//! - SSE: each event's frame starts with `id: <seq>`; a client resumes
//!   with `Last-Event-ID: <seq>`, as the SSE standard intends.
//! - WebSocket: each event's frame carries a `seq` member after the event's
//!   own fields; the `RUN_STARTED` frame of a run's first connection also
//!   carries `resume` ([`ResumeGrant`]). A client resumes with the control
//!   frame [`ResumeRun`].
//! - protobuf: `ag_ui.Event` has no place for a number, so an event's
//!   sequence number is its position in the run (the first frame is 1).
//!
//! ```
//! use thinkwire_protocol::{sse_frame_json_seq, ws_frame_seq, ws_text_json_seq};
//!
//! let json = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
//! assert_eq!(sse_frame_json_seq(1, json), format!("id: 1\ndata: {json}\n\n"));
//! let frame = ws_text_json_seq(json, 1, None);
//! assert_eq!(frame, r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","seq":1}"#);
//! assert_eq!(ws_frame_seq(&frame), Some(1));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `type` of the WebSocket control frame that resumes a run.
pub const RESUME_RUN: &str = "RESUME_RUN";

/// How a client resumes the run it just started: returned once, to the
/// connection that started it (WebSocket: in the `RUN_STARTED` frame's
/// `resume`; SSE and protobuf: in response headers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeGrant {
    /// The run's resume id: names the run on the resume URL and in
    /// [`ResumeRun`]. Server-made and random (a client's `runId` need not
    /// be unique).
    pub id: String,
    /// Where an HTTP client resumes: `/agent/runs/<id>`.
    pub url: String,
    /// The secret that proves the client is the run's holder.
    pub token: String,
    /// How long, in seconds, the run waits for its client once the
    /// connection is lost.
    pub window_secs: u64,
}

/// The control frame a WebSocket client sends to resume a run:
/// `{"type":"RESUME_RUN","resumeId":"…","token":"…","lastSeq":N}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeRun {
    /// [`ResumeGrant::id`].
    pub resume_id: String,
    /// [`ResumeGrant::token`].
    pub token: String,
    /// The last sequence number the client holds (0: none).
    pub last_seq: u64,
}

/// Why a `RESUME_RUN` frame was not understood; names the field, never
/// quotes its value (the token is a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ResumeRunError {
    /// The field to blame.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl ResumeRun {
    /// Reads a `RESUME_RUN` control frame already parsed as JSON (its
    /// `type` checked by the caller).
    pub fn from_value(value: &Value) -> Result<Self, ResumeRunError> {
        let text = |field: &'static str| match value.get(field) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(ResumeRunError {
                field,
                reason: "must not be empty",
            }),
            Some(_) => Err(ResumeRunError {
                field,
                reason: "must be a string",
            }),
            None => Err(ResumeRunError {
                field,
                reason: "is required",
            }),
        };
        let last_seq = match value.get("lastSeq") {
            None => 0,
            Some(v) => v.as_u64().ok_or(ResumeRunError {
                field: "lastSeq",
                reason: "must be a non-negative integer",
            })?,
        };
        Ok(Self {
            resume_id: text("resumeId")?,
            token: text("token")?,
            last_seq,
        })
    }

    /// The frame's JSON text.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("type".into(), RESUME_RUN.into());
        }
        value.to_string()
    }
}

/// `id: <seq>\ndata: <json>\n\n`: [`crate::sse_frame_json`] with the
/// event's sequence number, which a browser's `EventSource` (and any
/// client following the SSE standard) keeps as the last event id.
pub fn sse_frame_json_seq(seq: u64, json: &str) -> String {
    let mut frame = String::with_capacity(json.len() + 32);
    frame.push_str("id: ");
    frame.push_str(&seq.to_string());
    frame.push('\n');
    frame.push_str(&crate::sse_frame_json(json));
    frame
}

/// The WebSocket frame of an event already encoded as a JSON object:
/// `seq` (and, on the first connection's `RUN_STARTED`, `resume`) appended
/// as members, so the rest of the frame is the event unchanged.
pub fn ws_text_json_seq(json: &str, seq: u64, resume: Option<&ResumeGrant>) -> String {
    let Some(body) = json.trim_end().strip_suffix('}') else {
        // Not an object: nothing thinkwire encodes. Sent as it is.
        return json.to_owned();
    };
    let mut frame = String::with_capacity(json.len() + 160);
    frame.push_str(body);
    if body.trim_end() != "{" {
        frame.push(',');
    }
    frame.push_str("\"seq\":");
    frame.push_str(&seq.to_string());
    if let Some(grant) = resume
        && let Ok(grant) = serde_json::to_string(grant)
    {
        frame.push_str(",\"resume\":");
        frame.push_str(&grant);
    }
    frame.push('}');
    frame
}

/// The `seq` of a WebSocket frame, for clients.
pub fn ws_frame_seq(text: &str) -> Option<u64> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("seq")?
        .as_u64()
}

/// The `resume` of a WebSocket frame (a first connection's `RUN_STARTED`),
/// for clients.
pub fn ws_frame_resume(text: &str) -> Option<ResumeGrant> {
    let value: Value = serde_json::from_str(text).ok()?;
    serde_json::from_value(value.get("resume")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, RunStarted, decode_event};

    #[test]
    fn ws_frames_stay_the_event_plus_members() {
        let json = Event::from(RunStarted::new("t", "r")).to_json();
        let grant = ResumeGrant {
            id: "rs-1".into(),
            url: "/agent/runs/rs-1".into(),
            token: "secret".into(),
            window_secs: 30,
        };
        let frame = ws_text_json_seq(&json, 7, Some(&grant));
        assert_eq!(ws_frame_seq(&frame), Some(7));
        assert_eq!(ws_frame_resume(&frame), Some(grant));
        // The event decodes as before: unknown members are ignored.
        let event = decode_event(&frame).unwrap().unwrap();
        assert_eq!(event.to_json(), json);
        assert_eq!(ws_text_json_seq("{}", 1, None), r#"{"seq":1}"#);
        assert_eq!(ws_text_json_seq("[1]", 1, None), "[1]");
    }

    #[test]
    fn sse_frames_carry_the_id() {
        let frame = sse_frame_json_seq(12, "{\"type\":\"X\"}");
        let mut decoder = crate::SseDecoder::new();
        let messages = decoder.push(frame.as_bytes());
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].id.as_deref(), Some("12"));
    }

    #[test]
    fn resume_frames_name_the_bad_field() {
        let frame = ResumeRun {
            resume_id: "rs-1".into(),
            token: "tok".into(),
            last_seq: 3,
        };
        let value: Value = serde_json::from_str(&frame.to_json()).unwrap();
        assert_eq!(value["type"], RESUME_RUN);
        assert_eq!(ResumeRun::from_value(&value), Ok(frame));
        for (bad, field) in [
            (serde_json::json!({"token": "t"}), "resumeId"),
            (serde_json::json!({"resumeId": "r", "token": 5}), "token"),
            (
                serde_json::json!({"resumeId": "", "token": "t"}),
                "resumeId",
            ),
            (
                serde_json::json!({"resumeId": "r", "token": "t", "lastSeq": -1}),
                "lastSeq",
            ),
        ] {
            assert_eq!(ResumeRun::from_value(&bad).unwrap_err().field, field);
        }
        let no_seq = serde_json::json!({"resumeId": "r", "token": "t"});
        assert_eq!(ResumeRun::from_value(&no_seq).unwrap().last_seq, 0);
    }
}
