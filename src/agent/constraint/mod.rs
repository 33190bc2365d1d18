//! What a run constrains its output to, read and checked before it
//! starts: `forwardedProps.responseFormat = {type: "json_schema", schema,
//! name?, strict?} | {type: "json_object"} | {type: "text"}` (the answer),
//! `forwardedProps.toolChoice = "auto" | "none" | "required" | {name}`
//! (whether the answer must be a tool call), and the tools' parameter
//! schemas (each call's arguments). A bad schema is refused naming the
//! path inside it. An upstream backend is asked for the same in its API's
//! terms (`upstream`).

use serde_json::Value;
use thinkwire_grammar::{Grammar, GrammarError, Target};
use thinkwire_reasoning::ReasoningStyle;

use super::model::LocalModel;
use super::rejection::{RejectKind, RunRejected};

mod upstream;

pub(crate) use upstream::upstream_answer;

const FIELD: &str = "forwardedProps.responseFormat";

/// The answer's target, if the run asks for one.
pub(crate) fn from_forwarded(forwarded: Option<&Value>) -> Result<Option<Target>, RunRejected> {
    let Some(format) = forwarded.and_then(|f| f.get("responseFormat")) else {
        return Ok(None);
    };
    parse(format, FIELD)
}

/// Parses a response format at `field` (the `/v1` codecs reuse it).
pub(crate) fn parse(format: &Value, field: &str) -> Result<Option<Target>, RunRejected> {
    let bad = |path: String, message: String| {
        RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_RESPONSE_FORMAT",
            message,
        )
        .at(path)
    };
    if format.is_null() {
        return Ok(None);
    }
    let Some(kind) = format.get("type").and_then(Value::as_str) else {
        return Err(bad(
            format!("{field}.type"),
            "type must be \"json_schema\", \"json_object\" or \"text\"".into(),
        ));
    };
    match kind {
        "text" => Ok(None),
        "json_object" => Ok(Some(Target::AnyObject)),
        "json_schema" => {
            // OpenAI nests it as {type, json_schema: {name, schema, strict}}.
            let (schema, at) = match format.get("schema") {
                Some(schema) => (schema, format!("{field}.schema")),
                None => match format.get("json_schema").and_then(|j| j.get("schema")) {
                    Some(schema) => (schema, format!("{field}.json_schema.schema")),
                    None => {
                        return Err(bad(
                            format!("{field}.schema"),
                            "a json_schema response format needs a schema".into(),
                        ));
                    }
                },
            };
            thinkwire_grammar::check_schema(schema).map_err(|e| schema_rejection(e, &at))?;
            Ok(Some(Target::Schema(schema.clone())))
        }
        other => Err(bad(
            format!("{field}.type"),
            format!("unknown response format type {other:?}"),
        )),
    }
}

/// A schema error as a rejection at `field` + the path inside the schema.
pub(crate) fn schema_rejection(err: GrammarError, field: &str) -> RunRejected {
    let path = match &err {
        GrammarError::Schema { path, .. } if !path.is_empty() => format!("{field}{path}"),
        _ => field.to_owned(),
    };
    RunRejected::new(
        RejectKind::Unprocessable,
        "INVALID_RESPONSE_FORMAT",
        err.to_string(),
    )
    .at(path)
}

/// Where the answer's constraint starts in a one-pass generation: a model
/// that reasons in tags answers after its close tag, a Harmony model in
/// its `final` channel (the grammar lets the reasoning through, and the
/// budget's forced close); others answer from the first token.
pub(crate) fn inline_target(
    format: Target,
    reasoning: &ReasoningStyle,
    thinking: bool,
    starts_in_reasoning: bool,
) -> Target {
    match reasoning {
        ReasoningStyle::Tags(tags) if thinking || starts_in_reasoning => Target::AfterReasoning {
            open: (!starts_in_reasoning).then(|| tags.open.clone()),
            close: tags.close.clone(),
            then: Box::new(format),
        },
        // gpt-oss always analyses first (whatever the visibility: that
        // only decides what the client sees), then answers in `final` or
        // calls on `commentary` (a required call's target says so itself).
        ReasoningStyle::Harmony(_) => in_harmony(format),
        _ => format,
    }
}

