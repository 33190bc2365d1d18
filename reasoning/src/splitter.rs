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

use std::borrow::Cow;

use crate::harmony::{self, Header};
use crate::scan;
use crate::spec::{FormatSpec, ReasoningStyle, TaggedJsonSpec, ToolSyntax};
use crate::toolcall::{self, CallEvent, TaggedCalls, ToolCall};

/// One piece of parsed output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// A reasoning block begins (sent with its first non-blank text).
    ReasoningStart,
    /// Reasoning text.
    ReasoningDelta(String),
    /// The reasoning block ended (close marker, forced close, end of output).
    ReasoningEnd,
    /// Answer text.
    Text(String),
    /// A tool call begins; its name is known.
    ToolCallStart {
        /// Generated call id (prefix + counter, see
        /// [`Splitter::call_id_prefix`]).
        id: String,
        /// The function name as written.
        name: String,
    },
    /// More of a tool call's arguments JSON, as it arrives.
    ToolCallArgs {
        /// The call's id.
        id: String,
        /// Argument text.
        delta: String,
    },
    /// A tool call is complete: name, full arguments and any syntax problem.
    ToolCallEnd(ToolCall),
    /// Output that breaks the format, shown rather than silently dropped.
    Malformed(Malformed),
}

/// Output the splitter could not place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// What went wrong.
    pub kind: MalformedKind,
    /// The offending model output, verbatim (for display to the user; keep
    /// it out of logs).
    pub raw: String,
}

/// Kinds of broken output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedKind {
    /// A reasoning close tag outside reasoning, in a format whose output
    /// does not start inside reasoning. The text before it has already
    /// streamed as answer text; the tag itself is removed.
    StrayCloseTag,
    /// Tool-call tags whose content is no call (no JSON object with a
    /// name), or stray text between calls.
    ToolCall,
    /// A Harmony header that never reached `<|message|>`.
    HarmonyHeader,
    /// Text between Harmony messages.
    OutsideMessage,
}

/// Tokens the caller reported through [`Splitter::push_token`], by where
/// they went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenCounts {
    /// Tokens of reasoning, its markers included (`usage.reasoningTokens`).
    pub reasoning: usize,
    /// Tokens of answer text.
    pub text: usize,
    /// Tokens of tool calls.
    pub tool: usize,
    /// Structural tokens (Harmony headers, stray output).
    pub other: usize,
}

impl TokenCounts {
    /// All reported tokens.
    pub fn total(&self) -> usize {
        self.reasoning + self.text + self.tool + self.other
    }
}

/// Drops blank text at the start of a segment and holds trailing blank
/// text until non-blank text follows.
#[derive(Debug, Clone)]
struct WsGate {
    at_start: bool,
    pending: String,
}

impl WsGate {
    fn new() -> Self {
        Self {
            at_start: true,
            pending: String::new(),
        }
    }

    /// A gate whose segment is already under way: nothing leading is
    /// dropped (answer text at the start of the output, before any marker).
    fn mid_segment() -> Self {
        Self {
            at_start: false,
            pending: String::new(),
        }
    }

    /// The held trailing blanks, at the end of the output.
    fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }

    fn feed(&mut self, s: &str) -> String {
        let mut s = s;
        if self.at_start {
            s = s.trim_start();
            if s.is_empty() {
                return String::new();
            }
            self.at_start = false;
        }
        let body = s.trim_end();
        if body.is_empty() {
            self.pending.push_str(s);
            return String::new();
        }
        let mut out = std::mem::take(&mut self.pending);
        out.push_str(body);
        self.pending.push_str(&s[body.len()..]);
        out
    }

    /// A new segment: pending trailing blanks are dropped.
    fn reset(&mut self) {
        self.at_start = true;
        self.pending.clear();
    }
}

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

#[derive(Debug, Clone)]
struct OpenCall {
    id: String,
    name: String,
    sent: String,
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

