//! What `thinkwire convert` writes beside the weights so that transformers
//! and mlx-lm load the same tokenizer and template thinkwire uses.

use serde_json::{Map, Value, json};
use thinkwire_gguf::GgufFile;

use super::{ChatModel, ModelSource};
use crate::error::{ChatError, Result};
use crate::gguf_tokenizer::tokenizer_json_from_gguf;

impl ChatModel {
    /// A `tokenizer_config.json` for this model, as `thinkwire convert`
    /// writes it beside `tokenizer.json` (what transformers and mlx-lm
    /// read: special tokens, chat template, added tokens).
    pub fn tokenizer_config_json(&self) -> Value {
        let mut cfg = Map::new();
        cfg.insert("add_bos_token".into(), json!(self.special.add_bos));
        cfg.insert("add_eos_token".into(), json!(false));
        let mut decoder = Map::new();
        for (id, content, special) in self.tokenizer.added_tokens() {
            decoder.insert(
                id.to_string(),
                json!({
                    "content": content,
                    "lstrip": false,
                    "normalized": false,
                    "rstrip": false,
                    "single_word": false,
                    "special": special,
                }),
            );
        }
        cfg.insert("added_tokens_decoder".into(), Value::Object(decoder));
        for (name, content) in self.special.template_strings() {
            cfg.insert(name.into(), json!(content));
        }
        match self.templates.as_slice() {
            [] => {}
            [(name, t)] if name == "default" => {
                cfg.insert("chat_template".into(), json!(t.source()));
            }
            many => {
                let list: Vec<Value> = many
                    .iter()
                    .map(|(n, t)| json!({"name": n, "template": t.source()}))
                    .collect();
                cfg.insert("chat_template".into(), Value::Array(list));
            }
        }
        cfg.insert("clean_up_tokenization_spaces".into(), json!(false));
        cfg.insert("tokenizer_class".into(), json!("PreTrainedTokenizerFast"));
        Value::Object(cfg)
    }

    /// The `tokenizer.json` document for a GGUF model (the synthesized
    /// one); for a folder, its tokenizer re-serialized.
    pub fn tokenizer_json(&self) -> Result<Value> {
        match &self.source {
            ModelSource::Gguf(path) => tokenizer_json_from_gguf(&GgufFile::open(path)?),
            ModelSource::HfDir(_) => {
                let text = self.tokenizer.to_json_string(false)?;
                serde_json::from_str(&text).map_err(|e| ChatError::tokenizer("serializing", e))
            }
        }
    }
}
