//! Decoding a chat completions request into the run's input.
//!
//! Messages map one to one onto AG-UI messages; an assistant message's
//! `reasoning_details` entries of type `reasoning.encrypted` become
//! reasoning messages carrying the sealed value (opened by the agent), and
//! plaintext `reasoning_content` / `reasoning` becomes a plaintext reasoning
//! message (the same trust policy as AG-UI). Sampling and reasoning
//! parameters become `forwardedProps`.

use serde_json::{Value, json};

use thinkwire_protocol::ToolCall;

use super::super::bridge::{RunInput, TextRole};
use super::super::carrier;
use super::super::content;
use super::super::error::{ApiError, quoted};
use super::super::wire::{At, Field, choices, stop_sequences, strings, unsupported};
use super::sampling::sampling;

/// Content part types holding text.
const TEXT_PARTS: &[&str] = &["text", "input_text", "output_text"];

/// A decoded chat completions request.
#[derive(Debug)]
pub struct ChatRequest {
    /// The run's input.
    pub input: RunInput,
    /// The `model` the client named (echoed back).
    pub model: Option<String>,
    /// Answer as an SSE stream.
    pub stream: bool,
    /// Send a usage chunk before `[DONE]`.
    pub include_usage: bool,
    /// Stop sequences (`stop`).
    pub stop: Vec<String>,
    /// How many answers to write (`n`).
    pub choices: usize,
}

/// Decodes `body`.
pub fn decode(body: &Value) -> Result<ChatRequest, ApiError> {
    let root = At::root(body)?;
    let mut input = RunInput::new();
    let messages = root.get("messages");
    let items = messages.array()?;
    if items.is_empty() {
        return Err(messages.invalid("must hold at least one message"));
    }
    for item in &items {
        message(&mut input, item)?;
    }
    tools(&mut input, &root)?;
    sampling(&mut input, &root)?;
    reasoning(&mut input, &root)?;
    let choices = choices(&root.get("n"))?;
    for (param, why) in [
        (
            "functions",
            "legacy function calling is not supported: offer them as tools",
        ),
        (
            "function_call",
            "legacy function calling is not supported: use tool_choice",
        ),
        (
            "audio",
            "audio output is not supported: this model writes text",
        ),
        (
            "web_search_options",
            "web search is not offered: this server has no built-in tools",
        ),
    ] {
        unsupported(&root.get(param), why)?;
    }
    let modalities = root.get("modalities");
    if strings(&modalities)?.iter().any(|m| m != "text") {
        return Err(modalities.invalid("only the text modality is supported"));
    }
    let Delivery {
        stream,
        include_usage,
        stop,
    } = delivery(&root)?;
    Ok(ChatRequest {
        input,
        model: root.get("model").str()?.map(str::to_owned),
        stream,
        include_usage,
        stop,
        choices,
    })
}

/// How chat and legacy completions deliver an answer: `stream`,
/// `stream_options.include_usage`, and `stop` (a string or strings).
pub struct Delivery {
    pub stream: bool,
    pub include_usage: bool,
    pub stop: Vec<String>,
}

/// The [`Delivery`] parameters of a chat or completions request.
pub fn delivery(root: &At<'_>) -> Result<Delivery, ApiError> {
    let include_usage = match root.get("stream_options").at()? {
        Some(options) => options.get("include_usage").bool()?.unwrap_or(false),
        None => false,
    };
    let stop = stop_sequences(&root.get("stop"), true)?;
    Ok(Delivery {
        stream: root.get("stream").bool()?.unwrap_or(false),
        include_usage,
        stop,
    })
}

fn message(input: &mut RunInput, item: &Field<'_>) -> Result<(), ApiError> {
    let at = item
        .at()?
        .ok_or_else(|| item.invalid("must be an object"))?;
    let path = at.path().to_owned();
    let role = at.get("role").required_str()?;
    let text = content::text(&at.get("content"), TEXT_PARTS)?;
    let name = at.get("name").str()?;
    if let Some(role) = TextRole::parse(role) {
        let text = text.ok_or_else(|| at.get("content").invalid("is required"))?;
        input.text(role, text, name, &path);
        return Ok(());
    }
    match role {
        "tool" => {
            let id = at.get("tool_call_id").required_str()?;
            input.tool_result(id, text.unwrap_or_default(), &path);
        }
        "assistant" => {
            assistant_reasoning(input, &at)?;
            let calls = tool_calls(&at.get("tool_calls"))?;
            input.assistant(text, calls, name, &path);
        }
        other => {
            return Err(at.get("role").invalid(format!(
                "unknown role {}: use system, developer, user, assistant or tool",
                quoted(other)
            )));
        }
    }
    Ok(())
}

