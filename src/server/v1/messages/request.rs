//! Decoding an Anthropic Messages request into the run's input.
//!
//! `system` becomes a system message and the messages' content blocks the
//! run's messages ([`blocks`](super::blocks)); tools, sampling, stop
//! sequences, `output_config` and `thinking` become the run's parameters.

use serde_json::{Value, json};

use super::super::bridge::{RunInput, TextRole};
use super::super::carrier::THREAD_ID;
use super::super::content;
use super::super::error::{ApiError, quoted};
use super::super::wire::{At, stop_sequences, unsupported};
use super::blocks::{Opener, assistant, user};
use crate::agent::{Agent, ReasoningPolicy, Visibility};

/// A decoded Messages request.
#[derive(Debug)]
pub struct MessagesRequest {
    /// The run's input.
    pub input: RunInput,
    /// The `model` the client named (echoed back).
    pub model: Option<String>,
    /// Answer as an SSE stream.
    pub stream: bool,
    /// What the client sees of the reasoning.
    pub visibility: Visibility,
    /// Stop sequences (`stop_sequences`).
    pub stop: Vec<String>,
}

/// Decodes `body`; `agent` opens signatures to compare them with the
/// thinking text sent back.
pub fn decode(body: &Value, agent: &Agent) -> Result<MessagesRequest, ApiError> {
    let open = |id: &str, sealed: &str| agent.open_reasoning(THREAD_ID, id, sealed);
    decode_with(body, agent.policy(), &open, Purpose::Create)
}

/// Decodes a `count_tokens` body: a Messages request without
/// `max_tokens`, which counting does not take.
pub fn decode_count(body: &Value, agent: &Agent) -> Result<RunInput, ApiError> {
    let open = |id: &str, sealed: &str| agent.open_reasoning(THREAD_ID, id, sealed);
    Ok(decode_with(body, agent.policy(), &open, Purpose::Count)?.input)
}

/// What a body is decoded for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// `POST /v1/messages`: `max_tokens` required.
    Create,
    /// `POST /v1/messages/count_tokens`: `max_tokens` optional.
    Count,
}

/// Decodes `body` under `policy`, opening signatures with `open`.
fn decode_with(
    body: &Value,
    policy: &ReasoningPolicy,
    open: Opener<'_>,
    purpose: Purpose,
) -> Result<MessagesRequest, ApiError> {
    let root = At::root(body)?;
    let mut input = RunInput::new();
    let max_tokens = root.get("max_tokens");
    match max_tokens.u64()? {
        Some(0) => return Err(max_tokens.invalid("must be a positive integer")),
        Some(n) => input.sampling("maxTokens", json!(n), "max_tokens"),
        None if purpose == Purpose::Count => {}
        None => return Err(max_tokens.invalid("is required")),
    }
    output(&mut input, &root)?;
    if let Some(system) = content::text(&root.get("system"), &["text"])? {
        input.text(TextRole::System, system, None, "system");
    }
    let messages = root.get("messages");
    let items = messages.array()?;
    if items.is_empty() {
        return Err(messages.invalid("must hold at least one message"));
    }
    for item in &items {
        let at = item
            .at()?
            .ok_or_else(|| item.invalid("must be an object"))?;
        match at.get("role").required_str()? {
            "user" => user(&mut input, &at)?,
            "assistant" => assistant(&mut input, &at, open)?,
            other => {
                let message = format!("unknown role {}: use user or assistant", quoted(other));
                return Err(at.get("role").invalid(message));
            }
        }
    }
    tools(&mut input, &root)?;
    for (param, key) in [("temperature", "temperature"), ("top_p", "topP")] {
        if let Some(v) = root.get(param).f64()? {
            input.sampling(key, json!(v), param);
        }
    }
    if let Some(k) = root.get("top_k").u64()? {
        input.sampling("topK", json!(k), "top_k");
    }
    let stop = stop_sequences(&root.get("stop_sequences"), false)?;
    let visibility = thinking(&mut input, &root, policy)?;
    Ok(MessagesRequest {
        input,
        model: root.get("model").str()?.map(str::to_owned),
        stream: root.get("stream").bool()?.unwrap_or(false),
        visibility,
        stop,
    })
}

