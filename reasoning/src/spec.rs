//! The resolved description of one reasoning format: how a model family is
//! switched into thinking, how it marks reasoning and tool calls in its
//! output, and what an effort level means for it.
//!
//! These types are what `formats.toml` deserializes into (after the
//! registry has merged a user file and a per-model override over the
//! built-in family). The chat layer reads [`FormatSpec::prompt_plan`] to
//! render the prompt; the splitter reads [`ReasoningStyle`] and
//! [`ToolSyntax`] to parse the output.

use serde::{Deserialize, Serialize};

use crate::harmony;

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
}

fn default_summary_tokens() -> u32 {
    96
}

impl SeparatePassSpec {
    /// The answer pass's system prompt with the reasoning filled in.
    pub fn answer_system_with(&self, reasoning: &str) -> String {
        self.answer_system.replace("{reasoning}", reasoning)
    }

    /// The summary pass's user message with the reasoning filled in.
    pub fn summary_user_with(&self, reasoning: &str) -> String {
        self.summary_user.replace("{reasoning}", reasoning)
    }
}

/// An effort level as clients name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// Short reasoning.
    Low,
    /// The usual default.
    #[default]
    Medium,
    /// Long reasoning.
    High,
}

impl Effort {
    /// The lowercase name (`low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

impl std::str::FromStr for Effort {
    type Err = UnknownEffort;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" | "minimal" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            _ => Err(UnknownEffort),
        }
    }
}

/// A string that names no effort level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("effort must be low, medium or high")]
pub struct UnknownEffort;

/// What each effort level means for a family.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffortSpec {
    /// Level used when the client names none.
    #[serde(default)]
    pub default: Effort,
    /// Low effort.
    #[serde(default)]
    pub low: EffortLevel,
    /// Medium effort.
    #[serde(default)]
    pub medium: EffortLevel,
    /// High effort.
    #[serde(default)]
    pub high: EffortLevel,
}

impl EffortSpec {
    /// The setting for one level.
    pub fn level(&self, effort: Effort) -> &EffortLevel {
        match effort {
            Effort::Low => &self.low,
            Effort::Medium => &self.medium,
            Effort::High => &self.high,
        }
    }
}

/// One effort level: a reasoning-token budget, a Harmony level, or both.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffortLevel {
    /// Reasoning tokens before the splitter's close marker is forced
    /// (absent: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u32>,
    /// Harmony level (`low`, `medium`, `high`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
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

/// What the prompt renderer must do for one request: the result of
/// [`FormatSpec::prompt_plan`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptPlan {
    /// Whether the model will reason (natively or in a separate pass).
    pub thinking: bool,
    /// False when the request could not be met: thinking off was asked of a
    /// model that always thinks, or on of one that cannot.
    pub honored: bool,
    /// Reasoning comes from a separate pass before the answer
    /// ([`ReasoningStyle::SeparatePass`]); nothing below applies to it.
    pub separate_pass: bool,
    /// Chat-template kwargs to set.
    pub template_kwargs: Vec<(String, serde_json::Value)>,
    /// Flag text for the system message, and where it goes.
    pub system_flag: Option<(String, FlagPosition)>,
    /// Flag text for the last user message, and where it goes.
    pub user_flag: Option<(String, FlagPosition)>,
    /// Text to append after the rendered generation prompt.
    pub generation_suffix: Option<String>,
    /// A system-message line for renderers that build Harmony's system
    /// message themselves (`Reasoning: high`).
    pub system_line: Option<String>,
    /// The effort level in force.
    pub effort: Effort,
    /// Reasoning-token budget for the splitter (`None`: unlimited).
    pub budget_tokens: Option<u32>,
}

impl FormatSpec {
    /// How to render the prompt so thinking is `thinking` (None: the
    /// family's default) at `effort` (None: the family's default).
    pub fn prompt_plan(&self, thinking: Option<bool>, effort: Option<Effort>) -> PromptPlan {
        let control = &self.thinking;
        let effort = effort.unwrap_or(self.effort.default);
        let wanted = thinking.unwrap_or(control.default_on);
        let level = self.effort.level(effort);
        let mut plan = PromptPlan {
            effort,
            honored: true,
            ..PromptPlan::default()
        };
        match &self.reasoning {
            ReasoningStyle::None => {
                plan.thinking = false;
                plan.honored = !wanted;
                return plan;
            }
            ReasoningStyle::SeparatePass(_) => {
                plan.thinking = wanted;
                plan.separate_pass = wanted;
                plan.budget_tokens = if wanted { level.budget } else { None };
                return plan;
            }
            ReasoningStyle::Tags(_) | ReasoningStyle::Harmony(_) => {}
        }
        let on = wanted || !control.can_disable;
        plan.thinking = on;
        plan.honored = on == wanted;
        if let Some(harmony) = &control.harmony_effort {
            let name = level
                .level
                .clone()
                .unwrap_or_else(|| effort.as_str().to_owned());
            plan.template_kwargs.push((
                harmony.kwarg.clone(),
                serde_json::Value::String(name.clone()),
            ));
            plan.system_line = Some(harmony.system_line.replace("{level}", &name));
        }
        let pick = |flag: &Option<FlagSwitch>| {
            flag.as_ref().map(|f| {
                let text = if on { f.on.clone() } else { f.off.clone() };
                text.map(|t| (t, f.position))
            })
        };
        if let Some(kwarg) = &control.kwarg {
            let value = if on {
                kwarg.on.clone()
            } else {
                kwarg.off.clone()
            };
            plan.template_kwargs.push((kwarg.name.clone(), value));
        } else if let Some(flag) = pick(&control.system_flag) {
            plan.system_flag = flag;
        } else if let Some(flag) = pick(&control.user_flag) {
            plan.user_flag = flag;
        } else if let Some(prefix) = &control.prompt_prefix {
            plan.generation_suffix = if on {
                prefix.on.clone()
            } else {
                prefix.off.clone()
            };
        }
        plan.budget_tokens = if on { level.budget } else { None };
        plan
    }

