//! The streaming splitter: text pieces in, typed [`Chunk`]s out.
//!
//! An incremental state machine over the model's output. Markers (think
//! tags, tool-call tags, Harmony tokens) may arrive split across pieces and
//! across several tokens; the splitter holds back only the shortest tail
//! that could still become a marker, so everything else streams at once.
//! Reasoning and answer text never mix: each byte belongs to the state the
//! machine was in when it arrived, and markers are never emitted as text.
//!
//! Whitespace next to a marker is the format's layout, not content: the
//! families' templates strip newlines around reasoning and `lstrip` the
//! answer after it. So each reasoning block drops its leading and trailing
//! whitespace, and answer text drops the whitespace that follows a marker
//! and the whitespace a marker follows (trailing whitespace is held until
//! more text shows it is inner whitespace). Everything else is the model's
//! text and streams as written: answer text at the very start or the very
//! end of the output keeps its whitespace, as mlx-lm's `generate` and the
//! OpenAI-style servers show it. An all-whitespace reasoning block
//! (`<think>\n\n</think>`) produces no chunks at all.

mod budget;
mod channels;
mod chunk;
mod gate;
mod markers;
mod tools;

use crate::harmony;
use crate::spec::{FormatSpec, ReasoningStyle, TaggedJsonSpec, ToolSyntax};
use crate::toolcall::TaggedCalls;

pub use budget::TokenCounts;
use chunk::push_merged;
pub use chunk::{Chunk, Malformed, MalformedKind, merge_deltas};
use gate::WsGate;
use tools::OpenCall;

#[derive(Debug, Clone)]
enum Kind {
    /// Tag-delimited reasoning.
    Tags {
        open: String,
        close: String,
        answer: Option<(String, String)>,
        force_close: String,
        tools: Option<TaggedJsonSpec>,
    },
    /// Harmony channels.
    Harmony {
        text_channels: Vec<String>,
        force_close: String,
        namespace: Option<String>,
    },
    /// No reasoning markers: answer text and tool calls only.
    Plain { tools: Option<TaggedJsonSpec> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Reasoning,
    Text,
    Tool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Reasoning,
    ToolBody,
    /// Everything is reasoning (a separate reasoning pass).
    AllReasoning,
    HHeader,
    HMessage(Content),
    HBetween,
}

/// The incremental splitter for one generation.
///
/// Build it from the model's [`FormatSpec`], feed it each decoded piece
/// ([`push`](Self::push), or [`push_token`](Self::push_token) to count
/// tokens and recognise special-token ids), and call
/// [`finish`](Self::finish) when generation ends.
///
/// Its `Debug` output shows state and counts, never buffered model output.
pub struct Splitter {
    kind: Kind,
    mode: Mode,
    buf: String,
    pending: Vec<Chunk>,
    special: Vec<(u32, String)>,
    reasoning_open: bool,
    reasoning_gate: WsGate,
    text_gate: WsGate,
    args_gate: WsGate,
    /// The last visible output was answer text (Harmony: a following text
    /// message is separated from it by a blank line).
    text_emitted: bool,
    text_separator: bool,
    calls: Option<TaggedCalls>,
    call: Option<OpenCall>,
    next_call: u64,
    id_prefix: String,
    header: String,
    stray: String,
    counts: TokenCounts,
    budget: Option<usize>,
    finished: bool,
}

impl std::fmt::Debug for Splitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Splitter")
            .field("mode", &self.mode)
            .field("held_bytes", &self.buf.len())
            .field("counts", &self.counts)
            .field("budget", &self.budget)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl Splitter {
    /// A splitter for output generated with the family's default thinking
    /// setting: it starts inside reasoning when the template pre-fills the
    /// open tag and thinking is on by default (or cannot be turned off).
    /// Prefer [`for_prompt`](Self::for_prompt), which reads the rendered
    /// prompt and the thinking setting actually used.
    pub fn new(spec: &FormatSpec) -> Self {
        let thinking = spec.thinking.default_on || !spec.thinking.can_disable;
        Self::for_prompt(spec, "", thinking)
    }

    /// A splitter for output that continues `prompt`: it starts inside
    /// reasoning if the prompt ends with the open tag, in text if it ends
    /// with the close tag, and otherwise as the family's `prefilled` flag
    /// and `thinking` say ([`FormatSpec::starts_in_reasoning`]). Passing
    /// only the prompt's tail, or `""`, is fine.
    pub fn for_prompt(spec: &FormatSpec, prompt: &str, thinking: bool) -> Self {
        Self::build(spec).starting_in_reasoning(spec.starts_in_reasoning(prompt, thinking))
    }

    /// A splitter for the first pass of [`ReasoningStyle::SeparatePass`]:
    /// all output is reasoning (tool-call syntax included, which is never
    /// executed from reasoning).
    pub fn reasoning_pass(spec: &FormatSpec) -> Self {
        let mut s = Self::build(spec);
        s.kind = Kind::Plain { tools: None };
        s.special.clear();
        s.mode = Mode::AllReasoning;
        s
    }

    fn build(spec: &FormatSpec) -> Self {
        let tagged = match &spec.tools {
            ToolSyntax::TaggedJson(t) => Some(t.clone()),
            _ => None,
        };
        let mut special = Vec::new();
        if let Some(t) = &tagged {
            special.extend(t.open_id.map(|id| (id, t.open.clone())));
            special.extend(t.close_id.map(|id| (id, t.close.clone())));
        }
        let (kind, mode) = match &spec.reasoning {
            ReasoningStyle::Tags(tags) => {
                special.extend(tags.open_id.map(|id| (id, tags.open.clone())));
                special.extend(tags.close_id.map(|id| (id, tags.close.clone())));
                let answer = match (&tags.answer_open, &tags.answer_close) {
                    (Some(o), Some(c)) => Some((o.clone(), c.clone())),
                    _ => None,
                };
                (
                    Kind::Tags {
                        open: tags.open.clone(),
                        close: tags.close.clone(),
                        answer,
                        force_close: tags.force_close_text(),
                        tools: tagged,
                    },
                    Mode::Text,
                )
            }
            ReasoningStyle::Harmony(h) => {
                let ids = h.ids;
                for (id, text) in [
                    (ids.start, harmony::START),
                    (ids.end, harmony::END),
                    (ids.message, harmony::MESSAGE),
                    (ids.channel, harmony::CHANNEL),
                    (ids.constrain, harmony::CONSTRAIN),
                    (ids.return_, harmony::RETURN),
                    (ids.call, harmony::CALL),
                ] {
                    special.extend(id.map(|id| (id, text.to_owned())));
                }
                let namespace = match &spec.tools {
                    ToolSyntax::Harmony(t) => Some(t.namespace.clone()),
                    _ => None,
                };
                (
                    Kind::Harmony {
                        text_channels: h.text_channels.clone(),
                        force_close: h.force_close.clone(),
                        namespace,
                    },
                    // The generation prompt ends `<|start|>assistant`.
                    Mode::HHeader,
                )
            }
            ReasoningStyle::SeparatePass(_) | ReasoningStyle::None => {
                (Kind::Plain { tools: tagged }, Mode::Text)
            }
        };
        Self {
            kind,
            mode,
            buf: String::new(),
            pending: Vec::new(),
            special,
            reasoning_open: false,
            reasoning_gate: WsGate::new(),
            text_gate: WsGate::mid_segment(),
            args_gate: WsGate::new(),
            text_emitted: false,
            text_separator: false,
            calls: None,
            call: None,
            next_call: 0,
            id_prefix: "call_".to_owned(),
            header: String::new(),
            stray: String::new(),
            counts: TokenCounts::default(),
            budget: None,
            finished: false,
        }
    }

    /// Starts inside reasoning (the prompt pre-filled the open tag) or not.
    /// Only tag formats have such a choice; others ignore it.
    #[must_use]
    pub fn starting_in_reasoning(mut self, inside: bool) -> Self {
        if let Kind::Tags { .. } = self.kind
            && matches!(self.mode, Mode::Text | Mode::Reasoning)
            && self.buf.is_empty()
        {
            self.mode = if inside { Mode::Reasoning } else { Mode::Text };
        }
        self
    }

    /// Prefix of generated tool-call ids (default `call_`); ids are the
    /// prefix plus a counter from 0, so a per-run prefix makes them unique.
    #[must_use]
    pub fn call_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = prefix.into();
        self
    }

