//! [`ChatModel`]: everything about a model that is text — tokenizer, chat
//! template, special and stop tokens — loaded from a GGUF file or a Hugging
//! Face folder.
//!
//! ```no_run
//! use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage};
//!
//! let model = ChatModel::load(thinkwire_chat::assets::default_model())?;
//! let prompt = model.template()?.render(
//!     &[TemplateMessage::user("What is the capital of France?")],
//!     &RenderOptions::generation(),
//! )?;
//! // The template writes special tokens itself: no post-processor tokens.
//! let ids = model.tokenizer.encode(&prompt, false)?;
//! # let _ = ids;
//! # Ok::<(), thinkwire_chat::ChatError>(())
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use thinkwire_gguf::GgufFile;

mod export;

use crate::error::{ChatError, Result};
use crate::message::TemplateMessage;
use crate::sanitize::{ControlTokens, encode_marked, strip_markers};
use crate::template::{ChatTemplate, RenderOptions};
use crate::tokenizer::Tokenizer;

/// Token strings that end a turn in the common chat formats; when the
/// vocabulary has them as special tokens they stop generation even if the
/// configuration names only one eos.
const END_OF_TURN_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    // Harmony (gpt-oss): the final answer and a tool call each end the
    // turn (`<|end|>` only ends a message within it).
    "<|return|>",
    "<|call|>",
];

/// A token named by the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRef {
    /// Its id.
    pub id: u32,
    /// Its text.
    pub content: String,
}

/// The special tokens of a model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    /// Beginning of sequence.
    pub bos: Option<TokenRef>,
    /// End of sequence (the configured one; see `stop_ids` for all).
    pub eos: Option<TokenRef>,
    /// Padding.
    pub pad: Option<TokenRef>,
    /// Unknown token.
    pub unk: Option<TokenRef>,
    /// Whether the configuration asks for BOS at the start of a prompt.
    /// Chat templates usually write `bos_token` themselves; transformers
    /// encodes rendered chats without adding it again.
    pub add_bos: bool,
    /// Every id that ends generation: eos, the generation config's eos
    /// list, GGUF end-of-turn ids and the known end-of-turn tokens present.
    /// Sorted, no duplicates.
    pub stop_ids: Vec<u32>,
}

impl SpecialTokens {
    /// `bos_token`, `eos_token`, `pad_token`, `unk_token` for templates.
    pub fn template_strings(&self) -> Vec<(&'static str, String)> {
        [
            ("bos_token", &self.bos),
            ("eos_token", &self.eos),
            ("unk_token", &self.unk),
            ("pad_token", &self.pad),
        ]
        .into_iter()
        .filter_map(|(name, t)| t.as_ref().map(|t| (name, t.content.clone())))
        .collect()
    }
}

/// A chat rendered and encoded once ([`ChatModel::render_chat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedChat {
    /// The rendered prompt, without sanitizing markers.
    pub text: String,
    /// The prompt as the model gets it.
    pub ids: Vec<u32>,
}

/// Where a [`ChatModel`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A GGUF file.
    Gguf(PathBuf),
    /// A Hugging Face style folder (`tokenizer.json`,
    /// `tokenizer_config.json`…).
    HfDir(PathBuf),
}

/// A model's tokenizer, chat template(s) and special tokens. A clone
/// shares the tokenizer.
#[derive(Debug, Clone)]
pub struct ChatModel {
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// Special and stop tokens.
    pub special: SpecialTokens,
    /// Chat templates by name; the unnamed one is `"default"`. Empty for
    /// models without one (base models).
    templates: Vec<(String, ChatTemplate)>,
    source: ModelSource,
}

