//! Token log-probabilities of the answer, for a run that asks
//! (`forwardedProps.logprobs: k`, 0 to 20): each answer token's and the `k`
//! most likely tokens' at its place, in OpenAI's shape (`{token, logprob,
//! bytes, top_logprobs}`), sent in a `CUSTOM` event `thinkwire.logprobs`
//! before the text that carries them. Reasoning, format markers and tool
//! calls report none: these are the logprobs of the message content, as
//! OpenAI's are.

use serde_json::Value;
use thinkwire_engine::{MAX_TOP_LOGPROBS, TokenLogprobs};
use thinkwire_reasoning::Chunk;

use super::model::LocalModel;
use super::rejection::{RejectKind, RunRejected};
pub(super) use crate::logprob_entries::Seen;
use crate::logprob_entries::{self, Held};

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

/// Token ids as the client is shown them: text and bytes.
pub(super) trait Pieces {
    /// `id`'s text (lossy where its bytes are not UTF-8) and bytes.
    fn token_piece(&self, id: u32) -> (String, Vec<u8>);
}

impl Pieces for LocalModel {
    fn token_piece(&self, id: u32) -> (String, Vec<u8>) {
        LocalModel::token_piece(self, id)
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
    /// Entries of tokens whose text the splitter holds.
    held: Held,
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

    /// Token `id` became `chunks`, as the splitter saw it: the entries to
    /// send before those chunks (its own and those held, where it made
    /// answer text; none where its text went elsewhere).
    pub fn token(
        &mut self,
        pieces: &impl Pieces,
        id: u32,
        chunks: &[Chunk],
        seen: Seen,
    ) -> Vec<Value> {
        let Some(logprobs) = self.next.take() else {
            return Vec::new();
        };
        let entry = entry(pieces, id, &logprobs);
        self.held.wrote(vec![entry], chunks, seen)
    }

    /// The entries the pass's last chunks release (text held to its end).
    pub fn tail(&mut self, chunks: &[Chunk]) -> Vec<Value> {
        self.held.tail(chunks)
    }
}

/// One token as OpenAI writes it, with its alternatives.
pub(super) fn entry(pieces: &impl Pieces, id: u32, logprobs: &TokenLogprobs) -> Value {
    let mut entry = token(pieces, id, logprobs.logprob);
    let top: Vec<Value> = (logprobs.top.iter())
        .map(|&(id, logprob)| token(pieces, id, logprob))
        .collect();
    entry["top_logprobs"] = Value::Array(top);
    entry
}

/// A prompt's own tokens as OpenAI lists them after an `echo`: the first
/// with a `null` log-probability (it follows nothing), each next with the
/// engine's score of it (`scored`: one per token from the second on).
pub(super) fn prompt_entries(
    pieces: &impl Pieces,
    prompt: &[u32],
    scored: &[TokenLogprobs],
) -> Vec<Value> {
    let mut entries = Vec::with_capacity(prompt.len());
    if let Some(&first) = prompt.first() {
        let (text, bytes) = pieces.token_piece(first);
        entries.push(
            serde_json::json!({"token": text, "logprob": null, "bytes": bytes,
            "top_logprobs": null}),
        );
    }
    for (&id, logprobs) in prompt.iter().skip(1).zip(scored) {
        entries.push(entry(pieces, id, logprobs));
    }
    entries
}

/// `{token, logprob, bytes}`.
fn token(pieces: &impl Pieces, id: u32, logprob: f32) -> Value {
    let (text, bytes) = pieces.token_piece(id);
    logprob_entries::token(&text, logprob, &bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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

    use thinkwire_reasoning::StructuredSplitter;

    fn text_bytes(chunks: &[Chunk]) -> usize {
        (chunks.iter())
            .map(|c| match c {
                Chunk::Text(text) => text.len(),
                _ => 0,
            })
            .sum()
    }

    /// Pieces spelled by their own text, as a byte-level tokenizer's are.
    struct Spelled(Vec<&'static str>);

    impl Pieces for Spelled {
        fn token_piece(&self, id: u32) -> (String, Vec<u8>) {
            let text = self.0[id as usize];
            (text.to_owned(), text.as_bytes().to_vec())
        }
    }

    /// The tokens of a structured answer whose escapes span tokens: every
    /// token that read the answer string reports, the held escape's too,
    /// and none of the JSON around it.
    #[test]
    fn a_structured_answers_escapes_report_every_token_that_wrote_them() {
        let tokens = Spelled(vec![
            r#"{"reasoning": "r", "#,
            r#""answer": ""#,
            r"caf\u00",
            "e9",
            r" \ud83d",
            r"\ude00",
            r"\",
            r#"n""#,
            "}",
        ]);
        let report = |reporter: &mut Reporter, splitter: &mut StructuredSplitter, id: u32| {
            reporter.report(TokenLogprobs {
                logprob: -0.5,
                top: vec![(id, -0.5)],
            });
            let chunks = splitter.push(tokens.0[id as usize]);
            let read = splitter.read_answer();
            let entries = reporter.token(&tokens, id, &chunks, Seen::AnswerString { read });
            (text_bytes(&chunks), entries)
        };
        let mut reporter = Reporter::new(Some(1));
        let mut splitter = StructuredSplitter::default();
        let mut shown = Vec::new();
        for id in 0..tokens.0.len() as u32 {
            let (len, entries) = report(&mut reporter, &mut splitter, id);
            let ids: Vec<&str> = entries
                .iter()
                .map(|e| e["token"].as_str().unwrap())
                .collect();
            shown.push((len, ids.join("|")));
        }
        let tail = reporter.tail(&splitter.finish());
        assert!(tail.is_empty(), "{tail:?}");
        let want = [
            (0, ""),
            (0, ""),
            (3, r"caf\u00"),
            (2, "e9"),
            (1, r" \ud83d"),
            (4, r"\ude00"),
            (0, ""),
            (1, r#"\|n""#),
            (0, ""),
        ];
        let got: Vec<(usize, &str)> = shown.iter().map(|(n, s)| (*n, s.as_str())).collect();
        assert_eq!(got, want);
    }
}
