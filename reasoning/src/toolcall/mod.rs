//! Tool calls: the finished [`ToolCall`] the agent checks, and the
//! incremental parser for JSON calls between tags (Hermes/Qwen
//! `<tool_call>{…}</tool_call>`, Nemotron `<TOOLCALL>[…]</TOOLCALL>`).
//!
//! The parser streams the `arguments` value as it arrives: it tracks JSON
//! strings, escapes and nesting, so it knows the name as soon as its string
//! closes and can hand out argument text up to the current byte without
//! ever including the call object's own closing brace.

mod object;
mod tagged;

use serde_json::Value;

pub(crate) use tagged::TaggedCalls;

/// A tool call as the model wrote it, complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The id the splitter generated for it.
    pub id: String,
    /// The function name as written (Harmony's `functions.` prefix removed).
    pub name: String,
    /// The arguments JSON text: exactly the concatenation of this call's
    /// argument deltas. `{}` when the model gave none.
    pub arguments: String,
    /// What is wrong with the call's syntax, if anything.
    pub problem: Option<ToolCallProblem>,
}

/// Why a tool call's syntax is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallProblem {
    /// The call (or its arguments) is not valid JSON; the parser's message
    /// gives line and column only.
    #[error("tool call is not valid JSON: {0}")]
    InvalidJson(String),
    /// The arguments are valid JSON but not an object.
    #[error("tool call arguments are not a JSON object")]
    ArgumentsNotObject,
    /// Output ended (token limit, stop) before the call was complete.
    #[error("tool call was cut off before it ended")]
    Truncated,
}

/// Why the agent should not execute a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// The name is not among the tools offered to the model.
    #[error("the model called a tool that was not offered")]
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// The call's syntax is broken.
    #[error(transparent)]
    Problem(#[from] ToolCallProblem),
}

impl ToolCall {
    /// Checks the call against the offered tool names and returns its
    /// parsed arguments: what the agent needs before executing it.
    pub fn validate<'a>(
        &self,
        offered: impl IntoIterator<Item = &'a str>,
    ) -> Result<serde_json::Map<String, Value>, ToolCallError> {
        if let Some(problem) = &self.problem {
            return Err(problem.clone().into());
        }
        if !offered.into_iter().any(|n| n == self.name) {
            return Err(ToolCallError::UnknownTool {
                name: self.name.clone(),
            });
        }
        parse_arguments(&self.arguments).map_err(ToolCallError::from)
    }
}

/// Parses argument text into an object, or says why it is not one.
pub(crate) fn parse_arguments(
    text: &str,
) -> Result<serde_json::Map<String, Value>, ToolCallProblem> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ToolCallProblem::ArgumentsNotObject),
        Err(e) => Err(ToolCallProblem::InvalidJson(e.to_string())),
    }
}

/// What the tagged-call parser tells the splitter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallEvent {
    /// A call's name is known.
    Start { name: String },
    /// More argument text of the current call.
    Args(String),
    /// The current call is complete.
    End {
        arguments: String,
        problem: Option<ToolCallProblem>,
    },
    /// Text that is no call at all (raw, for a visible notice).
    Malformed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_checks_name_and_arguments() {
        let call = ToolCall {
            id: "call_0".into(),
            name: "get_weather".into(),
            arguments: "{\"city\": \"Paris\"}".into(),
            problem: None,
        };
        let args = call.validate(["get_weather"]).unwrap();
        assert_eq!(args["city"], "Paris");
        assert_eq!(
            call.validate(["other"]),
            Err(ToolCallError::UnknownTool {
                name: "get_weather".into()
            })
        );
        let bad = ToolCall {
            arguments: "{\"city\": ".into(),
            ..call
        };
        assert!(matches!(
            bad.validate(["get_weather"]),
            Err(ToolCallError::Problem(ToolCallProblem::InvalidJson(_)))
        ));
    }
}
