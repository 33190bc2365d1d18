//! The tools' side of what a run is constrained to: `toolChoice`,
//! `parallelToolCalls`, a required call's target, the calls beside a
//! response format, and the tools' schemas checked before the run.

use serde_json::Value;
use thinkwire_grammar::{Grammar, GrammarError, Target};

use crate::agent::model::LocalModel;
use crate::agent::rejection::{RejectKind, RunRejected, quoted};

/// `forwardedProps.toolChoice`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// No tools are offered to the model.
    None,
    /// The answer is one or more calls of these tools (all of them, or
    /// the one named).
    Required(Vec<thinkwire_protocol::Tool>),
}

/// Whether the run makes at most one tool call: `forwardedProps.
/// parallelToolCalls: false` (OpenAI's `parallel_tool_calls`). The pass
/// stops when its first call ends.
pub(crate) fn one_call(forwarded: Option<&Value>) -> Result<bool, RunRejected> {
    const AT: &str = "forwardedProps.parallelToolCalls";
    match forwarded.and_then(|f| f.get("parallelToolCalls")) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(parallel)) => Ok(!parallel),
        Some(_) => Err(RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_TOOL_CHOICE",
            "must be a boolean",
        )
        .at(AT)),
    }
}

/// Reads `forwardedProps.toolChoice` against the run's `tools`.
pub(crate) fn tool_choice(
    forwarded: Option<&Value>,
    tools: &[thinkwire_protocol::Tool],
) -> Result<ToolChoice, RunRejected> {
    const AT: &str = "forwardedProps.toolChoice";
    let bad = |path: &str, message: String| {
        RunRejected::new(RejectKind::Unprocessable, "INVALID_TOOL_CHOICE", message).at(path)
    };
    let Some(choice) = forwarded.and_then(|f| f.get("toolChoice")) else {
        return Ok(ToolChoice::Auto);
    };
    let required = |selected: Vec<thinkwire_protocol::Tool>| {
        if selected.is_empty() {
            Err(bad(
                AT,
                "a required tool call needs at least one tool".into(),
            ))
        } else {
            Ok(ToolChoice::Required(selected))
        }
    };
    match choice {
        Value::Null => Ok(ToolChoice::Auto),
        Value::String(s) if s == "auto" => Ok(ToolChoice::Auto),
        Value::String(s) if s == "none" => Ok(ToolChoice::None),
        Value::String(s) if s == "required" => required(tools.to_vec()),
        Value::Object(o) => {
            let Some(name) = o.get("name").and_then(Value::as_str) else {
                return Err(bad(&format!("{AT}.name"), "names the tool to call".into()));
            };
            let tool: Vec<_> = tools.iter().filter(|t| t.name == name).cloned().collect();
            if tool.is_empty() {
                return Err(bad(
                    &format!("{AT}.name"),
                    format!("no tool named {} is offered", quoted(name)),
                ));
            }
            required(tool)
        }
        _ => Err(bad(
            AT,
            "must be \"auto\", \"none\", \"required\" or {\"name\": ...}".into(),
        )),
    }
}

/// The answer of a run that must call a tool: the format's tagged calls
/// of `tools`, or a Harmony `commentary` call; other formats (list-style
/// calls, none at all) cannot be made to.
pub(crate) fn required_call(
    tools: &[thinkwire_protocol::Tool],
    syntax: &thinkwire_reasoning::ToolSyntax,
) -> Result<Target, RunRejected> {
    use thinkwire_reasoning::ToolSyntax;
    match (syntax, tool_target(tools)) {
        (ToolSyntax::TaggedJson(tags), Some(call)) if !tags.list => Ok(Target::Tagged {
            open: tags.open.clone(),
            close: tags.close.clone(),
            then: Box::new(call),
        }),
        (ToolSyntax::Harmony(harmony), Some(Target::ToolCall(tools))) => Ok(Target::HarmonyCall {
            namespace: harmony.namespace.clone(),
            tools,
        }),
        _ => Err(RunRejected::new(
            RejectKind::Unprocessable,
            "UNSUPPORTED_TOOL_CHOICE",
            "this model's tool calls cannot be required (they are neither tagged JSON nor Harmony)",
        )
        .at("forwardedProps.toolChoice")),
    }
}

/// The target a tool call's JSON must meet: one of `tools`, with its
/// parameters (any object where a tool declares none).
pub(crate) fn tool_target(tools: &[thinkwire_protocol::Tool]) -> Option<Target> {
    if tools.is_empty() {
        return None;
    }
    let calls = tools
        .iter()
        .map(|t| {
            let params = t
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            (t.name.clone(), params)
        })
        .collect();
    Some(Target::ToolCall(calls))
}

