//! [`Tokenizer`]: a Hugging Face tokenizer (the `tokenizers` crate), loaded
//! from a `tokenizer.json` or rebuilt from a GGUF file.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use thinkwire_gguf::GgufFile;

use crate::bytelevel;
use crate::detok::IncrementalDecoder;
use crate::error::{ChatError, Result};
use crate::gguf_tokenizer::tokenizer_json_from_gguf;

/// A tokenizer. Cheap to clone (shared), `Send + Sync`.
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<Inner>,
}

struct Inner {
    tk: tokenizers::Tokenizer,
    /// Whether each id is a special added token (by content, as
    /// `tokenizers` decides when skipping).
    special: Vec<bool>,
    /// For byte-level decoders: every id's raw bytes, so that streaming
    /// decode is exact and O(1) per token. `None` for other decoders.
    bytes: Option<TokenBytes>,
    /// The same tokenizer without added tokens, built on first use by
    /// [`Tokenizer::encode_plain`].
    plain: OnceLock<std::result::Result<tokenizers::Tokenizer, String>>,
}

/// All tokens' bytes, concatenated; `offsets[id]..offsets[id + 1]`.
struct TokenBytes {
    data: Vec<u8>,
    offsets: Vec<usize>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("byte_level", &self.inner.bytes.is_some())
            .finish()
    }
}

