//! From a decoded wire request to a run of the agent, and back.
//!
//! Every surface builds the same AG-UI `RunAgentInput` (messages, reasoning
//! messages carrying the sealed value as `encryptedValue`, tools,
//! `forwardedProps.reasoning` and `forwardedProps.sampling`) and starts it
//! through the same path as `POST /agent`, so limits, controls, the
//! visibility policy, history replay and the seal behave identically. A
//! refusal comes back with its AG-UI path translated to the wire's
//! ([`WirePaths`]).

use serde_json::{Map, Value, json};
use thinkwire_protocol::{
    AssistantMessage, Content, DeveloperMessage, Message, ReasoningMessage, RunAgentInput,
    SystemMessage, Tool, ToolCall, ToolMessage, UserMessage,
};

use super::carrier::THREAD_ID;
use super::error::ApiError;
use super::wire_path::WirePaths;
use crate::agent::{RawCompletion, RawPrompt, RunRejected, Visibility};
use crate::server::AppState;
use crate::server::limits::Client;
use crate::server::run::{self, Admitted};

/// The role of a message that is text only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRole {
    /// `system`.
    System,
    /// `developer`.
    Developer,
    /// `user`.
    User,
}

impl TextRole {
    /// `system`, `developer` or `user`.
    pub fn parse(role: &str) -> Option<Self> {
        match role {
            "system" => Some(Self::System),
            "developer" => Some(Self::Developer),
            "user" => Some(Self::User),
            _ => None,
        }
    }
}

/// An AG-UI run input being assembled from a wire request, with the wire
/// path of everything it holds.
#[derive(Debug, Default, Clone)]
pub struct RunInput {
    messages: Vec<Message>,
    tools: Vec<Tool>,
    reasoning: Map<String, Value>,
    sampling: Map<String, Value>,
    /// `forwardedProps.responseFormat`.
    response_format: Option<Value>,
    /// `forwardedProps.toolChoice` (`"required"` or `{name}`).
    tool_choice: Option<Value>,
    /// `forwardedProps.parallelToolCalls` (`false`: at most one call).
    parallel_tool_calls: Option<bool>,
    /// `forwardedProps.logprobs`: alternatives per answer token.
    logprobs: Option<usize>,
    /// `forwardedProps.promptLogprobs`: a raw completion's prompt tokens
    /// are scored too (legacy `echo` with `logprobs`).
    prompt_logprobs: bool,
    /// A raw completion's prompt and stop sequences: the run continues
    /// the prompt as it is, and reads no messages.
    raw: Option<RawCompletion>,
    /// Where on the wire each part was read.
    paths: WirePaths,
}

impl RunInput {
    /// An empty input.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of the next message.
    fn next_id(&self) -> String {
        format!("m{}", self.messages.len())
    }

    fn push(&mut self, message: Message, path: &str, carrier: Option<&str>) {
        self.messages.push(message);
        let source = (path.to_owned(), carrier.map(str::to_owned));
        self.paths.messages.push(source);
    }

    /// Appends a text message (system, developer or user) from `path`.
    pub fn text(&mut self, role: TextRole, text: String, name: Option<&str>, path: &str) {
        let id = self.next_id();
        let name = name.map(str::to_owned);
        let message = match role {
            TextRole::System => Message::System(SystemMessage {
                id,
                content: text,
                name,
                ..SystemMessage::default()
            }),
            TextRole::Developer => Message::Developer(DeveloperMessage {
                id,
                content: text,
                name,
                ..DeveloperMessage::default()
            }),
            TextRole::User => Message::User(UserMessage {
                id,
                content: Content::Text(text),
                name,
                encrypted_value: None,
                metadata: None,
                subagent_run_id: None,
            }),
        };
        self.push(message, path, None);
    }

    /// Appends a tool's result for call `call_id`, from `path`.
    pub fn tool_result(&mut self, call_id: &str, text: String, path: &str) {
        self.tool_message(call_id, text, None, path);
    }

    /// Appends the result of a tool that failed (Anthropic's `is_error`),
    /// from `path`: AG-UI's `error` holds its text, and `content` the text
    /// as sent, for whatever reads only the content.
    pub fn tool_error(&mut self, call_id: &str, text: String, path: &str) {
        let error = Some(text.clone());
        self.tool_message(call_id, text, error, path);
    }

