//! Chat templates: the Jinja program a model ships to turn a conversation
//! into its prompt text, run with minijinja the way Hugging Face
//! transformers runs it with Jinja2.
//!
//! What transformers sets up, and this reproduces: `trim_blocks` and
//! `lstrip_blocks`; loop controls; `tojson` as Python's `json.dumps`
//! (non-ASCII kept, no HTML escaping); the globals `raise_exception` and
//! `strftime_now`; Python string and dict methods (`.strip()`,
//! `.startswith()`, `.items()`…); the variables `messages`, `tools`,
//! `documents`, `add_generation_prompt`, the special-token strings
//! (`bos_token`, `eos_token`…) and any extra keyword arguments
//! (`enable_thinking`); the `{% generation %}` tag (a no-op when not
//! tracking assistant tokens).
//!
//! ```
//! use thinkwire_chat::{ChatTemplate, RenderOptions, TemplateMessage};
//!
//! let t = ChatTemplate::new(
//!     "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}\
//!      {% if add_generation_prompt %}<|assistant|>{% endif %}",
//! )?;
//! let prompt = t.render(&[TemplateMessage::user("Hi")], &RenderOptions::generation())?;
//! assert_eq!(prompt, "<|user|>Hi\n<|assistant|>");
//! # Ok::<(), thinkwire_chat::ChatError>(())
//! ```
//!
//! Here: the compiled template and its render; `options` (what a render
//! takes besides the messages), `globals` (the filter and functions
//! transformers adds), `strftime` (Python's, for `strftime_now`) and
//! `generation_tags` (`{% generation %}` made transparent).

mod generation_tags;
mod globals;
mod options;
mod strftime;

use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::value::Serde;
use minijinja::{Environment, Error, Value};
use serde_json::{Map, Value as Json};

use crate::error::{ChatError, Result};
use crate::message::TemplateMessage;
use generation_tags::without_generation_tags;
use globals::{raise_exception, strftime_now, tojson};
pub use options::RenderOptions;

const TEMPLATE_NAME: &str = "chat_template";
/// Context variable holding the render's clock (seconds since the epoch);
/// a name no template uses.
const NOW_VAR: &str = "__thinkwire_now__";

/// A compiled chat template. Cheap to render many times; `Send + Sync`.
#[derive(Clone)]
pub struct ChatTemplate {
    source: String,
    env: Environment<'static>,
    special_tokens: Map<String, Json>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_len", &self.source.len())
            .field("special_tokens", &self.special_tokens)
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles a template source.
    pub fn new(source: impl Into<String>) -> Result<Self> {
        let source = source.into();
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(|e| ChatError::TemplateSyntax(e.to_string()))?,
        );
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(TEMPLATE_NAME, without_generation_tags(&source))
            .map_err(|e| ChatError::TemplateSyntax(describe(&e)))?;
        Ok(Self {
            source,
            env,
            special_tokens: Map::new(),
        })
    }

    /// Sets the special-token strings the template sees (`bos_token`,
    /// `eos_token`, `pad_token`, `unk_token`…).
    #[must_use]
    pub fn with_special_tokens<I, K, V>(mut self, tokens: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.special_tokens = tokens
            .into_iter()
            .map(|(k, v)| (k.into(), Json::String(v.into())))
            .collect();
        self
    }

    /// The template source as the model ships it (the reasoning-format
    /// registry fingerprints it).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The special-token strings set with
    /// [`ChatTemplate::with_special_tokens`].
    pub fn special_tokens(&self) -> &Map<String, Json> {
        &self.special_tokens
    }

    /// Renders the prompt text for `messages`.
    pub fn render(&self, messages: &[TemplateMessage], options: &RenderOptions) -> Result<String> {
        let mut ctx = self.special_tokens.clone();
        ctx.extend(options.extra.clone());
        ctx.insert(
            "messages".into(),
            Json::Array(
                messages
                    .iter()
                    .map(TemplateMessage::to_template_value)
                    .collect(),
            ),
        );
        ctx.insert(
            "tools".into(),
            options.tools.clone().map_or(Json::Null, Json::Array),
        );
        ctx.insert(
            "documents".into(),
            options.documents.clone().map_or(Json::Null, Json::Array),
        );
        ctx.insert(
            "add_generation_prompt".into(),
            Json::Bool(options.add_generation_prompt),
        );
        let now = options.now.unwrap_or_else(SystemTime::now);
        let secs = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        ctx.insert(NOW_VAR.into(), Json::from(secs));

        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| ChatError::TemplateRender(describe(&e)))?;
        template
            .render(Value::from(Serde(Json::Object(ctx))))
            .map_err(|e| ChatError::TemplateRender(describe(&e)))
    }
}

/// An error's message with its location, never the values involved (they
/// may be conversation text).
fn describe(e: &Error) -> String {
    match (e.name(), e.line()) {
        (Some(name), Some(line)) => format!(
            "{} ({name}:{line})",
            e.detail().unwrap_or(&e.kind().to_string())
        ),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Compiles `src` and renders `msgs` with it.
    pub(super) fn render(
        src: &str,
        msgs: &[TemplateMessage],
        opts: &RenderOptions,
    ) -> Result<String> {
        ChatTemplate::new(src)?.render(msgs, opts)
    }

    #[test]
    fn jinja2_whitespace_rules() {
        // trim_blocks eats the newline after a block tag; lstrip_blocks the
        // indentation before it; the final newline of the source is dropped.
        let src = "{% for m in messages %}\n    {% if m.content %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}\n";
        let out = render(
            src,
            &[TemplateMessage::user("a"), TemplateMessage::user("b")],
            &RenderOptions::default(),
        )
        .unwrap();
        assert_eq!(out, "[a]\n[b]\n");
    }

    #[test]
    fn variables_like_transformers() {
        let src = "{{ bos_token }}|{{ tools is none }}|{{ enable_thinking is false }}|{{ add_generation_prompt }}|{{ undefined_thing is defined }}";
        let t = ChatTemplate::new(src)
            .unwrap()
            .with_special_tokens([("bos_token", "<s>")]);
        let out = t
            .render(
                &[],
                &RenderOptions::generation().with_var("enable_thinking", json!(false)),
            )
            .unwrap();
        // Jinja2 prints booleans as Python does.
        assert_eq!(out, "<s>|True|True|True|False");
    }

    #[test]
    fn errors_do_not_echo_values() {
        let e = render(
            "{{ messages[0].content + 1 }}",
            &[TemplateMessage::user("secret words")],
            &RenderOptions::default(),
        )
        .unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        assert!(matches!(
            ChatTemplate::new("{% if %}"),
            Err(ChatError::TemplateSyntax(_))
        ));
    }
}
