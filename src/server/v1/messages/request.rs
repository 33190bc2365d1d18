//! Decoding an Anthropic Messages request into the run's input.
//!
//! `system` becomes a system message; each user message's `tool_result`
//! blocks become tool messages and its text a user message; each assistant
//! message's `thinking` blocks (their `signature`) and `redacted_thinking`
//! blocks (their `data`) become reasoning messages carrying the sealed
//! value, followed by the assistant message with its text and `tool_use`
//! calls. A `thinking` block whose text differs from the reasoning its
//! signature seals is refused: the signature is the reasoning.

use serde_json::{Value, json};

use thinkwire_protocol::ToolCall;

use super::super::bridge::{RunInput, TextRole};
use super::super::carrier::{self, THREAD_ID};
use super::super::chat::strings;
use super::super::content;
use super::super::error::ApiError;
use super::super::wire::{At, Field, unsupported};
use crate::agent::{Agent, Visibility};

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
    decode_for(body, agent, Purpose::Create)
}

/// Decodes a `count_tokens` body: a Messages request without
/// `max_tokens`, which counting does not take.
pub fn decode_count(body: &Value, agent: &Agent) -> Result<RunInput, ApiError> {
    Ok(decode_for(body, agent, Purpose::Count)?.input)
}

/// What a body is decoded for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// `POST /v1/messages`: `max_tokens` required.
    Create,
    /// `POST /v1/messages/count_tokens`: `max_tokens` optional.
    Count,
}

fn decode_for(body: &Value, agent: &Agent, purpose: Purpose) -> Result<MessagesRequest, ApiError> {
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
            "assistant" => assistant(&mut input, &at, agent)?,
            other => {
                return Err(at
                    .get("role")
                    .invalid(format!("unknown role {other:?}: use user or assistant")));
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
    let stop = strings(&root.get("stop_sequences"))?;
    let visibility = thinking(&mut input, &root, agent)?;
    Ok(MessagesRequest {
        input,
        model: root.get("model").str()?.map(str::to_owned),
        stream: root.get("stream").bool()?.unwrap_or(false),
        visibility,
        stop,
    })
}

/// The blocks of a message's `content` (a string is one text block).
fn blocks<'a>(at: &At<'a>) -> Result<(Option<String>, Vec<Field<'a>>), ApiError> {
    let field = at.get("content");
    match field.value {
        Some(Value::String(text)) => Ok((Some(text.clone()), Vec::new())),
        Some(Value::Array(_)) => Ok((None, field.array()?)),
        Some(_) => Err(field.invalid("must be a string or an array of content blocks")),
        None => Err(field.invalid("is required")),
    }
}

fn user(input: &mut RunInput, at: &At<'_>) -> Result<(), ApiError> {
    let (text, blocks) = blocks(at)?;
    let mut text = text.unwrap_or_default();
    for block in &blocks {
        let b = block
            .at()?
            .ok_or_else(|| block.invalid("must be an object"))?;
        match b.get("type").required_str()? {
            "text" => text.push_str(b.get("text").required_str()?),
            "tool_result" => {
                let id = b.get("tool_use_id").required_str()?;
                let result = content::text(&b.get("content"), &["text"])?.unwrap_or_default();
                input.tool_result(id, result, &block.path);
            }
            other => {
                return Err(block.invalid(format!(
                    "content blocks of type {other:?} are not supported: this model reads text only"
                )));
            }
        }
    }
    if !text.is_empty() || blocks.is_empty() {
        input.text(TextRole::User, text, None, at.path());
    }
    Ok(())
}

fn assistant(input: &mut RunInput, at: &At<'_>, agent: &Agent) -> Result<(), ApiError> {
    let (text, blocks) = blocks(at)?;
    let mut text = text.unwrap_or_default();
    let mut calls = Vec::new();
    for block in &blocks {
        let b = block
            .at()?
            .ok_or_else(|| block.invalid("must be an object"))?;
        match b.get("type").required_str()? {
            "text" => text.push_str(b.get("text").required_str()?),
            "thinking" => {
                let shown = b.get("thinking").str()?.unwrap_or("");
                let signature = b.get("signature");
                match signature.str()?.filter(|s| !s.is_empty()) {
                    Some(value) => {
                        let (id, sealed) = carrier::unpack(value).ok_or_else(|| {
                            signature.invalid("is not a signature of this server")
                        })?;
                        if let Some(reasoning) = agent.open_reasoning(THREAD_ID, id, sealed)
                            && !shown.is_empty()
                            && shown != reasoning
                        {
                            return Err(b.get("thinking").invalid(
                                "differs from the reasoning its signature seals: send thinking blocks back unchanged",
                            ));
                        }
                        input.reasoning(id, Some(sealed), "", &signature.path);
                    }
                    // A summary's block (its reasoning travels in the
                    // redacted block after it), or client-written thinking.
                    None if !shown.is_empty() => {
                        input.reasoning("", None, shown, &b.child_path("thinking"));
                    }
                    None => {}
                }
            }
            "redacted_thinking" => {
                let data = b.get("data");
                let (id, sealed) = carrier::unpack(data.required_str()?)
                    .ok_or_else(|| data.invalid("is not a value sealed by this server"))?;
                input.reasoning(id, Some(sealed), "", &data.path);
            }
            "tool_use" => {
                let id = b.get("id").required_str()?;
                let name = b.get("name").required_str()?;
                let arguments = b.get("input").value.cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall::function(id, name, arguments.to_string()));
            }
            other => {
                return Err(block.invalid(format!("unknown content block type {other:?}")));
            }
        }
    }
    input.assistant(Some(text), calls, None, at.path());
    Ok(())
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
            input.tool(name, description, schema.value);
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
/// `visibility` says; disabled or absent switches thinking off.
fn thinking(input: &mut RunInput, root: &At<'_>, agent: &Agent) -> Result<Visibility, ApiError> {
    let field = root.get("thinking");
    let visibility = match field.at()? {
        None => Visibility::Off,
        Some(t) => match t.get("type").required_str()? {
            "disabled" => Visibility::Off,
            "enabled" | "adaptive" => {
                if let Some(budget) = t.get("budget_tokens").u64()? {
                    input.reasoning_control(
                        "budgetTokens",
                        json!(budget.max(1)),
                        &t.child_path("budget_tokens"),
                    );
                }
                let asked = t.get("visibility");
                match asked.str()? {
                    Some(name) => Visibility::parse(name).ok_or_else(|| {
                        asked.invalid("must be one of hidden, summary, full, off")
                    })?,
                    None if agent
                        .policy()
                        .allowed_visibility
                        .contains(&Visibility::Full) =>
                    {
                        Visibility::Full
                    }
                    None => Visibility::Hidden,
                }
            }
            _ => return Err(t.get("type").invalid("must be enabled or disabled")),
        },
    };
    input.reasoning_control("visibility", json!(visibility.as_str()), &field.path);
    Ok(visibility)
}

#[cfg(test)]
mod tests {
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
