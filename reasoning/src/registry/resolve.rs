//! Choosing a family for a model: names first, then chat-template
//! fingerprints, then architectures, then per-model overrides within the
//! family; the reason is kept so `thinkwire inspect` can say why.

use std::fmt;

use serde::Deserialize;

use super::{FormatError, Registry};
use crate::pattern::Pattern;
use crate::spec::FormatSpec;

/// What is known about a model when choosing its format.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelFacts<'a> {
    /// The model id: a hub-style `owner/name`, a folder name or a file stem.
    pub id: &'a str,
    /// A display name (GGUF `general.name`), also tried against patterns.
    pub name: Option<&'a str>,
    /// Architecture as the config spells it (`qwen3`, `Qwen3ForCausalLM`).
    pub architecture: Option<&'a str>,
    /// The chat template source.
    pub chat_template: Option<&'a str>,
}

impl<'a> ModelFacts<'a> {
    /// Facts with only the id.
    #[must_use]
    pub fn new(id: &'a str) -> Self {
        Self {
            id,
            ..Self::default()
        }
    }

    /// Adds a display name.
    #[must_use]
    pub fn name(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }

    /// Adds the architecture.
    #[must_use]
    pub fn architecture(mut self, architecture: &'a str) -> Self {
        self.architecture = Some(architecture);
        self
    }

    /// Adds the chat template.
    #[must_use]
    pub fn chat_template(mut self, template: &'a str) -> Self {
        self.chat_template = Some(template);
        self
    }
}

/// Which piece of evidence selected a family or a per-model variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matched {
    /// The model id or name matched a name pattern.
    Name {
        /// The pattern as written.
        pattern: String,
    },
    /// The chat template contained every substring of a fingerprint.
    Template {
        /// The fingerprint's substrings.
        fingerprint: Vec<String>,
    },
    /// The architecture matched.
    Architecture {
        /// The architecture as listed in the registry.
        architecture: String,
    },
}

impl fmt::Display for Matched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Matched::Name { pattern } => write!(f, "model name matches `{pattern}`"),
            Matched::Template { fingerprint } => {
                f.write_str("chat template contains ")?;
                write_list(f, fingerprint)
            }
            Matched::Architecture { architecture } => {
                write!(f, "architecture is `{architecture}`")
            }
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[String]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "`{}`", item.escape_debug())?;
    }
    Ok(())
}

/// How the format was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchReason {
    /// A registry family matched.
    Matched(Matched),
    /// No family matched; the chat template showed these markers.
    Detected {
        /// What was seen, one phrase each.
        evidence: Vec<String>,
    },
    /// Nothing matched or was detected: the default family.
    Default,
}

