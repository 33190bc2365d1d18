//! Log-probabilities in OpenAI's legacy completions shape: `tokens`,
//! `token_logprobs`, `top_logprobs` as token → logprob objects, and
//! `text_offset` in characters, counted on over bytes a token may split.

use serde_json::{Map, Number, Value};

use super::object;

/// A token's alternatives in the engine's order: (token, logprob; `None`:
/// `null`).
type Alternatives = Vec<(String, Option<Number>)>;

/// Entries already in OpenAI's legacy shape, as four lists: each entry's
/// JSON is read once and dropped, its strings moved, its `bytes` (a JSON
/// number per byte, most of an entry) counted into the offsets and not
/// kept. A scored prompt's entries wait in this form for the wire.
#[derive(Debug, Default)]
pub(super) struct Listed {
    tokens: Vec<String>,
    /// `None`: `null` (a prompt's first token follows nothing).
    token_logprobs: Vec<Option<Number>>,
    /// Each token's alternatives in the engine's order; `None`: `null`.
    top_logprobs: Vec<Option<Alternatives>>,
    text_offset: Vec<usize>,
}

impl Listed {
    pub(super) fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Adds `entries` (OpenAI's `{token, logprob, bytes, top_logprobs}`),
    /// their offsets counted on from `offset`.
    pub(super) fn extend(&mut self, entries: Vec<Value>, offset: &mut TextOffset) {
        self.tokens.reserve(entries.len());
        self.token_logprobs.reserve(entries.len());
        self.top_logprobs.reserve(entries.len());
        self.text_offset.reserve(entries.len());
        for mut entry in entries {
            let token = take_string(&mut entry, "token");
            self.token_logprobs.push(take_number(&mut entry, "logprob"));
            // A prompt's first token follows nothing: `null`, as OpenAI's.
            let top: Option<Vec<(String, Option<Number>)>> =
                match entry.get_mut("top_logprobs").map(Value::take) {
                    Some(Value::Array(alternatives)) => Some(
                        (alternatives.into_iter())
                            .map(|mut alternative| {
                                let logprob = take_number(&mut alternative, "logprob");
                                (take_string(&mut alternative, "token"), logprob)
                            })
                            .collect(),
                    ),
                    _ => None,
                };
            self.top_logprobs.push(top);
            self.text_offset.push(offset.chars);
            match entry.get("bytes").and_then(Value::as_array) {
                Some(bytes) => offset.push(bytes.iter().filter_map(Value::as_u64).map(|b| b as u8)),
                None => offset.push(token.bytes()),
            }
            self.tokens.push(token);
        }
    }

    /// `{tokens, token_logprobs, top_logprobs: [{token: logprob}],
    /// text_offset}`, the lists moved in.
    pub(super) fn into_json(self) -> Value {
        let number = |n: Option<Number>| n.map_or(Value::Null, Value::Number);
        let top = (self.top_logprobs.into_iter()).map(|top| match top {
            None => Value::Null,
            Some(alternatives) => {
                let mut map = Map::new();
                // Two alternatives of one lossy text: the likelier's.
                for (token, logprob) in alternatives {
                    map.entry(token).or_insert_with(|| number(logprob));
                }
                Value::Object(map)
            }
        });
        object([
            (
                "tokens",
                Value::Array(self.tokens.into_iter().map(Value::String).collect()),
            ),
            (
                "token_logprobs",
                Value::Array(self.token_logprobs.into_iter().map(number).collect()),
            ),
            ("top_logprobs", Value::Array(top.collect())),
            (
                "text_offset",
                Value::Array(self.text_offset.into_iter().map(Value::from).collect()),
            ),
        ])
    }
}

/// `value[key]` moved out as a string (empty where it is none).
fn take_string(value: &mut Value, key: &str) -> String {
    match value.get_mut(key).map(Value::take) {
        Some(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// `value[key]` moved out as a number (`None`: `null`, or not a number).
fn take_number(value: &mut Value, key: &str) -> Option<Number> {
    match value.get_mut(key).map(Value::take) {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    }
}

/// Where in the completion's text the next token starts, in characters
/// (as OpenAI counts them), counted from the tokens' bytes: a token that
/// holds part of a character has a lossy `token` text, and the character
/// counts once, at the token that completes it.
#[derive(Debug, Default)]
pub(super) struct TextOffset {
    pub(super) chars: usize,
    /// The bytes of a character not yet whole (at most three).
    pending: Vec<u8>,
}

impl TextOffset {
    pub(super) fn at(chars: usize) -> Self {
        Self {
            chars,
            pending: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, bytes: impl IntoIterator<Item = u8>) {
        self.pending.extend(bytes);
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    self.chars += text.chars().count();
                    self.pending.clear();
                    return;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    let whole = std::str::from_utf8(&self.pending[..valid])
                        .map_or(0, |t| t.chars().count());
                    self.chars += whole;
                    match err.error_len() {
                        // Bytes that are no character count as the one
                        // replacement character the text shows for them.
                        Some(bad) => {
                            self.chars += 1;
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            return;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `entries` in the legacy shape, counted on from `offset`.
    fn legacy(entries: Vec<Value>, offset: &mut TextOffset) -> Value {
        let mut listed = Listed::default();
        listed.extend(entries, offset);
        listed.into_json()
    }

    #[test]
    fn entries_become_the_legacy_shape_with_offsets_in_characters() {
        let entry = |t: &str, lp: f64| {
            json!({"token": t, "logprob": lp, "bytes": t.as_bytes(),
                   "top_logprobs": [{"token": t, "logprob": lp}, {"token": "x", "logprob": -4.0}]})
        };
        let mut offset = TextOffset::at(3);
        let got = legacy(vec![entry(" é", -0.5), entry("t", -1.0)], &mut offset);
        assert_eq!(got["tokens"], json!([" é", "t"]));
        assert_eq!(got["token_logprobs"], json!([-0.5, -1.0]));
        assert_eq!(got["top_logprobs"][0], json!({" é": -0.5, "x": -4.0}));
        assert_eq!(got["text_offset"], json!([3, 5]));
        assert_eq!(offset.chars, 6);
    }

    #[test]
    fn a_character_split_over_tokens_counts_once() {
        // "é" is 0xC3 0xA9: its first token shows a replacement character.
        let part = |bytes: &[u8]| json!({"token": "\u{fffd}", "logprob": -1.0, "bytes": bytes});
        let mut offset = TextOffset::default();
        let got = legacy(
            vec![part(&[0x61]), part(&[0xC3]), part(&[0xA9]), part(&[0x62])],
            &mut offset,
        );
        assert_eq!(got["text_offset"], json!([0, 1, 1, 2]));
        assert_eq!(offset.chars, 3);
        // A byte that starts no character counts as one replacement.
        offset.push([0xFF, 0x63]);
        assert_eq!(offset.chars, 5);
    }
}
