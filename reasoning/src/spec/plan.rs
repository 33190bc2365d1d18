//! Prompt planning: turning a thinking setting and an effort level into
//! what the chat layer must do to the prompt, and reading the rendered
//! prompt's tail to know whether output starts inside reasoning.

use super::{Effort, FlagPosition, FlagSwitch, FormatSpec, ReasoningStyle, SeparatePassSpec};

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
    use crate::spec::tests::tags_spec;
    use crate::spec::{KwargSwitch, ThinkingControl};

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
}
