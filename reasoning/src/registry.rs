//! The format registry: which [`FormatSpec`] a model gets, and why.
//!
//! The built-in `formats.toml` is compiled in; a user file with the same
//! layout merges over it by family id (see the file's header for the rules
//! and the matching order). When nothing matches, the chat template itself
//! is inspected ([`Registry::detect`]); failing that, the default family
//! (a separate reasoning pass) is used.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::pattern::{Pattern, PatternError};
use crate::spec::{
    EffortSpec, FlagPosition, FlagSwitch, FormatSpec, KwargSwitch, ReasoningStyle, TagSpec,
    TaggedJsonSpec, ThinkingControl, ToolSyntax,
};

/// The built-in registry source.
pub const BUILTIN_FORMATS: &str = include_str!("../formats.toml");

/// Why a formats file could not be used. Messages name the family and
/// field at fault; they never contain prompts or model output.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The text is not TOML.
    #[error("formats file is not valid TOML: {0}")]
    Toml(#[from] toml::de::Error),
    /// A `[[family]]` entry lacks an `id`.
    #[error("family entry #{index} has no string `id`")]
    MissingId {
        /// Position of the entry in its file (from 0).
        index: usize,
    },
    /// A family's fields do not describe a format.
    #[error("family `{family}`: {message}")]
    Family {
        /// Family id.
        family: String,
        /// What is wrong.
        message: String,
    },
    /// A name pattern does not compile.
    #[error("family `{family}`: {source}")]
    Pattern {
        /// Family id.
        family: String,
        /// The compile error.
        source: PatternError,
    },
    /// A top-level field has the wrong shape.
    #[error("formats file: {0}")]
    Layout(String),
    /// `default_family` or `detect.harmony_family` names no family.
    #[error("`{field}` names family `{family}`, which is not defined")]
    UnknownFamily {
        /// The field.
        field: &'static str,
        /// The id it names.
        family: String,
    },
    /// The user file could not be read.
    #[error("cannot read formats file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

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
struct MatchDef {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    templates: Vec<Vec<String>>,
}

#[derive(Debug, Clone)]
struct Matcher {
    names: Vec<Pattern>,
    architectures: Vec<String>,
    templates: Vec<Vec<String>>,
}

impl Matcher {
    fn new(family: &str, def: MatchDef) -> Result<Self, FormatError> {
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

    fn by_name(&self, facts: &ModelFacts<'_>) -> Option<Matched> {
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

    fn by_template(&self, template: &str) -> Option<Matched> {
        self.templates
            .iter()
            .find(|fp| fp.iter().all(|s| template.contains(s.as_str())))
            .map(|fp| Matched::Template {
                fingerprint: fp.clone(),
            })
    }

    fn by_architecture(&self, architecture: &str) -> Option<Matched> {
        self.architectures
            .iter()
            .find(|a| a.eq_ignore_ascii_case(architecture))
            .map(|a| Matched::Architecture {
                architecture: a.clone(),
            })
    }

    fn any(&self, facts: &ModelFacts<'_>) -> Option<Matched> {
        self.by_name(facts)
            .or_else(|| facts.chat_template.and_then(|t| self.by_template(t)))
            .or_else(|| facts.architecture.and_then(|a| self.by_architecture(a)))
    }
}

#[derive(Debug, Clone)]
struct Variant {
    matcher: Matcher,
    spec: FormatSpec,
}

#[derive(Debug, Clone)]
struct Family {
    spec: FormatSpec,
    matcher: Matcher,
    variants: Vec<Variant>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DetectConfig {
    #[serde(default)]
    harmony: Vec<String>,
    #[serde(default)]
    harmony_family: Option<String>,
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

/// The set of known reasoning formats.
#[derive(Debug, Clone)]
pub struct Registry {
    source: toml::Table,
    families: Vec<Family>,
    default_family: String,
    detect: DetectConfig,
}

impl Registry {
    /// The built-in registry. The built-in file is validated by this
    /// crate's tests, so this cannot fail in a released build.
    pub fn builtin() -> Self {
        #[allow(clippy::expect_used)]
        Self::from_toml(BUILTIN_FORMATS).expect("the built-in formats.toml is valid")
    }

    /// A registry from one formats file alone (no built-in families).
    pub fn from_toml(text: &str) -> Result<Self, FormatError> {
        let table: toml::Table = toml::from_str(text)?;
        Self::from_table(table)
    }

    /// This registry with a user formats file merged over it.
    pub fn with_user_toml(&self, text: &str) -> Result<Self, FormatError> {
        let user: toml::Table = toml::from_str(text)?;
        let mut merged = self.source.clone();
        merge_layer(&mut merged, user)?;
        Self::from_table(merged)
    }

    /// This registry with the user formats file at `path` merged over it.
    pub fn with_user_file(&self, path: &Path) -> Result<Self, FormatError> {
        let text = std::fs::read_to_string(path).map_err(|source| FormatError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.with_user_toml(&text)
    }

    fn from_table(source: toml::Table) -> Result<Self, FormatError> {
        let separate = match source.get("separate_pass") {
            None => None,
            Some(toml::Value::Table(t)) => Some(t.clone()),
            Some(_) => {
                return Err(FormatError::Layout(
                    "`separate_pass` must be a table".into(),
                ));
            }
        };
        let entries: &[toml::Value] = match source.get("family") {
            None => &[],
            Some(toml::Value::Array(a)) => a,
            Some(_) => {
                return Err(FormatError::Layout(
                    "`family` must be an array of tables ([[family]])".into(),
                ));
            }
        };
        let mut families = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let toml::Value::Table(table) = entry else {
                return Err(FormatError::MissingId { index });
            };
            families.push(build_family(table, separate.as_ref(), index)?);
        }
        let detect: DetectConfig = match source.get("detect") {
            None => DetectConfig {
                harmony: Vec::new(),
                harmony_family: None,
                tag_pairs: Vec::new(),
                kwargs: Vec::new(),
                flags: Vec::new(),
                tool_tags: Vec::new(),
                effort: EffortSpec::default(),
            },
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| FormatError::Layout(format!("[detect]: {e}")))?,
        };
        let default_family = match source.get("default_family") {
            Some(toml::Value::String(s)) => s.clone(),
            None => "separate-pass".to_owned(),
            Some(_) => {
                return Err(FormatError::Layout(
                    "`default_family` must be a string".into(),
                ));
            }
        };
        let registry = Self {
            source,
            families,
            default_family,
            detect,
        };
        if registry.family(&registry.default_family).is_none() {
            return Err(FormatError::UnknownFamily {
                field: "default_family",
                family: registry.default_family,
            });
        }
        if let Some(h) = &registry.detect.harmony_family
            && registry.family(h).is_none()
        {
            return Err(FormatError::UnknownFamily {
                field: "detect.harmony_family",
                family: h.clone(),
            });
        }
        Ok(registry)
    }

    /// The family with this id (without per-model overrides).
    pub fn family(&self, id: &str) -> Option<&FormatSpec> {
        self.families
            .iter()
            .find(|f| f.spec.family == id)
            .map(|f| &f.spec)
    }

    /// All families in matching order.
    pub fn families(&self) -> impl Iterator<Item = &FormatSpec> {
        self.families.iter().map(|f| &f.spec)
    }

    /// The default family's spec.
    pub fn default_spec(&self) -> &FormatSpec {
        // `from_table` checked that the default family exists.
        self.family(&self.default_family)
            .unwrap_or_else(|| &self.families[0].spec)
    }

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

fn build_family(
    table: &toml::Table,
    separate: Option<&toml::Table>,
    index: usize,
) -> Result<Family, FormatError> {
    let Some(toml::Value::String(id)) = table.get("id") else {
        return Err(FormatError::MissingId { index });
    };
    let family_err = |message: String| FormatError::Family {
        family: id.clone(),
        message,
    };
    let match_def = |value: Option<&toml::Value>| -> Result<MatchDef, FormatError> {
        match value {
            None => Ok(MatchDef::default()),
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| family_err(format!("match: {e}"))),
        }
    };
    let matcher = Matcher::new(id, match_def(table.get("match"))?)?;
    let mut base = table.clone();
    base.remove("match");
    let models = base.remove("models");
    let spec = to_spec(&base, separate).map_err(|e| family_err(e.to_string()))?;
    let mut variants = Vec::new();
    if let Some(models) = models {
        let toml::Value::Array(models) = models else {
            return Err(family_err("`models` must be an array of tables".into()));
        };
        for (i, model) in models.into_iter().enumerate() {
            let toml::Value::Table(mut model) = model else {
                return Err(family_err(format!("models #{i} is not a table")));
            };
            let matcher = Matcher::new(id, match_def(model.get("match"))?)?;
            model.remove("match");
            let mut merged = base.clone();
            deep_merge(&mut merged, model);
            let spec =
                to_spec(&merged, separate).map_err(|e| family_err(format!("models #{i}: {e}")))?;
            variants.push(Variant { matcher, spec });
        }
    }
    Ok(Family {
        spec,
        matcher,
        variants,
    })
}

/// Deserializes one family table, filling a separate-pass family's prompts
/// from the top-level `[separate_pass]` defaults.
fn to_spec(
    table: &toml::Table,
    separate: Option<&toml::Table>,
) -> Result<FormatSpec, toml::de::Error> {
    let mut table = table.clone();
    if let (Some(defaults), Some(toml::Value::Table(reasoning))) =
        (separate, table.get_mut("reasoning"))
        && reasoning.get("style").and_then(toml::Value::as_str) == Some("separate-pass")
    {
        let mut filled = defaults.clone();
        deep_merge(&mut filled, std::mem::take(reasoning));
        *reasoning = filled;
    }
    toml::Value::Table(table).try_into()
}

/// Merges `over` into `base`: tables merge key by key, anything else
/// replaces.
fn deep_merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => deep_merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Merges a user layer: `[[family]]` entries merge by id (new ids go first,
/// so they match before built-in families); other keys deep-merge.
fn merge_layer(base: &mut toml::Table, mut user: toml::Table) -> Result<(), FormatError> {
    if let Some(families) = user.remove("family") {
        let toml::Value::Array(families) = families else {
            return Err(FormatError::Layout(
                "`family` must be an array of tables ([[family]])".into(),
            ));
        };
        let existing = base
            .entry("family")
            .or_insert_with(|| toml::Value::Array(Vec::new()));
        let toml::Value::Array(existing) = existing else {
            return Err(FormatError::Layout("`family` must be an array".into()));
        };
        let mut added = Vec::new();
        for (index, family) in families.into_iter().enumerate() {
            let toml::Value::Table(family) = family else {
                return Err(FormatError::MissingId { index });
            };
            let Some(id) = family
                .get("id")
                .and_then(toml::Value::as_str)
                .map(str::to_owned)
            else {
                return Err(FormatError::MissingId { index });
            };
            let slot = existing.iter_mut().find_map(|v| match v {
                toml::Value::Table(t)
                    if t.get("id").and_then(toml::Value::as_str) == Some(id.as_str()) =>
                {
                    Some(t)
                }
                _ => None,
            });
            match slot {
                Some(slot) => deep_merge(slot, family),
                None => added.push(toml::Value::Table(family)),
            }
        }
        added.append(existing);
        *existing = added;
    }
    deep_merge(base, user);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_registry_loads_every_family() {
        let r = Registry::builtin();
        for id in [
            "smollm3",
            "qwen3",
            "deepseek-r1",
            "nemotron",
            "hunyuan",
            "exaone-deep",
            "exaone4",
            "gpt-oss",
            "separate-pass",
        ] {
            assert!(r.family(id).is_some(), "missing {id}");
        }
        let sp = r.default_spec().separate_pass().unwrap();
        assert!(sp.answer_system.contains("{reasoning}"));
    }

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

    #[test]
    fn user_file_adds_and_merges_families() {
        let r = Registry::builtin()
            .with_user_toml(
                r#"
                [[family]]
                id = "reflect"
                name = "Reflect"
                match = { names = ["qwen3-reflect*"] }
                reasoning = { style = "tags", open = "<reflect>", close = "</reflect>" }

                [[family]]
                id = "qwen3"
                effort = { low = { budget = 7 } }
                "#,
            )
            .unwrap();
        // New families match before built-in ones.
        let res = r.resolve(&ModelFacts::new("Qwen3-Reflect-1B"));
        assert_eq!(res.spec.family, "reflect");
        let qwen = r.family("qwen3").unwrap();
        assert_eq!(qwen.effort.low.budget, Some(7));
        assert_eq!(qwen.effort.medium.budget, Some(4096), "other fields kept");
        assert_eq!(qwen.name, "Qwen3");
    }

    #[test]
    fn bad_user_files_are_rejected_with_the_family_named() {
        let base = Registry::builtin();
        let err = base
            .with_user_toml(
                "[[family]]\nid = \"x\"\nname = \"X\"\nreasoning = { style = \"sideways\" }",
            )
            .unwrap_err();
        assert!(err.to_string().contains("family `x`"), "{err}");
        let err = base
            .with_user_toml("[[family]]\nname = \"no id\"")
            .unwrap_err();
        assert!(matches!(err, FormatError::MissingId { .. }));
        let err = base
            .with_user_toml("[[family]]\nid = \"y\"\nname = \"Y\"\nreasoning = { style = \"none\" }\nmatch = { names = [\"re:(\"] }")
            .unwrap_err();
        assert!(matches!(err, FormatError::Pattern { .. }), "{err}");
        assert!(base.with_user_toml("default_family = \"nope\"").is_err());
        assert!(base.with_user_toml("not toml [").is_err());
    }
}