impl Tokenizer {
    /// Loads a `tokenizer.json`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ChatError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json_str(&text)
            .map_err(|e| ChatError::tokenizer(format!("loading {}", path.display()), e))
    }

    /// Parses the text of a `tokenizer.json`.
    ///
    /// The text is read as JSON first: the `tokenizers` crate's own parser
    /// panics on some malformed documents (its decoder and normalizer
    /// helpers `expect` a syntax error away), which fuzzing found (issue
    /// #13); a document that parses as a value cannot fail that way. The
    /// value is only checked (there and for BPE merges its builder would
    /// panic on, `check_merges`): `tokenizers` then reads the text
    /// itself, in its own compiled parser, rather than converting the
    /// value.
    pub fn from_json_str(json: &str) -> Result<Self> {
        let value = json
            .parse::<Value>()
            .map_err(|e| ChatError::tokenizer("parsing tokenizer.json", e))?;
        check_merges(&value)?;
        let tk: tokenizers::Tokenizer = json
            .parse()
            .map_err(|e| ChatError::tokenizer("parsing tokenizer.json", e))?;
        Self::from_tokenizers(tk)
    }

    /// Builds from a parsed `tokenizer.json` document (written out and read
    /// back by `tokenizers`' own parser, as [`Tokenizer::from_json_str`]).
    pub fn from_json(json: &Value) -> Result<Self> {
        check_merges(json)?;
        let tk: tokenizers::Tokenizer = json
            .to_string()
            .parse()
            .map_err(|e| ChatError::tokenizer("parsing tokenizer.json", e))?;
        Self::from_tokenizers(tk)
    }

    /// Rebuilds the tokenizer a GGUF file carries (see
    /// [`crate::tokenizer_json_from_gguf`] for the document it goes
    /// through).
    pub fn from_gguf(gguf: &GgufFile) -> Result<Self> {
        Self::from_json(&tokenizer_json_from_gguf(gguf)?)
    }

    /// Wraps a tokenizer built by other means.
    pub fn from_tokenizers(tk: tokenizers::Tokenizer) -> Result<Self> {
        let added = tk.get_added_tokens_decoder();
        let special_contents: HashSet<&str> = added
            .values()
            .filter(|t| t.special)
            .map(|t| t.content.as_str())
            .collect();
        let max_added = added.keys().max().map_or(0, |&id| id as usize + 1);
        let size = tk.get_vocab_size(true).max(max_added);
        let tokens: Vec<Option<String>> = (0..size)
            .map(|id| u32::try_from(id).ok().and_then(|id| tk.id_to_token(id)))
            .collect();
        let special = tokens
            .iter()
            .map(|t| t.as_deref().is_some_and(|t| special_contents.contains(t)))
            .collect();
        let bytes = is_byte_level(&tk).then(|| {
            let mut data = Vec::new();
            let mut offsets = Vec::with_capacity(size + 1);
            offsets.push(0);
            for token in &tokens {
                if let Some(token) = token {
                    data.extend(bytelevel::token_bytes(token));
                }
                offsets.push(data.len());
            }
            TokenBytes { data, offsets }
        });
        Ok(Self {
            inner: Arc::new(Inner {
                tk,
                special,
                bytes,
                plain: OnceLock::new(),
            }),
        })
    }

    /// Token ids for `text`. `add_special_tokens` applies the
    /// tokenizer's post-processor (e.g. a BOS for Llama 3); special tokens
    /// written in the text (`<|im_start|>`) are always matched, which is
    /// what a rendered chat template needs.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .tk
            .encode_fast(text, add_special_tokens)
            .map_err(|e| ChatError::tokenizer("encoding", e))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Token ids for `text` read as plain text: added tokens written in it
    /// (`<|im_end|>`, `<think>`) are not matched but split like any text.
    /// Used to encode conversation text that must not forge control
    /// tokens.
    pub fn encode_plain(&self, text: &str) -> Result<Vec<u32>> {
        let plain = self
            .inner
            .plain
            .get_or_init(|| without_added_tokens(&self.inner.tk))
            .as_ref()
            .map_err(|e| ChatError::tokenizer("building the plain-text tokenizer", e))?;
        let enc = plain
            .encode_fast(text, false)
            .map_err(|e| ChatError::tokenizer("encoding", e))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text for `ids`, as Hugging Face decodes it. Unknown ids are skipped.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.inner
            .tk
            .decode(ids, skip_special_tokens)
            .map_err(|e| ChatError::tokenizer("decoding", e))
    }

    /// A streaming decoder: ids in, text pieces out.
    pub fn incremental_decoder(&self, skip_special_tokens: bool) -> IncrementalDecoder {
        IncrementalDecoder::new(self.clone(), skip_special_tokens)
    }

    /// The id of a token string (added tokens included).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.tk.token_to_id(token)
    }

    /// The string of a token id, in vocabulary spelling (`Ġ` for space in
    /// byte-level vocabularies).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.tk.id_to_token(id)
    }

    /// Number of ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.special.len()
    }

    /// Whether `id` is a special added token (skipped by
    /// `skip_special_tokens`).
    pub fn is_special(&self, id: u32) -> bool {
        self.inner
            .special
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Added tokens as `(id, content, special)`, by id.
    pub fn added_tokens(&self) -> Vec<(u32, String, bool)> {
        let mut v: Vec<_> = self
            .inner
            .tk
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(id, t)| (id, t.content, t.special))
            .collect();
        v.sort_by_key(|t| t.0);
        v
    }

    /// Whether the decoder is byte-level (GPT-2 style), so that streaming
    /// decode works on exact bytes.
    pub fn is_byte_level(&self) -> bool {
        self.inner.bytes.is_some()
    }

    /// The `tokenizer.json` text of this tokenizer, as the `tokenizers`
    /// crate serializes it; `thinkwire convert` writes it next to
    /// converted weights.
    pub fn to_json_string(&self, pretty: bool) -> Result<String> {
        self.inner
            .tk
            .to_string(pretty)
            .map_err(|e| ChatError::tokenizer("serializing", e))
    }

    /// The parts of its `tokenizer.json` that say each token's bytes: the
    /// decoder, the added tokens and the model's vocabulary, without the
    /// merges (the grammar engine's trie reads these; writing and parsing
    /// the whole document took most of a test build's time to build it).
    pub fn vocabulary_json(&self) -> Result<Value> {
        use tokenizers::Model;
        let tk = &self.inner.tk;
        let decoder = serde_json::to_value(tk.get_decoder())
            .map_err(|e| ChatError::tokenizer("serializing the decoder", e))?;
        let mut added: Vec<(u32, tokenizers::AddedToken)> =
            tk.get_added_tokens_decoder().into_iter().collect();
        added.sort_unstable_by_key(|&(id, _)| id);
        let added: Vec<Value> = added
            .into_iter()
            .map(
                |(id, t)| serde_json::json!({"id": id, "content": t.content, "special": t.special}),
            )
            .collect();
        Ok(serde_json::json!({
            "decoder": decoder,
            "added_tokens": added,
            "model": {"vocab": tk.get_model().get_vocab()},
        }))
    }

    /// The underlying `tokenizers` tokenizer.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner.tk
    }

    /// Raw bytes of one token for byte-level tokenizers (`None` for other
    /// decoders); unknown ids give an empty slice, as decode skips them.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let table = self.inner.bytes.as_ref()?;
        let i = id as usize;
        match (table.offsets.get(i), table.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => table.data.get(a..b),
            _ => Some(&[]),
        }
    }
}

/// `tk` with its added-token list emptied (the model's own vocabulary is
/// untouched). A clone, not a trip through JSON: rebuilding a BPE model
/// from its document costs seconds in a test build.
fn without_added_tokens(
    tk: &tokenizers::Tokenizer,
) -> std::result::Result<tokenizers::Tokenizer, String> {
    let mut plain = tk.clone();
    plain.with_added_vocabulary(tokenizers::AddedVocabulary::new());
    Ok(plain)
}