/// The reasoning an assistant message carries back: sealed entries of
/// `reasoning_details`, or else plaintext `reasoning_content` / `reasoning`.
fn assistant_reasoning(input: &mut RunInput, at: &At<'_>) -> Result<(), ApiError> {
    let mut sealed = 0;
    for detail in at.get("reasoning_details").array()? {
        let entry = detail
            .at()?
            .ok_or_else(|| detail.invalid("must be an object"))?;
        if entry.get("type").str()? != Some("reasoning.encrypted") {
            continue;
        }
        let data = entry.get("data");
        let (id, value) = carrier::unpack(data.required_str()?)
            .ok_or_else(|| data.invalid("is not a value sealed by this server"))?;
        input.reasoning(id, Some(value), "", &data.path);
        sealed += 1;
    }
    if sealed == 0 {
        for key in ["reasoning_content", "reasoning"] {
            let field = at.get(key);
            if let Some(text) = field.str()?.filter(|t| !t.is_empty()) {
                input.reasoning("", None, text, &field.path);
                break;
            }
        }
    }
    Ok(())
}

fn tool_calls(field: &Field<'_>) -> Result<Vec<ToolCall>, ApiError> {
    let mut calls = Vec::new();
    for call in field.array()? {
        let at = call
            .at()?
            .ok_or_else(|| call.invalid("must be an object"))?;
        let id = at.get("id").required_str()?;
        let function = at.get("function");
        let function = function
            .at()?
            .ok_or_else(|| function.invalid("is required"))?;
        let name = function.get("name").required_str()?;
        let arguments = function.get("arguments").str()?.unwrap_or("{}");
        calls.push(ToolCall::function(id, name, arguments));
    }
    Ok(calls)
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
            let name = choice
                .at()?
                .map(|c| c.get("function"))
                .ok_or_else(|| choice.invalid("must be an object"))?;
            let name = name
                .at()?
                .ok_or_else(|| name.invalid("is required"))?
                .get("name")
                .required_str()?;
            input.tool_choice(json!({ "name": name }), "tool_choice");
            true
        }
        Some(_) => {
            return Err(choice.invalid(
                "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
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
        let kind = at.get("type").str()?.unwrap_or("function");
        if kind != "function" {
            return Err(at.get("type").invalid("only function tools are supported"));
        }
        let function = at.get("function");
        let function = function
            .at()?
            .ok_or_else(|| function.invalid("is required"))?;
        let name = function.get("name").required_str()?;
        let description = function.get("description").str()?.unwrap_or("");
        let parameters = function.get("parameters");
        parameters.at()?;
        if offer {
            input.tool_at(name, description, parameters.value, &parameters.path);
        }
    }
    Ok(())
}

/// `reasoning_effort` (OpenAI) and `reasoning` (OpenRouter's object, plus
/// thinkwire's `visibility`) → `forwardedProps.reasoning`.
fn reasoning(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    if let Some(effort) = root.get("reasoning_effort").str()? {
        effort_control(input, effort, &root.get("reasoning_effort"))?;
    }
    let field = root.get("reasoning");
    let Some(at) = field.at()? else {
        return Ok(());
    };
    if let Some(effort) = at.get("effort").str()? {
        effort_control(input, effort, &at.get("effort"))?;
    }
    if let Some(max) = at.get("max_tokens").u64()? {
        input.reasoning_control("budgetTokens", json!(max), &at.child_path("max_tokens"));
    }
    if at.get("exclude").bool()? == Some(true) {
        input.reasoning_control("visibility", json!("hidden"), &at.child_path("exclude"));
    }
    if let Some(visibility) = at.get("visibility").str()? {
        input.reasoning_control(
            "visibility",
            json!(visibility),
            &at.child_path("visibility"),
        );
    }
    // OpenRouter's switch: `false` thinks not at all, so nothing beside it
    // may ask for reasoning (`exclude` only hides it: `off` hides it too);
    // off stays off whatever was written before it. `true` is the default.
    let enabled = at.get("enabled");
    if enabled.bool()? == Some(false) {
        let asks = at.get("effort").value.is_some()
            || at.get("max_tokens").value.is_some()
            || at.get("visibility").str()?.is_some_and(|v| v != "off")
            || root
                .get("reasoning_effort")
                .str()?
                .is_some_and(|e| e != "none");
        if asks {
            return Err(enabled.invalid(
                "is false, but effort, max_tokens, visibility or reasoning_effort asks for reasoning",
            ));
        }
        input.switch_thinking_off(&enabled.path);
    }
    Ok(())
}

/// OpenAI's effort names onto the run's: `none` switches thinking off
/// (and no visibility written after it turns it back on), `minimal` is
/// `low`, `xhigh` is `high`.
pub fn effort_control(
    input: &mut RunInput,
    effort: &str,
    field: &Field<'_>,
) -> Result<(), ApiError> {
    let level = match effort {
        "none" => {
            input.switch_thinking_off(&field.path);
            return Ok(());
        }
        "minimal" | "low" => "low",
        "medium" => "medium",
        "high" | "xhigh" => "high",
        _ => {
            return Err(field.invalid("must be one of none, minimal, low, medium, high, xhigh"));
        }
    };
    input.reasoning_control("effort", json!(level), &field.path);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_conversation_with_sealed_reasoning() {
        let body = json!({
            "model": "m", "stream": true, "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": null,
                 "reasoning_details": [{"type": "reasoning.encrypted", "data": "tw1.r1.AAAA"}],
                 "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "reasoning_effort": "low", "temperature": 0, "max_tokens": 10,
        });
        let request = decode(&body).unwrap();
        assert!(request.stream && request.include_usage);
        assert_eq!(request.model.as_deref(), Some("m"));
        assert_eq!(request.choices, 1);
        let body = json!({"messages": [{"role": "user", "content": "x"}], "n": 128});
        assert_eq!(decode(&body).unwrap().choices, 128);
        // Asking for nothing passes.
        let body = json!({"messages": [{"role": "user", "content": "x"}], "functions": [],
            "audio": null, "modalities": ["text"]});
        assert!(decode(&body).is_ok());
    }

    #[test]
    fn reasoning_can_be_switched_off_but_not_while_asked_for() {
        let visibility = |reasoning: Value| {
            let body =
                json!({"messages": [{"role": "user", "content": "x"}], "reasoning": reasoning});
            let props = decode(&body)?.input.to_input("run-1", None).forwarded_props;
            Ok::<_, ApiError>(props.unwrap()["reasoning"]["visibility"].clone())
        };
        assert_eq!(visibility(json!({"enabled": false})), Ok(json!("off")));
        assert_eq!(visibility(json!({"enabled": true})), Ok(Value::Null));
        // Hiding what is not thought is no contradiction; `off` wins.
        assert_eq!(
            visibility(json!({"enabled": false, "exclude": true})),
            Ok(json!("off"))
        );
        for bad in [
            json!({"enabled": false, "effort": "high"}),
            json!({"enabled": false, "max_tokens": 100}),
            json!({"enabled": false, "visibility": "full"}),
            json!({"enabled": "no"}),
        ] {
            let err = visibility(bad.clone()).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("reasoning.enabled"), "{bad}");
        }
        let body = json!({"messages": [{"role": "user", "content": "x"}],
            "reasoning_effort": "high", "reasoning": {"enabled": false}});
        let err = decode(&body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("reasoning.enabled"));
    }

    /// `none` is sticky: a visibility asked for beside it (`exclude`,
    /// thinkwire's `visibility`) does not have the model think after all,
    /// and a policy without `off` names the parameter that asked for it.
    #[test]
    fn effort_none_keeps_thinking_off_whatever_follows() {
        use crate::agent::{ReasoningControls, ReasoningPolicy, Visibility};
        let user = json!([{"role": "user", "content": "x"}]);
        for (effort, reasoning) in [
            (json!("none"), json!({"exclude": true})),
            (json!("none"), json!({"visibility": "full"})),
            (
                json!("none"),
                json!({"visibility": "summary", "exclude": true}),
            ),
            (
                json!(null),
                json!({"effort": "none", "visibility": "summary"}),
            ),
        ] {
            let body =
                json!({"messages": user, "reasoning_effort": effort, "reasoning": reasoning});
            let input = decode(&body).unwrap().input;
            let run = input.to_input("run-1", None);
            let policy = ReasoningPolicy::default();
            let controls =
                ReasoningControls::from_forwarded(run.forwarded_props.as_ref(), &policy).unwrap();
            assert_eq!(controls.visibility, Visibility::Off, "{body}");
            let strict = ReasoningPolicy {
                allowed_visibility: [Visibility::Hidden, Visibility::Summary, Visibility::Full]
                    .into_iter()
                    .collect(),
                ..ReasoningPolicy::default()
            };
            let rejected = ReasoningControls::from_forwarded(run.forwarded_props.as_ref(), &strict)
                .unwrap_err();
            let param = match effort {
                Value::Null => "reasoning.effort",
                _ => "reasoning_effort",
            };
            assert_eq!(
                input.refusal(rejected).param.as_deref(),
                Some(param),
                "{body}"
            );
        }
    }

    #[test]
    fn refusals_name_the_parameter() {
        let cases = [
            (json!({"messages": []}), "messages"),
            (
                json!({"messages": [{"role": "robot", "content": "x"}]}),
                "messages[0].role",
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
                "messages[0].content[0]",
            ),
            (
                json!({"messages": [{"role": "assistant", "reasoning_details": [{"type": "reasoning.encrypted", "data": "junk"}]}]}),
                "messages[0].reasoning_details[0].data",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}),
                "temperature",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "n": 0}),
                "n",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "n": 129}),
                "n",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "n": 1.5}),
                "n",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"}),
                "tool_choice",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"}),
                "reasoning_effort",
            ),
            (
                json!({"messages": [{"role": "tool", "content": "x"}]}),
                "messages[0].tool_call_id",
            ),
        ];
        // What asks for something this server does not do.
        let user = json!([{"role": "user", "content": "x"}]);
        let asking = [
            ("functions", json!([{"name": "f", "parameters": {}}])),
            ("function_call", json!("auto")),
            ("audio", json!({"voice": "alloy", "format": "wav"})),
            ("web_search_options", json!({})),
            ("modalities", json!(["text", "audio"])),
        ]
        .map(|(param, value)| (json!({"messages": user, param: value}), param));
        let cases = cases.into_iter().chain(asking);
        for (body, param) in cases {
            let err = decode(&body).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{body}");
            assert_eq!(err.status, 400);
        }
    }
}
