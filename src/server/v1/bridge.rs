//! From a decoded wire request to a run of the agent, and back.
//!
//! Every surface builds the same AG-UI `RunAgentInput` (messages, reasoning
//! messages carrying the sealed value as `encryptedValue`, tools,
//! `forwardedProps.reasoning` and `forwardedProps.sampling`) and starts it
//! through the same path as `POST /agent`, so limits, controls, the
//! visibility policy, history replay and the seal behave identically. A
//! refusal comes back with its AG-UI path translated to the wire's.

use std::collections::BTreeMap;

use axum::body::Bytes;
use serde_json::{Value, json};

use super::carrier::THREAD_ID;
use super::error::ApiError;
use crate::agent::RunRejected;
use crate::server::AppState;
use crate::server::limits::Client;
use crate::server::run::{self, ActiveRun};

/// An AG-UI run input being assembled from a wire request, with the wire
/// path of everything it holds.
#[derive(Debug, Default)]
pub struct RunInput {
    messages: Vec<Value>,
    /// Per AG-UI message: the wire path of its source, and for reasoning
    /// messages the path of the carrier it was opened from.
    sources: Vec<(String, Option<String>)>,
    tools: Vec<Value>,
    reasoning: serde_json::Map<String, Value>,
    sampling: serde_json::Map<String, Value>,
    /// `forwardedProps.responseFormat`, and the wire parameter it came from.
    response_format: Option<(Value, String)>,
    /// `forwardedProps.toolChoice` (`"required"` or `{name}`), and its wire
    /// parameter.
    tool_choice: Option<(Value, String)>,
    /// AG-UI forwarded-prop names → wire parameter names.
    params: BTreeMap<String, String>,
}

impl RunInput {
    /// An empty input.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an AG-UI message (without `id`; one is given) from `path`.
    pub fn message(&mut self, mut message: Value, path: &str) {
        let index = self.messages.len();
        message["id"] = Value::String(format!("m{index}"));
        self.messages.push(message);
        self.sources.push((path.to_owned(), None));
    }

    /// Appends a reasoning message: the sealed value of reasoning message
    /// `id` (opened by the agent), or plaintext reasoning the client sent.
    pub fn reasoning(&mut self, id: &str, sealed: Option<&str>, text: &str, path: &str) {
        let mut message = json!({ "id": id, "role": "reasoning", "content": text });
        if let Some(sealed) = sealed {
            message["encryptedValue"] = Value::String(sealed.to_owned());
        }
        // Plaintext reasoning gets an id of its own (it has none).
        if sealed.is_none() {
            message["id"] = Value::String(format!("m{}", self.messages.len()));
        }
        self.messages.push(message);
        self.sources
            .push((path.to_owned(), sealed.map(|_| path.to_owned())));
    }

    /// Offers a tool.
    pub fn tool(&mut self, name: &str, description: &str, parameters: Option<&Value>) {
        let mut tool = json!({ "name": name, "description": description });
        if let Some(parameters) = parameters {
            tool["parameters"] = parameters.clone();
        }
        self.tools.push(tool);
    }

    /// Sets `forwardedProps.reasoning.<key>`, read from wire parameter
    /// `param`.
    pub fn reasoning_control(&mut self, key: &str, value: Value, param: &str) {
        self.reasoning.insert(key.to_owned(), value);
        self.params
            .insert(format!("forwardedProps.reasoning.{key}"), param.to_owned());
    }

    /// Sets `forwardedProps.sampling.<key>`, read from wire parameter
    /// `param`.
    pub fn sampling(&mut self, key: &str, value: Value, param: &str) {
        self.sampling.insert(key.to_owned(), value);
        self.params
            .insert(format!("forwardedProps.sampling.{key}"), param.to_owned());
    }

    /// Sets `forwardedProps.responseFormat` (the constrained answer), read
    /// from wire parameter `param`; the agent reads OpenAI's nested
    /// `json_schema.schema` and the flat `schema` alike.
    pub fn response_format(&mut self, format: Value, param: &str) {
        self.response_format = Some((format, param.to_owned()));
    }

    /// Requires a tool call (`choice`: `"required"` or `{"name": ...}`),
    /// read from wire parameter `param`.
    pub fn tool_choice(&mut self, choice: Value, param: &str) {
        self.tool_choice = Some((choice, param.to_owned()));
    }

