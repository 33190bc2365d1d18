//! AG-UI's second HTTP binding: events as protobuf messages
//! (`ag_ui.Event`, `proto/ag_ui.proto`), the media type
//! [`PROTO_MEDIA_TYPE`], each message preceded by its length as a 4-byte
//! big-endian integer — what `@ag-ui/proto` 1.0.0 and `@ag-ui/client`'s
//! `HttpAgent` read.
//!
//! The mapping is between a message and the event's JSON form, the same
//! object an SSE frame carries, so both bindings say the same thing: every
//! event decodes to the event that was encoded. What the protobuf form
//! cannot say exactly is refused with [`ProtoError::Unrepresentable`] and
//! the path of the field, never left out: a JSON key the mapping does not
//! take, an integer beyond ±2^53 inside a JSON value (it rides as a double),
//! or an empty array where the message has a repeated field that cannot
//! tell empty from absent (`usage: []`, `pendingToolCallIds: []`).
//!
//! ```
//! use thinkwire_protocol::*;
//!
//! let event = Event::from(ReasoningEncryptedValue::message("r1", "c2VhbGVk"));
//! let frame = proto_frame(&event).unwrap();
//! let length = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
//! assert_eq!(length, frame.len() - 4);
//!
//! let mut decoder = ProtoDecoder::new();
//! let (a, b) = frame.split_at(3);
//! assert!(decoder.push(a).is_empty());
//! let events: Vec<Event> = decoder.push(b).into_iter().collect::<Result<_, _>>().unwrap();
//! assert_eq!(events, [event]);
//! decoder.finish().unwrap();
//! ```
//!
//! There is no keepalive: the framing has no comment or empty message (the
//! official client fails on a zero-length one), so a stream that has
//! nothing to say sends nothing.

mod decode;
mod encode;
mod messages;
mod value;

#[cfg(test)]
mod tests;

use prost::Message as _;

use crate::decode::DecodeError;
use crate::event::Event;

/// The media type of the protobuf binding, in `Accept` and `Content-Type`.
pub const PROTO_MEDIA_TYPE: &str = "application/vnd.ag-ui.event+proto";

/// The official client fails the stream when one frame, its 4-byte length
/// included, is longer than this; [`proto_frame`] refuses to make one.
pub const PROTO_MAX_FRAME_BYTES: usize = 10 * 1024 * 1024;

/// Why an event could not be encoded, or bytes could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The protobuf form cannot carry this event exactly.
    #[error("the protobuf binding cannot carry `{path}`: {reason}")]
    Unrepresentable {
        /// The JSON path of the field (`outcome.pendingToolCallIds`).
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// A frame longer than the official client accepts.
    #[error("a protobuf frame of {0} bytes is over the limit of {PROTO_MAX_FRAME_BYTES}")]
    TooLarge(usize),
    /// Bytes that are not an `ag_ui.Event` (or a stream cut mid-frame).
    #[error("malformed protobuf event: {0}")]
    Malformed(String),
    /// A well-formed message whose event breaks AG-UI's rules (the same
    /// error an SSE frame with that JSON would give).
    #[error("invalid event: {0}")]
    Event(DecodeError),
}

impl ProtoError {
    fn unrepresentable(path: &str, reason: &'static str) -> Self {
        ProtoError::Unrepresentable {
            path: path.to_owned(),
            reason,
        }
    }

    fn malformed(message: impl Into<String>) -> Self {
        ProtoError::Malformed(message.into())
    }
}

/// `event` as one `ag_ui.Event` message (no length prefix).
pub fn proto_encode(event: &Event) -> Result<Vec<u8>, ProtoError> {
    Ok(encode::encode(event)?.encode_to_vec())
}

/// `event` as one frame of the binding: its length (4 bytes, big-endian),
/// then the message.
pub fn proto_frame(event: &Event) -> Result<Vec<u8>, ProtoError> {
    let message = encode::encode(event)?;
    let length = message.encoded_len();
    let total = length + 4;
    if total > PROTO_MAX_FRAME_BYTES {
        return Err(ProtoError::TooLarge(total));
    }
    let mut frame = Vec::with_capacity(total);
    // Within the 10 MiB checked above.
    frame.extend_from_slice(&u32::try_from(length).unwrap_or(u32::MAX).to_be_bytes());
    message
        .encode(&mut frame)
        .map_err(|e| ProtoError::malformed(e.to_string()))?;
    Ok(frame)
}

/// Decodes one message (without its length). `Ok(None)` when it names no
/// event this build knows (an event type from a later protocol), which a
/// reader skips as the official client does.
pub fn proto_decode(message: &[u8]) -> Result<Option<Event>, ProtoError> {
    decode::decode(message)
}

/// Reads a stream of frames pushed in pieces split anywhere.
#[derive(Debug, Default)]
pub struct ProtoDecoder {
    buffer: Vec<u8>,
    failed: bool,
}

impl ProtoDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events of the frames they complete, in
    /// order (unknown event types skipped). After an error, which is
    /// returned in place, the stream is not read further.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<Event, ProtoError>> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(header) = self.buffer.get(start..start + 4) {
            let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
            // Checked: on a 32-bit target a header of 2^32 - 1 would wrap.
            let total = length.saturating_add(4);
            if total > PROTO_MAX_FRAME_BYTES {
                self.failed = true;
                out.push(Err(ProtoError::TooLarge(total)));
                break;
            }
            let Some(message) = self.buffer.get(start + 4..start + total) else {
                break;
            };
            match decode::decode(message) {
                Ok(Some(event)) => out.push(Ok(event)),
                Ok(None) => {}
                Err(err) => {
                    self.failed = true;
                    out.push(Err(err));
                    break;
                }
            }
            start += total;
        }
        self.buffer.drain(..start);
        out
    }

    /// Bytes of an unfinished frame held.
    pub fn pending_len(&self) -> usize {
        self.buffer.len()
    }

    /// Ends the stream: an error when it stopped inside a frame.
    pub fn finish(&mut self) -> Result<(), ProtoError> {
        if self.buffer.is_empty() || self.failed {
            return Ok(());
        }
        Err(ProtoError::malformed(format!(
            "the stream ended inside a frame ({} bytes left)",
            self.buffer.len()
        )))
    }
}
