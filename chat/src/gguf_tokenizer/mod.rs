//! A Hugging Face `tokenizer.json` rebuilt from the tokenizer that a GGUF
//! file carries in its metadata.
//!
//! llama.cpp keeps the vocabulary (`tokenizer.ggml.tokens`) and token kinds
//! (`tokenizer.ggml.token_type`) of every tokenizer, and names its
//! algorithm in `tokenizer.ggml.model`. Two are rebuilt here:
//!
//! - `gpt2`, byte-level BPE ([`bpe`]): merges are stored; the pre-tokenizer
//!   is only *named* (`tokenizer.ggml.pre`) and rebuilt from that name.
//! - `llama`, SentencePiece ([`spm`]: Llama 2, Mistral, Gemma): scores are
//!   stored instead of merges; the merges are derived from them as Hugging
//!   Face's converter derives them from a `tokenizer.model`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gguf = thinkwire_gguf::GgufFile::open("model.gguf")?;
//! let json = thinkwire_chat::tokenizer_json_from_gguf(&gguf)?;
//! let tok: tokenizers::Tokenizer = serde_json::from_value(json)?;
//! # Ok(()) }
//! ```

mod bpe;
mod spm;

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use thinkwire_gguf::GgufFile;

use crate::error::{ChatError, Result};

pub use bpe::supported_pre_tokenizers;

/// GGUF token kinds (`llama_token_type` in llama.cpp).
mod token_type {
    pub const NORMAL: i64 = 1;
    pub const UNKNOWN: i64 = 2;
    pub const CONTROL: i64 = 3;
    pub const USER_DEFINED: i64 = 4;
}

/// Builds the `tokenizer.json` document equivalent to the GGUF's tokenizer.
///
/// Control tokens (token type 3) and the unknown token become special added
/// tokens; user-defined tokens (type 4, e.g. Qwen's `<think>`) become
/// non-special added tokens, matched whole in input text as Hugging Face
/// does. `tokenizer.ggml.add_bos_token` / `add_eos_token` become a
/// post-processor that adds them.
///
/// Handles `tokenizer.ggml.model` = `gpt2` (byte-level BPE) and `llama`
/// (SentencePiece); any other is [`ChatError::UnsupportedTokenizerModel`].
pub fn tokenizer_json_from_gguf(gguf: &GgufFile) -> Result<Value> {
    let model = gguf.get_str("tokenizer.ggml.model")?;
    match model {
        "gpt2" => bpe::tokenizer_json(gguf, &Vocab::read(gguf)?),
        "llama" => spm::tokenizer_json(gguf, &Vocab::read(gguf)?),
        other => Err(ChatError::UnsupportedTokenizerModel {
            path: gguf.path().to_path_buf(),
            model: other.to_owned(),
        }),
    }
}

/// The metadata every GGUF tokenizer has: pieces and their kinds.
struct Vocab<'a> {
    path: PathBuf,
    tokens: Vec<&'a str>,
    types: Vec<i64>,
    n_tokens: u32,
}

impl<'a> Vocab<'a> {
    fn read(gguf: &'a GgufFile) -> Result<Self> {
        let path = gguf.path().to_path_buf();
        let tokens = gguf.get_str_array("tokenizer.ggml.tokens")?;
        let types: Vec<i64> = match gguf.get("tokenizer.ggml.token_type") {
            None => vec![token_type::NORMAL; tokens.len()],
            Some(_) => gguf
                .get_array("tokenizer.ggml.token_type")?
                .iter()
                .map(|v| {
                    v.as_i64().ok_or_else(|| {
                        invalid(&path, "tokenizer.ggml.token_type holds a non-integer")
                    })
                })
                .collect::<Result<_>>()?,
        };
        if types.len() != tokens.len() {
            return Err(invalid(
                &path,
                format!("{} token types for {} tokens", types.len(), tokens.len()),
            ));
        }
        let n_tokens = u32::try_from(tokens.len())
            .map_err(|_| invalid(&path, format!("{} tokens is too many", tokens.len())))?;
        Ok(Self {
            path,
            tokens,
            types,
            n_tokens,
        })
    }

    fn invalid(&self, reason: impl Into<String>) -> ChatError {
        invalid(&self.path, reason)
    }

    /// The `model.vocab` map and the `added_tokens` list.
    fn vocab_and_added(&self) -> (Map<String, Value>, Vec<Value>) {
        let mut vocab = Map::with_capacity(self.tokens.len());
        let mut added = Vec::new();
        for (id, (token, kind)) in (0..self.n_tokens).zip(self.tokens.iter().zip(&self.types)) {
            if vocab.contains_key(*token) {
                // Hugging Face vocabularies are maps; a repeated string keeps
                // its first id, as llama.cpp's own text-to-id map does.
                tracing::warn!(
                    id,
                    "GGUF vocabulary repeats a token; the later id is only decodable"
                );
                continue;
            }
            vocab.insert((*token).to_owned(), json!(id));
            let special = match *kind {
                token_type::CONTROL | token_type::UNKNOWN => true,
                token_type::USER_DEFINED => false,
                _ => continue,
            };
            added.push(json!({
                "id": id,
                "content": token,
                "single_word": false,
                "lstrip": false,
                "rstrip": false,
                "normalized": false,
                "special": special,
            }));
        }
        (vocab, added)
    }