    /// The AG-UI `RunAgentInput` as JSON.
    pub(super) fn to_json(&self, run_id: &str) -> Value {
        let mut input = json!({
            "threadId": THREAD_ID,
            "runId": run_id,
            "messages": self.messages,
            "tools": self.tools,
            "context": [],
            "state": {},
            "forwardedProps": {
                "reasoning": self.reasoning,
                "sampling": self.sampling,
            },
        });
        if let Some((format, _)) = &self.response_format {
            input["forwardedProps"]["responseFormat"] = format.clone();
        }
        if let Some((choice, _)) = &self.tool_choice {
            input["forwardedProps"]["toolChoice"] = choice.clone();
        }
        input
    }

    /// The wire path of an AG-UI path from a refusal.
    fn wire_path(&self, path: &str) -> String {
        if let Some(param) = self.params.get(path) {
            return param.clone();
        }
        if let Some(rest) = path.strip_prefix("messages[")
            && let Some((index, tail)) = rest.split_once(']')
            && let Ok(index) = index.parse::<usize>()
            && let Some((source, carrier)) = self.sources.get(index)
        {
            return match (carrier, tail) {
                (Some(carrier), ".encryptedValue") => carrier.clone(),
                _ => format!("{source}{tail}"),
            };
        }
        if let (Some(rest), Some((_, param))) = (
            path.strip_prefix("forwardedProps.responseFormat"),
            &self.response_format,
        ) {
            return format!("{param}{rest}");
        }
        if let (Some(_), Some((_, param))) = (
            path.strip_prefix("forwardedProps.toolChoice"),
            &self.tool_choice,
        ) {
            return param.clone();
        }
        if path.starts_with("forwardedProps.reasoning") {
            // A control whose parameter was not recorded: name the family.
            return "reasoning".into();
        }
        path.to_owned()
    }

    /// Starts the run; a refusal names the wire parameter at fault.
    pub async fn start(&self, state: &AppState, client: Client) -> Result<ActiveRun, ApiError> {
        let run_id = format!("run-{}", uuid::Uuid::new_v4().simple());
        let body = serde_json::to_vec(&self.to_json(&run_id))
            .map_err(|_| ApiError::server("INTERNAL_ERROR", "the run input did not encode"))?;
        run::start(state, client, Bytes::from(body))
            .await
            .map_err(|rejected| self.refusal(rejected))
    }

    /// A refusal from the agent, in wire terms.
    pub fn refusal(&self, rejected: RunRejected) -> ApiError {
        let param = rejected.path.as_deref().map(|p| self.wire_path(p));
        ApiError::rejected(rejected, param)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::RejectKind;

    #[test]
    fn refusal_paths_are_the_wires() {
        let mut input = RunInput::new();
        input.message(json!({"role": "user", "content": "x"}), "messages[0]");
        input.reasoning(
            "reasoning-msg-1",
            Some("AAA"),
            "",
            "messages[1].reasoning_details[0].data",
        );
        input.message(json!({"role": "assistant", "content": "y"}), "messages[1]");
        input.sampling("topP", json!(0.5), "top_p");
        let wire = |p: &str| input.wire_path(p);
        assert_eq!(
            wire("messages[1].encryptedValue"),
            "messages[1].reasoning_details[0].data"
        );
        assert_eq!(wire("messages[0].content[2]"), "messages[0].content[2]");
        assert_eq!(wire("messages[2]"), "messages[1]");
        assert_eq!(wire("forwardedProps.sampling.topP"), "top_p");
        assert_eq!(wire("messages"), "messages");
        let err = input.refusal(
            RunRejected::new(RejectKind::Unprocessable, "SEALED_REASONING_REJECTED", "no")
                .at("messages[1].encryptedValue"),
        );
        assert_eq!(err.status, 400);
        assert_eq!(
            err.param.as_deref(),
            Some("messages[1].reasoning_details[0].data")
        );
    }

    #[test]
    fn the_input_is_a_valid_run_agent_input() {
        let mut input = RunInput::new();
        input.message(json!({"role": "system", "content": "s"}), "messages[0]");
        input.message(json!({"role": "user", "content": "u"}), "messages[1]");
        input.reasoning(
            "r1",
            Some("AAA"),
            "",
            "messages[2].reasoning_details[0].data",
        );
        input.reasoning("", None, "plain", "messages[2].reasoning_content");
        input.message(json!({"role": "assistant", "content": "a"}), "messages[2]");
        input.tool("get_weather", "", Some(&json!({"type": "object"})));
        input.reasoning_control("effort", json!("low"), "reasoning_effort");
        let bytes = serde_json::to_vec(&input.to_json("run-1")).unwrap();
        let decoded = thinkwire_protocol::decode_run_agent_input(&bytes).unwrap();
        assert_eq!(decoded.messages.len(), 5);
        assert_eq!(decoded.tools.len(), 1);
    }
}
