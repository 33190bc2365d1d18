//! Token log-probabilities in OpenAI's shape (`{token, logprob, bytes,
//! top_logprobs}`), whether the local engine reported them or an upstream
//! sent them, and held until the text their tokens wrote is shown: a
//! splitter holds text that may be a marker's start, and drops what is no
//! answer (a reasoning block's markers, the whitespace after it), so an
//! entry goes out with the text it wrote or not at all.

use serde_json::{Value, json};
use thinkwire_reasoning::Chunk;

/// What OpenAI writes for a token the model found impossible.
pub(crate) const IMPOSSIBLE: f32 = -9999.0;

/// `{token, logprob, bytes}`, an impossible token's logprob written as
/// OpenAI writes it.
pub(crate) fn token(text: &str, logprob: f32, bytes: &[u8]) -> Value {
    let logprob = if logprob.is_finite() {
        logprob.max(IMPOSSIBLE)
    } else {
        IMPOSSIBLE
    };
    json!({"token": text, "logprob": logprob, "bytes": bytes})
}

/// An upstream's entry as thinkwire sends one, its alternatives cut to
/// `top`: bytes from the token's text where the upstream gave none (OpenAI
/// writes `null` for some). `None` if it is not an entry.
pub(crate) fn from_upstream(entry: &Value, top: usize) -> Option<Value> {
    let alternatives = match entry.get("top_logprobs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(all)) => all.iter().map(alternative).collect::<Option<_>>()?,
        Some(_) => return None,
    };
    let mut entry = alternative(entry)?;
    entry["top_logprobs"] = Value::Array(alternatives.into_iter().take(top).collect());
    Some(entry)
}

/// `{token, logprob, bytes}` out of an upstream's object.
fn alternative(entry: &Value) -> Option<Value> {
    let text = entry.get("token")?.as_str()?;
    let logprob = entry.get("logprob")?.as_f64()? as f32;
    let bytes = match entry.get("bytes") {
        None | Some(Value::Null) => text.as_bytes().to_vec(),
        Some(Value::Array(bytes)) => (bytes.iter())
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<_>>()?,
        Some(_) => return None,
    };
    Some(token(text, logprob, &bytes))
}

/// Where a splitter put the text of the tokens an entry covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The tag splitter's view: whether it is in the answer now. Text it
    /// holds is the held tokens' own bytes, so those spanning the text
    /// shown are the ones that made it.
    Tags { in_answer: bool },
    /// The structured splitter's: whether the tokens read characters of
    /// the answer string. A held escape's tokens all made the character
    /// it decodes to, though their bytes outnumber its.
    AnswerString { read: bool },
}

/// Entries whose text the splitter holds in the answer (a possible
/// marker, a stop sequence's start, an escape's start), sent with the text
/// they become.
#[derive(Debug, Default)]
pub(crate) struct Held {
    entries: Vec<Value>,
    /// Whether what is held is an answer string's (every entry made text).
    escaped: bool,
}

impl Held {
    /// The tokens of `entries` became `chunks`, as the splitter saw it:
    /// the entries to send before those chunks (these and those held,
    /// where they made answer text; none where their text went elsewhere).
    pub fn wrote(&mut self, entries: Vec<Value>, chunks: &[Chunk], seen: Seen) -> Vec<Value> {
        self.escaped = matches!(seen, Seen::AnswerString { .. });
        if let Some(shown) = text_len(chunks) {
            let mut released = std::mem::take(&mut self.entries);
            released.extend(entries);
            if !self.escaped {
                covering(&mut released, shown, true);
            }
            return released;
        }
        let holds = match seen {
            Seen::Tags { in_answer } => chunks.is_empty() && in_answer,
            Seen::AnswerString { read } => read,
        };
        if holds {
            self.entries.extend(entries);
        } else {
            self.entries.clear();
        }
        Vec::new()
    }

    /// The entries the last chunks release (text held to the end).
    pub fn tail(&mut self, chunks: &[Chunk]) -> Vec<Value> {
        let mut released = std::mem::take(&mut self.entries);
        match text_len(chunks) {
            Some(_) if self.escaped => {}
            Some(shown) => covering(&mut released, shown, false),
            None => released.clear(),
        }
        released
    }
}

/// The bytes of answer text in `chunks`, if they hold any.
fn text_len(chunks: &[Chunk]) -> Option<usize> {
    let texts = chunks.iter().filter_map(|c| match c {
        Chunk::Text(text) => Some(text.len()),
        _ => None,
    });
    texts.reduce(|a, b| a + b)
}