fn tools(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    let choice = root.get("tool_choice");
    if let Some(c) = choice.at()? {
        let disable = c.get("disable_parallel_tool_use");
        if disable.bool()? == Some(true) {
            input.parallel_tool_calls(false, &disable.path);
        }
    }
    let offer = match choice.at()? {
        None => true,
        Some(c) => match c.get("type").required_str()? {
            "auto" => true,
            "none" => false,
            "any" => {
                input.tool_choice(json!("required"), "tool_choice");
                true
            }
            "tool" => {
                let name = c.get("name").required_str()?;
                input.tool_choice(json!({ "name": name }), "tool_choice");
                true
            }
            _ => {
                return Err(choice.invalid("type must be auto, any, tool or none"));
            }
        },
    };
    for (param, why) in [
        ("container", "code execution containers are not supported"),
        (
            "mcp_servers",
            "MCP servers are not supported: offer their tools as custom tools",
        ),
    ] {
        unsupported(&root.get(param), why)?;
    }
    for tool in root.get("tools").array()? {
        let at = tool
            .at()?
            .ok_or_else(|| tool.invalid("must be an object"))?;
        // A server tool (`web_search_…`, `bash_…`) would be run by the
        // server: offered as a client tool it would never be.
        let kind = at.get("type");
        if kind.str()?.is_some_and(|k| k != "custom") {
            return Err(kind.invalid("only custom tools are supported (no server tools)"));
        }
        let name = at.get("name").required_str()?;
        let description = at.get("description").str()?.unwrap_or("");
        let schema = at.get("input_schema");
        schema.at()?;
        if offer {
            input.tool_at(name, description, schema.value, &schema.path);
        }
    }
    Ok(())
}

/// Anthropic's structured outputs, `output_config.format` (and the beta's
/// `output_format`), both `{type: "json_schema", schema}`, and
/// `output_config.effort` onto the run's effort: `low`, `medium`, and
/// `high` for `high`, `xhigh` and `max`.
fn output(input: &mut RunInput, root: &At<'_>) -> Result<(), ApiError> {
    let beta = root.get("output_format");
    let config = root.get("output_config");
    let mut format = beta
        .value
        .filter(|v| !v.is_null())
        .map(|f| (f, "output_format"));
    if let Some(c) = config.at()? {
        if let Some(f) = c.get("format").value.filter(|v| !v.is_null()) {
            if format.is_some() {
                return Err(c
                    .get("format")
                    .invalid("cannot be given with output_format: send one of them"));
            }
            format = Some((f, "output_config.format"));
        }
        let effort = c.get("effort");
        if let Some(name) = effort.str()? {
            let level = match name {
                "low" | "medium" => name,
                "high" | "xhigh" | "max" => "high",
                _ => return Err(effort.invalid("must be one of low, medium, high, xhigh, max")),
            };
            input.reasoning_control("effort", json!(level), &effort.path);
        }
    }
    if let Some((format, param)) = format {
        input.response_format(format.clone(), param);
    }
    Ok(())
}

/// `thinking: {type: "enabled", budget_tokens, visibility?}` →
/// `forwardedProps.reasoning`. Enabled shows the reasoning (`full`) when
/// the server allows it and `hidden` otherwise, unless thinkwire's
/// `visibility` says; disabled or absent switches thinking off. A budget
/// of 0 is refused: it leaves no room to think, and `disabled` says so.
fn thinking(
    input: &mut RunInput,
    root: &At<'_>,
    policy: &ReasoningPolicy,
) -> Result<Visibility, ApiError> {
    let field = root.get("thinking");
    let visibility = match field.at()? {
        None => Visibility::Off,
        Some(t) => match t.get("type").required_str()? {
            "disabled" => Visibility::Off,
            "enabled" | "adaptive" => {
                let budget = t.get("budget_tokens");
                match budget.u64()? {
                    Some(0) => {
                        return Err(budget.invalid(
                            "must be a positive integer: to switch thinking off, send thinking: {\"type\": \"disabled\"}",
                        ));
                    }
                    Some(n) => input.reasoning_control("budgetTokens", json!(n), &budget.path),
                    None => {}
                }
                let asked = t.get("visibility");
                match asked.str()? {
                    Some(name) => Visibility::parse(name).ok_or_else(|| {
                        asked.invalid("must be one of hidden, summary, full, off")
                    })?,
                    None if policy.allowed_visibility.contains(&Visibility::Full) => {
                        Visibility::Full
                    }
                    None => Visibility::Hidden,
                }
            }
            _ => return Err(t.get("type").invalid("must be enabled or disabled")),
        },
    };
    match visibility {
        // Off whatever else the request says (`output_config.effort`).
        Visibility::Off => input.switch_thinking_off(&field.path),
        shown => input.reasoning_control("visibility", json!(shown.as_str()), &field.path),
    }
    Ok(visibility)
}

#[cfg(test)]
mod tests {
    use super::super::super::wire::MAX_STOP_SEQUENCES;
    use super::*;

    /// `output`'s reading of `body`: the forwarded props it set, or the
    /// refusal.
    fn read(body: Value) -> Result<Value, ApiError> {
        let mut input = RunInput::new();
        output(&mut input, &At::root(&body)?)?;
        Ok(input
            .to_input("r", None)
            .forwarded_props
            .unwrap_or_default())
    }

    /// A whole body as `POST /v1/messages` decodes it, under the default
    /// policy, no signature opening.
    fn decode_body(body: &Value) -> Result<MessagesRequest, ApiError> {
        decode_with(
            body,
            &ReasoningPolicy::default(),
            &|_, _| None,
            Purpose::Create,
        )
    }

    fn asking(key: &str, value: Value) -> Value {
        let mut body = json!({"max_tokens": 10, "messages": [{"role": "user", "content": "x"}]});
        body[key] = value;
        body
    }

