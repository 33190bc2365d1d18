//! Structured reasoning, for models that do not think natively.
//!
//! Such a model is constrained (by a JSON-schema grammar, elsewhere) to
//! write one object such as `{"reasoning": "…", "answer": "…"}`, which
//! [`StructuredSplitter`] streams as the same [`Chunk`]s the tag
//! [`Splitter`](crate::Splitter) gives, so callers need not tell the two
//! strategies apart. Its documentation states the format and what happens
//! to broken input.
//!
//! This file holds the splitter, its error and its state machine;
//! `unescape` decodes JSON string escapes one character at a time.

#[cfg(test)]
mod tests;
mod unescape;

use crate::Chunk;
use unescape::Unescape;

/// What broke a structured-reasoning object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StructuredError {
    /// The output does not start with `{`.
    #[error("the output is not a JSON object")]
    NotAnObject,
    /// A missing or unexpected `"`, `:`, `,` or `}`, or a bad value.
    #[error("malformed JSON object")]
    Syntax,
    /// A backslash escape JSON does not define.
    #[error("invalid string escape")]
    BadEscape,
    /// The reasoning or answer key holds a value other than a string.
    #[error("the reasoning or answer value is not a string")]
    NotAString,
    /// Non-blank text after the closing `}`.
    #[error("text after the JSON object")]
    TrailingText,
    /// The output ended before the closing `}`.
    #[error("the output ended inside the JSON object")]
    Incomplete,
}

/// Where a string's decoded characters go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Reasoning,
    Answer,
    /// Another key's value: dropped.
    Skip,
    /// A key.
    Key,
    /// A string inside a skipped object or array: dropped.
    Nested,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    FirstKey,
    NextKey,
    Colon,
    Value(Dest),
    Str(Dest),
    Scalar,
    Nested,
    AfterValue,
    Done,
    Failed,
}

/// Streams a `{"reasoning": …, "answer": …}` object as [`Chunk`]s.
///
/// The decoded characters of the reasoning string become
/// [`Chunk::ReasoningStart`], [`Chunk::ReasoningDelta`]s and
/// [`Chunk::ReasoningEnd`], those of the answer string [`Chunk::Text`],
/// each sent by the `push` that completes it. Keys may come in any order
/// and may be escaped; other keys' values (any JSON value) are skipped;
/// escapes and surrogate pairs may be split anywhere across pieces. A JSON
/// string is content, not layout, so reasoning keeps its whitespace, but as
/// with the tag splitter an all-blank reasoning string gives no chunks
/// (leading blanks wait for the first non-blank character).
///
/// Broken input never panics and never drops text silently:
/// - an unpaired UTF-16 surrogate escape decodes to U+FFFD, and raw control
///   characters inside strings are taken as written;
/// - on any other error ([`StructuredError`], kept for [`error`](Self::error))
///   an open reasoning block is closed, and the output from the offending
///   character on (with the escape it ends, if any) and everything pushed
///   after it stream verbatim as [`Chunk::Text`]: a model that ignored its
///   grammar still shows its answer;
/// - skipped values are checked only for balanced brackets and strings;
/// - [`finish`](Self::finish) before the closing `}` records
///   [`StructuredError::Incomplete`], closes an open reasoning block and
///   sends a half-read escape as text.
///
/// Its `Debug` output shows state only, never model output.
pub struct StructuredSplitter {
    reasoning_key: String,
    answer_key: String,
    state: State,
    key: String,
    unescape: Unescape,
    /// Closing brackets of the skipped object or array being read.
    nest: Vec<char>,
    reasoning_open: bool,
    /// Leading blanks of a reasoning string, shown with its first non-blank.
    blanks: String,
    scratch: String,
    /// Whether the last `push` read characters of the answer string.
    read_answer: bool,
    error: Option<StructuredError>,
    finished: bool,
}

impl std::fmt::Debug for StructuredSplitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredSplitter")
            .field("state", &self.state)
            .field("error", &self.error)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl Default for StructuredSplitter {
    /// Keys `reasoning` and `answer`.
    fn default() -> Self {
        Self::new("reasoning", "answer")
    }
}

impl StructuredSplitter {
    /// A splitter whose reasoning and answer strings are under these keys
    /// (compared after unescaping; if both are equal, reasoning wins).
    pub fn new(reasoning_key: impl Into<String>, answer_key: impl Into<String>) -> Self {
        Self {
            reasoning_key: reasoning_key.into(),
            answer_key: answer_key.into(),
            state: State::Start,
            key: String::new(),
            unescape: Unescape::default(),
            nest: Vec::new(),
            reasoning_open: false,
            blanks: String::new(),
            scratch: String::new(),
            read_answer: false,
            error: None,
            finished: false,
        }
    }

    /// Feeds one decoded piece of output (any length, split anywhere).
    pub fn push(&mut self, piece: &str) -> Vec<Chunk> {
        let mut out = Vec::new();
        self.read_answer = false;
        if self.finished {
            tracing::warn!("structured splitter fed after finish; ignoring the piece");
            return out;
        }
        for (i, c) in piece.char_indices() {
            if self.state == State::Failed {
                append(&mut out, &piece[i..], false);
                break;
            }
            if let Err(e) = self.step(c, &mut out) {
                let mut raw = std::mem::take(&mut self.unescape.raw);
                raw.push_str(&piece[i..]);
                self.fail(e, &raw, &mut out);
                break;
            }
        }
        out
    }