/// Drops the first of `entries` while the rest still span `shown` bytes:
/// tokens the splitter dropped (the whitespace after a reasoning block)
/// make no answer text. With `keep_last` the last stays whatever it spans
/// (its token made the text, with a marker's bytes perhaps).
fn covering(entries: &mut Vec<Value>, shown: usize, keep_last: bool) {
    let mut spanned: usize = entries.iter().map(byte_len).sum();
    let mut dropped = 0;
    let droppable = entries.len() - usize::from(keep_last && !entries.is_empty());
    for entry in &entries[..droppable] {
        let rest = spanned - byte_len(entry);
        if rest < shown {
            break;
        }
        spanned = rest;
        dropped += 1;
    }
    entries.drain(..dropped);
}

/// How many bytes an entry's token spans.
fn byte_len(entry: &Value) -> usize {
    entry["bytes"].as_array().map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(tokens: &[&str]) -> Vec<Value> {
        (tokens.iter())
            .map(|t| json!({"token": t, "bytes": t.as_bytes()}))
            .collect()
    }

    fn spelled(entries: &[Value]) -> Vec<String> {
        (entries.iter())
            .map(|e| e["token"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn held_tokens_the_text_does_not_span_are_dropped() {
        // "\n\n" after `</think>` is dropped; "It" is the text.
        let mut released = entries(&["\n\n", "It"]);
        covering(&mut released, 2, true);
        assert_eq!(spelled(&released), ["It"]);
        // A held marker's start that became text stays.
        let mut released = entries(&["<", "b>"]);
        covering(&mut released, 3, true);
        assert_eq!(spelled(&released), ["<", "b>"]);
        // The last token stays though its text is partly a marker's.
        let mut released = entries(&["\n", "</think>Hi"]);
        covering(&mut released, 2, true);
        assert_eq!(spelled(&released), ["</think>Hi"]);
        // At the end, held whitespace before a flushed marker start goes.
        let mut released = entries(&["\n\n", "<"]);
        covering(&mut released, 1, false);
        assert_eq!(spelled(&released), ["<"]);
    }

    #[test]
    fn text_held_then_shown_or_sent_elsewhere() {
        let mut held = Held::default();
        let answer = Seen::Tags { in_answer: true };
        assert!(held.wrote(entries(&["<"]), &[], answer).is_empty());
        let shown = [Chunk::Text("<b>".into())];
        assert_eq!(
            spelled(&held.wrote(entries(&["b>"]), &shown, answer)),
            ["<", "b>"]
        );
        // A held start that turned out a marker goes with it.
        assert!(held.wrote(entries(&["<"]), &[], answer).is_empty());
        let call = [Chunk::ToolCallStart {
            id: "c".into(),
            name: "f".into(),
        }];
        let inside = Seen::Tags { in_answer: false };
        assert!(
            held.wrote(entries(&["tool_call>"]), &call, inside)
                .is_empty()
        );
        assert!(held.tail(&[Chunk::Text("x".into())]).is_empty());
    }

    #[test]
    fn an_upstreams_entry_is_read_or_refused() {
        let entry = json!({"token": "é", "logprob": -0.25, "bytes": null,
            "top_logprobs": [{"token": "é", "logprob": -0.25, "bytes": [195, 169]},
                             {"token": "e", "logprob": -2.0, "bytes": [101]}]});
        let read = from_upstream(&entry, 1).unwrap();
        assert_eq!(read["bytes"], json!([195, 169]));
        assert_eq!(
            read["top_logprobs"],
            json!([{"token": "é", "logprob": -0.25, "bytes": [195, 169]}])
        );
        let impossible = from_upstream(&json!({"token": "x", "logprob": -1e30}), 0).unwrap();
        assert_eq!(impossible["logprob"], json!(IMPOSSIBLE));
        assert_eq!(impossible["top_logprobs"], json!([]));
        for bad in [
            json!("x"),
            json!({"logprob": 0}),
            json!({"token": "x"}),
            json!({"token": "x", "logprob": 0, "bytes": [256]}),
            json!({"token": "x", "logprob": 0, "top_logprobs": {}}),
            json!({"token": "x", "logprob": 0, "top_logprobs": [{"token": 1, "logprob": 0}]}),
        ] {
            assert_eq!(from_upstream(&bad, 5), None, "{bad}");
        }
    }
}