    /// Reasoning-token budget checked by
    /// [`budget_exhausted`](Self::budget_exhausted) (`None`: unlimited).
    #[must_use]
    pub fn reasoning_budget(mut self, budget: Option<usize>) -> Self {
        self.budget = budget;
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

    /// Feeds one generated token: its id and its decoded text. The token is
    /// counted (see [`token_counts`](Self::token_counts)), and an id the
    /// format lists as a marker's special token is read as that marker even
    /// if the detokenizer rendered it as nothing.
    pub fn push_token(&mut self, id: u32, piece: &str) -> Vec<Chunk> {
        let before = self.mode;
        // A detokenizer that skips special tokens renders the marker as
        // nothing, and one that waits for whole UTF-8 characters may hand
        // out earlier text with it: keep that text, add the marker.
        let text: Cow<'_, str> = match self.special.iter().find(|(sid, _)| *sid == id) {
            Some((_, marker)) if !piece.contains(marker.as_str()) => {
                Cow::Owned(format!("{piece}{marker}"))
            }
            _ => Cow::Borrowed(piece),
        };
        let out = self.push(&text);
        let after = self.mode;
        let is = |m: Mode, c: Content| match c {
            Content::Reasoning => matches!(
                m,
                Mode::Reasoning | Mode::AllReasoning | Mode::HMessage(Content::Reasoning)
            ),
            Content::Tool => matches!(m, Mode::ToolBody | Mode::HMessage(Content::Tool)),
            Content::Text => matches!(m, Mode::Text | Mode::HMessage(Content::Text)),
        };
        let c = &mut self.counts;
        if is(before, Content::Reasoning) || is(after, Content::Reasoning) {
            c.reasoning += 1;
        } else if is(before, Content::Tool) || is(after, Content::Tool) {
            c.tool += 1;
        } else if is(before, Content::Text) && is(after, Content::Text) {
            c.text += 1;
        } else {
            c.other += 1;
        }
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

    /// Ends reasoning now, for a budget: returns the format's own close
    /// marker text (`\n</think>\n\n`, or Harmony's
    /// `<|end|><|start|>assistant<|channel|>final<|message|>`) for the agent
    /// to force-feed to the model, and moves to answer text. The chunks
    /// this produces (held reasoning text, [`Chunk::ReasoningEnd`]) come
    /// first in the next `push`/`push_token`/`finish`, or at once from
    /// [`take_pending`](Self::take_pending). `None` when not inside
    /// reasoning, or for a separate reasoning pass (stop that pass instead).
    pub fn close_reasoning_now(&mut self) -> Option<String> {
        let marker = match (&self.kind, self.mode) {
            (Kind::Tags { force_close, .. }, Mode::Reasoning) => force_close.clone(),
            (Kind::Harmony { force_close, .. }, Mode::HMessage(Content::Reasoning)) => {
                force_close.clone()
            }
            _ => return None,
        };
        let mut out = std::mem::take(&mut self.pending);
        let rest = std::mem::take(&mut self.buf);
        self.content(&rest, &mut out);
        self.close_reasoning(&mut out);
        self.mode = match self.mode {
            Mode::HMessage(_) => {
                self.text_separator = self.text_emitted;
                Mode::HMessage(Content::Text)
            }
            _ => Mode::Text,
        };
        self.text_gate.reset();
        self.pending = out;
        Some(marker)
    }

    /// Chunks produced outside `push` (by [`close_reasoning_now`](Self::close_reasoning_now)).
    pub fn take_pending(&mut self) -> Vec<Chunk> {
        std::mem::take(&mut self.pending)
    }

    /// Whether output is inside reasoning right now.
    pub fn in_reasoning(&self) -> bool {
        matches!(
            self.mode,
            Mode::Reasoning | Mode::AllReasoning | Mode::HMessage(Content::Reasoning)
        )
    }

    /// Whether the reasoning budget is spent while reasoning continues: the
    /// moment to call [`close_reasoning_now`](Self::close_reasoning_now).
    pub fn budget_exhausted(&self) -> bool {
        match self.budget {
            Some(budget) => self.in_reasoning() && self.counts.reasoning >= budget,
            None => false,
        }
    }

    /// Tokens reported through [`push_token`](Self::push_token), by kind.
    pub fn token_counts(&self) -> TokenCounts {
        self.counts
    }

    /// Reasoning tokens so far (for `usage.reasoningTokens`).
    pub fn reasoning_tokens(&self) -> usize {
        self.counts.reasoning
    }

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

    fn process(&mut self, out: &mut Vec<Chunk>) {
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

    fn next_id(&mut self) -> String {
        let id = format!("{}{}", self.id_prefix, self.next_call);
        self.next_call += 1;
        id
    }

    fn call_events(&mut self, events: Vec<CallEvent>, out: &mut Vec<Chunk>) {
        for event in events {
            match event {
                CallEvent::Start { name } => {
                    self.text_emitted = false;
                    let id = self.next_id();
                    out.push(Chunk::ToolCallStart {
                        id: id.clone(),
                        name: name.clone(),
                    });
                    self.call = Some(OpenCall {
                        id,
                        name,
                        sent: String::new(),
                    });
                }
                CallEvent::Args(delta) => {
                    if let Some(call) = &self.call {
                        push_merged(
                            out,
                            Chunk::ToolCallArgs {
                                id: call.id.clone(),
                                delta,
                            },
                        );
                    }
                }
                CallEvent::End { arguments, problem } => {
                    if let Some(call) = self.call.take() {
                        out.push(Chunk::ToolCallEnd(ToolCall {
                            id: call.id,
                            name: call.name,
                            arguments,
                            problem,
                        }));
                    }
                }
                CallEvent::Malformed(raw) => out.push(Chunk::Malformed(Malformed {
                    kind: MalformedKind::ToolCall,
                    raw,
                })),
            }
        }
    }

    fn end_tool_body(&mut self, out: &mut Vec<Chunk>) {
        let mut events = Vec::new();
        if let Some(mut calls) = self.calls.take() {
            calls.finish(&mut events);
        }
        self.call_events(events, out);
    }

    fn start_harmony_message(&mut self, header: Header, out: &mut Vec<Chunk>) {
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
                let name = name.to_owned();
                self.text_emitted = false;
                let id = self.next_id();
                out.push(Chunk::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                self.call = Some(OpenCall {
                    id,
                    name,
                    sent: String::new(),
                });
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

    fn end_harmony_message(&mut self, out: &mut Vec<Chunk>) {
        match self.mode {
            Mode::HMessage(Content::Reasoning) => self.close_reasoning(out),
            Mode::HMessage(Content::Tool) => self.end_harmony_call(out),
            Mode::HMessage(Content::Text) => self.text_gate.reset(),
            Mode::HBetween => self.flush_stray(out),
            _ => {}
        }
    }

    fn end_harmony_call(&mut self, out: &mut Vec<Chunk>) {
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

    fn bad_header(&mut self, out: &mut Vec<Chunk>) {
        let raw = std::mem::take(&mut self.header);
        if !raw.trim().is_empty() {
            out.push(Chunk::Malformed(Malformed {
                kind: MalformedKind::HarmonyHeader,
                raw,
            }));
        }
    }

    fn flush_stray(&mut self, out: &mut Vec<Chunk>) {
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

/// Appends a delta to the previous chunk when it is a delta of the same
/// kind (and call), else pushes it.
fn push_merged(out: &mut Vec<Chunk>, chunk: Chunk) {
    match (out.last_mut(), chunk) {
        (Some(Chunk::Text(a)), Chunk::Text(b)) => a.push_str(&b),
        (Some(Chunk::ReasoningDelta(a)), Chunk::ReasoningDelta(b)) => a.push_str(&b),
        (
            Some(Chunk::ToolCallArgs { id: a_id, delta: a }),
            Chunk::ToolCallArgs { id: b_id, delta: b },
        ) if *a_id == b_id => a.push_str(&b),
        (_, chunk) => out.push(chunk),
    }
}

/// Merges consecutive deltas of the same kind: two chunk sequences that
/// differ only in how deltas were split compare equal after this.
pub fn merge_deltas(chunks: impl IntoIterator<Item = Chunk>) -> Vec<Chunk> {
    let mut out = Vec::new();
    for chunk in chunks {
        push_merged(&mut out, chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn qwen3() -> FormatSpec {
        Registry::builtin().family("qwen3").cloned().unwrap()
    }

    #[test]
    fn ws_gate_trims_segment_ends_only() {
        let mut g = WsGate::new();
        assert_eq!(g.feed("\n\n"), "");
        assert_eq!(g.feed(" a"), "a");
        assert_eq!(g.feed(" b\n"), " b");
        assert_eq!(g.feed("\n"), "");
        assert_eq!(g.feed("c"), "\n\nc");
        g.reset();
        assert_eq!(g.feed(" d "), "d");
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
    fn special_token_keeps_text_handed_out_with_it() {
        let mut s = Splitter::new(&qwen3()).starting_in_reasoning(true);
        let mut chunks = s.push_token(1, "caf");
        // A detokenizer that held back an incomplete character hands it out
        // together with the next token, here the close tag rendered empty.
        chunks.extend(s.push_token(151668, "é"));
        chunks.extend(s.push_token(2, "Answer"));
        chunks.extend(s.finish());
        assert_eq!(
            merge_deltas(chunks),
            vec![
                Chunk::ReasoningStart,
                Chunk::ReasoningDelta("café".into()),
                Chunk::ReasoningEnd,
                Chunk::Text("Answer".into()),
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