    fn tool_message(&mut self, call_id: &str, text: String, error: Option<String>, path: &str) {
        let message = Message::Tool(ToolMessage {
            id: self.next_id(),
            content: Content::Text(text),
            tool_call_id: call_id.to_owned(),
            error,
            encrypted_value: None,
            metadata: None,
            subagent_run_id: None,
        });
        self.push(message, path, None);
    }

    /// Appends an assistant message (its text, its tool calls), from `path`.
    pub fn assistant(
        &mut self,
        text: Option<String>,
        calls: Vec<ToolCall>,
        name: Option<&str>,
        path: &str,
    ) {
        let message = Message::Assistant(AssistantMessage {
            id: self.next_id(),
            content: text,
            tool_calls: (!calls.is_empty()).then_some(calls),
            name: name.map(str::to_owned),
            ..AssistantMessage::default()
        });
        self.push(message, path, None);
    }

    /// Appends a reasoning message: the sealed value of reasoning message
    /// `id` (opened by the agent), or plaintext reasoning the client sent.
    pub fn reasoning(&mut self, id: &str, sealed: Option<&str>, text: &str, path: &str) {
        // Plaintext reasoning gets an id of its own (it has none).
        let id = match sealed {
            Some(_) => id.to_owned(),
            None => self.next_id(),
        };
        let message = Message::Reasoning(ReasoningMessage {
            id,
            content: text.to_owned(),
            encrypted_value: sealed.map(str::to_owned),
            ..ReasoningMessage::default()
        });
        self.push(message, path, sealed.map(|_| path));
    }

    /// Offers a tool whose schema was read from wire path `param`
    /// (`tools[i].function.parameters`, `tools[i].input_schema`), which a
    /// refusal of the schema names.
    pub fn tool_at(&mut self, name: &str, desc: &str, parameters: Option<&Value>, param: &str) {
        self.paths.tools.push(param.to_owned());
        self.tools.push(Tool {
            name: name.to_owned(),
            description: desc.to_owned(),
            // `null` reads as absent, as AG-UI's decoder reads it.
            parameters: parameters.filter(|p| !p.is_null()).cloned(),
            metadata: None,
        });
    }

    /// Sets `forwardedProps.reasoning.<key>`, read from wire parameter
    /// `param`. Once thinking is off, a visibility is not written: a
    /// `summary` or `exclude` beside `effort: "none"` would otherwise have
    /// the model think after all.
    pub fn reasoning_control(&mut self, key: &str, value: Value, param: &str) {
        if key == "visibility" && self.thinking_is_off() {
            return;
        }
        self.reasoning.insert(key.to_owned(), value);
        self.paths
            .params
            .insert(format!("forwardedProps.reasoning.{key}"), param.to_owned());
    }

    /// Switches thinking off (`forwardedProps.reasoning.visibility: off`),
    /// read from wire parameter `param`, for the rest of this input: no
    /// later visibility turns it back on, and the first parameter that
    /// switched it off is the one a refusal names.
    pub fn switch_thinking_off(&mut self, param: &str) {
        let off = json!(Visibility::Off.as_str());
        self.reasoning_control("visibility", off, param);
    }

    /// Whether thinking was switched off (by [`Self::switch_thinking_off`]
    /// or a visibility of `off`).
    pub fn thinking_is_off(&self) -> bool {
        let visibility = self.reasoning.get("visibility").and_then(Value::as_str);
        visibility == Some(Visibility::Off.as_str())
    }

    /// Sets `forwardedProps.sampling.<key>`, read from wire parameter
    /// `param`.
    pub fn sampling(&mut self, key: &str, value: Value, param: &str) {
        self.sampling.insert(key.to_owned(), value);
        self.paths
            .params
            .insert(format!("forwardedProps.sampling.{key}"), param.to_owned());
    }

    /// Sets `forwardedProps.responseFormat` (the constrained answer), read
    /// from wire parameter `param`; the agent reads OpenAI's nested
    /// `json_schema.schema` and the flat `schema` alike.
    pub fn response_format(&mut self, format: Value, param: &str) {
        self.response_format = Some(format);
        self.paths.response_format = Some(param.to_owned());
    }

    /// Requires a tool call (`choice`: `"required"` or `{"name": ...}`),
    /// read from wire parameter `param`.
    pub fn tool_choice(&mut self, choice: Value, param: &str) {
        self.tool_choice = Some(choice);
        self.paths.tool_choice = Some(param.to_owned());
    }

    /// Allows or forbids more than one tool call in the answer, read from
    /// wire parameter `param`.
    pub fn parallel_tool_calls(&mut self, parallel: bool, param: &str) {
        self.parallel_tool_calls = Some(parallel);
        self.paths
            .params
            .insert("forwardedProps.parallelToolCalls".into(), param.to_owned());
    }

