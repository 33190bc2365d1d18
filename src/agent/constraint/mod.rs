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
use super::rejection::{RejectKind, RunRejected, quoted};

mod tools;
mod upstream;

pub(crate) use tools::{
    ToolChoice, answer_or_calls, check_tools, one_call, required_call, tool_choice, tool_target,
};
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
            format!("unknown response format type {}", quoted(other)),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
