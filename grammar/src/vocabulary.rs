//! A tokenizer's vocabulary as the grammar engine sees it.

use std::sync::Arc;

use llguidance::ParserFactory;
use thinkwire_chat::Tokenizer;
use toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use crate::GrammarError;
use crate::compiled::Compiled;

/// Token bytes in llguidance's trie and the grammar compiler over them;
/// built once per model (tens of milliseconds), shared by every run.
#[derive(Clone)]
pub struct Vocabulary {
    pub(crate) factory: Arc<ParserFactory>,
    /// The model's stop ids: the grammar's end allows any of them.
    pub(crate) stop_ids: Vec<u32>,
    /// Grammars compiled over it, kept for the runs that ask again.
    pub(crate) compiled: Arc<Compiled>,
}

impl std::fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocabulary")
            .field("tokens", &self.factory.tok_env().tok_trie().vocab_size())
            .field("stop_ids", &self.stop_ids)
            .finish()
    }
}

/// llguidance's tokenizer interface over ours: the trie for masks, our
/// tokenizer for the text it needs as tokens.
struct Env {
    trie: TokTrie,
    tokenizer: Tokenizer,
}

impl TokenizerEnv for Env {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.tokenizer
            .encode_plain(&String::from_utf8_lossy(s))
            .unwrap_or_default()
    }
}

impl Vocabulary {
    /// The vocabulary of `tokenizer`; a finished grammar allows exactly
    /// `stop_ids` (the first is the grammar engine's end token).
    pub fn new(tokenizer: &Tokenizer, stop_ids: &[u32]) -> Result<Self, GrammarError> {
        let bad = |e: &dyn std::fmt::Display| GrammarError::Vocabulary(e.to_string());
        let Some(&eos) = stop_ids.first() else {
            return Err(GrammarError::Vocabulary(
                "the model has no stop token".into(),
            ));
        };
        let json = tokenizer.vocabulary_json().map_err(|e| bad(&e))?;
        let words = llguidance::token_bytes_from_tokenizer_json(&json).map_err(|e| bad(&e))?;
        if eos as usize >= words.len() {
            return Err(GrammarError::Vocabulary(format!(
                "stop token {eos} is outside the tokenizer's {} tokens",
                words.len()
            )));
        }
        let info = TokRxInfo::new(words.len() as u32, eos);
        let env: TokEnv = Arc::new(Env {
            trie: TokTrie::from(&info, &words),
            tokenizer: tokenizer.clone(),
        });
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| bad(&e))?;
        factory.quiet();
        Ok(Self {
            factory: Arc::new(factory),
            stop_ids: stop_ids.to_vec(),
            compiled: Arc::default(),
        })
    }

    /// Tokens the grammar engine knows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.factory.tok_env().tok_trie().vocab_size()
    }

    /// Whether it knows none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many compiled grammars it keeps for the runs that ask again.
    #[must_use]
    pub fn kept_grammars(&self) -> usize {
        self.compiled.len()
    }

    /// Whether `target`'s compiled grammar is kept: the next
    /// [`Grammar::new`](crate::Grammar::new) of it copies it.
    #[must_use]
    pub fn keeps(&self, target: &crate::Target) -> bool {
        Compiled::key(target).is_some_and(|key| self.compiled.contains(&key))
    }

    /// The bytes token `id` stands for, from whatever decoder the
    /// tokenizer has (SentencePiece's `▁` a space and `<0xNN>` its byte);
    /// a special token's are its text. `None` for an id it does not know.
    #[must_use]
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let bytes = self.factory.tok_env().tok_trie().token(id);
        match bytes.split_first() {
            None => None,
            // The marker, then the special token's text; byte 0xFF alone
            // is the byte.
            Some((&TokTrie::SPECIAL_TOKEN_MARKER, text)) if !text.is_empty() => Some(text),
            Some(_) => Some(bytes),
        }
    }
}
