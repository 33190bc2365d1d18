//! A served model: the engine that generates, the tokenizer and chat
//! template that frame its prompts, and the reasoning format that says how
//! it thinks. The agent sees only this.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use thinkwire_chat::{ChatModel, IncrementalDecoder, RenderOptions, RenderedChat, TemplateMessage};
use thinkwire_engine::Engine;
use thinkwire_protocol::Tool;
use thinkwire_reasoning::{FormatSpec, ModelFacts, Registry, Resolution, SeparatePassSpec};

use super::prompt::template_tools;

/// Why a model could not be assembled or used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Tokenizer or template failure.
    #[error(transparent)]
    Chat(#[from] thinkwire_chat::ChatError),
    /// Reasoning-format registry failure.
    #[error(transparent)]
    Format(#[from] thinkwire_reasoning::FormatError),
    /// Engine failure while loading.
    #[error(transparent)]
    Engine(#[from] thinkwire_engine::EngineError),
    /// The tokenizer and the engine disagree.
    #[error("{0}")]
    Mismatch(String),
}

/// A model ready to serve.
pub struct LocalModel {
    engine: Arc<dyn Engine>,
    chat: ChatModel,
    format: Resolution,
    summary: Option<SeparatePassSpec>,
    /// The grammar engine's view of the vocabulary, built at the first
    /// constrained run (tens of milliseconds in a release build) and
    /// shared with the models [`LocalModel::with_engine`] makes.
    grammar: Arc<OnceLock<Result<thinkwire_grammar::Vocabulary, String>>>,
}

/// Whether every token of `chat`'s tokenizer has a row in the engine's
/// output layer.
fn fits(chat: &ChatModel, info: &thinkwire_engine::ModelInfo) -> Result<(), ModelError> {
    let vocab = chat.tokenizer.vocab_size();
    if vocab > info.vocab_size {
        return Err(ModelError::Mismatch(format!(
            "the tokenizer has {vocab} tokens but the model's output layer only {}",
            info.vocab_size
        )));
    }
    Ok(())
}

impl LocalModel {
    /// Assembles a model from its parts, resolving its reasoning format in
    /// `registry` from the model id, architecture and chat template.
    pub fn new(
        engine: Arc<dyn Engine>,
        chat: ChatModel,
        registry: &Registry,
    ) -> Result<Self, ModelError> {
        let info = engine.info();
        let template = chat.template_source().unwrap_or_default().to_owned();
        let facts = ModelFacts::new(&info.id)
            .architecture(&info.architecture)
            .chat_template(&template);
        let format = registry.resolve(&facts);
        let summary = format
            .spec
            .separate_pass()
            .or_else(|| registry.default_spec().separate_pass())
            .cloned();
        fits(&chat, info)?;
        Ok(Self {
            engine,
            chat,
            format,
            summary,
            grammar: Arc::default(),
        })
    }

    /// The same tokenizer, template, reasoning format and grammar
    /// vocabulary over another engine of the same model (the same token
    /// ids): what was derived from the tokenizer is not built again.
    pub fn with_engine(&self, engine: Arc<dyn Engine>) -> Result<Self, ModelError> {
        fits(&self.chat, engine.info())?;
        Ok(Self {
            engine,
            chat: self.chat.clone(),
            format: self.format.clone(),
            summary: self.summary.clone(),
            grammar: Arc::clone(&self.grammar),
        })
    }

    /// The vocabulary constrained decoding compiles grammars over.
    pub fn grammar_vocabulary(&self) -> Result<&thinkwire_grammar::Vocabulary, String> {
        self.grammar
            .get_or_init(|| {
                thinkwire_grammar::Vocabulary::new(&self.chat.tokenizer, self.stop_token_ids())
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Loads the tokenizer and template of a GGUF file or a Hugging Face
    /// folder (the engine is loaded separately).
    pub fn load_chat(path: &Path) -> Result<ChatModel, ModelError> {
        Ok(ChatModel::load(path)?)
    }

    /// The model's id.
    pub fn id(&self) -> &str {
        &self.engine.info().id
    }

    /// The generating engine.
    pub fn engine(&self) -> &dyn Engine {
        self.engine.as_ref()
    }

    /// Tokenizer, templates, special tokens.
    pub fn chat(&self) -> &ChatModel {
        &self.chat
    }

    /// How the model thinks.
    pub fn format(&self) -> &FormatSpec {
        &self.format.spec
    }

    /// How the format was chosen (for `thinkwire inspect`).
    pub fn format_resolution(&self) -> &Resolution {
        &self.format
    }

    /// Prompts for `summary` visibility.
    pub fn summary_prompts(&self) -> Option<&SeparatePassSpec> {
        self.summary.as_ref()
    }

    /// Longest prompt plus generation.
    pub fn context_length(&self) -> usize {
        self.engine.info().context_length
    }

    /// Token ids that end a turn.
    pub fn stop_token_ids(&self) -> &[u32] {
        &self.chat.special.stop_ids
    }

    /// The generation prompt for `turns` with `tools`, extra template
    /// variables (`enable_thinking`, ...) and a trusted `suffix` the
    /// reasoning format appends after the template (a pre-filled `<think>`).
    ///
    /// Rendered once, by [`ChatModel::render_chat`]: control tokens that a
    /// client wrote into a message (`<|im_end|>`, `<think>`) are encoded as
    /// plain text, so a user cannot forge a turn or the model's reasoning.
    pub fn prompt(
        &self,
        turns: &[TemplateMessage],
        tools: &[Tool],
        kwargs: &[(String, Value)],
        suffix: Option<&str>,
    ) -> Result<Prompt, ModelError> {
        let mut options = RenderOptions::generation();
        if !tools.is_empty() {
            options = options.with_tools(template_tools(tools));
        }
        for (name, value) in kwargs {
            options = options.with_var(name.clone(), value.clone());
        }
        let RenderedChat { mut text, mut ids } = self.chat.render_chat(turns, &options)?;
        if let Some(suffix) = suffix {
            text.push_str(suffix);
            ids.extend(self.encode(suffix)?);
        }
        Ok(Prompt { text, ids })
    }

    /// Tokenizes a rendered prompt (templates write their own BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        Ok(self.chat.tokenizer.encode(text, false)?)
    }

    /// Encodes a raw prompt as the tokenizer does for a whole input: its
    /// beginning token added where it adds one, special tokens written in
    /// the text read as those tokens.
    pub fn encode_raw(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        Ok(self.chat.tokenizer.encode(text, true)?)
    }

    /// The first of `ids` that is no token of this model, and what a
    /// refusal of it says.
    pub fn unknown_token(&self, ids: &[u32]) -> Option<(usize, String)> {
        let vocab = self.engine().info().vocab_size;
        let at = ids.iter().position(|&id| id as usize >= vocab)?;
        Some((
            at,
            format!("is not a token id of this model (its vocabulary has {vocab})"),
        ))
    }

    /// Decodes ids to text, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        Ok(self.chat.tokenizer.decode(ids, false)?)
    }

    /// One token's text and bytes (the text marks what is not whole UTF-8
    /// with U+FFFD): a byte-level tokenizer's own bytes; for any other
    /// decoder (SentencePiece's `▁` and `<0xNN>` pieces), the bytes the
    /// grammar engine's vocabulary reads from it (built on first use);
    /// without that, those of its decoded text. What is unknown is empty.
    pub fn token_piece(&self, id: u32) -> (String, Vec<u8>) {
        let tokenizer = &self.chat.tokenizer;
        let bytes = match tokenizer.token_bytes(id).filter(|b| !b.is_empty()) {
            Some(bytes) => Some(bytes.to_vec()),
            None => (self.grammar_vocabulary().ok())
                .and_then(|v| v.token_bytes(id))
                .map(<[u8]>::to_vec),
        };
        match bytes {
            Some(bytes) => (String::from_utf8_lossy(&bytes).into_owned(), bytes),
            None => {
                let text = tokenizer.decode(&[id], false).unwrap_or_default();
                let bytes = text.as_bytes().to_vec();
                (text, bytes)
            }
        }
    }

    /// A fresh incremental decoder. Special tokens are kept: reasoning
    /// markers such as `<think>` or Harmony's `<|channel|>` are special in
    /// some tokenizers, and the splitter needs to see them.
    pub fn detokenizer(&self) -> Detokenizer {
        Detokenizer {
            decoder: Some(self.chat.tokenizer.incremental_decoder(false)),
            at_start: true,
        }
    }

    /// A [`Detokenizer`] that keeps the first space: a raw completion's
    /// text continues its prompt.
    pub fn raw_detokenizer(&self) -> Detokenizer {
        Detokenizer {
            decoder: Some(self.chat.tokenizer.incremental_decoder(false)),
            at_start: false,
        }
    }
}

/// A rendered generation prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// As the template wrote it, the trusted suffix included (what the
    /// reasoning format inspects).
    pub text: String,
    /// As the engine gets it.
    pub ids: Vec<u32>,
}

/// Token ids to text pieces that never split a character.
///
/// A generation's text does not begin with its first token's word-boundary
/// space (`" Paris"` answers `"Paris"`), as SentencePiece decoders and
/// mlx-lm's streaming detokenizers write it for every tokenizer.
pub struct Detokenizer {
    decoder: Option<IncrementalDecoder>,
    at_start: bool,
}

impl Detokenizer {
    /// The text `id` completes (often empty mid-character).
    pub fn push(&mut self, id: u32) -> String {
        let piece = match &mut self.decoder {
            // An id the tokenizer does not know cannot come from the engine
            // (the vocabularies are checked at load); nothing to show.
            Some(decoder) => decoder.push(id).unwrap_or_default(),
            None => String::new(),
        };
        self.trim_first_space(piece)
    }

    /// Whatever is still held back (an incomplete character at the end).
    pub fn finish(&mut self) -> String {
        let rest = self
            .decoder
            .take()
            .and_then(|decoder| decoder.finish().ok())
            .unwrap_or_default();
        self.trim_first_space(rest)
    }

    fn trim_first_space(&mut self, piece: String) -> String {
        if !self.at_start || piece.is_empty() {
            return piece;
        }
        self.at_start = false;
        match piece.strip_prefix(' ') {
            Some(rest) => rest.to_owned(),
            None => piece,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detokenizer() -> Detokenizer {
        Detokenizer {
            decoder: None,
            at_start: true,
        }
    }

    #[test]
    fn only_the_first_space_of_a_generation_goes() {
        let mut d = detokenizer();
        assert_eq!(d.trim_first_space(String::new()), "");
        assert_eq!(d.trim_first_space("  Paris".into()), " Paris");
        assert_eq!(d.trim_first_space(" is".into()), " is");
        let mut d = detokenizer();
        assert_eq!(d.trim_first_space("\n Hi".into()), "\n Hi");
        assert_eq!(d.trim_first_space(" there".into()), " there");
    }
}