    /// Reports the answer tokens' log-probabilities with `k` alternatives
    /// each, read from wire parameter `param`.
    pub fn logprobs(&mut self, k: usize, param: &str) {
        self.logprobs = Some(k);
        self.paths
            .params
            .insert("forwardedProps.logprobs".into(), param.to_owned());
    }

    /// Makes this a raw completion of `prompt` (legacy completions), read
    /// from wire path `param` (`prompt`, or `prompt[i]` of several), that
    /// ends at any of `stop`.
    pub fn raw_prompt(&mut self, prompt: RawPrompt, stop: Vec<String>, param: String) {
        self.raw = Some(RawCompletion { prompt, stop });
        self.paths.params.insert("prompt".into(), param);
    }

    /// Scores a raw completion's prompt tokens too, read from wire
    /// parameter `param`.
    pub fn prompt_logprobs(&mut self, param: &str) {
        self.prompt_logprobs = true;
        self.paths
            .params
            .insert("forwardedProps.promptLogprobs".into(), param.to_owned());
    }

    /// Whether the answer tokens' log-probabilities were asked for.
    pub fn asks_logprobs(&self) -> bool {
        self.logprobs.is_some()
    }

    /// The seed the client asked for (`forwardedProps.sampling.seed`).
    pub fn seed(&self) -> Option<u64> {
        self.sampling.get("seed").and_then(Value::as_u64)
    }

    /// The AG-UI `RunAgentInput`, drawing from `seed` in place of the
    /// client's when one is given.
    pub(super) fn to_input(&self, run_id: &str, seed: Option<u64>) -> RunAgentInput {
        let mut sampling = self.sampling.clone();
        if let Some(seed) = seed {
            sampling.insert("seed".into(), json!(seed));
        }
        let mut props = Map::new();
        props.insert("reasoning".into(), Value::Object(self.reasoning.clone()));
        props.insert("sampling".into(), Value::Object(sampling));
        if let Some(format) = &self.response_format {
            props.insert("responseFormat".into(), format.clone());
        }
        if let Some(choice) = &self.tool_choice {
            props.insert("toolChoice".into(), choice.clone());
        }
        if let Some(parallel) = self.parallel_tool_calls {
            props.insert("parallelToolCalls".into(), json!(parallel));
        }
        if let Some(k) = self.logprobs {
            props.insert("logprobs".into(), json!(k));
        }
        if self.prompt_logprobs {
            props.insert("promptLogprobs".into(), json!(true));
        }
        RunAgentInput {
            tools: self.tools.clone(),
            state: Some(json!({})),
            forwarded_props: Some(Value::Object(props)),
            ..RunAgentInput::new(THREAD_ID, run_id, self.messages.clone())
        }
    }

    /// Admits and prepares a run of this input, drawing from `seed` when
    /// one is given (each of several choices draws from a seed of its
    /// own), behind the prompts `ahead` its request admitted before it; a
    /// refusal names the wire parameter at fault. The run starts at
    /// [`Admitted::launch`].
    pub async fn admit(
        &self,
        state: &AppState,
        client: Client,
        seed: Option<u64>,
        ahead: &[usize],
    ) -> Result<Admitted, ApiError> {
        let run_id = format!("run-{}", uuid::Uuid::new_v4().simple());
        let input = self.to_input(&run_id, seed);
        run::admit_input(state, client, input, self.raw.clone(), ahead)
            .await
            .map_err(|rejected| self.refusal(rejected))
    }

    /// Another choice of this input, `first` its first choice's run:
    /// prepared once, admitted again under its own id and seed.
    pub fn admit_sibling(
        &self,
        state: &AppState,
        client: Client,
        first: &Admitted,
        seed: u64,
        ahead: &[usize],
    ) -> Result<Admitted, ApiError> {
        let run_id = format!("run-{}", uuid::Uuid::new_v4().simple());
        run::admit_sibling(state, client, first, run_id, seed, ahead)
            .map_err(|rejected| self.refusal(rejected))
    }

    /// The prompt tokens this input's run would start from, counted by
    /// preparing it; no run starts.
    pub async fn count(&self, state: &AppState, client: Client) -> Result<usize, ApiError> {
        let run_id = format!("count-{}", uuid::Uuid::new_v4().simple());
        run::count_input(state, client, self.to_input(&run_id, None))
            .await
            .map_err(|rejected| self.refusal(rejected))
    }

