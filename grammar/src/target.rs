//! What a generation is constrained to, and the checks a schema passes
//! before a run starts.

use llguidance::api::TopLevelGrammar;
use serde_json::{Value, json};

use crate::GrammarError;
use crate::depth::check_depth;
use crate::patterns::check_patterns;

/// What to constrain the output to. It serializes to key the compiled
/// grammars a vocabulary keeps.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Target {
    /// JSON that validates against this schema (`json_schema`).
    Schema(Value),
    /// Any JSON object (`json_object`).
    AnyObject,
    /// A tool call's body: `{"name": <one of the tools>, "arguments":
    /// <that tool's parameters>}`, after optional whitespace (Hermes
    /// `<tool_call>`, the Harmony `commentary` recipient's JSON).
    ToolCall(Vec<(String, Value)>),
    /// `then` between an open and a close tag, one or more times with
    /// whitespace between (tool calls the run requires: Hermes
    /// `<tool_call>…</tool_call>`).
    Tagged {
        /// The open tag.
        open: String,
        /// The close tag.
        close: String,
        /// What goes between them.
        then: Box<Target>,
    },
    /// A thinking model's answer: free reasoning up to the `close` marker,
    /// then optional whitespace and `then`. With an `open` marker the
    /// reasoning block is optional (the model opens it); without one the
    /// output starts inside it (the prompt opened it).
    AfterReasoning {
        /// The marker that opens reasoning, if the model writes it.
        open: Option<String>,
        /// The marker that closes it.
        close: String,
        /// What the answer must be.
        then: Box<Target>,
    },
    /// A Harmony (gpt-oss) answer: `analysis` messages written freely,
    /// each closed and the next message opened (`<|end|><|start|>assistant`),
    /// then the `final` channel's message as `then`. The special tokens
    /// are the format's own, so only they open and close a message.
    HarmonyFinal(Box<Target>),
    /// One of these: a response format, or the calls of the tools offered
    /// beside it (so a format does not take the tools away).
    Either(Vec<Target>),
    /// A Harmony tool call the run requires: free `analysis` messages as
    /// in [`Target::HarmonyFinal`], then a `commentary` message to
    /// `namespace` + one of `tools` (name, parameters), whose body is that
    /// tool's arguments; the generation's stop (`<|call|>`) follows.
    HarmonyCall {
        /// The recipients' prefix (`functions.`).
        namespace: String,
        /// The tools that may be called, with their parameters.
        tools: Vec<(String, Value)>,
    },
}

/// How the JSON may be laid out: at most one space between tokens, so a
/// model writes compact (`{"a":1}`, gpt-oss) or spaced (`{"a": 1}`, most
/// others) JSON as it learned to, but no newlines or runs of spaces, which
/// small models can otherwise fill forever.
fn layout() -> Value {
    json!({"whitespace_flexible": true, "whitespace_pattern": "[ ]?"})
}

impl Target {
    /// The grammar engine's form of the target.
    pub(crate) fn grammar(&self) -> Result<TopLevelGrammar, GrammarError> {
        match self {
            Self::Schema(schema) => {
                check_schema(schema)?;
                Ok(TopLevelGrammar::from_json_schema(with_layout(schema)))
            }
            Self::AnyObject => Ok(TopLevelGrammar::from_json_schema(with_layout(
                &json!({"type": "object"}),
            ))),
            Self::ToolCall(_)
            | Self::Either(_)
            | Self::Tagged { .. }
            | Self::AfterReasoning { .. }
            | Self::HarmonyFinal(_)
            | Self::HarmonyCall { .. } => {
                let lark = format!("start: {}\nWS: /[ \\t\\n]+/\n", self.lark()?);
                Ok(TopLevelGrammar::from_lark(lark))
            }
        }
    }

