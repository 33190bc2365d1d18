//! Tool-call arguments under the offered tools' schemas: while the model
//! writes a call, its JSON is decoded under a grammar, so the arguments
//! parse and validate. Hermes-style formats open a call with a tag and
//! write `{"name", "arguments"}`; Harmony names the tool in the message
//! header (`to=functions.NAME`) and writes only the arguments.
//!
//! A call whose grammar cannot be built or followed is left free (the
//! agent still checks its arguments when it ends), with a warning that
//! names the error's kind and position only: a schema error's message
//! names the schema's keywords and properties, client input.

use serde_json::Value;
use thinkwire_grammar::{Grammar, GrammarError, Target, Vocabulary};
use thinkwire_reasoning::Chunk;

/// How the format opens a call.
pub(super) enum Opener {
    /// JSON `{"name": …, "arguments": …}` after this tag (`<tool_call>`),
    /// constrained until the JSON ends; the close tag is written free.
    Tag(String),
    /// Harmony: the arguments of the tool the header names, constrained
    /// until the call ends (`<|call|>` ends the generation).
    Harmony,
}

/// The tools' constraint and the call open now.
pub(super) struct ToolCalls {
    vocab: Vocabulary,
    tools: Vec<(String, Value)>,
    opener: Opener,
    /// The end of the output so far, to see a tag complete.
    tail: String,
    call: Option<Grammar>,
}

impl ToolCalls {
    /// Constrains calls of `tools` (name, parameters) opened as `opener`
    /// says.
    pub fn new(vocab: Vocabulary, tools: Vec<(String, Value)>, opener: Opener) -> Self {
        Self {
            vocab,
            tools,
            opener,
            tail: String::new(),
            call: None,
        }
    }

    /// Whether a call is being written under its grammar.
    pub fn in_call(&self) -> bool {
        self.call.is_some()
    }

    /// The open call's mask, if there is a call and it has one; one that
    /// has none is left free from here.
    pub fn mask(&mut self) -> Option<Vec<u32>> {
        let call = self.call.as_mut()?;
        match call.mask() {
            Ok(words) => Some(words),
            Err(err) => {
                let (kind, index) = logged(&err);
                tracing::warn!(
                    kind,
                    index,
                    "no mask from a tool call's grammar; the call is left free"
                );
                self.call = None;
                None
            }
        }
    }

    /// Follows one generated token (`piece`, and the splitter's `chunks`
    /// for it; `in_call`: the splitter is inside a call now): advances the
    /// open call, or opens one. A call the grammar cannot follow is left
    /// free (the agent still checks its arguments).
    pub fn token(&mut self, id: u32, piece: &str, in_call: bool, chunks: &[Chunk]) {
        if let Some(call) = &mut self.call {
            // Tagged JSON: the call's grammar ends when nothing but its
            // end may follow (`is_complete`); the close tag is free.
            let ended = match self.opener {
                Opener::Tag(_) => committed(call, id) || call.is_complete(),
                Opener::Harmony => !in_call || committed(call, id),
            };
            if ended {
                self.call = None;
            }
            return;
        }
        let target = match &self.opener {
            Opener::Tag(open) => {
                self.tail.push_str(piece);
                let keep = self.tail.len().saturating_sub(open.len() + 8);
                let cut = (keep..=self.tail.len())
                    .find(|&i| self.tail.is_char_boundary(i))
                    .unwrap_or(0);
                self.tail.drain(..cut);
                if !(in_call && self.tail.ends_with(open.as_str())) {
                    return;
                }
                self.tail.clear();
                Target::ToolCall(self.tools.clone())
            }
            Opener::Harmony => {
                let named = chunks.iter().find_map(|c| match c {
                    Chunk::ToolCallStart { name, .. } => Some(name),
                    _ => None,
                });
                let Some(name) = named.filter(|_| in_call) else {
                    return;
                };
                // A tool nobody offered is the agent's to refuse, not
                // this grammar's.
                let Some((_, params)) = self.tools.iter().find(|(n, _)| n == name) else {
                    return;
                };
                Target::arguments(params)
            }
        };
        self.call = match Grammar::new(&self.vocab, &target) {
            Ok(call) => Some(call),
            Err(err) => {
                let (kind, index) = logged(&err);
                tracing::warn!(
                    kind,
                    index,
                    "a tool call's grammar did not compile; the call is left free"
                );
                None
            }
        };
    }
}

/// Commits `id` to the call's grammar; `true` when it refused it (the
/// call is left free from there).
fn committed(call: &mut Grammar, id: u32) -> bool {
    let Err(err) = call.commit(id) else {
        return false;
    };
    let (kind, index) = logged(&err);
    tracing::warn!(
        kind,
        index,
        "a tool call left its grammar; the call is left free"
    );
    true
}

/// What a log may say of a grammar error: its kind, and for a refused
/// token its position (never a message: a schema's names its content).
fn logged(err: &GrammarError) -> (&'static str, Option<usize>) {
    match err {
        GrammarError::Schema { .. } => ("schema", None),
        GrammarError::Vocabulary(_) => ("vocabulary", None),
        GrammarError::Rejected { index } => ("rejected", Some(*index)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_grammar_error_is_its_kind_and_position_only() {
        let schema = GrammarError::Schema {
            path: "/properties/secret_name".into(),
            message: "cannot be enforced: secret_name".into(),
        };
        assert_eq!(logged(&schema), ("schema", None));
        let vocab = GrammarError::Vocabulary("token text".into());
        assert_eq!(logged(&vocab), ("vocabulary", None));
        assert_eq!(
            logged(&GrammarError::Rejected { index: 4 }),
            ("rejected", Some(4))
        );
    }
}
