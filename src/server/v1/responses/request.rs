//! Decoding a Responses request into the run's input.
//!
//! Only `store: false` exists here (nothing is kept; an absent `store`
//! reads as false): `store: true`, `previous_response_id`, `conversation`,
//! `background`, `prompt` and `item_reference` items are refused with why. `input` items map onto
//! AG-UI messages: `reasoning` items (their `encrypted_content`) become
//! reasoning messages carrying the sealed value, consecutive assistant
//! `message` and `function_call` items one assistant message, and
//! `function_call_output` items tool messages.

use serde_json::{Value, json};

use thinkwire_protocol::ToolCall;

use super::super::bridge::{RunInput, TextRole};
use super::super::carrier;
use super::super::chat::{effort_control, top_logprobs};
use super::super::content;
use super::super::error::{ApiError, quoted};
use super::super::wire::{At, Field, unsupported};
use crate::agent::{Agent, ReasoningPolicy, Visibility};

const TEXT_PARTS: &[&str] = &["input_text", "output_text", "text"];

/// A decoded Responses request.
#[derive(Debug)]
pub struct ResponsesRequest {
    /// The run's input.
    pub input: RunInput,
    /// The `model` the client named (echoed back).
    pub model: Option<String>,
    /// Answer as an SSE stream.
    pub stream: bool,
    /// What the client sees of the reasoning.
    pub visibility: Visibility,
    /// Reasoning items carry `encrypted_content`.
    pub include_encrypted: bool,
}

/// Decodes `body`.
pub fn decode(body: &Value, agent: &Agent) -> Result<ResponsesRequest, ApiError> {
    let root = At::root(body)?;
    stateless(&root)?;
    let mut input = RunInput::new();
    if let Some(instructions) = root.get("instructions").str()? {
        input.text(
            TextRole::System,
            instructions.to_owned(),
            None,
            "instructions",
        );
    }
    let items = root.get("input");
    match items.value {
        Some(Value::String(text)) => input.text(TextRole::User, text.clone(), None, "input"),
        Some(Value::Array(_)) => input_items(&mut input, &items)?,
        Some(_) => return Err(items.invalid("must be a string or an array of items")),
        None => return Err(items.invalid("is required")),
    }
    tools(&mut input, &root)?;
    for (param, key) in [("temperature", "temperature"), ("top_p", "topP")] {
        if let Some(v) = root.get(param).f64()? {
            input.sampling(key, json!(v), param);
        }
    }
    text_format(&mut input, &root)?;
    let max = root.get("max_output_tokens");
    match max.u64()? {
        Some(0) => return Err(max.invalid("must be a positive integer")),
        Some(n) => input.sampling("maxTokens", json!(n), "max_output_tokens"),
        None => {}
    }
    let include_encrypted = include(&mut input, &root)?;
    let visibility = reasoning(&mut input, &root, agent.policy())?;
    Ok(ResponsesRequest {
        input,
        model: root.get("model").str()?.map(str::to_owned),
        stream: root.get("stream").bool()?.unwrap_or(false),
        visibility,
        include_encrypted,
    })
}

/// `text: {format}` onto `forwardedProps.responseFormat`: a `text` that
/// is not an object is refused rather than dropped, and a `null` format
/// asks for none.
fn text_format(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    let field = root.get("text");
    if let Some(text) = field.at()?
        && let Some(format) = text.get("format").value
    {
        input.response_format(format.clone(), "text.format");
    }
    Ok(())
}

/// Whether `include` asks for reasoning items' `encrypted_content`; and
/// the answer tokens' log-probabilities onto `forwardedProps.logprobs`,
/// asked for by `include: ["message.output_text.logprobs"]` or by
/// `top_logprobs` alternatives (0 to 20) past none.
fn include(input: &mut RunInput, root: &At<'_>) -> Result<bool, ApiError> {
    let top = root.get("top_logprobs");
    let alternatives = top_logprobs(&top)?;
    let mut encrypted = false;
    let mut logprobs = false;
    for item in root.get("include").array()? {
        match item.str()? {
            Some("reasoning.encrypted_content") => encrypted = true,
            Some("message.output_text.logprobs") => logprobs = true,
            _ => {}
        }
    }
    match (logprobs, alternatives) {
        (_, Some(k @ 1..)) => input.logprobs(k, "top_logprobs"),
        (true, _) => input.logprobs(0, "include"),
        (false, _) => {}
    }
    Ok(encrypted)
}

