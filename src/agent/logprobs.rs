//! Token log-probabilities of the answer, for a run that asks
//! (`forwardedProps.logprobs: k`, 0 to 20): each answer token's and the `k`
//! most likely tokens' at its place, in OpenAI's shape (`{token, logprob,
//! bytes, top_logprobs}`), sent in a `CUSTOM` event `thinkwire.logprobs`
//! before the text that carries them. Reasoning, format markers and tool
//! calls report none: these are the logprobs of the message content, as
//! OpenAI's are.

use serde_json::{Value, json};
use thinkwire_engine::{MAX_TOP_LOGPROBS, TokenLogprobs};
use thinkwire_reasoning::Chunk;

use super::model::LocalModel;
use super::rejection::{RejectKind, RunRejected};

/// What OpenAI writes for a token the model found impossible.
const IMPOSSIBLE: f32 = -9999.0;

/// `forwardedProps.logprobs`: how many alternatives to report per answer
/// token (`None`: report nothing).
pub(crate) fn from_forwarded(forwarded: Option<&Value>) -> Result<Option<usize>, RunRejected> {
    let Some(value) = forwarded.and_then(|f| f.get("logprobs")) else {
        return Ok(None);
    };
    if value.is_null() {
        return Ok(None);
    }
    match value.as_u64() {
        Some(k) if k as usize <= MAX_TOP_LOGPROBS => Ok(Some(k as usize)),
        _ => Err(RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_LOGPROBS",
            format!("must be an integer from 0 to {MAX_TOP_LOGPROBS}: the alternatives per token"),
        )
        .at("forwardedProps.logprobs")),
    }
}

/// One pass's reports: each token's, until the splitter shows whether its
/// text is the answer's.
#[derive(Debug, Default)]
pub(super) struct Reporter {
    /// Alternatives per token; `None`: the run did not ask.
    asked: Option<usize>,
    /// The engine's report on the token it hands over next.
    next: Option<TokenLogprobs>,
    /// Tokens whose text the splitter holds in the answer (a possible
    /// marker, a stop sequence's start), sent with the text they become.
    held: Vec<Value>,
}

impl Reporter {
    /// Reporting `asked` alternatives per token, or nothing.
    pub fn new(asked: Option<usize>) -> Self {
        Self {
            asked,
            ..Self::default()
        }
    }

    /// What the engine request asks for.
    pub fn asked(&self) -> Option<usize> {
        self.asked
    }

    /// The engine's report on the next token.
    pub fn report(&mut self, logprobs: TokenLogprobs) {
        self.next = Some(logprobs);
    }

    /// Token `id` became `chunks`, the splitter now `in_answer` or not:
    /// the entries to send before those chunks (its own and those held,
    /// where it made answer text; none where its text went elsewhere).
    pub fn token(
        &mut self,
        model: &LocalModel,
        id: u32,
        chunks: &[Chunk],
        in_answer: bool,
    ) -> Vec<Value> {
        let Some(logprobs) = self.next.take() else {
            return Vec::new();
        };
        let entry = entry(model, id, &logprobs);
        if let Some(shown) = text_len(chunks) {
            let mut released = std::mem::take(&mut self.held);
            released.push(entry);
            covering(&mut released, shown, true);
            return released;
        }
        if chunks.is_empty() && in_answer {
            self.held.push(entry);
        } else {
            self.held.clear();
        }
        Vec::new()
    }

    /// The entries the pass's last chunks release (text held to its end).
    pub fn tail(&mut self, chunks: &[Chunk]) -> Vec<Value> {
        let mut released = std::mem::take(&mut self.held);
        match text_len(chunks) {
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

/// One token as OpenAI writes it, with its alternatives.
fn entry(model: &LocalModel, id: u32, logprobs: &TokenLogprobs) -> Value {
    let mut entry = token(model, id, logprobs.logprob);
    let top: Vec<Value> = (logprobs.top.iter())
        .map(|&(id, logprob)| token(model, id, logprob))
        .collect();
    entry["top_logprobs"] = Value::Array(top);
    entry
}

/// `{token, logprob, bytes}`.
fn token(model: &LocalModel, id: u32, logprob: f32) -> Value {
    let (text, bytes) = model.token_piece(id);
    let logprob = if logprob.is_finite() {
        logprob.max(IMPOSSIBLE)
    } else {
        IMPOSSIBLE
    };
    json!({"token": text, "logprob": logprob, "bytes": bytes})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_checked_and_names_its_field() {
        let asked = |v: Value| from_forwarded(Some(&json!({ "logprobs": v })));
        assert_eq!(from_forwarded(None), Ok(None));
        assert_eq!(asked(Value::Null), Ok(None));
        assert_eq!(asked(json!(0)), Ok(Some(0)));
        assert_eq!(asked(json!(20)), Ok(Some(20)));
        for bad in [json!(21), json!(-1), json!("3"), json!(true), json!(1.5)] {
            let err = asked(bad.clone()).unwrap_err();
            assert_eq!(
                err.path.as_deref(),
                Some("forwardedProps.logprobs"),
                "{bad}"
            );
            assert_eq!(err.code, "INVALID_LOGPROBS");
        }
    }

    #[test]
    fn held_tokens_the_text_does_not_span_are_dropped() {
        let entries = |tokens: &[&str]| -> Vec<Value> {
            (tokens.iter())
                .map(|t| json!({"token": t, "bytes": t.as_bytes()}))
                .collect()
        };
        let spelled = |entries: &[Value]| -> Vec<String> {
            entries
                .iter()
                .map(|e| e["token"].as_str().unwrap().to_owned())
                .collect()
        };
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
}
