//! Tokenizers, chat templates and the text side of generation.
//!
//! - [`Tokenizer`]: Hugging Face tokenizers (the `tokenizers` crate), from
//!   a `tokenizer.json` or rebuilt from a GGUF file's metadata
//!   ([`tokenizer_json_from_gguf`]).
//! - [`ChatTemplate`]: the model's Jinja chat template, rendered as
//!   transformers renders it ([`TemplateMessage`], [`RenderOptions`]).
//! - [`ChatModel`]: tokenizer + templates + special/stop tokens of a GGUF
//!   file or a Hugging Face folder.
//! - [`IncrementalDecoder`]: token ids to text pieces without splitting a
//!   character; [`StopMatcher`]: stop strings over those pieces.
//!
//! ```no_run
//! use thinkwire_chat::{ChatModel, RenderOptions, StopMatcher, StopStep, TemplateMessage};
//!
//! let model = ChatModel::load(thinkwire_chat::assets::default_model())?;
//! let prompt = model
//!     .template()?
//!     .render(&[TemplateMessage::user("Hi!")], &RenderOptions::generation())?;
//! let ids = model.tokenizer.encode(&prompt, false)?;
//! # let generated: Vec<u32> = ids;
//! let mut decoder = model.tokenizer.incremental_decoder(true);
//! let mut stops = StopMatcher::new(["\nUser:"]);
//! for id in generated {
//!     if model.special.stop_ids.contains(&id) {
//!         break;
//!     }
//!     match stops.push(&decoder.push(id)?) {
//!         StopStep::Continue(text) => print!("{text}"),
//!         StopStep::Stopped { text, .. } => {
//!             print!("{text}");
//!             break;
//!         }
//!     }
//! }
//! # Ok::<(), thinkwire_chat::ChatError>(())
//! ```

#![forbid(unsafe_code)]

pub mod assets;
mod bytelevel;
mod detok;
mod error;
mod gguf_tokenizer;
mod message;
mod model;
mod pyjson;
mod sanitize;
mod stop;
mod template;
mod tokenizer;

pub use detok::IncrementalDecoder;
pub use error::{ChatError, Result};
pub use gguf_tokenizer::{supported_pre_tokenizers, tokenizer_json_from_gguf};
pub use message::{TemplateFunctionCall, TemplateMessage, TemplateToolCall};
pub use model::{ChatModel, ModelSource, RenderedChat, SpecialTokens, TokenRef};
pub use pyjson::float_repr as python_float_repr;
pub use stop::{StopMatcher, StopStep};
pub use template::{ChatTemplate, RenderOptions};
pub use tokenizer::Tokenizer;

#[cfg(test)]
mod tests {
    /// The agent shares these across tasks and threads.
    #[test]
    fn shared_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::Tokenizer>();
        check::<super::ChatTemplate>();
        check::<super::ChatModel>();
        check::<super::IncrementalDecoder>();
        check::<super::StopMatcher>();
        check::<super::ChatError>();
    }
}