/// An assistant message being gathered from consecutive items.
#[derive(Default)]
struct Assistant {
    text: String,
    calls: Vec<ToolCall>,
    path: Option<String>,
}

impl Assistant {
    fn flush(&mut self, input: &mut RunInput) {
        let Some(path) = self.path.take() else {
            return;
        };
        let text = std::mem::take(&mut self.text);
        input.assistant(Some(text), std::mem::take(&mut self.calls), None, &path);
    }

    fn at(&mut self, path: &str) {
        self.path.get_or_insert_with(|| path.to_owned());
    }
}

fn input_items(input: &mut RunInput, items: &Field<'_>) -> Result<(), ApiError> {
    let mut assistant = Assistant::default();
    for item in items.array()? {
        let at = item
            .at()?
            .ok_or_else(|| item.invalid("must be an object"))?;
        let kind = at.get("type").str()?.unwrap_or("message");
        match kind {
            "message" => {
                let role = at.get("role").required_str()?;
                let text = content::text(&at.get("content"), TEXT_PARTS)?.unwrap_or_default();
                match role {
                    "assistant" => {
                        assistant.at(&item.path);
                        assistant.text.push_str(&text);
                    }
                    "user" | "system" | "developer" => {
                        assistant.flush(input);
                        let role = TextRole::parse(role).unwrap_or(TextRole::User);
                        input.text(role, text, None, &item.path);
                    }
                    other => {
                        let message = format!("unknown role {}", quoted(other));
                        return Err(at.get("role").invalid(message));
                    }
                }
            }
            "reasoning" => {
                assistant.flush(input);
                reasoning_item(input, &at)?;
            }
            "function_call" => {
                assistant.at(&item.path);
                let call_id = at.get("call_id").required_str()?;
                let name = at.get("name").required_str()?;
                let arguments = at.get("arguments").str()?.unwrap_or("{}");
                assistant
                    .calls
                    .push(ToolCall::function(call_id, name, arguments));
            }
            "function_call_output" => {
                assistant.flush(input);
                let call_id = at.get("call_id").required_str()?;
                let output = content::text(&at.get("output"), TEXT_PARTS)?.unwrap_or_default();
                input.tool_result(call_id, output, &item.path);
            }
            "item_reference" => {
                return Err(item.invalid(
                    "item references need stored responses; this server keeps none (store: false)",
                ));
            }
            other => {
                return Err(at
                    .get("type")
                    .invalid(format!("unsupported item type {}", quoted(other))));
            }
        }
    }
    assistant.flush(input);
    Ok(())
}

/// A `reasoning` item: its `encrypted_content`, or else plaintext
/// `content` reasoning text (the AG-UI trust policy applies).
fn reasoning_item(input: &mut RunInput, at: &At<'_>) -> Result<(), ApiError> {
    let encrypted = at.get("encrypted_content");
    if let Some(value) = encrypted.str()? {
        let (id, sealed) = carrier::unpack(value)
            .ok_or_else(|| encrypted.invalid("is not a value sealed by this server"))?;
        input.reasoning(id, Some(sealed), "", &encrypted.path);
        return Ok(());
    }
    let mut text = String::new();
    for part in at.get("content").array()? {
        if let Some(p) = part.at()? {
            text.push_str(p.get("text").str()?.unwrap_or(""));
        }
    }
    if !text.is_empty() {
        input.reasoning("", None, &text, &at.child_path("content"));
    }
    Ok(())
}

