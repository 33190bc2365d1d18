//! How a run or subagent ended ([`Outcome`], [`SubagentOutcome`]), the
//! interrupts that can end one, and [`TokenUsage`].

use serde::{Deserialize, Deserializer, Serialize, de};
use serde_json::Value;

use crate::decode::{from_value, tag_index};
use crate::wire::{JsonObject, count, non_null};

/// `RUN_FINISHED.outcome`; absent means success.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Outcome {
    /// The run completed.
    Success {
        /// Tool calls the client is expected to execute and answer.
        #[serde(rename = "pendingToolCallIds", skip_serializing_if = "Option::is_none")]
        pending_tool_call_ids: Option<Vec<String>>,
    },
    /// The run stopped to ask the user something (at least one interrupt).
    Interrupt {
        /// What is asked.
        interrupts: Vec<Interrupt>,
    },
    /// The run was cancelled.
    Cancelled,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SuccessFields {
    #[serde(default, deserialize_with = "non_null")]
    pending_tool_call_ids: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct InterruptFields {
    #[serde(deserialize_with = "non_empty")]
    interrupts: Vec<Interrupt>,
}

fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Interrupt>, D::Error> {
    let v = Vec::<Interrupt>::deserialize(d)?;
    if v.is_empty() {
        return Err(de::Error::custom("expected at least one interrupt"));
    }
    Ok(v)
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(deserializer)?;
        Ok(
            match tag_index(&v, "type", &["success", "interrupt", "cancelled"])? {
                0 => {
                    let f: SuccessFields = from_value(&v)?;
                    Outcome::Success {
                        pending_tool_call_ids: f.pending_tool_call_ids,
                    }
                }
                1 => {
                    let f: InterruptFields = from_value(&v)?;
                    Outcome::Interrupt {
                        interrupts: f.interrupts,
                    }
                }
                _ => Outcome::Cancelled,
            },
        )
    }
}

/// A question that ended a run, answered through `RunAgentInput.resume`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// Interrupt id (echoed back in `ResumeEntry.interruptId`).
    pub id: String,
    /// Machine-readable reason (e.g. `"tool_approval"`).
    pub reason: String,
    /// Text for the user.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub message: Option<String>,
    /// The tool call this is about.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_id: Option<String>,
    /// JSON Schema of the expected answer.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub response_schema: Option<JsonObject>,
    /// When the question lapses (ISO 8601).
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<String>,
    /// Free-form metadata.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<JsonObject>,
    /// The subagent asking.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub subagent_run_id: Option<String>,
}

/// `SUBAGENT_FINISHED.outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SubagentOutcome {
    /// The subagent completed.
    Success,
    /// The subagent waits on interrupts.
    Suspended {
        /// The interrupts it waits on.
        #[serde(rename = "interruptIds", skip_serializing_if = "Option::is_none")]
        interrupt_ids: Option<Vec<String>>,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SuspendedFields {
    #[serde(default, deserialize_with = "non_null")]
    interrupt_ids: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for SubagentOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(deserializer)?;
        Ok(match tag_index(&v, "type", &["success", "suspended"])? {
            0 => SubagentOutcome::Success,
            _ => {
                let f: SuspendedFields = from_value(&v)?;
                SubagentOutcome::Suspended {
                    interrupt_ids: f.interrupt_ids,
                }
            }
        })
    }
}

/// Token accounting for a run (`RUN_FINISHED.usage`, `RUN_ERROR.usage`);
/// every field optional. Counts must stay below 2^53.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Who served the model (`"thinkwire"`).
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider: Option<String>,
    /// Model name.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<String>,
    /// Prompt tokens.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_tokens: Option<u64>,
    /// Generated tokens (reasoning included).
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_tokens: Option<u64>,
    /// Input plus output.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub total_tokens: Option<u64>,
    /// Generated tokens spent reasoning.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_tokens: Option<u64>,
    /// Prompt tokens served from a cache.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_input_tokens: Option<u64>,
    /// Prompt tokens written to a cache.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_write_input_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_value;
    use serde_json::json;

    #[test]
    fn outcomes_round_trip() {
        for v in [
            json!({"type": "success"}),
            json!({"type": "success", "pendingToolCallIds": ["a"]}),
            json!({"type": "interrupt", "interrupts": [{"id": "i", "reason": "r"}]}),
            json!({"type": "cancelled"}),
        ] {
            let o: Outcome = decode_value(&v).unwrap();
            assert_eq!(serde_json::to_value(&o).unwrap(), v);
        }
        for v in [
            json!({"type": "success"}),
            json!({"type": "suspended", "interruptIds": ["i"]}),
            json!({"type": "suspended"}),
        ] {
            let o: SubagentOutcome = decode_value(&v).unwrap();
            assert_eq!(serde_json::to_value(&o).unwrap(), v);
        }
    }

    #[test]
    fn empty_interrupts_rejected() {
        let err =
            decode_value::<Outcome>(&json!({"type": "interrupt", "interrupts": []})).unwrap_err();
        assert_eq!(err.path(), "interrupts");
        let err =
            decode_value::<Outcome>(&json!({"type": "interrupt", "interrupts": [{"id": "i"}]}))
                .unwrap_err();
        assert_eq!(err.path(), "interrupts[0]");
    }

    #[test]
    fn usage_bounds() {
        let u: TokenUsage = decode_value(&json!({"inputTokens": 3, "extra": 1})).unwrap();
        assert_eq!(u.input_tokens, Some(3));
        let err = decode_value::<TokenUsage>(&json!({"outputTokens": 1.5})).unwrap_err();
        assert_eq!(err.path(), "outputTokens");
        assert!(decode_value::<TokenUsage>(&json!({"outputTokens": -1})).is_err());
    }
}
