//! Harmony messages: the header before `<|message|>` says whether a
//! message is reasoning, answer text or a tool call, so each message is
//! routed by its header, and broken headers or text between messages are
//! reported rather than dropped.

use super::{Chunk, Content, Kind, Malformed, MalformedKind, Mode, Splitter};
use crate::harmony::Header;
use crate::toolcall::{self, ToolCall};

impl Splitter {
    pub(super) fn start_harmony_message(&mut self, header: Header, out: &mut Vec<Chunk>) {
        let Kind::Harmony {
            text_channels,
            namespace,
            ..
        } = &self.kind
        else {
            return;
        };
        let content = match (&header.recipient, namespace) {
            // A recipient makes the message a tool call (built-in tools such
            // as `browser.search` too: the agent checks names).
            (Some(recipient), Some(ns)) => {
                let name = recipient.strip_prefix(ns.as_str()).unwrap_or(recipient);
                self.start_call(name.to_owned(), out);
                self.args_gate.reset();
                Content::Tool
            }
            // Channels not listed as text (analysis, unknown ones, tool
            // calls when tools are not parsed) stay out of the answer.
            (None, _)
                if header
                    .channel
                    .as_ref()
                    .is_some_and(|c| text_channels.iter().any(|t| t == c)) =>
            {
                self.text_gate.reset();
                self.text_separator = self.text_emitted;
                Content::Text
            }
            _ => {
                self.reasoning_gate.reset();
                Content::Reasoning
            }
        };
        self.mode = Mode::HMessage(content);
    }

    pub(super) fn end_harmony_message(&mut self, out: &mut Vec<Chunk>) {
        match self.mode {
            Mode::HMessage(Content::Reasoning) => self.close_reasoning(out),
            Mode::HMessage(Content::Tool) => self.end_harmony_call(out),
            Mode::HMessage(Content::Text) => self.text_gate.reset(),
            Mode::HBetween => self.flush_stray(out),
            _ => {}
        }
    }

    pub(super) fn end_harmony_call(&mut self, out: &mut Vec<Chunk>) {
        self.args_gate.reset();
        let Some(mut call) = self.call.take() else {
            return;
        };
        if call.sent.is_empty() {
            call.sent.push_str("{}");
            out.push(Chunk::ToolCallArgs {
                id: call.id.clone(),
                delta: "{}".to_owned(),
            });
        }
        let problem = toolcall::parse_arguments(&call.sent).err();
        out.push(Chunk::ToolCallEnd(ToolCall {
            id: call.id,
            name: call.name,
            arguments: call.sent,
            problem,
        }));
    }

    pub(super) fn bad_header(&mut self, out: &mut Vec<Chunk>) {
        let raw = std::mem::take(&mut self.header);
        if !raw.trim().is_empty() {
            out.push(Chunk::Malformed(Malformed {
                kind: MalformedKind::HarmonyHeader,
                raw,
            }));
        }
    }

    pub(super) fn flush_stray(&mut self, out: &mut Vec<Chunk>) {
        let raw = std::mem::take(&mut self.stray);
        let raw = raw.trim();
        if !raw.is_empty() {
            out.push(Chunk::Malformed(Malformed {
                kind: MalformedKind::OutsideMessage,
                raw: raw.to_owned(),
            }));
        }
    }
}
