//! How a family marks reasoning and tool calls in its output: what the
//! splitter looks for, and the marker it writes to close reasoning early.

use serde::{Deserialize, Serialize};

use crate::harmony;

/// How reasoning is marked in the model's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "style", rename_all = "kebab-case")]
pub enum ReasoningStyle {
    /// Reasoning between an open and a close tag (`<think>` … `</think>`).
    Tags(TagSpec),
    /// Harmony channels (gpt-oss): `analysis` is reasoning.
    Harmony(HarmonySpec),
    /// The model does not think natively; a separate pass produces reasoning.
    SeparatePass(SeparatePassSpec),
    /// No reasoning at all: everything is answer text.
    None,
}

impl ReasoningStyle {
    /// The text that opens reasoning in the model's own output, if the
    /// style writes reasoning there: `<think>`, or Harmony's analysis
    /// channel header. A replayed assistant turn whose content holds it
    /// already carries its reasoning.
    pub fn open_marker(&self) -> Option<&str> {
        match self {
            Self::Tags(tags) => Some(&tags.open),
            Self::Harmony(_) => Some(harmony::ANALYSIS_HEADER),
            Self::SeparatePass(_) | Self::None => None,
        }
    }
}

/// Tag-delimited reasoning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagSpec {
    /// Open tag text.
    pub open: String,
    /// Close tag text.
    pub close: String,
    /// Token id of the open tag where the tokenizer has it as one token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_id: Option<u32>,
    /// Token id of the close tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_id: Option<u32>,
    /// The template pre-fills the open tag when thinking is on, so output
    /// starts inside reasoning (DeepSeek-R1 distills, Qwen3 thinking-only).
    #[serde(default)]
    pub prefilled: bool,
    /// What to force-feed to end reasoning early; default `\n{close}\n\n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_close: Option<String>,
    /// Tag that opens the answer (Hunyuan's `<answer>`); removed from text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_open: Option<String>,
    /// Tag that closes the answer; removed from text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_close: Option<String>,
}

impl TagSpec {
    /// The text that closes reasoning when a budget cuts it short.
    pub fn force_close_text(&self) -> String {
        match &self.force_close {
            Some(text) => text.clone(),
            None => format!("\n{}\n\n", self.close),
        }
    }
}

/// Harmony (gpt-oss) channel layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarmonySpec {
    /// Channels whose messages (without a recipient) are answer text; every
    /// other channel is reasoning, so an unknown channel never leaks.
    #[serde(default = "default_text_channels")]
    pub text_channels: Vec<String>,
    /// What to force-feed to end an analysis message early.
    #[serde(default = "default_harmony_close")]
    pub force_close: String,
    /// Special-token ids, for callers that report token ids.
    #[serde(default)]
    pub ids: HarmonyIds,
}

fn default_text_channels() -> Vec<String> {
    vec!["final".to_owned(), "commentary".to_owned()]
}

fn default_harmony_close() -> String {
    "<|end|><|start|>assistant<|channel|>final<|message|>".to_owned()
}

/// Token ids of Harmony's special tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarmonyIds {
    /// `<|start|>`
    pub start: Option<u32>,
    /// `<|end|>`
    pub end: Option<u32>,
    /// `<|message|>`
    pub message: Option<u32>,
    /// `<|channel|>`
    pub channel: Option<u32>,
    /// `<|constrain|>`
    pub constrain: Option<u32>,
    /// `<|return|>`
    #[serde(rename = "return")]
    pub return_: Option<u32>,
    /// `<|call|>`
    pub call: Option<u32>,
}

/// Prompts for the separate reasoning pass, as data (`[separate_pass]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeparatePassSpec {
    /// System prompt of the reasoning pass (the conversation follows).
    pub reasoning_system: String,
    /// System prompt of the answer pass; `{reasoning}` is the reasoning.
    pub answer_system: String,
    /// System prompt of the summary pass (`summary` visibility).
    pub summary_system: String,
    /// User message of the summary pass; `{reasoning}` is the reasoning.
    pub summary_user: String,
    /// Token limit of the summary pass.
    #[serde(default = "default_summary_tokens")]
    pub summary_max_tokens: u32,
    /// Added to both passes' system prompts when the client replayed the
    /// model's reasoning from earlier turns; `{reasoning}` is that
    /// reasoning, oldest first.
    #[serde(default = "default_earlier_notes")]
    pub earlier_notes: String,
    /// How the reasoning is produced when the run does not choose.
    #[serde(default)]
    pub strategy: SeparateStrategy,
    /// System prompt of the structured strategy: the model writes one JSON
    /// object, `{"reasoning": …, "answer": …}`, under that schema.
    #[serde(default = "default_structured_system")]
    pub structured_system: String,
}

