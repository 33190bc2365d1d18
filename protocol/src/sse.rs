//! Framing: Server-Sent Events for HTTP, one text frame per event for
//! WebSocket.
//!
//! The official client splits SSE on LF only, so frames are written as
//! `data: <json>\n\n` with no CR anywhere. [`SseDecoder`] is the reading side
//! for tests and example clients; it follows the WHATWG event-stream rules
//! (any line ending, `:` comments, optional space after `data:`, multi-line
//! data) and accepts input split at arbitrary byte boundaries.
//!
//! ```
//! use thinkwire_protocol::{sse_frame, Event, RunStarted, SseDecoder};
//!
//! let frame = sse_frame(&Event::from(RunStarted::new("t", "r")));
//! assert_eq!(frame, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n");
//!
//! let mut decoder = SseDecoder::new();
//! let (a, b) = frame.as_bytes().split_at(9);
//! assert!(decoder.push_events(a).is_empty());
//! let events = decoder.push_events(b);
//! assert_eq!(events.len(), 1);
//! ```

use crate::decode::DecodeError;
use crate::event::{Event, decode_event};

/// `data: <json>\n\n`: one event as an SSE frame (LF only).
pub fn sse_frame(event: &Event) -> String {
    sse_frame_json(&event.to_json())
}

/// [`sse_frame`] for an event already encoded with [`Event::to_json`], so a
/// server that encodes each event once (off the transport) frames the text
/// without encoding it again. `json` must be that one-line encoding: a
/// newline in it would end the `data:` line early.
pub fn sse_frame_json(json: &str) -> String {
    sse_frame_named(None, json)
}

/// `event: <name>\ndata: <data>\n\n` (LF only), or without the `event:`
/// line when `name` is `None`: the framing of typed streams (OpenAI
/// Responses, Anthropic Messages) and of the other `data:` frames an SDK
/// reads (`[DONE]`). `data` must be one line, as for [`sse_frame_json`].
///
/// ```
/// use thinkwire_protocol::sse_frame_named;
///
/// assert_eq!(sse_frame_named(Some("message_stop"), "{}"), "event: message_stop\ndata: {}\n\n");
/// assert_eq!(sse_frame_named(None, "[DONE]"), "data: [DONE]\n\n");
/// ```
pub fn sse_frame_named(name: Option<&str>, data: &str) -> String {
    let name_len = name.map_or(0, |name| name.len() + 8);
    let mut frame = String::with_capacity(name_len + data.len() + 8);
    if let Some(name) = name {
        frame.push_str("event: ");
        frame.push_str(name);
        frame.push('\n');
    }
    frame.push_str("data: ");
    frame.push_str(data);
    frame.push_str("\n\n");
    frame
}

/// An SSE comment frame that keeps idle connections (and proxies) open.
pub const SSE_KEEPALIVE: &str = ": keepalive\n\n";

/// The official client fails the run when one unfinished SSE message grows
/// past 10 MiB, so a single frame must stay below this many bytes (mind
/// `MESSAGES_SNAPSHOT` and the `RUN_STARTED.input` echo).
pub const SSE_MAX_EVENT_BYTES: usize = 10 * 1024 * 1024;

/// The text of the WebSocket frame carrying `event`: the event's JSON alone.
pub fn ws_text(event: &Event) -> String {
    event.to_json()
}

/// [`ws_text`] for an event already encoded with [`Event::to_json`]: the
/// frame is that text unchanged (a WebSocket message needs no delimiter).
pub fn ws_text_json(json: &str) -> &str {
    json
}

/// One dispatched SSE message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseMessage {
    /// The `event:` field, if any (AG-UI does not use it).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen on the stream, if any.
    pub id: Option<String>,
}