    /// The target as the right-hand side of a Lark rule (with any rules it
    /// needs after it); `WS` is whitespace.
    fn lark(&self) -> Result<String, GrammarError> {
        match self {
            Self::Schema(schema) => {
                check_schema(schema)?;
                Ok(format!("%json {}", with_layout(schema)))
            }
            Self::AnyObject => Ok(format!("%json {}", with_layout(&json!({"type": "object"})))),
            Self::Tagged { open, close, then } => Ok(format!(
                "tagged (WS? tagged)*\ntagged: {} {} WS? {}",
                quote(open),
                then.lark()?,
                quote(close)
            )),
            Self::AfterReasoning { open, close, then } => {
                let think = format!("think[suffix={}]: /(?s:.*)/", quote(close));
                let start = match open {
                    Some(open) => format!("({} think WS?)? answer", quote(open)),
                    None => "think WS? answer".into(),
                };
                Ok(format!("{start}\nanswer: {}\n{think}", then.lark()?))
            }
            Self::Either(options) => {
                if options.is_empty() {
                    return Err(GrammarError::Schema {
                        path: String::new(),
                        message: "a choice of targets needs at least one".into(),
                    });
                }
                // Each option's first line is its right-hand side, the rest
                // its rules; options may share a rule (Harmony's analysis),
                // written once.
                let mut sides = Vec::with_capacity(options.len());
                let mut rules: Vec<String> = Vec::new();
                for option in options {
                    let lark = option.lark()?;
                    let mut lines = lark.lines();
                    sides.push(format!("({})", lines.next().unwrap_or_default()));
                    for rule in lines {
                        if !rules.iter().any(|r| r == rule) {
                            rules.push(rule.to_owned());
                        }
                    }
                }
                let mut lark = sides.join(" | ");
                for rule in rules {
                    lark.push('\n');
                    lark.push_str(&rule);
                }
                Ok(lark)
            }
            Self::HarmonyFinal(then) => Ok(format!(
                "analysis* <|channel|> \"final\" <|message|> answer\n{HARMONY_ANALYSIS}\nanswer: {}",
                then.lark()?
            )),
            Self::HarmonyCall { namespace, tools } => {
                if tools.is_empty() {
                    return Err(no_tools());
                }
                let mut calls = Vec::with_capacity(tools.len());
                for (i, (name, params)) in tools.iter().enumerate() {
                    check_schema(params).map_err(|e| e.under(&format!("/tools/{i}/parameters")))?;
                    calls.push(format!(
                        "{} header %json {}",
                        quote(&format!("{namespace}{name}")),
                        with_layout(&tool_arguments(params, i))
                    ));
                }
                // gpt-oss's header: `commentary to=functions.NAME
                // <|constrain|>json<|message|>`; the content type may go.
                Ok(format!(
                    "analysis* <|channel|> \"commentary to=\" call\n\
                     call: {}\n\
                     header: (\" \" <|constrain|> \"json\")? <|message|>\n{HARMONY_ANALYSIS}",
                    calls.join(" | ")
                ))
            }
            Self::ToolCall(tools) => {
                let mut calls = Vec::with_capacity(tools.len());
                for (i, (name, params)) in tools.iter().enumerate() {
                    check_schema(params).map_err(|e| e.under(&format!("/tools/{i}/parameters")))?;
                    calls.push(json!({
                        "type": "object",
                        "properties": {"name": {"const": name}, "arguments": tool_arguments(params, i)},
                        "required": ["name", "arguments"],
                        "additionalProperties": false,
                    }));
                }
                if calls.is_empty() {
                    return Err(no_tools());
                }
                Ok(format!(
                    "WS? %json {}",
                    with_layout(&json!({"anyOf": calls}))
                ))
            }
        }
    }
}

impl Target {
    /// One tool call's arguments alone (Harmony's call body, after the
    /// header names the tool): an object under the tool's `params`.
    #[must_use]
    pub fn arguments(params: &Value) -> Self {
        Self::Schema(tool_arguments(params, 0))
    }

