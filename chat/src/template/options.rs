//! What a render takes besides the messages: the generation prompt flag,
//! tools, documents, extra variables and the clock.

use std::time::SystemTime;

use serde_json::{Map, Value as Json};

/// Everything a render takes besides the messages.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// End with the header of a new assistant turn, for generation.
    pub add_generation_prompt: bool,
    /// Tool schemas (`{"type": "function", "function": {...}}`), or `None`
    /// (the template sees `tools` as none).
    pub tools: Option<Vec<Json>>,
    /// Documents for retrieval templates, or `None`.
    pub documents: Option<Vec<Json>>,
    /// Extra variables, e.g. `enable_thinking: false`; they override the
    /// special-token strings of the same name, as in transformers.
    pub extra: Map<String, Json>,
    /// The time `strftime_now` sees; the current time when `None`.
    pub now: Option<SystemTime>,
}

impl RenderOptions {
    /// Options for a generation prompt (`add_generation_prompt = true`).
    pub fn generation() -> Self {
        Self {
            add_generation_prompt: true,
            ..Self::default()
        }
    }

    /// Sets the tool schemas.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<Json>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Sets one extra variable.
    #[must_use]
    pub fn with_var(mut self, name: impl Into<String>, value: Json) -> Self {
        self.extra.insert(name.into(), value);
        self
    }

    /// Fixes the clock `strftime_now` reads (for reproducible prompts).
    #[must_use]
    pub fn with_now(mut self, now: SystemTime) -> Self {
        self.now = Some(now);
        self
    }
}