/// How a model that does not think natively produces reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeparateStrategy {
    /// A reasoning pass, then an answer pass that reads it.
    #[default]
    TwoPass,
    /// One pass constrained to `{"reasoning": …, "answer": …}`, whose
    /// strings are streamed as reasoning and answer
    /// ([`StructuredSplitter`](crate::StructuredSplitter)).
    Structured,
}

impl SeparateStrategy {
    /// The strategy named `name` (`two-pass`, `structured`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "two-pass" => Some(Self::TwoPass),
            "structured" => Some(Self::Structured),
            _ => None,
        }
    }
}

fn default_structured_system() -> String {
    "You think before you answer. Reply with one JSON object: \"reasoning\" holds your private notes on the user's last message (what is asked, the facts that matter, a short plan), \"answer\" your reply to the user.".into()
}

fn default_summary_tokens() -> u32 {
    96
}

fn default_earlier_notes() -> String {
    "Your notes from earlier in this conversation:\n{reasoning}".into()
}

impl SeparatePassSpec {
    /// `system` followed by the model's earlier reasoning, when there is
    /// some: a template that does not think renders no reasoning, so this
    /// is the only way it reaches the model.
    pub fn with_earlier_notes(&self, system: &str, earlier: &str) -> String {
        if earlier.is_empty() {
            return system.to_owned();
        }
        let notes = self.earlier_notes.replace("{reasoning}", earlier);
        if system.is_empty() {
            notes
        } else {
            format!("{system}\n\n{notes}")
        }
    }

    /// The answer pass's system prompt with the reasoning filled in.
    pub fn answer_system_with(&self, reasoning: &str) -> String {
        self.answer_system.replace("{reasoning}", reasoning)
    }

    /// The summary pass's user message with the reasoning filled in.
    pub fn summary_user_with(&self, reasoning: &str) -> String {
        self.summary_user.replace("{reasoning}", reasoning)
    }
}

/// How tool calls appear in the output.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "syntax", rename_all = "kebab-case")]
pub enum ToolSyntax {
    /// JSON `{"name": …, "arguments": …}` between tags (Hermes / Qwen
    /// `<tool_call>`), or a JSON list of them (`list = true`: Nemotron's
    /// `<TOOLCALL>[…]</TOOLCALL>`, Hunyuan's `<tool_calls>[…]</tool_calls>`).
    TaggedJson(TaggedJsonSpec),
    /// Harmony recipients: `to=functions.NAME` in a message header.
    Harmony(HarmonyToolSpec),
    /// Tool calls are not parsed.
    #[default]
    None,
}

/// Tag-delimited JSON tool calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaggedJsonSpec {
    /// Open tag.
    pub open: String,
    /// Close tag.
    pub close: String,
    /// Token id of the open tag, if it is one token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_id: Option<u32>,
    /// Token id of the close tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_id: Option<u32>,
    /// The tags hold a JSON list of calls rather than one object.
    #[serde(default)]
    pub list: bool,
}

/// Harmony tool recipients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarmonyToolSpec {
    /// Prefix stripped from recipients to get the function name.
    #[serde(default = "default_namespace")]
    pub namespace: String,
}

fn default_namespace() -> String {
    "functions.".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ThinkingControl;
    use crate::spec::tests::tags_spec;

    #[test]
    fn open_marker_is_where_output_reasoning_starts() {
        let tags = tags_spec(ThinkingControl::default());
        assert_eq!(tags.reasoning.open_marker(), Some("<think>"));
        let harmony = ReasoningStyle::Harmony(HarmonySpec {
            text_channels: default_text_channels(),
            force_close: default_harmony_close(),
            ids: HarmonyIds::default(),
        });
        assert_eq!(harmony.open_marker(), Some("<|channel|>analysis"));
        assert_eq!(ReasoningStyle::None.open_marker(), None);
    }
}