/// Incremental SSE parser: push bytes as they arrive, get complete messages.
///
/// Bytes are buffered until a full line is seen, so a chunk boundary may fall
/// anywhere, including inside a UTF-8 sequence or between the CR and LF of a
/// CRLF. Invalid UTF-8 is replaced (U+FFFD), as the SSE standard says.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    last_id: Option<String>,
    /// The previous byte was a CR: a following LF belongs to the same line end.
    after_cr: bool,
    /// No byte processed yet (a leading BOM is skipped).
    started: bool,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the messages completed by them, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseMessage> {
        let mut out = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(byte),
            }
        }
        out
    }

    /// Bytes held for a message not yet complete: a reader of an untrusted
    /// stream bounds this (the decoder itself buffers without limit).
    pub fn pending_len(&self) -> usize {
        self.line.len() + self.data.len() + self.event.as_ref().map_or(0, String::len)
    }

    /// Feeds bytes and decodes each completed message as an AG-UI event.
    /// Messages of unknown event types are skipped, as the official client
    /// does; a malformed one yields its error in place.
    pub fn push_events(&mut self, chunk: &[u8]) -> Vec<Result<Event, DecodeError>> {
        self.push(chunk)
            .into_iter()
            .filter_map(|msg| decode_event(&msg.data).transpose())
            .collect()
    }

    /// Ends the stream. Like the official client (and unlike a browser's
    /// `EventSource`), a last message that lacks its closing blank line is
    /// still delivered.
    pub fn finish(&mut self) -> Option<SseMessage> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
        }
        self.dispatch(&mut out);
        self.after_cr = false;
        out.pop()
    }

    /// Whether bytes of an unfinished message are buffered.
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data || self.event.is_some()
    }

    fn end_line(&mut self, out: &mut Vec<SseMessage>) {
        let raw = std::mem::take(&mut self.line);
        let mut text = String::from_utf8_lossy(&raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(stripped) = text.strip_prefix('\u{feff}') {
                text = stripped.to_owned();
            }
        }
        if text.is_empty() {
            self.dispatch(out);
            return;
        }
        if text.starts_with(':') {
            return; // comment
        }
        let (field, value) = match text.find(':') {
            Some(at) => {
                let value = &text[at + 1..];
                (&text[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (text.as_str(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            _ => {} // retry and unknown fields: nothing to do for a reader
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseMessage>) {
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseMessage {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{TextMessageContent, TextMessageStart};

    fn data(msgs: Vec<SseMessage>) -> Vec<String> {
        msgs.into_iter().map(|m| m.data).collect()
    }

    #[test]
    fn frame_is_lf_only_single_data_line() {
        let ev = Event::from(TextMessageContent {
            message_id: "m".into(),
            delta: "line1\r\nline2\n".into(),
        });
        let frame = sse_frame(&ev);
        assert!(!frame.contains('\r'));
        assert!(frame.starts_with("data: {") && frame.ends_with("}\n\n"));
        assert_eq!(frame.matches('\n').count(), 2);
        assert_eq!(ws_text(&ev), ev.to_json());
    }

    #[test]
    fn framing_already_encoded_json_is_the_same() {
        let ev = Event::from(TextMessageStart::assistant("m"));
        let json = ev.to_json();
        assert_eq!(sse_frame_json(&json), sse_frame(&ev));
        assert_eq!(ws_text_json(&json), ws_text(&ev));
        assert!(SSE_KEEPALIVE.starts_with(':') && SSE_KEEPALIVE.ends_with("\n\n"));
    }

    #[test]
    fn comments_spaces_multiline_and_line_endings() {
        let mut d = SseDecoder::new();
        let got = data(d.push(
            b": keepalive\n\ndata:a\n\ndata: b\r\ndata:  c\r\rdata\n\nevent: x\nid: 7\ndata: d\n\n",
        ));
        assert_eq!(got, ["a", "b\n c", "", "d"]);
        assert!(!d.has_partial());
    }

    #[test]
    fn event_and_id_fields() {
        let mut d = SseDecoder::new();
        let msgs = d.push(b"event: ping\nid: 3\ndata: x\n\ndata: y\n\n");
        assert_eq!(msgs[0].event.as_deref(), Some("ping"));
        assert_eq!(msgs[0].id.as_deref(), Some("3"));
        assert_eq!(msgs[1].event, None);
        assert_eq!(msgs[1].id.as_deref(), Some("3"));
    }

    #[test]
    fn bom_and_partial() {
        let mut d = SseDecoder::new();
        assert!(d.push("\u{feff}data: 1\n".as_bytes()).is_empty());
        assert!(d.has_partial());
        assert_eq!(data(d.push(b"\n")), ["1"]);
        assert!(d.push(b"data: tail").is_empty());
        assert!(d.has_partial());
        assert_eq!(d.finish().map(|m| m.data).as_deref(), Some("tail"));
        assert!(!d.has_partial());
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn crlf_split_across_chunks() {
        let mut d = SseDecoder::new();
        assert!(d.push(b"data: a\r").is_empty());
        // The LF completes the CRLF; the next CRLF is the blank line.
        assert!(d.push(b"\n").is_empty());
        assert_eq!(data(d.push(b"\r\n")), ["a"]);
    }

    #[test]
    fn push_events_skips_unknown_and_reports_malformed() {
        let mut d = SseDecoder::new();
        let mut stream = String::new();
        stream.push_str(&sse_frame(&Event::from(TextMessageStart::assistant("m"))));
        stream.push_str("data: {\"type\":\"FUTURE_THING\"}\n\n");
        stream.push_str("data: {\"type\":\"TEXT_MESSAGE_END\"}\n\n");
        let got = d.push_events(stream.as_bytes());
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        assert!(got[1].is_err());
    }
}