impl ChatModel {
    /// Loads from a GGUF file or a Hugging Face folder, by what `path` is.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if path.is_dir() {
            Self::from_hf_dir(path)
        } else if path.is_file() {
            Self::from_gguf(&GgufFile::open(path)?)
        } else {
            Err(ChatError::MissingFile {
                path: path.to_path_buf(),
                what: "a GGUF file or a model folder",
            })
        }
    }

    /// Loads what a GGUF file's metadata holds.
    pub fn from_gguf(gguf: &GgufFile) -> Result<Self> {
        let tokenizer = Tokenizer::from_gguf(gguf)?;
        let token = |key: &str| -> Result<Option<TokenRef>> {
            Ok(gguf
                .opt_u64(key)?
                .and_then(|id| u32::try_from(id).ok())
                .and_then(|id| token_ref(&tokenizer, id)))
        };
        let mut special = SpecialTokens {
            bos: token("tokenizer.ggml.bos_token_id")?,
            eos: token("tokenizer.ggml.eos_token_id")?,
            pad: token("tokenizer.ggml.padding_token_id")?,
            unk: token("tokenizer.ggml.unknown_token_id")?,
            add_bos: gguf
                .opt_bool("tokenizer.ggml.add_bos_token")?
                .unwrap_or(false),
            stop_ids: Vec::new(),
        };
        let mut stops: BTreeSet<u32> = special.eos.iter().map(|t| t.id).collect();
        for key in ["tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"] {
            if let Some(t) = token(key)? {
                stops.insert(t.id);
            }
        }
        special.stop_ids = with_end_of_turn(&tokenizer, stops);

        let mut templates = Vec::new();
        if let Some(src) = gguf.opt_str("tokenizer.chat_template")? {
            templates.push(("default".to_owned(), src.to_owned()));
        }
        // llama.cpp's named templates: a list of names, each stored under
        // `tokenizer.chat_template.<name>`.
        if gguf.get("tokenizer.chat_templates").is_some() {
            for name in gguf.get_str_array("tokenizer.chat_templates")? {
                if let Some(src) = gguf.opt_str(&format!("tokenizer.chat_template.{name}"))? {
                    templates.push((name.to_owned(), src.to_owned()));
                }
            }
        }
        Self::assemble(
            tokenizer,
            special,
            templates,
            ModelSource::Gguf(gguf.path().to_path_buf()),
        )
    }

    /// Loads a Hugging Face folder: `tokenizer.json` (required),
    /// `tokenizer_config.json`, `chat_template.jinja`,
    /// `generation_config.json`, `config.json` (all optional).
    pub fn from_hf_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let tokenizer_path = dir.join("tokenizer.json");
        if !tokenizer_path.is_file() {
            return Err(ChatError::MissingFile {
                path: tokenizer_path,
                what: "the Hugging Face tokenizer",
            });
        }
        let tokenizer = Tokenizer::from_file(&tokenizer_path)?;
        let config_path = dir.join("tokenizer_config.json");
        let config = read_json_opt(&config_path)?.unwrap_or(Value::Null);

        let named = |field: &str| -> Result<Option<TokenRef>> {
            let content = match config.get(field) {
                None | Some(Value::Null) => return Ok(None),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Object(o)) => match o.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    _ => {
                        return Err(invalid(
                            &config_path,
                            field,
                            "object without a string content",
                        ));
                    }
                },
                Some(_) => {
                    return Err(invalid(
                        &config_path,
                        field,
                        "neither a string nor an object",
                    ));
                }
            };
            let id = tokenizer.token_to_id(&content).ok_or_else(|| {
                invalid(
                    &config_path,
                    field,
                    &format!("{content:?} is not in the vocabulary"),
                )
            })?;
            Ok(Some(TokenRef { id, content }))
        };
        let mut special = SpecialTokens {
            bos: named("bos_token")?,
            eos: named("eos_token")?,
            pad: named("pad_token")?,
            unk: named("unk_token")?,
            add_bos: config
                .get("add_bos_token")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            stop_ids: Vec::new(),
        };
        let mut stops: BTreeSet<u32> = special.eos.iter().map(|t| t.id).collect();
        for file in ["generation_config.json", "config.json"] {
            let path = dir.join(file);
            if let Some(v) = read_json_opt(&path)? {
                stops.extend(ids_field(&path, &v, "eos_token_id")?);
            }
        }
        special.stop_ids = with_end_of_turn(&tokenizer, stops);

        let mut templates = Vec::new();
        let jinja = dir.join("chat_template.jinja");
        if jinja.is_file() {
            // transformers prefers the standalone file over the config's.
            let src = std::fs::read_to_string(&jinja).map_err(|source| ChatError::Io {
                path: jinja.clone(),
                source,
            })?;
            templates.push(("default".to_owned(), src));
        } else {
            match config.get("chat_template") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => templates.push(("default".to_owned(), s.clone())),
                Some(Value::Array(list)) => {
                    for item in list {
                        match (item.get("name"), item.get("template")) {
                            (Some(Value::String(n)), Some(Value::String(t))) => {
                                templates.push((n.clone(), t.clone()));
                            }
                            _ => {
                                return Err(invalid(
                                    &config_path,
                                    "chat_template",
                                    "list entries need string name and template",
                                ));
                            }
                        }
                    }
                }
                Some(_) => {
                    return Err(invalid(
                        &config_path,
                        "chat_template",
                        "neither a string nor a list",
                    ));
                }
            }
        }
        Self::assemble(
            tokenizer,
            special,
            templates,
            ModelSource::HfDir(dir.to_path_buf()),
        )
    }

    fn assemble(
        tokenizer: Tokenizer,
        special: SpecialTokens,
        sources: Vec<(String, String)>,
        source: ModelSource,
    ) -> Result<Self> {
        let strings = special.template_strings();
        let templates = sources
            .into_iter()
            .map(|(name, src)| {
                let t = ChatTemplate::new(src)?.with_special_tokens(strings.clone());
                Ok((name, t))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            tokenizer,
            special,
            templates,
            source,
        })
    }

    /// The chat template for ordinary turns: the one named `default` (or
    /// the only one).
    pub fn template(&self) -> Result<&ChatTemplate> {
        self.template_for(false)
    }

    /// The template transformers would pick: `tool_use` when tools are
    /// given and the model has one, else `default`.
    pub fn template_for(&self, with_tools: bool) -> Result<&ChatTemplate> {
        let find = |name: &str| {
            self.templates
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t)
        };
        let pick = if with_tools { find("tool_use") } else { None };
        let only = match self.templates.as_slice() {
            [(_, only)] => Some(only),
            _ => None,
        };
        pick.or_else(|| find("default"))
            .or(only)
            .ok_or_else(|| ChatError::NoChatTemplate {
                path: self.path().to_path_buf(),
                looked: match self.source {
                    ModelSource::Gguf(_) => "tokenizer.chat_template",
                    ModelSource::HfDir(_) => "chat_template.jinja, tokenizer_config.json",
                },
            })
    }

    /// Renders `messages` with the template [`ChatModel::template_for`]
    /// picks and encodes the prompt, such that control tokens written in
    /// the conversation (message fields, tools, extra variables) are
    /// encoded as plain text: only the template itself can write
    /// `<|im_start|>` or `<think>`. This is transformers'
    /// `apply_chat_template(tokenize=True, sanitize_control_tokens=True)`;
    /// on conversations without such text it equals rendering then
    /// `encode(prompt, false)`.
    pub fn encode_chat(
        &self,
        messages: &[TemplateMessage],
        options: &RenderOptions,
    ) -> Result<Vec<u32>> {
        Ok(self.render_chat(messages, options)?.ids)
    }

    /// [`ChatModel::encode_chat`] that also returns the text the ids
    /// encode, from the same single render.
    ///
    /// The text is the render with the sanitizing markers taken out. It
    /// equals the template's plain render of `messages` except where the
    /// template's own string methods act on a control token the
    /// conversation wrote (Qwen3 splits replayed assistant content at
    /// `</think>`): there it follows the ids, as transformers' sanitized
    /// encoding does.
    pub fn render_chat(
        &self,
        messages: &[TemplateMessage],
        options: &RenderOptions,
    ) -> Result<RenderedChat> {
        let template = self.template_for(options.tools.is_some())?;
        let control = ControlTokens::new(&self.tokenizer, template.source());
        let messages: Vec<TemplateMessage> =
            messages.iter().map(|m| control.mark_message(m)).collect();
        let options = RenderOptions {
            tools: options
                .tools
                .as_ref()
                .map(|tools| tools.iter().map(|t| control.mark_json(t)).collect()),
            documents: options
                .documents
                .as_ref()
                .map(|docs| docs.iter().map(|d| control.mark_json(d)).collect()),
            extra: options
                .extra
                .iter()
                .map(|(k, v)| (k.clone(), control.mark_json(v)))
                .collect(),
            ..options.clone()
        };
        let rendered = template.render(&messages, &options)?;
        Ok(RenderedChat {
            ids: encode_marked(&self.tokenizer, &rendered)?,
            text: strip_markers(&rendered),
        })
    }

    /// All templates by name.
    pub fn templates(&self) -> impl Iterator<Item = (&str, &ChatTemplate)> {
        self.templates.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// The template's source text, if any (fingerprinted by the
    /// reasoning-format registry).
    pub fn template_source(&self) -> Option<&str> {
        self.template().ok().map(ChatTemplate::source)
    }

    /// Where this was loaded from.
    pub fn source(&self) -> &ModelSource {
        &self.source
    }

    /// The GGUF file or folder path.
    pub fn path(&self) -> &Path {
        match &self.source {
            ModelSource::Gguf(p) | ModelSource::HfDir(p) => p,
        }
    }
}