fn tools(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    let choice = root.get("tool_choice");
    let offer = match choice.value {
        None => true,
        Some(Value::String(s)) if s == "auto" => true,
        Some(Value::String(s)) if s == "none" => false,
        Some(Value::String(s)) if s == "required" => {
            input.tool_choice(json!("required"), "tool_choice");
            true
        }
        Some(Value::Object(_)) => {
            let at = choice
                .at()?
                .ok_or_else(|| choice.invalid("must be an object"))?;
            let name = at.get("name").required_str()?;
            input.tool_choice(json!({ "name": name }), "tool_choice");
            true
        }
        Some(_) => {
            return Err(choice.invalid(
                "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}",
            ));
        }
    };
    if let Some(parallel) = root.get("parallel_tool_calls").bool()? {
        input.parallel_tool_calls(parallel, "parallel_tool_calls");
    }
    for tool in root.get("tools").array()? {
        let at = tool
            .at()?
            .ok_or_else(|| tool.invalid("must be an object"))?;
        if at.get("type").required_str()? != "function" {
            return Err(at.get("type").invalid("only function tools are supported"));
        }
        let name = at.get("name").required_str()?;
        let description = at.get("description").str()?.unwrap_or("");
        let parameters = at.get("parameters");
        parameters.at()?;
        if offer {
            input.tool_at(name, description, parameters.value, &parameters.path);
        }
    }
    Ok(())
}

/// Refuses what needs state kept on the server (nothing is): `store:
/// true`, an earlier response or conversation by id, a background
/// response, a stored prompt.
fn stateless(root: &At<'_>) -> Result<(), ApiError> {
    if root.get("store").bool()? == Some(true) {
        return Err(root.get("store").invalid(
            "only store: false is supported: thinkwire keeps nothing; carry reasoning with include: [\"reasoning.encrypted_content\"]",
        ));
    }
    for (param, why) in [
        (
            "previous_response_id",
            "responses are not stored (store: false); send the earlier output items back in input",
        ),
        (
            "conversation",
            "conversations are not stored (store: false); send the earlier items back in input",
        ),
        (
            "background",
            "background responses are not supported (nothing is stored to poll); stream instead",
        ),
        (
            "prompt",
            "stored prompts are not supported: send the instructions and input themselves",
        ),
    ] {
        unsupported(&root.get(param), why)?;
    }
    Ok(())
}

