//! What must never reach a log or a file: the canary, the words that carry
//! it through a conversation, the sealing key, the sealed values and the
//! resume tokens; and the search for them in bytes.

use std::sync::Mutex;

use thinkwire_protocol::{Event, EventKind};

use super::support::qwen3_turn;

/// The secrets of the test: anything in here found in a log or a file is a
/// failure.
pub struct Secrets {
    pub canary: String,
    pub key_text: String,
    pub sealed: Mutex<Vec<String>>,
    /// Resume tokens of resumable runs.
    pub tokens: Mutex<Vec<String>>,
}

impl Secrets {
    pub fn remember_sealed(&self, events: &[Event]) {
        for event in events {
            if let EventKind::ReasoningEncryptedValue(v) = &event.kind {
                self.sealed.lock().unwrap().push(v.encrypted_value.clone());
            }
        }
    }

    /// The first secret `text` contains, named (never printed).
    pub fn found_in(&self, text: &[u8]) -> Option<String> {
        if contains(text, self.canary.as_bytes()) {
            return Some("the canary".into());
        }
        // The key's text, and its base64 body alone.
        let body = self.key_text.split(':').nth(1).unwrap_or_default();
        if contains(text, self.key_text.as_bytes()) || contains(text, body.as_bytes()) {
            return Some("the sealing key".into());
        }
        for (n, token) in self.tokens.lock().unwrap().iter().enumerate() {
            if contains(text, token.as_bytes()) {
                return Some(format!("resume token #{n}"));
            }
        }
        for (n, sealed) in self.sealed.lock().unwrap().iter().enumerate() {
            if contains(text, sealed.as_bytes()) {
                return Some(format!("sealed value #{n}"));
            }
        }
        None
    }
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Words that carry the canary, one per place a conversation holds text.
pub struct Canaries {
    pub user: String,
    pub reasoning: String,
    pub tool_arg: String,
    pub tool_result: String,
    pub answer: String,
    /// An AG-UI `context` entry's value.
    pub context: String,
}

impl Canaries {
    pub fn new(canary: &str) -> Self {
        Self {
            user: format!("{canary}user"),
            reasoning: format!("{canary}reasoning"),
            tool_arg: format!("{canary}city"),
            tool_result: format!("{canary}result"),
            answer: format!("{canary}answer"),
            context: format!("{canary}context"),
        }
    }

    /// The model thinks, then calls the tool.
    pub fn tool_turn(&self) -> String {
        format!(
            "<think>\nThe user asks about {}. I will look it up.\n</think>\n\n<tool_call>\n{{\"name\": \"lookup\", \"arguments\": {{\"city\": \"{}\"}}}}\n</tool_call><|im_end|>",
            self.reasoning, self.tool_arg
        )
    }

    /// A raw completion's text.
    pub fn completion(&self) -> String {
        format!(" and then {}.<|im_end|>", self.answer)
    }

    /// The model thinks, then answers.
    pub fn answer_turn(&self) -> String {
        qwen3_turn(
            &format!("Now I know about {}.", self.reasoning),
            &format!("Here it is: {}.", self.answer),
        )
    }
}