    /// The client's schemas inside the target, each with the path its
    /// errors are named under (`""`, `/tools/1/parameters`).
    pub(crate) fn schemas(&self) -> Vec<(String, &Value)> {
        match self {
            Self::Schema(schema) => vec![(String::new(), schema)],
            Self::AnyObject => Vec::new(),
            Self::ToolCall(tools) | Self::HarmonyCall { tools, .. } => tools
                .iter()
                .enumerate()
                .map(|(i, (_, params))| (format!("/tools/{i}/parameters"), params))
                .collect(),
            Self::Tagged { then, .. }
            | Self::AfterReasoning { then, .. }
            | Self::HarmonyFinal(then) => then.schemas(),
            Self::Either(options) => options.iter().flat_map(Self::schemas).collect(),
        }
    }
}

/// Harmony's `analysis` message, written freely. Special tokens are
/// `<|name|>` outside quotes; a text regex never matches one, so the
/// analysis ends only at `<|end|>`, and the next message opens.
const HARMONY_ANALYSIS: &str = "analysis: <|channel|> \"analysis\" <|message|> note <|end|> <|start|> \"assistant\"\n\
     note: /(?s:.*)/";

/// A call target offered no tools.
fn no_tools() -> GrammarError {
    GrammarError::Schema {
        path: "/tools".into(),
        message: "a tool call needs at least one tool".into(),
    }
}

/// A Lark string literal.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// `schema` with the layout options (`true` becomes `{}`: anything).
fn with_layout(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(_) => schema.clone(),
        _ => json!({}),
    };
    if let Value::Object(map) = &mut schema {
        map.insert("x-guidance".into(), layout());
    }
    schema
}

/// Refuses a schema that is not a valid JSON Schema, naming the path
/// inside it (a JSON pointer). What the grammar engine cannot enforce is
/// refused when the grammar is built ([`crate::Grammar::new`]).
pub fn check_schema(schema: &Value) -> Result<(), GrammarError> {
    match schema {
        Value::Bool(true) | Value::Object(_) => {}
        Value::Bool(false) => {
            return Err(GrammarError::Schema {
                path: String::new(),
                message: "`false` allows no value".into(),
            });
        }
        _ => {
            return Err(GrammarError::Schema {
                path: String::new(),
                message: "a schema is a JSON object".into(),
            });
        }
    }
    jsonschema::meta::validate(schema).map_err(|e| GrammarError::Schema {
        path: e.instance_path().to_string(),
        message: e.masked().to_string(),
    })?;
    check_depth(schema)?;
    check_patterns(schema)
}

/// A tool's arguments as the call's grammar takes them: its parameters,
/// as their own document (`$id`), so `#/$defs/…` and `#` mean the tool's
/// schema, not the call around it, and an object whatever they say (a
/// call's arguments are one).
fn tool_arguments(params: &Value, index: usize) -> Value {
    let mut own = match params {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    own.entry("$id")
        .or_insert_with(|| json!(format!("urn:thinkwire:tool:{index}")));
    json!({"type": "object", "allOf": [own]})
}

impl GrammarError {
    /// The same error with its schema path under `prefix`.
    #[must_use]
    pub(crate) fn under(self, prefix: &str) -> Self {
        match self {
            Self::Schema { path, message } => Self::Schema {
                path: format!("{prefix}{path}"),
                message,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_schema_is_refused_at_its_path() {
        let bad = json!({"type": "object", "properties": {"age": {"type": "integr"}}});
        let Err(GrammarError::Schema { path, .. }) = check_schema(&bad) else {
            panic!("accepted a bad type");
        };
        assert_eq!(path, "/properties/age/type");
        let bad = json!({"type": "object", "required": "name"});
        let Err(GrammarError::Schema { path, .. }) = check_schema(&bad) else {
            panic!("accepted a bad required");
        };
        assert_eq!(path, "/required");
        assert!(check_schema(&json!(false)).is_err());
        assert!(check_schema(&json!([1])).is_err());
        assert!(check_schema(&json!(true)).is_ok());
    }

    #[test]
    fn a_tool_schema_error_names_the_tool() {
        let target = Target::ToolCall(vec![
            ("ok".into(), json!({"type": "object"})),
            ("bad".into(), json!({"type": 5})),
        ]);
        let Err(GrammarError::Schema { path, .. }) = target.grammar() else {
            panic!("accepted a bad tool schema");
        };
        assert_eq!(path, "/tools/1/parameters/type");
    }
}
