//! Token counting and the reasoning budget: tokens are counted by where
//! they went, and a spent budget closes reasoning with the format's own
//! marker so the model carries on with its answer.

use std::borrow::Cow;

use super::{Chunk, Content, Kind, Mode, Splitter};

/// Tokens the caller reported through [`Splitter::push_token`], by where
/// they went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenCounts {
    /// Tokens of reasoning, its markers included (`usage.reasoningTokens`).
    pub reasoning: usize,
    /// Tokens of answer text.
    pub text: usize,
    /// Tokens of tool calls.
    pub tool: usize,
    /// Structural tokens (Harmony headers, stray output).
    pub other: usize,
}

impl TokenCounts {
    /// All reported tokens.
    pub fn total(&self) -> usize {
        self.reasoning + self.text + self.tool + self.other
    }
}

impl Splitter {
    /// Reasoning-token budget checked by
    /// [`budget_exhausted`](Self::budget_exhausted) (`None`: unlimited).
    #[must_use]
    pub fn reasoning_budget(mut self, budget: Option<usize>) -> Self {
        self.budget = budget;
        self
    }

    /// Feeds one generated token: its id and its decoded text. The token is
    /// counted (see [`token_counts`](Self::token_counts)), and an id the
    /// format lists as a marker's special token is read as that marker even
    /// if the detokenizer rendered it as nothing.
    pub fn push_token(&mut self, id: u32, piece: &str) -> Vec<Chunk> {
        let before = self.mode;
        // A detokenizer that skips special tokens renders the marker as
        // nothing, and one that waits for whole UTF-8 characters may hand
        // out earlier text with it: keep that text, add the marker.
        let text: Cow<'_, str> = match self.special.iter().find(|(sid, _)| *sid == id) {
            Some((_, marker)) if !piece.contains(marker.as_str()) => {
                Cow::Owned(format!("{piece}{marker}"))
            }
            _ => Cow::Borrowed(piece),
        };
        let out = self.push(&text);
        let after = self.mode;
        let is = |m: Mode, c: Content| match c {
            Content::Reasoning => matches!(
                m,
                Mode::Reasoning | Mode::AllReasoning | Mode::HMessage(Content::Reasoning)
            ),
            Content::Tool => matches!(m, Mode::ToolBody | Mode::HMessage(Content::Tool)),
            Content::Text => matches!(m, Mode::Text | Mode::HMessage(Content::Text)),
        };
        let c = &mut self.counts;
        if is(before, Content::Reasoning) || is(after, Content::Reasoning) {
            c.reasoning += 1;
        } else if is(before, Content::Tool) || is(after, Content::Tool) {
            c.tool += 1;
        } else if is(before, Content::Text) && is(after, Content::Text) {
            c.text += 1;
        } else {
            c.other += 1;
        }
        out
    }

    /// Ends reasoning now, for a budget: returns the format's own close
    /// marker text (`\n</think>\n\n`, or Harmony's
    /// `<|end|><|start|>assistant<|channel|>final<|message|>`) for the agent
    /// to force-feed to the model, and moves to answer text. The chunks
    /// this produces (held reasoning text, [`Chunk::ReasoningEnd`]) come
    /// first in the next `push`/`push_token`/`finish`, or at once from
    /// [`take_pending`](Self::take_pending). `None` when not inside
    /// reasoning, or for a separate reasoning pass (stop that pass instead).
    pub fn close_reasoning_now(&mut self) -> Option<String> {
        let marker = match (&self.kind, self.mode) {
            (Kind::Tags { force_close, .. }, Mode::Reasoning) => force_close.clone(),
            (Kind::Harmony { force_close, .. }, Mode::HMessage(Content::Reasoning)) => {
                force_close.clone()
            }
            _ => return None,
        };
        let mut out = std::mem::take(&mut self.pending);
        let rest = std::mem::take(&mut self.buf);
        self.content(&rest, &mut out);
        self.close_reasoning(&mut out);
        self.mode = match self.mode {
            Mode::HMessage(_) => {
                self.text_separator = self.text_emitted;
                Mode::HMessage(Content::Text)
            }
            _ => Mode::Text,
        };
        self.text_gate.reset();
        self.pending = out;
        Some(marker)
    }

    /// Chunks produced outside `push` (by [`close_reasoning_now`](Self::close_reasoning_now)).
    pub fn take_pending(&mut self) -> Vec<Chunk> {
        std::mem::take(&mut self.pending)
    }

    /// Whether the reasoning budget is spent while reasoning continues: the
    /// moment to call [`close_reasoning_now`](Self::close_reasoning_now).
    pub fn budget_exhausted(&self) -> bool {
        match self.budget {
            Some(budget) => self.in_reasoning() && self.counts.reasoning >= budget,
            None => false,
        }
    }

    /// Tokens reported through [`push_token`](Self::push_token), by kind.
    pub fn token_counts(&self) -> TokenCounts {
        self.counts
    }

    /// Reasoning tokens so far (for `usage.reasoningTokens`).
    pub fn reasoning_tokens(&self) -> usize {
        self.counts.reasoning
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splitter::merge_deltas;
    use crate::splitter::tests::qwen3;

    #[test]
    fn special_token_keeps_text_handed_out_with_it() {
        let mut s = Splitter::new(&qwen3()).starting_in_reasoning(true);
        let mut chunks = s.push_token(1, "caf");
        // A detokenizer that held back an incomplete character hands it out
        // together with the next token, here the close tag rendered empty.
        chunks.extend(s.push_token(151668, "é"));
        chunks.extend(s.push_token(2, "Answer"));
        chunks.extend(s.finish());
        assert_eq!(
            merge_deltas(chunks),
            vec![
                Chunk::ReasoningStart,
                Chunk::ReasoningDelta("café".into()),
                Chunk::ReasoningEnd,
                Chunk::Text("Answer".into()),
            ]
        );
    }
}
