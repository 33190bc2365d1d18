//! Structured reasoning, for models that do not think natively.
//!
//! Such a model is constrained (by a JSON-schema grammar, elsewhere) to
//! write one object such as `{"reasoning": "…", "answer": "…"}`, which
//! [`StructuredSplitter`] streams as the same [`Chunk`]s the tag
//! [`Splitter`](crate::Splitter) gives, so callers need not tell the two
//! strategies apart. Its documentation states the format and what happens
//! to broken input.

use crate::Chunk;

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

/// Decodes JSON string content one character at a time.
#[derive(Debug, Default)]
struct Unescape {
    /// The escape read so far, verbatim (`\`, `\u`, `\u0`, …).
    raw: String,
    /// A high surrogate waiting for its low half.
    high: Option<u32>,
}

impl Unescape {
    /// Writes decoded characters to `to`; `Ok(true)` at the closing quote.
    fn feed(&mut self, c: char, to: &mut String) -> Result<bool, StructuredError> {
        let plain = match (self.raw.as_str(), c) {
            ("", '\\') | ("\\", 'u') => {
                self.raw.push(c);
                return Ok(false);
            }
            ("", '"') => {
                self.flush_high(to);
                return Ok(true);
            }
            ("", _) | ("\\", '"' | '\\' | '/') => c,
            ("\\", 'b') => '\u{8}',
            ("\\", 'f') => '\u{c}',
            ("\\", 'n') => '\n',
            ("\\", 'r') => '\r',
            ("\\", 't') => '\t',
            (raw, _) if raw.len() > 1 && c.is_ascii_hexdigit() => {
                self.raw.push(c);
                if let Some(hex) = self.raw.get(2..6) {
                    let unit = u32::from_str_radix(hex, 16).unwrap_or(0xFFFD);
                    self.raw.clear();
                    self.unit(unit, to);
                }
                return Ok(false);
            }
            _ => {
                self.flush_high(to);
                return Err(StructuredError::BadEscape);
            }
        };
        self.raw.clear();
        self.flush_high(to);
        to.push(plain);
        Ok(false)
    }

