//! Per-run reasoning controls, `forwardedProps.reasoning =
//! {visibility, effort, budgetTokens}`, bounded by the server's policy.

use std::collections::BTreeSet;

use serde_json::Value;
pub use thinkwire_reasoning::Effort;
use thinkwire_reasoning::SeparateStrategy;

use super::rejection::{RejectKind, RunRejected};

/// What the client sees of the model's reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Visibility {
    /// The reasoning span and an empty reasoning message: nothing readable,
    /// only the sealed value (the default).
    Hidden,
    /// A short summary of the reasoning, made by a second pass.
    Summary,
    /// The raw reasoning, streamed.
    Full,
    /// Thinking switched off where the model's format allows; otherwise
    /// generated but not shown.
    Off,
}

impl Visibility {
    /// Every mode, in documentation order.
    pub const ALL: [Visibility; 4] = [Self::Hidden, Self::Summary, Self::Full, Self::Off];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hidden => "hidden",
            Self::Summary => "summary",
            Self::Full => "full",
            Self::Off => "off",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// The operator's bounds on what clients may ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningPolicy {
    /// Visibility modes clients may choose.
    pub allowed_visibility: BTreeSet<Visibility>,
    /// Visibility when the client says nothing.
    pub default_visibility: Visibility,
    /// Hard cap on reasoning tokens per run, whatever the client asks.
    pub max_reasoning_tokens: usize,
}

impl Default for ReasoningPolicy {
    fn default() -> Self {
        Self {
            allowed_visibility: Visibility::ALL.into_iter().collect(),
            default_visibility: Visibility::Hidden,
            max_reasoning_tokens: 2048,
        }
    }
}

/// The controls in force for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReasoningControls {
    /// What the client sees.
    pub visibility: Visibility,
    /// How hard to think, if the client said.
    pub effort: Option<Effort>,
    /// Reasoning tokens after which the reasoning is closed, already bounded
    /// by the policy.
    pub budget_tokens: usize,
    /// Whether the client named the budget (`budgetTokens`) rather than
    /// leaving it at the policy's cap.
    pub budget_asked: bool,
    /// How a model that does not think natively reasons, if the client
    /// said (`two-pass`, `structured`); thinking models ignore it.
    pub strategy: Option<SeparateStrategy>,
}

impl ReasoningControls {
    /// Reads `forwardedProps.reasoning` under `policy`. A request the policy
    /// forbids is refused, not silently downgraded: the client asked for
    /// something specific and should know it did not get it.
    pub fn from_forwarded(
        forwarded: Option<&Value>,
        policy: &ReasoningPolicy,
    ) -> Result<Self, RunRejected> {
        let bad = |path: &str, message: String| {
            RunRejected::new(
                RejectKind::Unprocessable,
                "INVALID_REASONING_CONTROL",
                message,
            )
            .at(format!("forwardedProps.reasoning{path}"))
        };
        let mut controls = Self {
            visibility: policy.default_visibility,
            effort: None,
            budget_tokens: policy.max_reasoning_tokens,
            budget_asked: false,
            strategy: None,
        };
        let Some(reasoning) = forwarded.and_then(|f| f.get("reasoning")) else {
            return Ok(controls);
        };
        let Some(reasoning) = reasoning.as_object() else {
            return Err(bad("", "must be an object".into()));
        };
        if let Some(v) = reasoning.get("visibility") {
            let name = v.as_str().unwrap_or_default();
            let visibility = Visibility::parse(name).ok_or_else(|| {
                bad(
                    ".visibility",
                    "must be one of hidden, summary, full, off".into(),
                )
            })?;
            if !policy.allowed_visibility.contains(&visibility) {
                let allowed: Vec<_> = policy
                    .allowed_visibility
                    .iter()
                    .map(|v| v.as_str())
                    .collect();
                return Err(RunRejected::new(
                    RejectKind::Unprocessable,
                    "VISIBILITY_NOT_ALLOWED",
                    format!(
                        "this server does not allow reasoning visibility {:?} (allowed: {})",
                        visibility.as_str(),
                        allowed.join(", ")
                    ),
                )
                .at("forwardedProps.reasoning.visibility"));
            }
            controls.visibility = visibility;
        }
        if let Some(e) = reasoning.get("effort") {
            let effort = e
                .as_str()
                .and_then(parse_effort)
                .ok_or_else(|| bad(".effort", "must be one of low, medium, high".into()))?;
            controls.effort = Some(effort);
        }
        if let Some(b) = reasoning.get("budgetTokens") {
            let budget = b
                .as_u64()
                .filter(|&b| b > 0)
                .ok_or_else(|| bad(".budgetTokens", "must be a positive integer".into()))?;
            controls.budget_tokens = usize::try_from(budget)
                .map_or(policy.max_reasoning_tokens, |b| {
                    b.min(policy.max_reasoning_tokens)
                });
            controls.budget_asked = true;
        }
        if let Some(s) = reasoning.get("strategy") {
            let strategy = s
                .as_str()
                .and_then(SeparateStrategy::parse)
                .ok_or_else(|| bad(".strategy", "must be one of two-pass, structured".into()))?;
            controls.strategy = Some(strategy);
        }
        Ok(controls)
    }
}

fn parse_effort(s: &str) -> Option<Effort> {
    [Effort::Low, Effort::Medium, Effort::High]
        .into_iter()
        .find(|e| e.as_str() == s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_to_hidden_with_the_policy_budget() {
        let c = ReasoningControls::from_forwarded(None, &ReasoningPolicy::default()).unwrap();
        assert_eq!(c.visibility, Visibility::Hidden);
        assert_eq!(c.budget_tokens, 2048);
        assert!(!c.budget_asked);
        let c = ReasoningControls::from_forwarded(Some(&json!({})), &ReasoningPolicy::default())
            .unwrap();
        assert_eq!(c.visibility, Visibility::Hidden);
    }

    #[test]
    fn reads_and_bounds_the_controls() {
        let forwarded =
            json!({"reasoning": {"visibility": "full", "effort": "low", "budgetTokens": 99999}});
        let c = ReasoningControls::from_forwarded(Some(&forwarded), &ReasoningPolicy::default())
            .unwrap();
        assert_eq!(c.visibility, Visibility::Full);
        assert_eq!(c.effort, Some(Effort::Low));
        assert_eq!(c.budget_tokens, 2048, "capped by the policy");
        assert!(c.budget_asked);
    }

    #[test]
    fn refuses_unknown_or_forbidden_values_naming_the_field() {
        let policy = ReasoningPolicy {
            allowed_visibility: [Visibility::Hidden].into_iter().collect(),
            ..ReasoningPolicy::default()
        };
        let err = ReasoningControls::from_forwarded(
            Some(&json!({"reasoning": {"visibility": "full"}})),
            &policy,
        )
        .unwrap_err();
        assert_eq!(err.code, "VISIBILITY_NOT_ALLOWED");
        assert_eq!(
            err.path.as_deref(),
            Some("forwardedProps.reasoning.visibility")
        );
        let err = ReasoningControls::from_forwarded(
            Some(&json!({"reasoning": {"effort": "max"}})),
            &ReasoningPolicy::default(),
        )
        .unwrap_err();
        assert_eq!(err.path.as_deref(), Some("forwardedProps.reasoning.effort"));
        let err = ReasoningControls::from_forwarded(
            Some(&json!({"reasoning": {"budgetTokens": -1}})),
            &ReasoningPolicy::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.path.as_deref(),
            Some("forwardedProps.reasoning.budgetTokens")
        );
    }
}
