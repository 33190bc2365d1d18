//! How a run or subagent ended ([`Outcome`], [`SubagentOutcome`]), the
//! interrupts that can end one, and [`TokenUsage`].

use serde::{Deserialize, Deserializer, Serialize, de};
use serde_json::Value;

use crate::decode::{from_value, tag_index};
use crate::wire::{JsonObject, non_null, wire_struct};

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

wire_struct!(
    /// A question that ended a run, answered through `RunAgentInput.resume`.
    #[derive(Default)]
    Interrupt {
        /// Interrupt id (echoed back in `ResumeEntry.interruptId`).
        id: String,
        /// Machine-readable reason (e.g. `"tool_approval"`).
        reason: String,
        /// Text for the user.
        optional message: String,
        /// The tool call this is about.
        optional tool_call_id: String,
        /// JSON Schema of the expected answer.
        optional response_schema: JsonObject,
        /// When the question lapses (ISO 8601).
        optional expires_at: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
        /// The subagent asking.
        optional subagent_run_id: String,
    }
);

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

wire_struct!(
    /// Token accounting for a run (`RUN_FINISHED.usage`, `RUN_ERROR.usage`);
    /// every field optional. Counts must stay below 2^53.
    #[derive(Eq, Default)]
    TokenUsage {
        /// Who served the model (`"thinkwire"`).
        optional provider: String,
        /// Model name.
        optional model: String,
        /// Prompt tokens.
        count input_tokens: u64,
        /// Generated tokens (reasoning included).
        count output_tokens: u64,
        /// Input plus output.
        count total_tokens: u64,
        /// Generated tokens spent reasoning.
        count reasoning_tokens: u64,
        /// Prompt tokens served from a cache.
        count cached_input_tokens: u64,
        /// Prompt tokens written to a cache.
        count cache_write_input_tokens: u64,
    }
);

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