fn token_ref(tokenizer: &Tokenizer, id: u32) -> Option<TokenRef> {
    tokenizer
        .id_to_token(id)
        .map(|content| TokenRef { id, content })
}

fn with_end_of_turn(tokenizer: &Tokenizer, mut stops: BTreeSet<u32>) -> Vec<u32> {
    for token in END_OF_TURN_TOKENS {
        if let Some(id) = tokenizer.token_to_id(token) {
            if tokenizer.is_special(id) {
                stops.insert(id);
            }
        }
    }
    stops.into_iter().collect()
}

fn invalid(path: &Path, field: &str, reason: &str) -> ChatError {
    ChatError::InvalidConfig {
        path: path.to_path_buf(),
        field: field.to_owned(),
        reason: reason.to_owned(),
    }
}

fn read_json_opt(path: &Path) -> Result<Option<Value>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|source| ChatError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| ChatError::Json {
            path: path.to_path_buf(),
            source,
        })
}

/// An id field that is an integer or a list of integers.
fn ids_field(path: &Path, v: &Value, field: &str) -> Result<Vec<u32>> {
    let as_id = |x: &Value| {
        x.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| invalid(path, field, "not a token id"))
    };
    match v.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(as_id).collect(),
        Some(x) => Ok(vec![as_id(x)?]),
    }
}