    #[test]
    fn a_zero_thinking_budget_is_refused_by_name() {
        for kind in ["enabled", "adaptive"] {
            let body = asking("thinking", json!({"type": kind, "budget_tokens": 0}));
            let err = decode_body(&body).unwrap_err();
            assert_eq!(
                err.param.as_deref(),
                Some("thinking.budget_tokens"),
                "{kind}"
            );
            assert_eq!(err.status, 400);
            assert!(err.message.contains("disabled"), "{}", err.message);
        }
        let body = asking("thinking", json!({"type": "enabled", "budget_tokens": 1}));
        let props = decode_body(&body)
            .unwrap()
            .input
            .to_input("r", None)
            .forwarded_props;
        assert_eq!(props.unwrap()["reasoning"]["budgetTokens"], 1);
        let body = asking("thinking", json!({"type": "enabled", "budget_tokens": -1}));
        let err = decode_body(&body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("thinking.budget_tokens"));
    }

    #[test]
    fn thinking_disabled_stays_off() {
        use crate::agent::ReasoningControls;
        let policy = ReasoningPolicy::default();
        for thinking in [json!({"type": "disabled"}), Value::Null] {
            let mut body = asking("thinking", thinking);
            body["output_config"] = json!({"effort": "high"});
            let request = decode_body(&body).unwrap();
            assert_eq!(request.visibility, Visibility::Off, "{body}");
            let run = request.input.to_input("r", None);
            let controls =
                ReasoningControls::from_forwarded(run.forwarded_props.as_ref(), &policy).unwrap();
            assert_eq!(controls.visibility, Visibility::Off, "{body}");
        }
    }

    #[test]
    fn stop_sequences_are_bounded_and_an_array() {
        let most: Vec<String> = (0..MAX_STOP_SEQUENCES).map(|i| format!("s{i}")).collect();
        let request = decode_body(&asking("stop_sequences", json!(most))).unwrap();
        assert_eq!(request.stop, most);
        let mut more = most.clone();
        more.push("one more".into());
        for bad in [json!(more), json!("END"), json!(["a", 1])] {
            let err = decode_body(&asking("stop_sequences", bad.clone())).unwrap_err();
            let param = err.param.as_deref().unwrap_or_default();
            assert!(param.starts_with("stop_sequences"), "{bad}: {param}");
            assert_eq!(err.status, 400);
        }
    }

    #[test]
    fn an_unknown_role_is_quoted_within_a_bound() {
        let role = "r".repeat(100_000);
        let body = json!({"max_tokens": 10, "messages": [{"role": role, "content": "x"}]});
        let err = decode_body(&body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("messages[0].role"));
        assert!(err.message.len() < 100, "{}", err.message);
    }

    #[test]
    fn output_config_gives_the_format_and_the_effort() {
        let schema = json!({"type": "object"});
        let format = json!({"type": "json_schema", "schema": schema});
        for key in ["output_format", "output_config"] {
            let body = match key {
                "output_format" => json!({"output_format": format}),
                _ => json!({"output_config": {"format": format, "effort": "max"}}),
            };
            let props = read(body).unwrap();
            assert_eq!(props["responseFormat"], format, "{key}");
        }
        let props = read(json!({"output_config": {"format": format, "effort": "max"}})).unwrap();
        assert_eq!(props["reasoning"]["effort"], "high");
        for (asked, level) in [("low", "low"), ("medium", "medium"), ("xhigh", "high")] {
            let props = read(json!({"output_config": {"effort": asked}})).unwrap();
            assert_eq!(props["reasoning"]["effort"], level);
            assert!(props.get("responseFormat").is_none());
        }
    }

    #[test]
    fn server_tools_and_what_runs_them_are_refused_by_name() {
        let read = |body: Value| tools(&mut RunInput::new(), &At::root(&body).unwrap());
        let custom = json!({"name": "f", "input_schema": {"type": "object"}});
        let typed = json!({"type": "custom", "name": "f", "input_schema": {"type": "object"}});
        assert!(read(json!({"tools": [custom, typed]})).is_ok());
        for (body, param) in [
            (
                json!({"tools": [custom, {"type": "web_search_20250305", "name": "web_search"}]}),
                "tools[1].type",
            ),
            (json!({"container": "c_1"}), "container"),
            (
                json!({"mcp_servers": [{"type": "url", "url": "https://x"}]}),
                "mcp_servers",
            ),
        ] {
            let err = read(body.clone()).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{body}");
        }
    }

    #[test]
    fn output_config_refuses_what_it_cannot_take_naming_the_field() {
        let format = json!({"type": "json_schema", "schema": {}});
        for (body, param) in [
            (
                json!({"output_format": format, "output_config": {"format": format}}),
                "output_config.format",
            ),
            (
                json!({"output_config": {"effort": "extreme"}}),
                "output_config.effort",
            ),
            (json!({"output_config": "high"}), "output_config"),
        ] {
            let err = read(body).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{err:?}");
        }
    }
}