    /// A refusal from the agent, in wire terms.
    pub fn refusal(&self, rejected: RunRejected) -> ApiError {
        let param = rejected.path.as_deref().map(|p| self.paths.wire(p));
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
        input.text(TextRole::User, "x".into(), None, "messages[0]");
        input.reasoning(
            "reasoning-msg-1",
            Some("AAA"),
            "",
            "messages[1].reasoning_details[0].data",
        );
        input.assistant(Some("y".into()), Vec::new(), None, "messages[1]");
        input.sampling("topP", json!(0.5), "top_p");
        let wire = |p: &str| input.paths.wire(p);
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
    fn a_tool_schema_refusal_names_the_field_its_api_sent() {
        let mut input = RunInput::new();
        input.tool_at("now", "", None, "tools[0].function.parameters");
        input.tool_at("get_weather", "", None, "tools[1].function.parameters");
        let at = "tools[1].parameters/properties/a/type";
        let bad = RunRejected::new(RejectKind::Unprocessable, "INVALID_TOOL_SCHEMA", "no");
        let wire = "tools[1].function.parameters/properties/a/type";
        assert_eq!(input.refusal(bad.at(at)).param.as_deref(), Some(wire));
        assert_eq!(input.paths.wire("tools[0].name"), "tools[0].name");
    }

    #[test]
    fn the_input_is_a_valid_run_agent_input() {
        let mut input = RunInput::new();
        input.text(TextRole::System, "s".into(), None, "messages[0]");
        input.text(TextRole::User, "u".into(), Some("ann"), "messages[1]");
        input.reasoning(
            "r1",
            Some("AAA"),
            "",
            "messages[2].reasoning_details[0].data",
        );
        input.reasoning("", None, "plain", "messages[2].reasoning_content");
        input.assistant(
            Some("a".into()),
            vec![ToolCall::function("c1", "get_weather", "{}")],
            None,
            "messages[2]",
        );
        input.tool_result("c1", "18 °C".into(), "messages[3]");
        input.tool_error("c1", "no such city".into(), "messages[4].content[0]");
        let schema = json!({"type": "object"});
        input.tool_at("get_weather", "", Some(&schema), "tools[0].parameters");
        input.tool_at("now", "", Some(&Value::Null), "tools[1].parameters");
        input.reasoning_control("effort", json!("low"), "reasoning_effort");
        // What the typed input says is what its JSON says: the agent reads
        // the same input as if a client had sent it over AG-UI.
        let typed = input.to_input("run-1", None);
        let bytes = serde_json::to_vec(&typed).unwrap();
        let decoded = thinkwire_protocol::decode_run_agent_input(&bytes).unwrap();
        assert_eq!(decoded, typed);
        assert_eq!(decoded.messages.len(), 7);
        assert_eq!(decoded.tools.len(), 2);
        assert_eq!(decoded.messages[3].id(), "m3");
        let tool = |i: usize| match &decoded.messages[i] {
            Message::Tool(m) => m.clone(),
            other => panic!("not a tool message: {other:?}"),
        };
        assert_eq!(tool(5).error, None);
        assert_eq!(tool(6).error.as_deref(), Some("no such city"));
        assert_eq!(tool(6).content, Content::Text("no such city".into()));
    }

    #[test]
    fn thinking_switched_off_stays_off() {
        let mut input = RunInput::new();
        input.reasoning_control("visibility", json!("full"), "reasoning.visibility");
        input.switch_thinking_off("reasoning_effort");
        assert!(input.thinking_is_off());
        input.reasoning_control("visibility", json!("summary"), "reasoning.summary");
        input.reasoning_control("visibility", json!("hidden"), "reasoning.exclude");
        input.switch_thinking_off("reasoning.enabled");
        // Other controls still go on.
        input.reasoning_control("effort", json!("low"), "reasoning.effort");
        let props = input.to_input("run-1", None).forwarded_props.unwrap();
        assert_eq!(
            props["reasoning"],
            json!({"visibility": "off", "effort": "low"})
        );
        assert_eq!(
            input.paths.wire("forwardedProps.reasoning.visibility"),
            "reasoning_effort"
        );
        // A visibility of `off` is thinking off too.
        let mut input = RunInput::new();
        input.reasoning_control("visibility", json!("off"), "reasoning.visibility");
        input.reasoning_control("visibility", json!("full"), "thinking.visibility");
        assert!(input.thinking_is_off());
    }
}