/// Compiles each tool's call target, so a tool schema the grammar engine
/// cannot use is refused before the run starts, at `tools[i].parameters`:
/// one at a time, so the refusal names its tool, and a tool whose schema
/// no value satisfies is refused rather than left out of the calls. An
/// agent's tools come again every turn: the vocabulary keeps what
/// compiled, so a later run copies each instead.
pub(crate) fn check_tools(model: &LocalModel, target: &Target) -> Result<(), RunRejected> {
    let Target::ToolCall(tools) = target else {
        return Ok(());
    };
    let vocab = model
        .grammar_vocabulary()
        .map_err(|e| RunRejected::internal(&format!("constrained decoding is unavailable: {e}")))?;
    for (i, tool) in tools.iter().enumerate() {
        let one = Target::ToolCall(vec![tool.clone()]);
        Grammar::new(vocab, &one)
            .map(drop)
            .map_err(|e| tool_rejection(e, i))?;
    }
    Ok(())
}

/// A schema error of the one tool `index`'s target (paths under
/// `/tools/0/`) as a rejection at `tools[index]`.
fn tool_rejection(err: GrammarError, index: usize) -> RunRejected {
    let path = match &err {
        GrammarError::Schema { path, .. } => match path.strip_prefix("/tools/0/") {
            Some(rest) => format!("tools[{index}].{rest}"),
            None => format!("tools[{index}]"),
        },
        _ => format!("tools[{index}]"),
    };
    RunRejected::new(
        RejectKind::Unprocessable,
        "INVALID_TOOL_SCHEMA",
        err.to_string(),
    )
    .at(path)
}

/// A response format beside tools the model may call (`toolChoice:
/// auto`): the answer is the format, or the format's calls of `tools` (as
/// OpenAI's API has it), so a format does not take the tools away. A
/// format whose calls cannot be constrained keeps the format alone.
pub(crate) fn answer_or_calls(
    format: Target,
    tools: &[thinkwire_protocol::Tool],
    syntax: &thinkwire_reasoning::ToolSyntax,
) -> Target {
    match required_call(tools, syntax) {
        Ok(calls) if !tools.is_empty() => Target::Either(vec![format, calls]),
        _ => format,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parallel_tool_calls_false_means_one_call() {
        assert_eq!(one_call(None), Ok(false));
        for (props, one) in [
            (json!({}), false),
            (json!({"parallelToolCalls": null}), false),
            (json!({"parallelToolCalls": true}), false),
            (json!({"parallelToolCalls": false}), true),
        ] {
            assert_eq!(one_call(Some(&props)), Ok(one), "{props}");
        }
        let err = one_call(Some(&json!({"parallelToolCalls": "no"}))).unwrap_err();
        assert_eq!(
            err.path.as_deref(),
            Some("forwardedProps.parallelToolCalls")
        );
    }

    #[test]
    fn tool_choice_reads_each_form_and_refuses_unknown_tools() {
        let tools: Vec<thinkwire_protocol::Tool> = serde_json::from_value(json!([
            {"name": "a", "description": ""}, {"name": "b", "description": ""}
        ]))
        .unwrap();
        let choice = |c: Value| tool_choice(Some(&json!({"toolChoice": c})), &tools);
        assert_eq!(tool_choice(None, &tools).unwrap(), ToolChoice::Auto);
        assert_eq!(choice(json!("none")).unwrap(), ToolChoice::None);
        assert_eq!(
            choice(json!("required")).unwrap(),
            ToolChoice::Required(tools.clone())
        );
        let ToolChoice::Required(one) = choice(json!({"name": "b"})).unwrap() else {
            panic!("not required");
        };
        assert_eq!(one[0].name, "b");
        let err = choice(json!({"name": "c"})).unwrap_err();
        assert_eq!(err.path.as_deref(), Some("forwardedProps.toolChoice.name"));
        assert!(choice(json!(3)).is_err());
        assert!(tool_choice(Some(&json!({"toolChoice": "required"})), &[]).is_err());
    }

    #[test]
    fn tools_become_one_call_target() {
        assert_eq!(tool_target(&[]), None);
        let tools: Vec<thinkwire_protocol::Tool> = serde_json::from_value(json!([
            {"name": "a", "description": "", "parameters": {"type": "object"}},
            {"name": "b", "description": ""}
        ]))
        .unwrap();
        let Some(Target::ToolCall(calls)) = tool_target(&tools) else {
            panic!("no target");
        };
        assert_eq!(calls[1], ("b".to_owned(), json!({"type": "object"})));
    }

    #[test]
    fn a_tool_schema_refusal_names_its_tool() {
        let at = |path: &str| {
            let err = GrammarError::Schema {
                path: path.into(),
                message: "x".into(),
            };
            tool_rejection(err, 3).path
        };
        assert_eq!(
            at("/tools/0/parameters/properties/a/type").as_deref(),
            Some("tools[3].parameters/properties/a/type")
        );
        assert_eq!(
            at("/tools/0/parameters").as_deref(),
            Some("tools[3].parameters")
        );
        assert_eq!(at("").as_deref(), Some("tools[3]"));
    }
}