/// `reasoning: {effort, summary, visibility}`: a requested `summary` shows
/// the summary, thinkwire's `visibility` chooses outright, and otherwise
/// the server's default applies; `effort: "none"` switches thinking off,
/// and neither of the others turns it back on.
fn reasoning(
    input: &mut RunInput,
    root: &At<'_>,
    policy: &ReasoningPolicy,
) -> Result<Visibility, ApiError> {
    let field = root.get("reasoning");
    let mut visibility = policy.default_visibility;
    let Some(at) = field.at()? else {
        return Ok(visibility);
    };
    if let Some(effort) = at.get("effort").str()? {
        effort_control(input, effort, &at.get("effort"))?;
    }
    if at.get("summary").str()?.is_some_and(|s| s != "none") {
        visibility = Visibility::Summary;
        input.reasoning_control("visibility", json!("summary"), &at.child_path("summary"));
    }
    let asked = at.get("visibility");
    if let Some(name) = asked.str()? {
        visibility = Visibility::parse(name)
            .ok_or_else(|| asked.invalid("must be one of hidden, summary, full, off"))?;
        input.reasoning_control("visibility", json!(name), &asked.path);
    }
    if input.thinking_is_off() {
        visibility = Visibility::Off;
    }
    Ok(visibility)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_needs_stored_state_is_refused_by_name() {
        let read = |body: Value| stateless(&At::root(&body).unwrap());
        assert!(read(json!({"background": false, "previous_response_id": null})).is_ok());
        for (param, value) in [
            ("store", json!(true)),
            ("previous_response_id", json!("resp_1")),
            ("conversation", json!("conv_1")),
            ("background", json!(true)),
            ("prompt", json!({"id": "pmpt_1"})),
        ] {
            let err = read(json!({ param: value })).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param));
        }
    }

    /// `effort: "none"` wins over a `summary` or a `visibility` beside it:
    /// the controls the agent reads say thinking off, and so does the
    /// visibility the output is written for.
    #[test]
    fn effort_none_keeps_thinking_off() {
        use crate::agent::ReasoningControls;
        let policy = ReasoningPolicy::default();
        for reasoning in [
            json!({"effort": "none", "summary": "detailed"}),
            json!({"effort": "none", "summary": "auto", "visibility": "full"}),
            json!({"effort": "none"}),
        ] {
            let body = json!({ "reasoning": reasoning });
            let mut input = RunInput::new();
            let shown = super::reasoning(&mut input, &At::root(&body).unwrap(), &policy).unwrap();
            assert_eq!(shown, Visibility::Off, "{body}");
            let run = input.to_input("run-1", None);
            let controls =
                ReasoningControls::from_forwarded(run.forwarded_props.as_ref(), &policy).unwrap();
            assert_eq!(controls.visibility, Visibility::Off, "{body}");
        }
        // Without `none`, the summary is what the run gets.
        let body = json!({"reasoning": {"effort": "low", "summary": "detailed"}});
        let mut input = RunInput::new();
        let shown = super::reasoning(&mut input, &At::root(&body).unwrap(), &policy).unwrap();
        assert_eq!(shown, Visibility::Summary);
    }

    #[test]
    fn text_must_be_an_object_and_a_null_format_is_none() {
        let read = |body: Value| {
            let mut input = RunInput::new();
            text_format(&mut input, &At::root(&body).unwrap())?;
            let props = input.to_input("run-1", None).forwarded_props;
            Ok::<_, ApiError>(props.unwrap_or_default()["responseFormat"].clone())
        };
        let format = json!({"type": "json_schema", "name": "n", "schema": {"type": "object"}});
        assert_eq!(read(json!({"text": {"format": format}})), Ok(format));
        for nothing in [
            json!({}),
            json!({"text": null}),
            json!({"text": {}}),
            json!({"text": {"format": null, "verbosity": "low"}}),
        ] {
            assert_eq!(read(nothing.clone()), Ok(Value::Null), "{nothing}");
        }
        for bad in [json!("json"), json!(["format"]), json!(3), json!(true)] {
            let err = read(json!({ "text": bad })).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("text"), "{bad}");
            assert_eq!(err.status, 400);
        }
    }

    #[test]
    fn an_unknown_item_type_is_quoted_within_a_bound() {
        let long = "x".repeat(10_000);
        let body = json!({"input": [{"type": long}]});
        let root = At::root(&body).unwrap();
        let err = input_items(&mut RunInput::new(), &root.get("input")).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("input[0].type"));
        assert!(err.message.len() < 100, "{}", err.message);
        assert!(err.message.ends_with('…'), "{}", err.message);
    }

    #[test]
    fn log_probabilities_are_asked_for_or_refused_by_name() {
        let read = |body: Value| {
            let mut input = RunInput::new();
            let encrypted = include(&mut input, &At::root(&body).unwrap())?;
            Ok::<_, ApiError>((encrypted, input.asks_logprobs()))
        };
        assert_eq!(
            read(json!({"include": ["reasoning.encrypted_content"], "top_logprobs": 0})),
            Ok((true, false))
        );
        assert_eq!(
            read(json!({"include": [], "top_logprobs": null})),
            Ok((false, false))
        );
        assert_eq!(
            read(json!({"include": ["message.output_text.logprobs"]})),
            Ok((false, true))
        );
        assert_eq!(read(json!({"top_logprobs": 3})), Ok((false, true)));
        for (body, param) in [
            (
                json!({"include": ["message.output_text.logprobs", 3]}),
                "include[1]",
            ),
            (json!({"top_logprobs": 21}), "top_logprobs"),
            (json!({"top_logprobs": "3"}), "top_logprobs"),
        ] {
            let err = read(body.clone()).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{body}");
            assert_eq!(err.status, 400);
        }
    }
}
