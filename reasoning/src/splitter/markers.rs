//! Which markers can end the current state, finding the first of them in
//! the buffered text, and the state change each one makes. Only the tail
//! that could still become a live marker is held back.

use super::{Chunk, Kind, Malformed, MalformedKind, Mode, Splitter};
use crate::harmony;
use crate::scan;
use crate::toolcall::TaggedCalls;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Open,
    Close,
    ToolOpen,
    ToolClose,
    AnswerOpen,
    AnswerClose,
    HStart,
    HEnd,
    HMessage,
    HChannel,
    HReturn,
    HCall,
}

impl Splitter {
    fn markers(&self) -> Vec<(Marker, &str)> {
        let mut m: Vec<(Marker, &str)> = Vec::new();
        match (&self.kind, self.mode) {
            (
                Kind::Tags {
                    open,
                    close,
                    answer,
                    tools,
                    ..
                },
                Mode::Text,
            ) => {
                m.push((Marker::Open, open));
                m.push((Marker::Close, close));
                if let Some((o, c)) = answer {
                    m.push((Marker::AnswerOpen, o));
                    m.push((Marker::AnswerClose, c));
                }
                if let Some(t) = tools {
                    m.push((Marker::ToolOpen, &t.open));
                }
            }
            (Kind::Plain { tools: Some(t) }, Mode::Text) => m.push((Marker::ToolOpen, &t.open)),
            (Kind::Tags { open, close, .. }, Mode::Reasoning) => {
                m.push((Marker::Close, close));
                // A model may echo the open tag its template pre-filled.
                if !self.reasoning_open && self.reasoning_gate.at_start {
                    m.push((Marker::Open, open));
                }
            }
            (
                Kind::Tags { tools: Some(t), .. } | Kind::Plain { tools: Some(t) },
                Mode::ToolBody,
            ) => {
                m.push((Marker::ToolClose, &t.close));
            }
            (Kind::Harmony { .. }, Mode::HHeader) => m.extend([
                (Marker::HMessage, harmony::MESSAGE),
                (Marker::HStart, harmony::START),
                (Marker::HEnd, harmony::END),
                (Marker::HReturn, harmony::RETURN),
                (Marker::HCall, harmony::CALL),
            ]),
            (Kind::Harmony { .. }, Mode::HMessage(_)) => m.extend([
                (Marker::HEnd, harmony::END),
                (Marker::HReturn, harmony::RETURN),
                (Marker::HCall, harmony::CALL),
                (Marker::HStart, harmony::START),
                (Marker::HChannel, harmony::CHANNEL),
            ]),
            (Kind::Harmony { .. }, Mode::HBetween) => m.extend([
                (Marker::HStart, harmony::START),
                (Marker::HChannel, harmony::CHANNEL),
                (Marker::HMessage, harmony::MESSAGE),
                (Marker::HEnd, harmony::END),
                (Marker::HReturn, harmony::RETURN),
                (Marker::HCall, harmony::CALL),
            ]),
            _ => {}
        }
        m
    }

    pub(super) fn process(&mut self, out: &mut Vec<Chunk>) {
        loop {
            let (found, cut) = {
                let markers = self.markers();
                let texts: Vec<&str> = markers.iter().map(|(_, t)| *t).collect();
                match scan::find_first(&self.buf, &texts) {
                    Some(hit) => (Some((hit, markers[hit.which].0)), hit.start),
                    None => (None, scan::ambiguous_tail(&self.buf, &texts)),
                }
            };
            let before: String = self.buf.drain(..cut).collect();
            self.content(&before, out);
            match found {
                Some((hit, marker)) => {
                    self.buf.drain(..hit.end - hit.start);
                    self.marker(marker, out);
                }
                None => break,
            }
        }
    }

    fn marker(&mut self, marker: Marker, out: &mut Vec<Chunk>) {
        match (marker, self.mode) {
            (Marker::Open, Mode::Text) => {
                self.text_gate.reset();
                self.reasoning_gate.reset();
                self.mode = Mode::Reasoning;
            }
            (Marker::Open, _) => {} // echo of a pre-filled open tag
            (Marker::Close, Mode::Reasoning) => {
                self.close_reasoning(out);
                self.text_gate.reset();
                self.mode = Mode::Text;
            }
            (Marker::Close, _) => {
                if let Kind::Tags { close, .. } = &self.kind {
                    out.push(Chunk::Malformed(Malformed {
                        kind: MalformedKind::StrayCloseTag,
                        raw: close.clone(),
                    }));
                }
            }
            (Marker::AnswerOpen | Marker::AnswerClose, _) => self.text_gate.reset(),
            (Marker::ToolOpen, _) => {
                self.text_gate.reset();
                let list = match &self.kind {
                    Kind::Tags { tools: Some(t), .. } | Kind::Plain { tools: Some(t) } => t.list,
                    _ => false,
                };
                self.calls = Some(TaggedCalls::new(list));
                self.mode = Mode::ToolBody;
            }
            (Marker::ToolClose, _) => {
                self.end_tool_body(out);
                self.text_gate.reset();
                self.mode = Mode::Text;
            }
            (Marker::HMessage, Mode::HHeader | Mode::HBetween) => {
                self.flush_stray(out);
                let header = harmony::parse_header(&std::mem::take(&mut self.header));
                self.start_harmony_message(header, out);
            }
            (Marker::HStart, _) => {
                self.end_harmony_message(out);
                self.header.clear();
                self.mode = Mode::HHeader;
            }
            (Marker::HChannel, _) => {
                self.end_harmony_message(out);
                self.header.clear();
                self.header.push_str(harmony::CHANNEL);
                self.mode = Mode::HHeader;
            }
            (Marker::HEnd | Marker::HReturn | Marker::HCall, Mode::HHeader) => {
                self.bad_header(out);
                self.mode = Mode::HBetween;
            }
            (Marker::HEnd | Marker::HReturn | Marker::HCall, _) => {
                self.end_harmony_message(out);
                self.mode = Mode::HBetween;
            }
            (Marker::HMessage, _) => {}
        }
    }
}