    /// Feeds one decoded piece of output (any length, any split).
    pub fn push(&mut self, piece: &str) -> Vec<Chunk> {
        let mut out = std::mem::take(&mut self.pending);
        if self.finished {
            tracing::warn!("splitter fed after finish; ignoring the piece");
            return out;
        }
        self.buf.push_str(piece);
        self.process(&mut out);
        out
    }

    /// Ends the output: flushes held text, closes an open reasoning block
    /// (a token limit cut it off) and reports an unfinished tool call.
    /// A Harmony tool message is complete here, since `<|call|>` is a stop
    /// token the engine does not pass on.
    pub fn finish(&mut self) -> Vec<Chunk> {
        let mut out = std::mem::take(&mut self.pending);
        if self.finished {
            return out;
        }
        let rest = std::mem::take(&mut self.buf);
        self.content(&rest, &mut out);
        match self.mode {
            Mode::Reasoning | Mode::AllReasoning | Mode::HMessage(Content::Reasoning) => {
                self.close_reasoning(&mut out);
            }
            Mode::ToolBody => self.end_tool_body(&mut out),
            Mode::HMessage(Content::Tool) => self.end_harmony_call(&mut out),
            Mode::HHeader => self.bad_header(&mut out),
            Mode::HBetween => self.flush_stray(&mut out),
            Mode::Text | Mode::HMessage(Content::Text) => {
                let blanks = self.text_gate.flush();
                if !blanks.is_empty() {
                    self.text_emitted = true;
                    push_merged(&mut out, Chunk::Text(blanks));
                }
            }
        }
        self.text_gate.reset();
        self.finished = true;
        out
    }