    /// Whether output generated after `prompt` (the rendered prompt, or at
    /// least its tail) starts inside reasoning. The prompt's own tail is the
    /// best evidence: it ends with the open tag when the template pre-filled
    /// it and with the close tag when thinking was switched off. Otherwise
    /// the family's `prefilled` flag decides, when thinking is on.
    pub fn starts_in_reasoning(&self, prompt: &str, thinking: bool) -> bool {
        match &self.reasoning {
            ReasoningStyle::Tags(tags) => {
                let tail = prompt.trim_end();
                if tail.ends_with(tags.close.as_str()) {
                    false
                } else if tail.ends_with(tags.open.as_str()) {
                    true
                } else {
                    tags.prefilled && thinking
                }
            }
            ReasoningStyle::Harmony(_) | ReasoningStyle::SeparatePass(_) | ReasoningStyle::None => {
                false
            }
        }
    }

    /// Whether this family reasons in its own output (tags or Harmony).
    pub fn thinks_natively(&self) -> bool {
        matches!(
            self.reasoning,
            ReasoningStyle::Tags(_) | ReasoningStyle::Harmony(_)
        )
    }

    /// The separate-pass prompts, for [`ReasoningStyle::SeparatePass`].
    pub fn separate_pass(&self) -> Option<&SeparatePassSpec> {
        match &self.reasoning {
            ReasoningStyle::SeparatePass(spec) => Some(spec),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags_spec(control: ThinkingControl) -> FormatSpec {
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

    #[test]
    fn kwarg_plan_sets_the_kwarg_and_budget() {
        let spec = tags_spec(ThinkingControl {
            can_disable: true,
            kwarg: Some(KwargSwitch {
                name: "enable_thinking".into(),
                on: true.into(),
                off: false.into(),
            }),
            system_flag: Some(FlagSwitch {
                on: Some("/think".into()),
                off: Some("/no_think".into()),
                position: FlagPosition::Append,
            }),
            ..ThinkingControl::default()
        });
        let off = spec.prompt_plan(Some(false), None);
        assert!(!off.thinking && off.honored);
        assert_eq!(
            off.template_kwargs,
            vec![("enable_thinking".to_owned(), serde_json::Value::Bool(false))]
        );
        assert_eq!(off.system_flag, None, "the kwarg is preferred");
        assert_eq!(off.budget_tokens, None);
        let low = spec.prompt_plan(None, Some(Effort::Low));
        assert!(low.thinking);
        assert_eq!(low.budget_tokens, Some(10));
        assert_eq!(
            spec.prompt_plan(None, Some(Effort::High)).budget_tokens,
            None
        );
    }

    #[test]
    fn always_on_family_reports_unhonored_off() {
        let spec = tags_spec(ThinkingControl::default());
        let plan = spec.prompt_plan(Some(false), None);
        assert!(plan.thinking);
        assert!(!plan.honored);
    }

    #[test]
    fn system_flag_used_without_kwarg() {
        let spec = tags_spec(ThinkingControl {
            default_on: false,
            can_disable: true,
            system_flag: Some(FlagSwitch {
                on: Some("detailed thinking on".into()),
                off: Some("detailed thinking off".into()),
                position: FlagPosition::Exclusive,
            }),
            ..ThinkingControl::default()
        });
        let plan = spec.prompt_plan(None, None);
        assert!(!plan.thinking);
        assert_eq!(
            plan.system_flag,
            Some(("detailed thinking off".to_owned(), FlagPosition::Exclusive))
        );
    }

    #[test]
    fn prompt_tail_decides_the_start_state() {
        let spec = tags_spec(ThinkingControl::default());
        assert!(spec.starts_in_reasoning("<|im_start|>assistant\n<think>\n", true));
        assert!(!spec.starts_in_reasoning("assistant\n<think>\n\n</think>\n\n", true));
        assert!(!spec.starts_in_reasoning("<|im_start|>assistant\n", true));
    }

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

    #[test]
    fn effort_parses_case_insensitively() {
        assert_eq!("HIGH".parse::<Effort>(), Ok(Effort::High));
        assert!("extreme".parse::<Effort>().is_err());
    }
}
