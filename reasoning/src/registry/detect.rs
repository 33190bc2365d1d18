//! Detecting a format from the chat template alone, for models no entry
//! matches: the `[detect]` table lists the markers to look for, so new
//! tag pairs or switches need no code.

use serde::Deserialize;

use super::Registry;
use crate::spec::{
    EffortSpec, FlagPosition, FlagSwitch, FormatSpec, KwargSwitch, ReasoningStyle, TagSpec,
    TaggedJsonSpec, ThinkingControl, ToolSyntax,
};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DetectConfig {
    #[serde(default)]
    harmony: Vec<String>,
    #[serde(default)]
    pub(super) harmony_family: Option<String>,
    #[serde(default)]
    tag_pairs: Vec<[String; 2]>,
    #[serde(default)]
    kwargs: Vec<String>,
    #[serde(default)]
    flags: Vec<[String; 2]>,
    #[serde(default)]
    tool_tags: Vec<[String; 2]>,
    #[serde(default)]
    effort: EffortSpec,
}

impl Registry {
    /// Infers a format from a chat template alone (no registry entry
    /// matched): Harmony markers select the Harmony family; otherwise the
    /// first `[detect] tag_pairs` entry whose close tag occurs gives the
    /// tags, a known kwarg or flag gives the switch, and tool tags the tool
    /// syntax. Returns the spec and the evidence, or `None` when the
    /// template shows no reasoning markers.
    pub fn detect(&self, template: &str) -> Option<(FormatSpec, Vec<String>)> {
        let d = &self.detect;
        if !d.harmony.is_empty() && d.harmony.iter().all(|m| template.contains(m.as_str())) {
            let spec = d.harmony_family.as_deref().and_then(|id| self.family(id))?;
            let markers = d
                .harmony
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Some((spec.clone(), vec![format!("Harmony headers ({markers})")]));
        }
        let [open, close] = d
            .tag_pairs
            .iter()
            .find(|[_, close]| template.contains(close.as_str()))?;
        let mut evidence = vec![format!("reasoning tags `{open}` … `{close}`")];
        let mut thinking = ThinkingControl {
            default_on: true,
            can_disable: false,
            ..ThinkingControl::default()
        };
        if let Some(kwarg) = d.kwargs.iter().find(|k| template.contains(k.as_str())) {
            evidence.push(format!("switch kwarg `{kwarg}`"));
            thinking.can_disable = true;
            thinking.kwarg = Some(KwargSwitch {
                name: kwarg.clone(),
                on: serde_json::Value::Bool(true),
                off: serde_json::Value::Bool(false),
            });
        } else if let Some([on, off]) = d
            .flags
            .iter()
            .find(|[_, off]| template.contains(off.as_str()))
        {
            evidence.push(format!("system flags `{on}` / `{off}`"));
            thinking.can_disable = true;
            thinking.system_flag = Some(FlagSwitch {
                on: Some(on.clone()),
                off: Some(off.clone()),
                position: FlagPosition::Append,
            });
        } else {
            evidence.push("no switch: always thinks".to_owned());
        }
        // The generation-prompt branch comes last in HF templates: an open
        // tag there without a close tag means the template pre-fills it.
        let prefilled = template
            .rfind("add_generation_prompt")
            .map(|i| {
                let tail = &template[i..];
                tail.contains(open.as_str()) && !tail.contains(close.as_str())
            })
            .unwrap_or(false);
        if prefilled {
            evidence.push(format!("generation prompt pre-fills `{open}`"));
        }
        let tools = match d
            .tool_tags
            .iter()
            .find(|[o, c]| template.contains(o.as_str()) && template.contains(c.as_str()))
        {
            Some([o, c]) => {
                evidence.push(format!("tool calls in `{o}` … `{c}`"));
                ToolSyntax::TaggedJson(TaggedJsonSpec {
                    open: o.clone(),
                    close: c.clone(),
                    open_id: None,
                    close_id: None,
                    list: false,
                })
            }
            None => ToolSyntax::None,
        };
        let spec = FormatSpec {
            family: "detected".to_owned(),
            name: format!("detected {open}…{close}"),
            thinking,
            reasoning: ReasoningStyle::Tags(TagSpec {
                open: open.clone(),
                close: close.clone(),
                open_id: None,
                close_id: None,
                prefilled,
                force_close: None,
                answer_open: None,
                answer_close: None,
            }),
            effort: d.effort.clone(),
            tools,
        };
        Some((spec, evidence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{MatchReason, ModelFacts};

    #[test]
    fn detection_reads_tags_switch_prefill_and_tools() {
        let r = Registry::builtin();
        let template = "{% for m in messages %}{{ m.content.split('</reasoning>')[-1] }}{% endfor %}\
            <tool_call></tool_call> {% if enable_thinking %}{% endif %}\
            {% if add_generation_prompt %}{{ 'ASSISTANT: <reasoning>\\n' }}{% endif %}";
        let res = r.resolve(&ModelFacts::new("mystery").chat_template(template));
        let MatchReason::Detected { evidence } = &res.reason else {
            panic!("expected detection, got {:?}", res.reason);
        };
        assert!(evidence.iter().any(|e| e.contains("enable_thinking")));
        let ReasoningStyle::Tags(tags) = &res.spec.reasoning else {
            panic!("tags expected");
        };
        assert_eq!(tags.open, "<reasoning>");
        assert!(tags.prefilled);
        assert!(matches!(res.spec.tools, ToolSyntax::TaggedJson(_)));
        assert!(res.spec.thinking.can_disable);
        let harmony = "<|start|>{{ role }}<|channel|>x<|message|>";
        let res = r.resolve(&ModelFacts::new("other").chat_template(harmony));
        // The gpt-oss fingerprint needs <|start|> too, so this one matches
        // by fingerprint; without <|start|> it is detected.
        assert_eq!(res.spec.family, "gpt-oss");
        let res = r.resolve(&ModelFacts::new("other").chat_template("<|channel|>x<|message|>"));
        assert_eq!(res.spec.family, "gpt-oss");
        assert!(matches!(res.reason, MatchReason::Detected { .. }));
    }
}
