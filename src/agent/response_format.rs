//! `forwardedProps.responseFormat = {type: "json_schema", schema, name?,
//! strict?} | {type: "json_object"} | {type: "text"}`: what the answer must
//! be. Checked before the run starts; a bad schema is refused naming the
//! path inside it.

use serde_json::Value;
use thinkwire_grammar::{Grammar, GrammarError, Target};
use thinkwire_reasoning::ReasoningStyle;

use super::model::Model;
use super::rejection::{RejectKind, RunRejected};

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
/// that reasons in tags answers after its close tag (the grammar lets the
/// reasoning through, and the budget's forced close); others answer from
/// the first token.
pub(crate) fn inline_target(
    format: Target,
    reasoning: &ReasoningStyle,
    thinking: bool,
    starts_in_reasoning: bool,
) -> Result<Target, RunRejected> {
    match reasoning {
        ReasoningStyle::Tags(tags) if thinking || starts_in_reasoning => {
            Ok(Target::AfterReasoning {
                open: (!starts_in_reasoning).then(|| tags.open.clone()),
                close: tags.close.clone(),
                then: Box::new(format),
            })
        }
        ReasoningStyle::Harmony(_) => Err(RunRejected::new(
            RejectKind::Unprocessable,
            "UNSUPPORTED_RESPONSE_FORMAT",
            "this model answers in Harmony channels; a response format is not supported for it yet",
        )
        .at(FIELD)),
        _ => Ok(format),
    }
}

/// Compiles `target` once over the model's vocabulary, so what the grammar
/// engine cannot enforce is refused before the run starts (under a
/// millisecond for a typical schema).
pub(crate) fn check_compiles(model: &Model, target: &Target) -> Result<(), RunRejected> {
    let vocab = model
        .grammar_vocabulary()
        .map_err(|e| RunRejected::internal(&format!("constrained decoding is unavailable: {e}")))?;
    Grammar::new(vocab, target)
        .map(drop)
        .map_err(|e| schema_rejection(e, &format!("{FIELD}.schema")))
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

/// Compiles the tools' target once, so a tool schema the grammar engine
/// cannot use is refused before the run starts, at `tools[i].parameters`.
pub(crate) fn check_tools(model: &Model, target: &Target) -> Result<(), RunRejected> {
    let vocab = model
        .grammar_vocabulary()
        .map_err(|e| RunRejected::internal(&format!("constrained decoding is unavailable: {e}")))?;
    Grammar::new(vocab, target).map(drop).map_err(|e| {
        let path = match &e {
            GrammarError::Schema { path, .. } => path
                .strip_prefix("/tools/")
                .and_then(|rest| rest.split_once('/'))
                .map(|(i, rest)| format!("tools[{i}].{rest}"))
                .unwrap_or_else(|| "tools".into()),
            _ => "tools".into(),
        };
        RunRejected::new(
            RejectKind::Unprocessable,
            "INVALID_TOOL_SCHEMA",
            e.to_string(),
        )
        .at(path)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
}