    /// Ends the output; records [`StructuredError::Incomplete`] if the
    /// object is not closed, and closes an open reasoning block.
    pub fn finish(&mut self) -> Vec<Chunk> {
        let mut out = Vec::new();
        if std::mem::replace(&mut self.finished, true)
            || matches!(self.state, State::Done | State::Failed)
        {
            return out;
        }
        if let State::Str(dest) = self.state {
            let mut dec = String::new();
            self.unescape.flush_high(&mut dec);
            self.emit(dest, &dec, &mut out);
        }
        let raw = std::mem::take(&mut self.unescape.raw);
        self.fail(StructuredError::Incomplete, &raw, &mut out);
        out
    }

    /// The error that broke the object, if any (see the type's docs).
    pub fn error(&self) -> Option<StructuredError> {
        self.error
    }

    /// Whether output is inside the reasoning string right now.
    pub fn in_reasoning(&self) -> bool {
        self.state == State::Str(Dest::Reasoning)
    }

    /// Whether the last [`push`](Self::push) read characters of the answer
    /// string (an escape's included, the quotes around it not), whether or
    /// not they decoded to text yet: a piece that holds only the start of
    /// an escape is still part of the answer.
    pub fn read_answer(&self) -> bool {
        self.read_answer
    }

    fn fail(&mut self, e: StructuredError, raw: &str, out: &mut Vec<Chunk>) {
        tracing::warn!(error = %e, "structured reasoning output is broken");
        self.close_reasoning(out);
        self.error = Some(e);
        self.state = State::Failed;
        append(out, raw, false);
    }

    fn step(&mut self, c: char, out: &mut Vec<Chunk>) -> Result<(), StructuredError> {
        use StructuredError::{NotAString, NotAnObject, Syntax, TrailingText};
        let blank = matches!(c, ' ' | '\t' | '\n' | '\r');
        let scalar = c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
        match self.state {
            State::Start if c == '{' => self.state = State::FirstKey,
            State::Start if !blank => return Err(NotAnObject),
            State::FirstKey | State::NextKey if c == '"' => {
                self.key.clear();
                self.state = State::Str(Dest::Key);
            }
            State::FirstKey | State::AfterValue if c == '}' => self.state = State::Done,
            State::Colon if c == ':' => {
                let dest = if self.key == self.reasoning_key {
                    Dest::Reasoning
                } else if self.key == self.answer_key {
                    Dest::Answer
                } else {
                    Dest::Skip
                };
                self.state = State::Value(dest);
            }
            State::Value(dest) if c == '"' => self.state = State::Str(dest),
            State::Value(Dest::Reasoning | Dest::Answer) if !blank => return Err(NotAString),
            State::Value(_) if matches!(c, '{' | '[') => {
                self.state = State::Nested;
                return self.step(c, out);
            }
            State::Value(_) if scalar => self.state = State::Scalar,
            State::Str(dest) => {
                let mut dec = std::mem::take(&mut self.scratch);
                let closed = self.unescape.feed(c, &mut dec);
                self.read_answer |= dest == Dest::Answer && matches!(closed, Ok(false));
                self.emit(dest, &dec, out);
                dec.clear();
                self.scratch = dec;
                if closed? {
                    self.state = match dest {
                        Dest::Key => State::Colon,
                        Dest::Nested => State::Nested,
                        _ => State::AfterValue,
                    };
                    if dest == Dest::Reasoning {
                        self.close_reasoning(out);
                    }
                }
            }
            State::Scalar if !scalar => {
                self.state = State::AfterValue;
                return self.step(c, out);
            }
            State::Nested if matches!(c, '}' | ']') => {
                if self.nest.pop() != Some(c) {
                    return Err(Syntax);
                }
                if self.nest.is_empty() {
                    self.state = State::AfterValue;
                }
            }
            State::Nested if c == '{' => self.nest.push('}'),
            State::Nested if c == '[' => self.nest.push(']'),
            State::Nested if c == '"' => self.state = State::Str(Dest::Nested),
            State::AfterValue if c == ',' => self.state = State::NextKey,
            State::Done if !blank => return Err(TrailingText),
            State::Scalar | State::Nested | State::Done | State::Failed => {}
            _ if blank => {}
            _ => return Err(Syntax),
        }
        Ok(())
    }

    fn emit(&mut self, dest: Dest, s: &str, out: &mut Vec<Chunk>) {
        match dest {
            Dest::Skip | Dest::Nested => {}
            Dest::Key => self.key.push_str(s),
            Dest::Answer => append(out, s, false),
            Dest::Reasoning if self.reasoning_open => append(out, s, true),
            Dest::Reasoning if s.chars().all(char::is_whitespace) => self.blanks.push_str(s),
            Dest::Reasoning => {
                self.reasoning_open = true;
                out.push(Chunk::ReasoningStart);
                let blanks = std::mem::take(&mut self.blanks);
                append(out, &blanks, true);
                append(out, s, true);
            }
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Chunk>) {
        if self.reasoning_open {
            out.push(Chunk::ReasoningEnd);
        }
        self.reasoning_open = false;
        self.blanks.clear();
    }
}

/// Appends reasoning or answer text, merged into the last chunk if it is
/// of the same kind; empty text is dropped.
fn append(out: &mut Vec<Chunk>, s: &str, reasoning: bool) {
    match (out.last_mut(), reasoning) {
        _ if s.is_empty() => {}
        (Some(Chunk::ReasoningDelta(t)), true) | (Some(Chunk::Text(t)), false) => t.push_str(s),
        (_, true) => out.push(Chunk::ReasoningDelta(s.to_owned())),
        (_, false) => out.push(Chunk::Text(s.to_owned())),
    }
}
