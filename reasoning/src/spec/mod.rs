//! The resolved description of one reasoning format: how a model family is
//! switched into thinking, how it marks reasoning and tool calls in its
//! output, and what an effort level means for it.
//!
//! These types are what `formats.toml` deserializes into (after the
//! registry has merged a user file and a per-model override over the
//! built-in family). The chat layer reads [`FormatSpec::prompt_plan`] to
//! render the prompt; the splitter reads [`ReasoningStyle`] and
//! [`ToolSyntax`] to parse the output.

mod effort;
mod plan;
mod style;

use serde::{Deserialize, Serialize};

pub use effort::{Effort, EffortLevel, EffortSpec, UnknownEffort};
pub use plan::PromptPlan;
pub use style::{
    HarmonyIds, HarmonySpec, HarmonyToolSpec, ReasoningStyle, SeparatePassSpec, SeparateStrategy,
    TagSpec, TaggedJsonSpec, ToolSyntax,
};

/// Everything the runtime needs to know about one model family's reasoning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormatSpec {
    /// Family id (`qwen3`, `gpt-oss`, …); `detected` for a spec built by
    /// template detection.
    #[serde(rename = "id")]
    pub family: String,
    /// Human-readable family name.
    pub name: String,
    /// How thinking is switched on and off.
    #[serde(default)]
    pub thinking: ThinkingControl,
    /// How reasoning is marked in the output.
    pub reasoning: ReasoningStyle,
    /// What low / medium / high effort mean.
    #[serde(default)]
    pub effort: EffortSpec,
    /// How tool calls are written in the output.
    #[serde(default)]
    pub tools: ToolSyntax,
}

/// How thinking is turned on and off for a family. Several switches may be
/// listed (the model honours each); [`FormatSpec::prompt_plan`] uses the
/// first of: kwarg, system flag, user flag, prompt prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkingControl {
    /// Whether the model thinks when nothing is said.
    #[serde(default = "default_true")]
    pub default_on: bool,
    /// Whether thinking can be turned off at all (false: always thinks).
    #[serde(default)]
    pub can_disable: bool,
    /// A chat-template kwarg (`enable_thinking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kwarg: Option<KwargSwitch>,
    /// Text placed in the system message (`/think`, `detailed thinking on`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_flag: Option<FlagSwitch>,
    /// Text placed in the last user message (Hunyuan's `/no_think` prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_flag: Option<FlagSwitch>,
    /// Text appended after the generation prompt (a prefilled `<think>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_prefix: Option<PrefixSwitch>,
    /// Harmony's `Reasoning: low|medium|high` line in the system message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harmony_effort: Option<HarmonyEffort>,
}

impl Default for ThinkingControl {
    fn default() -> Self {
        Self {
            default_on: true,
            can_disable: false,
            kwarg: None,
            system_flag: None,
            user_flag: None,
            prompt_prefix: None,
            harmony_effort: None,
        }
    }
}

fn default_true() -> bool {
    true
}

/// A chat-template kwarg and its values for on and off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KwargSwitch {
    /// Kwarg name passed to the template (`enable_thinking`).
    pub name: String,
    /// Value that turns thinking on.
    pub on: serde_json::Value,
    /// Value that turns thinking off.
    pub off: serde_json::Value,
}

/// A flag written into a message's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagSwitch {
    /// Text that turns thinking on (absent: say nothing to turn it on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// Text that turns thinking off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
    /// Where the flag goes in the message.
    #[serde(default)]
    pub position: FlagPosition,
}

/// Where a flag goes in the message it is added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagPosition {
    /// After the message's text (separated by a space or newline).
    #[default]
    Append,
    /// Before the message's text.
    Prepend,
    /// The flag is the whole message; the message's own text moves to the
    /// first user message (Llama-Nemotron wants the system prompt to be
    /// exactly `detailed thinking on`).
    Exclusive,
}

/// Text appended after the generation prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixSwitch {
    /// Appended to turn thinking on (`<think>\n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// Appended to turn thinking off (`<think>\n\n</think>\n\n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

/// Harmony reasoning effort in the system message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarmonyEffort {
    /// Template kwarg carrying the level (`reasoning_effort`).
    pub kwarg: String,
    /// The system-message line for renderers that build it themselves;
    /// `{level}` is replaced by the level.
    pub system_line: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `<think>` family with the given switch and budgets of 10 (low)
    /// and 20 (medium) tokens.
    pub(super) fn tags_spec(control: ThinkingControl) -> FormatSpec {
        FormatSpec {
            family: "t".into(),
            name: "T".into(),
            thinking: control,
            reasoning: ReasoningStyle::Tags(TagSpec {
                open: "<think>".into(),
                close: "</think>".into(),
                open_id: None,
                close_id: None,
                prefilled: false,
                force_close: None,
                answer_open: None,
                answer_close: None,
            }),
            effort: EffortSpec {
                default: Effort::Medium,
                low: EffortLevel {
                    budget: Some(10),
                    level: None,
                },
                medium: EffortLevel {
                    budget: Some(20),
                    level: None,
                },
                high: EffortLevel::default(),
            },
            tools: ToolSyntax::None,
        }
    }
}