    /// The id stored under `key`, checked against the vocabulary.
    fn special_id(&self, gguf: &GgufFile, key: &str) -> Result<Option<u32>> {
        match gguf.opt_u64(key)? {
            None => Ok(None),
            Some(id) if id < u64::from(self.n_tokens) => Ok(u32::try_from(id).ok()),
            Some(id) => Err(self.invalid(format!("{key} = {id} is outside the vocabulary"))),
        }
    }

    /// The BOS and EOS ids to add around each sequence: those whose
    /// `add_*_token` flag is set, or defaults to `defaults` when absent.
    fn added_bos_eos(
        &self,
        gguf: &GgufFile,
        defaults: (bool, bool),
    ) -> Result<(Option<u32>, Option<u32>)> {
        let add_bos = gguf
            .opt_bool("tokenizer.ggml.add_bos_token")?
            .unwrap_or(defaults.0);
        let add_eos = gguf
            .opt_bool("tokenizer.ggml.add_eos_token")?
            .unwrap_or(defaults.1);
        let bos = self
            .special_id(gguf, "tokenizer.ggml.bos_token_id")?
            .filter(|_| add_bos);
        let eos = self
            .special_id(gguf, "tokenizer.ggml.eos_token_id")?
            .filter(|_| add_eos);
        Ok((bos, eos))
    }

    /// A template post-processor adding BOS/EOS, or `None` when neither is.
    fn post_processor(&self, bos: Option<u32>, eos: Option<u32>) -> Option<Value> {
        if bos.is_none() && eos.is_none() {
            return None;
        }
        let mut specials = Map::new();
        let mut piece = |id: u32| {
            let content = self.tokens.get(id as usize).copied().unwrap_or_default();
            specials.insert(
                content.to_owned(),
                json!({"id": content, "ids": [id], "tokens": [content]}),
            );
            json!({"SpecialToken": {"id": content, "type_id": 0}})
        };
        let mut single = Vec::new();
        let mut pair = Vec::new();
        if let Some(id) = bos {
            single.push(piece(id));
            pair.push(piece(id));
        }
        single.push(json!({"Sequence": {"id": "A", "type_id": 0}}));
        pair.push(json!({"Sequence": {"id": "A", "type_id": 0}}));
        if let Some(id) = eos {
            single.push(piece(id));
            pair.push(piece(id));
        }
        if let Some(id) = bos {
            pair.push(piece(id));
        }
        pair.push(json!({"Sequence": {"id": "B", "type_id": 1}}));
        if let Some(id) = eos {
            pair.push(piece(id));
        }
        Some(json!({
            "type": "TemplateProcessing",
            "single": single,
            "pair": pair,
            "special_tokens": specials,
        }))
    }
}

fn invalid(path: &std::path::Path, reason: impl Into<String>) -> ChatError {
    ChatError::InvalidTokenizerMetadata {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod test_util {
    use thinkwire_gguf::{GgufFile, MetadataValue as V, ValueType, write};

    pub fn strings(items: &[&str]) -> V {
        V::Array(
            ValueType::String,
            items.iter().map(|s| V::String((*s).into())).collect(),
        )
    }

    /// Writes `md` as a tensorless GGUF in a per-process temp folder and
    /// parses it; the file and the folder are gone once it is read (its
    /// metadata is all a tokenizer needs), so test runs leave nothing.
    pub fn gguf(name: &str, md: &[(&str, V)]) -> GgufFile {
        let dir = std::env::temp_dir().join(format!("thinkwire-chat-gguf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.gguf"));
        std::fs::write(&path, write::file(md, &[])).unwrap();
        let file = GgufFile::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        // Other tests of this process may still be writing theirs.
        let _ = std::fs::remove_dir(&dir);
        file
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{gguf, strings};
    use super::*;
    use thinkwire_gguf::MetadataValue as V;

    #[test]
    fn unsupported_models_are_named() {
        for model in ["bert", "rwkv", "t5"] {
            let file = gguf(
                &format!("model-{model}"),
                &[
                    ("tokenizer.ggml.model", V::String(model.into())),
                    ("tokenizer.ggml.tokens", strings(&["a"])),
                ],
            );
            let e = tokenizer_json_from_gguf(&file).unwrap_err();
            assert!(
                matches!(&e, ChatError::UnsupportedTokenizerModel { model: m, .. } if m == model),
                "{e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains("tokenizer.ggml.model") && msg.contains(model),
                "{msg}"
            );
        }
    }

    #[test]
    fn token_types_must_match_tokens() {
        let file = gguf(
            "types-mismatch",
            &[
                ("tokenizer.ggml.model", V::String("llama".into())),
                ("tokenizer.ggml.tokens", strings(&["a", "b"])),
                (
                    "tokenizer.ggml.token_type",
                    V::Array(thinkwire_gguf::ValueType::I32, vec![V::I32(1)]),
                ),
            ],
        );
        let e = tokenizer_json_from_gguf(&file).unwrap_err();
        assert!(e.to_string().contains("1 token types for 2 tokens"), "{e}");
    }
}
