//! Effort levels: what low, medium and high mean for a family, as a
//! reasoning-token budget, a Harmony level, or both.

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_parses_case_insensitively() {
        assert_eq!("HIGH".parse::<Effort>(), Ok(Effort::High));
        assert!("extreme".parse::<Effort>().is_err());
    }
}