/// The format chosen for a model, with the reason (printed by
/// `thinkwire inspect MODEL`).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// The format.
    pub spec: FormatSpec,
    /// Why this family.
    pub reason: MatchReason,
    /// The per-model override applied within the family, if any.
    pub variant: Option<Matched>,
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): ", self.spec.family, self.spec.name)?;
        match &self.reason {
            MatchReason::Matched(m) => write!(f, "{m}")?,
            MatchReason::Detected { evidence } => write!(
                f,
                "detected from the chat template: {}",
                evidence.join("; ")
            )?,
            MatchReason::Default => f.write_str(
                "no family matched and the chat template shows no reasoning markers; default",
            )?,
        }
        if let Some(variant) = &self.variant {
            write!(f, "; per-model override: {variant}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MatchDef {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    templates: Vec<Vec<String>>,
}

#[derive(Debug, Clone)]
pub(super) struct Matcher {
    names: Vec<Pattern>,
    architectures: Vec<String>,
    templates: Vec<Vec<String>>,
}

impl Matcher {
    pub(super) fn new(family: &str, def: MatchDef) -> Result<Self, FormatError> {
        let names = def
            .names
            .iter()
            .map(|p| Pattern::new(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| FormatError::Pattern {
                family: family.to_owned(),
                source,
            })?;
        Ok(Self {
            names,
            architectures: def.architectures,
            templates: def
                .templates
                .into_iter()
                .filter(|fp| !fp.is_empty())
                .collect(),
        })
    }

    pub(super) fn by_name(&self, facts: &ModelFacts<'_>) -> Option<Matched> {
        let base = facts.id.rsplit(['/', '\\']).next().unwrap_or(facts.id);
        let candidates = [Some(facts.id), Some(base), facts.name];
        self.names.iter().find_map(|p| {
            candidates
                .iter()
                .flatten()
                .any(|c| !c.is_empty() && p.matches(c))
                .then(|| Matched::Name {
                    pattern: p.source().to_owned(),
                })
        })
    }

    pub(super) fn by_template(&self, template: &str) -> Option<Matched> {
        self.templates
            .iter()
            .find(|fp| fp.iter().all(|s| template.contains(s.as_str())))
            .map(|fp| Matched::Template {
                fingerprint: fp.clone(),
            })
    }

    pub(super) fn by_architecture(&self, architecture: &str) -> Option<Matched> {
        self.architectures
            .iter()
            .find(|a| a.eq_ignore_ascii_case(architecture))
            .map(|a| Matched::Architecture {
                architecture: a.clone(),
            })
    }

    pub(super) fn any(&self, facts: &ModelFacts<'_>) -> Option<Matched> {
        self.by_name(facts)
            .or_else(|| facts.chat_template.and_then(|t| self.by_template(t)))
            .or_else(|| facts.architecture.and_then(|a| self.by_architecture(a)))
    }
}

impl Registry {
    /// Chooses the format for a model and says why.
    pub fn resolve(&self, facts: &ModelFacts<'_>) -> Resolution {
        let found = self
            .families
            .iter()
            .find_map(|f| f.matcher.by_name(facts).map(|m| (f, m)))
            .or_else(|| {
                let template = facts.chat_template?;
                self.families
                    .iter()
                    .find_map(|f| f.matcher.by_template(template).map(|m| (f, m)))
            })
            .or_else(|| {
                let arch = facts.architecture?;
                self.families
                    .iter()
                    .find_map(|f| f.matcher.by_architecture(arch).map(|m| (f, m)))
            });
        if let Some((family, matched)) = found {
            let variant = family
                .variants
                .iter()
                .find_map(|v| v.matcher.any(facts).map(|m| (v, m)));
            let (spec, variant) = match variant {
                Some((v, m)) => (v.spec.clone(), Some(m)),
                None => (family.spec.clone(), None),
            };
            tracing::debug!(family = %spec.family, "reasoning format matched");
            return Resolution {
                spec,
                reason: MatchReason::Matched(matched),
                variant,
            };
        }
        if let Some((spec, evidence)) = facts.chat_template.and_then(|t| self.detect(t)) {
            tracing::debug!(family = %spec.family, "reasoning format detected from template");
            return Resolution {
                spec,
                reason: MatchReason::Detected { evidence },
                variant: None,
            };
        }
        Resolution {
            spec: self.default_spec().clone(),
            reason: MatchReason::Default,
            variant: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ReasoningStyle;

    #[test]
    fn names_templates_and_architectures_match_in_that_order() {
        let r = Registry::builtin();
        let res = r.resolve(&ModelFacts::new("Qwen/Qwen3-8B"));
        assert_eq!(res.spec.family, "qwen3");
        assert_eq!(
            res.reason,
            MatchReason::Matched(Matched::Name {
                pattern: "qwen3*".into()
            })
        );
        let res = r.resolve(&ModelFacts::new("my-finetune").architecture("Qwen3ForCausalLM"));
        assert_eq!(res.spec.family, "qwen3");
        assert!(matches!(
            res.reason,
            MatchReason::Matched(Matched::Architecture { .. })
        ));
        // A distill has a Qwen2 architecture but R1's template.
        let template = "{{'<｜Assistant｜>' + content}}{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}";
        let res = r.resolve(
            &ModelFacts::new("some-distill")
                .architecture("qwen2")
                .chat_template(template),
        );
        assert_eq!(res.spec.family, "deepseek-r1");
        assert!(matches!(
            res.reason,
            MatchReason::Matched(Matched::Template { .. })
        ));
    }

    #[test]
    fn per_model_override_refines_the_family() {
        let r = Registry::builtin();
        let res = r.resolve(&ModelFacts::new("Qwen/Qwen3-30B-A3B-Thinking-2507"));
        assert_eq!(res.spec.family, "qwen3");
        assert!(res.variant.is_some());
        let ReasoningStyle::Tags(tags) = &res.spec.reasoning else {
            panic!("tags expected");
        };
        assert!(tags.prefilled);
        assert!(!res.spec.thinking.can_disable);
        assert!(res.to_string().contains("per-model override"));
        let plain = r.resolve(&ModelFacts::new("Qwen3-8B"));
        assert!(plain.variant.is_none());
        assert!(plain.spec.thinking.can_disable);
    }

    #[test]
    fn default_model_gets_the_separate_pass() {
        let r = Registry::builtin();
        let res = r.resolve(&ModelFacts::new("SmolLM2-135M-Instruct.Q4_1").architecture("llama"));
        assert_eq!(res.spec.family, "separate-pass");
        let res = r.resolve(&ModelFacts::new("unknown").chat_template("{{ messages }}"));
        assert_eq!(res.reason, MatchReason::Default);
        assert_eq!(res.spec.family, "separate-pass");
    }
}