/// `format` in Harmony's channels: a call on `commentary` as it is, an
/// answer in `final`, each option of a choice so.
fn in_harmony(format: Target) -> Target {
    match format {
        call @ Target::HarmonyCall { .. } => call,
        Target::Either(options) => Target::Either(options.into_iter().map(in_harmony).collect()),
        answer => Target::HarmonyFinal(Box::new(answer)),
    }
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

/// Compiles `target` once over the model's vocabulary, so what the grammar
/// engine cannot enforce is refused before the run starts (under a
/// millisecond for a typical schema).
/// A refusal names `field`, with the path inside the schema after it.
pub(crate) fn check_compiles(
    model: &LocalModel,
    target: &Target,
    field: &str,
) -> Result<(), RunRejected> {
    let vocab = model
        .grammar_vocabulary()
        .map_err(|e| RunRejected::internal(&format!("constrained decoding is unavailable: {e}")))?;
    Grammar::new(vocab, target)
        .map(drop)
        .map_err(|e| schema_rejection(e, field))
}

/// How the client named its response format, for whoever shows it to a
/// model (an upstream's API, a Harmony prompt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormatLabel {
    /// Its `name`; `answer` when it gave none.
    pub name: String,
    /// Its `description`.
    pub description: Option<String>,
    /// OpenAI's strict mode, when asked.
    pub strict: Option<bool>,
}

/// The response format's label, flat (`{type, name, description, strict,
/// schema}`) or nested as OpenAI's `{type, json_schema: {name, …}}`.
pub(crate) fn format_label(forwarded: Option<&Value>) -> FormatLabel {
    let format = forwarded.and_then(|f| f.get("responseFormat"));
    // Where `parse` took the schema from: flat when it has one.
    let inner = match format.and_then(|f| f.get("schema")) {
        Some(_) => format,
        None => format.and_then(|f| f.get("json_schema")).or(format),
    };
    let text = |key| inner.and_then(|f| f.get(key)).and_then(Value::as_str);
    FormatLabel {
        name: text("name").unwrap_or("answer").to_owned(),
        description: text("description").map(str::to_owned),
        strict: inner.and_then(|f| f.get("strict")).and_then(Value::as_bool),
    }
}

/// Where `forwardedProps.responseFormat`'s schema sits: `.schema`, or
/// OpenAI's nested `.json_schema.schema`.
pub(crate) fn schema_field(forwarded: Option<&Value>) -> String {
    let nested = forwarded
        .and_then(|f| f.get("responseFormat"))
        .is_some_and(|r| r.get("schema").is_none() && r.get("json_schema").is_some());
    match nested {
        true => format!("{FIELD}.json_schema.schema"),
        false => format!("{FIELD}.schema"),
    }
}

/// The structured strategy's object: reasoning (about four characters a
/// token of `budget`), then the answer.
pub(crate) fn structured_reasoning(budget: usize) -> Target {
    Target::Schema(serde_json::json!({
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": budget.saturating_mul(4).max(1)},
            "answer": {"type": "string"},
        },
        "required": ["reasoning", "answer"],
        "additionalProperties": false,
    }))
}

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
                    format!("no tool named {name:?} is offered"),
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
/// no value satisfies is refused rather than left out of the calls.
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
    fn a_refusal_points_where_the_schema_sits() {
        let flat = json!({"responseFormat": {"type": "json_schema", "schema": {}}});
        let nested =
            json!({"responseFormat": {"type": "json_schema", "json_schema": {"schema": {}}}});
        assert_eq!(
            schema_field(Some(&flat)),
            "forwardedProps.responseFormat.schema"
        );
        assert_eq!(
            schema_field(Some(&nested)),
            "forwardedProps.responseFormat.json_schema.schema"
        );
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
    fn reads_each_type_and_refuses_bad_schemas_at_their_path() {
        assert_eq!(from_forwarded(None).unwrap(), None);
        let f = json!({"responseFormat": {"type": "text"}});
        assert_eq!(from_forwarded(Some(&f)).unwrap(), None);
        let f = json!({"responseFormat": {"type": "json_object"}});
        assert_eq!(from_forwarded(Some(&f)).unwrap(), Some(Target::AnyObject));
        let schema = json!({"type": "object"});
        let f = json!({"responseFormat": {"type": "json_schema", "schema": schema, "name": "x"}});
        assert_eq!(
            from_forwarded(Some(&f)).unwrap(),
            Some(Target::Schema(schema.clone()))
        );
        let f =
            json!({"responseFormat": {"type": "json_schema", "json_schema": {"schema": schema}}});
        assert!(from_forwarded(Some(&f)).unwrap().is_some());

        let f = json!({"responseFormat": {"type": "json_schema", "schema": {"properties": {"a": {"type": "nope"}}}}});
        let err = from_forwarded(Some(&f)).unwrap_err();
        assert_eq!(err.code, "INVALID_RESPONSE_FORMAT");
        assert_eq!(
            err.path.as_deref(),
            Some("forwardedProps.responseFormat.schema/properties/a/type")
        );
        for f in [
            json!({"responseFormat": {"type": "xml"}}),
            json!({"responseFormat": {}}),
            json!({"responseFormat": {"type": "json_schema"}}),
        ] {
            assert!(from_forwarded(Some(&f)).is_err(), "{f}");
        }
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