    fn unit(&mut self, unit: u32, to: &mut String) {
        if let (0xDC00..=0xDFFF, Some(high)) = (unit, self.high) {
            self.high = None;
            let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00));
            to.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
            return;
        }
        self.flush_high(to);
        if (0xD800..=0xDBFF).contains(&unit) {
            self.high = Some(unit);
        } else {
            // A lone low surrogate is no char: U+FFFD.
            to.push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }

    fn flush_high(&mut self, to: &mut String) {
        if self.high.take().is_some() {
            to.push(char::REPLACEMENT_CHARACTER);
        }
    }
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
            error: None,
            finished: false,
        }
    }

    /// Feeds one decoded piece of output (any length, split anywhere).
    pub fn push(&mut self, piece: &str) -> Vec<Chunk> {
        let mut out = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge_deltas;
    use Chunk::{ReasoningEnd as End, ReasoningStart as Start};
    use StructuredError::*;
    use proptest::prelude::*;

    fn t(s: &str) -> Chunk {
        Chunk::Text(s.into())
    }

    fn d(s: &str) -> Chunk {
        Chunk::ReasoningDelta(s.into())
    }

    fn run(pieces: &[&str]) -> (Vec<Chunk>, Option<StructuredError>) {
        let mut s = StructuredSplitter::default();
        let mut chunks = Vec::new();
        for piece in pieces {
            chunks.extend(s.push(piece));
        }
        chunks.extend(s.finish());
        let empty =
            |c: &Chunk| matches!(c, Chunk::Text(t) | Chunk::ReasoningDelta(t) if t.is_empty());
        assert!(!chunks.iter().any(empty), "empty delta in {chunks:?}");
        (merge_deltas(chunks), s.error())
    }

    #[test]
    fn streams_reasoning_then_answer() {
        let json = r#" {"reasoning": "step one\nstep \"two\"", "answer": "The answer \u00e9 😀"} "#;
        let want = vec![
            Start,
            d("step one\nstep \"two\""),
            End,
            t("The answer é 😀"),
        ];
        assert_eq!(run(&[json]), (want, None));
        let mut s = StructuredSplitter::default();
        assert_eq!(s.push(r#"{"reasoning":"ab"#), [Start, d("ab")]);
        assert!(s.in_reasoning());
        assert_eq!(s.push(r"\u00"), []);
        assert_eq!(s.push(r#"e9c", "answer": "x\"#), [d("éc"), End, t("x")]);
        assert_eq!(s.push("ud83d"), []);
        assert_eq!(s.push(r#"\ude00"}"#), [t("😀")]);
        assert_eq!((s.finish(), s.error()), (vec![], None));
    }

    #[test]
    fn reversed_order_escaped_keys_and_skipped_values() {
        let json = r#"{ "x": {"a": [1, "}]\"", {"b": null}]}, "answer" : "A", "n": -1.5e3,
            "t": true, "s": "\\\"", "re\u0061soning": "R", "l": [] }"#;
        assert_eq!(run(&[json]), (vec![t("A"), Start, d("R"), End], None));
        let mut s = StructuredSplitter::new("think", "say");
        let chunks = s.push(r#"{"reasoning": "no", "think": "T", "say": "S"}"#);
        assert_eq!(merge_deltas(chunks), [Start, d("T"), End, t("S")]);
        assert_eq!(run(&["{}"]), (vec![], None));
    }

    #[test]
    fn every_escape_and_lone_surrogates() {
        let json = r#"{"answer": "\" \\ \/ \b \f \n \r \t \u0041\u00E9 \ud83d\ude00 \ud83d. \ude00 \ud83dx\ud83d"}"#;
        let want = "\" \\ / \u{8} \u{c} \n \r \t Aé 😀 \u{fffd}. \u{fffd} \u{fffd}x\u{fffd}";
        assert_eq!(run(&[json]), (vec![t(want)], None));
    }

    #[test]
    fn blank_reasoning_gives_no_block() {
        assert_eq!(run(&[r#"{"reasoning": "", "answer": "A"}"#]).0, [t("A")]);
        assert_eq!(run(&[r#"{"reasoning": " \n", "answer": ""}"#]).0, []);
        let (chunks, _) = run(&[r#"{"reasoning": " \n", "#, r#""reasoning": " \nx "}"#]);
        assert_eq!(chunks, [Start, d(" \nx "), End]);
    }

    #[test]
    fn broken_input_is_shown_as_text() {
        let cases: &[(&[&str], Vec<Chunk>, StructuredError)] = &[
            (&["Just text."], vec![t("Just text.")], NotAnObject),
            (&["", " "], vec![], Incomplete),
            (
                &[r#"{"reasoning": "ab\"#, "q\"}"],
                vec![Start, d("ab"), End, t("\\q\"}")],
                BadEscape,
            ),
            (
                &[r#"{"answer": "\u12"#, "G4\"}"],
                vec![t("\\u12G4\"}")],
                BadEscape,
            ),
            (&[r#"{"answer": 42}"#], vec![t("42}")], NotAString),
            (
                &[r#"{"reasoning": {"a": 1}}"#],
                vec![t("{\"a\": 1}}")],
                NotAString,
            ),
            (&[r#"{"answer": "A"} x"#, "y"], vec![t("Axy")], TrailingText),
            (&[r#"{"answer": "A" "b"}"#], vec![t("A\"b\"}")], Syntax),
            (
                &[r#"{"x": [1}, "answer": "A"}"#],
                vec![t("}, \"answer\": \"A\"}")],
                Syntax,
            ),
            (
                &[r#"{"reasoning": "ab"#],
                vec![Start, d("ab"), End],
                Incomplete,
            ),
            (
                &[r#"{"answer": "a\ud83d\u00"#],
                vec![t("a\u{fffd}\\u00")],
                Incomplete,
            ),
        ];
        for (pieces, want, err) in cases {
            assert_eq!(run(pieces), (want.clone(), Some(*err)), "{pieces:?}");
        }
        let mut s = StructuredSplitter::default();
        let _ = s.push(r#"{"secret": "x"#);
        assert!(!format!("{s:?}").contains("secret"));
        let _ = s.finish();
        assert_eq!(s.push("}"), []);
    }

    /// JSON string text for `s`, non-ASCII as `\uXXXX` (surrogate pairs
    /// for astral characters) and `/` as `\/` when `ascii`.
    fn escape(s: &str, ascii: bool) -> String {
        if !ascii {
            return serde_json::to_string(s).unwrap();
        }
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' | '\\' | '/' => out.extend(['\\', c]),
                '\n' => out.push_str("\\n"),
                ' '..='~' => out.push(c),
                _ => c
                    .encode_utf16(&mut [0; 2])
                    .iter()
                    .for_each(|u| out.push_str(&format!("\\u{u:04X}"))),
            }
        }
        out + "\""
    }

    fn text() -> impl Strategy<Value = String> {
        let special = prop::sample::select(
            &[
                '"', '\\', '/', '\n', '\t', '\u{1}', ' ', 'é', '😀', '\u{ffff}',
            ][..],
        );
        let c = prop_oneof![any::<char>(), special, prop::char::range('a', 'z')];
        prop::collection::vec(c, 0..12).prop_map(String::from_iter)
    }

    fn object() -> impl Strategy<Value = (String, Vec<Chunk>)> {
        (
            text(),
            text(),
            any::<bool>(),
            any::<bool>(),
            prop::sample::select(&["", " ", "\n\t "][..]),
        )
            .prop_map(|(r, a, ascii, reversed, ws)| {
                let reasoning = format!(r#""reasoning"{ws}:{ws}{}"#, escape(&r, ascii));
                let answer = format!(r#""answer":{ws}{}"#, escape(&a, ascii));
                let extra = format!(r#""x":{ws}[{ws}{{"y": "\"]}}"}}, 1]"#);
                let mut want = Vec::new();
                if !r.trim().is_empty() {
                    want.extend([Start, Chunk::ReasoningDelta(r), End]);
                }
                let (first, second) = if reversed {
                    (answer, reasoning)
                } else {
                    (reasoning, answer)
                };
                if !a.is_empty() {
                    want.insert(if reversed { 0 } else { want.len() }, Chunk::Text(a));
                }
                (
                    format!("{ws}{{{ws}{first},{extra},{ws}{second}{ws}}}{ws}"),
                    want,
                )
            })
    }

    proptest! {
        #[test]
        fn every_split_gives_the_decoded_strings((json, want) in object()) {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
            prop_assert_eq!(run(&[&json]), (want.clone(), None));
            for (i, _) in json.char_indices() {
                prop_assert_eq!(run(&[&json[..i], &json[i..]]), (want.clone(), None), "split at {}", i);
            }
            let chars: Vec<String> = json.chars().map(String::from).collect();
            let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
            prop_assert_eq!(run(&refs), (want, None));
        }

        #[test]
        fn random_splits_give_the_decoded_strings(
            (json, want) in object(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
        ) {
            let bounds: Vec<usize> = json.char_indices().map(|(i, _)| i).collect();
            let mut at: Vec<usize> = cuts.iter().map(|c| bounds[c.index(bounds.len())]).collect();
            at.extend([0, json.len()]);
            at.sort_unstable();
            at.dedup();
            let pieces: Vec<&str> = at.windows(2).map(|w| &json[w[0]..w[1]]).collect();
            prop_assert_eq!(run(&pieces), (want, None));
        }
    }
}