/// Whether `tk`'s decoder is ByteLevel alone (or a sequence of only
/// ByteLevel decoders).
fn is_byte_level(tk: &tokenizers::Tokenizer) -> bool {
    let Some(decoder) = tk.get_decoder() else {
        return false;
    };
    let Ok(json) = serde_json::to_value(decoder) else {
        return false;
    };
    fn check(v: &Value) -> bool {
        match v.get("type").and_then(Value::as_str) {
            Some("ByteLevel") => true,
            Some("Sequence") => v
                .get("decoders")
                .and_then(Value::as_array)
                .is_some_and(|ds| !ds.is_empty() && ds.iter().all(check)),
            _ => false,
        }
    }
    check(&json)
}

/// `tokenizers` names a BPE merge's token by cutting the model's
/// `continuing_subword_prefix` off the merge's right part, and panics where
/// that part is shorter than the prefix (or the cut falls inside a
/// character): such a merge is refused here first, by its index.
fn check_merges(json: &Value) -> Result<()> {
    let model = &json["model"];
    let (Some(prefix), Some(merges)) = (
        model["continuing_subword_prefix"].as_str(),
        model["merges"].as_array(),
    ) else {
        return Ok(());
    };
    if prefix.is_empty() {
        return Ok(());
    }
    for (i, merge) in merges.iter().enumerate() {
        // Either `"a b"` or `["a", "b"]`.
        let right = match merge {
            Value::String(s) => s.split_once(' ').map(|(_, b)| b),
            Value::Array(pair) => pair.get(1).and_then(Value::as_str),
            _ => None,
        };
        if right.is_some_and(|b| b.get(prefix.len()..).is_none()) {
            return Err(ChatError::tokenizer(
                "parsing tokenizer.json",
                format!(
                    "merge {i}: its right part is shorter than the model's \
                     continuing_subword_prefix, which it must start with"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `tokenizer_json` fuzz target (issue #13): a malformed
    /// decoder made the `tokenizers` crate's parser panic ("Helper").
    #[test]
    fn malformed_documents_are_errors_not_panics() {
        let json = r#"{"version":"1.0","added_tokens":[],"normalizer":{"type":"NFKC"},"pre_tokenizer":null,"post_processor":null,"decoder":{"typ:M""eetaspace","replacement":"x"},"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0.0],["a",-1.0]]}}"#;
        assert!(Tokenizer::from_json_str(json).is_err());
        let json = r#"{"version":"1.0","normalizer":{"type""NFKC"},"model":{"type":"WordLevel","vocab":{},"unk_token":"x"}}"#;
        assert!(Tokenizer::from_json_str(json).is_err());
        // Valid syntax with a number no f64 holds: the decoder's helper
        // would fail on it as on a syntax error.
        let json = r#"{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":{"type":"ByteLevel","n":1e400},"model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}"#;
        assert!(Tokenizer::from_json_str(json).is_err());
        // A merge's right part shorter than the subword prefix it must
        // start with: `tokenizers`' BPE builder would slice past its end.
        for merges in [r#"[["h","e"],["l","d"]]"#, r#"["h e","l d"]"#] {
            let json = format!(
                r###"{{"version":"1.0","model":{{"type":"BPE","continuing_subword_prefix":"##","vocab":{{"h":0,"e":1,"l":2,"d":3,"he":4,"ld":5}},"merges":{merges}}}}}"###
            );
            let err = Tokenizer::from_json_str(&json).unwrap_err().to_string();
            assert!(err.contains("merge 0"), "{err}");
        }
        let good = r#"{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1},"unk_token":"[UNK]"}}"#;
        let tk = Tokenizer::from_json_str(good).unwrap();
        assert_eq!(tk.encode("hello", false).unwrap(), vec![1]);
    }

    /// Plain text never becomes an added token, whatever it spells.
    #[test]
    fn plain_encoding_ignores_added_tokens() {
        let json = r#"{"version":"1.0","added_tokens":[{"id":5,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],"normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1,"<":2,"s":3,">":4},"unk_token":"[UNK]"}}"#;
        let tk = Tokenizer::from_json_str(json).unwrap();
        assert_eq!(tk.encode("hello <s>", false).unwrap(), vec![1, 5]);
        assert_eq!(tk.encode_plain("hello <s>").unwrap(), vec![1, 2, 3, 4]);
        // The plain tokenizer is a copy: the original keeps its added tokens.
        assert_eq!(tk.encode("hello <s>", false).unwrap(), vec![1, 5]);
    }
}