    /// Whether output is inside a tool call's body right now (after its
    /// open tag, or in a Harmony tool message).
    pub fn in_tool_call(&self) -> bool {
        matches!(self.mode, Mode::ToolBody | Mode::HMessage(Content::Tool))
    }

    /// Whether output is inside reasoning right now.
    pub fn in_reasoning(&self) -> bool {
        matches!(
            self.mode,
            Mode::Reasoning | Mode::AllReasoning | Mode::HMessage(Content::Reasoning)
        )
    }

    fn content(&mut self, s: &str, out: &mut Vec<Chunk>) {
        if s.is_empty() {
            return;
        }
        match self.mode {
            Mode::Text | Mode::HMessage(Content::Text) => self.emit_text(s, out),
            Mode::Reasoning | Mode::AllReasoning | Mode::HMessage(Content::Reasoning) => {
                self.emit_reasoning(s, out)
            }
            Mode::ToolBody => {
                let mut events = Vec::new();
                if let Some(calls) = &mut self.calls {
                    calls.feed(s, &mut events);
                }
                self.call_events(events, out);
            }
            Mode::HMessage(Content::Tool) => {
                let delta = self.args_gate.feed(s);
                if let Some(call) = &mut self.call
                    && !delta.is_empty()
                {
                    call.sent.push_str(&delta);
                    push_merged(
                        out,
                        Chunk::ToolCallArgs {
                            id: call.id.clone(),
                            delta,
                        },
                    );
                }
            }
            Mode::HHeader => {
                self.header.push_str(s);
                if self.header.len() > harmony::MAX_HEADER {
                    self.bad_header(out);
                    self.mode = Mode::HBetween;
                }
            }
            Mode::HBetween => self.stray.push_str(s),
        }
    }

    fn emit_text(&mut self, s: &str, out: &mut Vec<Chunk>) {
        let mut t = self.text_gate.feed(s);
        if t.is_empty() {
            return;
        }
        if self.text_separator {
            self.text_separator = false;
            t.insert_str(0, "\n\n");
        }
        self.text_emitted = true;
        push_merged(out, Chunk::Text(t));
    }

    fn emit_reasoning(&mut self, s: &str, out: &mut Vec<Chunk>) {
        let t = self.reasoning_gate.feed(s);
        if t.is_empty() {
            return;
        }
        if !self.reasoning_open {
            self.reasoning_open = true;
            self.text_emitted = false;
            out.push(Chunk::ReasoningStart);
        }
        push_merged(out, Chunk::ReasoningDelta(t));
    }

    fn close_reasoning(&mut self, out: &mut Vec<Chunk>) {
        if self.reasoning_open {
            out.push(Chunk::ReasoningEnd);
        }
        self.reasoning_open = false;
        self.reasoning_gate.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    pub(super) fn qwen3() -> FormatSpec {
        Registry::builtin().family("qwen3").cloned().unwrap()
    }

    /// The model's own whitespace at the start and end of its answer is
    /// text (issue 10: it was dropped, so streamed answers differed from
    /// mlx-lm's); only whitespace next to a marker is layout.
    #[test]
    fn answer_whitespace_is_kept_except_next_to_markers() {
        let mut s = Splitter::new(&qwen3());
        let mut chunks = s.push("\n Hi,\n");
        chunks.extend(s.push("there.\n"));
        chunks.extend(s.finish());
        assert_eq!(
            merge_deltas(chunks),
            vec![Chunk::Text("\n Hi,\nthere.\n".into())]
        );

        let mut s = Splitter::new(&qwen3());
        let mut chunks = s.push("<think>\nplan\n</think>\n\nAnswer\n");
        chunks.extend(s.finish());
        assert_eq!(
            merge_deltas(chunks),
            vec![
                Chunk::ReasoningStart,
                Chunk::ReasoningDelta("plan".into()),
                Chunk::ReasoningEnd,
                Chunk::Text("Answer\n".into()),
            ]
        );
    }

    #[test]
    fn debug_shows_no_output() {
        let mut s = Splitter::new(&qwen3());
        let _ = s.push("secret plan </thi");
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("secret") && !shown.contains("thi"),
            "{shown}"
        );
    }

    #[test]
    fn default_start_follows_the_family_default() {
        let r = Registry::builtin();
        // EXAONE 4.0 pre-fills `<think>` only when thinking is on, which it
        // is not by default.
        let exaone = r.family("exaone4").unwrap();
        assert!(!Splitter::new(exaone).in_reasoning());
        assert!(Splitter::for_prompt(exaone, "[|assistant|]<think>\n", true).in_reasoning());
        assert!(Splitter::new(r.family("deepseek-r1").unwrap()).in_reasoning());
    }

    #[test]
    fn fed_after_finish_is_ignored() {
        let mut s = Splitter::new(&qwen3());
        let _ = s.push("Hi");
        assert_eq!(s.finish(), vec![]);
        assert_eq!(s.push("more"), vec![]);
        assert_eq!(s.finish(), vec![]);
    }
}
