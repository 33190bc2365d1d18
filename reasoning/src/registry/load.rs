//! Reading formats files: a user layer merges over the built-in table by
//! family id before anything is deserialized, so a user family may set
//! only the fields it changes. Errors name the family and field at fault.

use std::path::PathBuf;

use super::detect::DetectConfig;
use super::resolve::{MatchDef, Matcher};
use super::{Family, Registry, Variant};
use crate::pattern::PatternError;
use crate::spec::FormatSpec;

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

impl Registry {
    pub(super) fn from_table(source: toml::Table) -> Result<Self, FormatError> {
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
            None => DetectConfig::default(),
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
pub(super) fn merge_layer(
    base: &mut toml::Table,
    mut user: toml::Table,
) -> Result<(), FormatError> {
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
    use crate::registry::ModelFacts;

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
