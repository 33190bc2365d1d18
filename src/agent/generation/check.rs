//! The safety net under a schema's grammar: the finished answer, parsed
//! and validated against the client's JSON Schema by a validator. The
//! grammar engine has known gaps (an escaped quote through a `pattern`
//! class such as `^[^"]*$`, integer bounds past 2^53 rounded to f64), and
//! an answer not reported incomplete must be one that validates.

use serde_json::Value;
use thinkwire_grammar::Target;

/// The client's schema a finished answer is checked against, and the
/// answer's text so far.
#[derive(Debug)]
pub(super) struct SchemaCheck {
    schema: Value,
    text: String,
    /// The model called a tool instead (a format beside tools): its answer
    /// is the calls, which their own grammar held to the tools' schemas.
    called: bool,
}

impl SchemaCheck {
    /// The check of an answer under `target`, where that is a client's
    /// schema (`json_schema`), alone or after reasoning; `json_object` and
    /// tool calls have none (their grammars are thinkwire's own, and a
    /// call's arguments are checked where the call ends).
    pub fn of(target: &Target) -> Option<Self> {
        answer_schema(target).map(|schema| Self {
            schema: schema.clone(),
            text: String::new(),
            called: false,
        })
    }

    /// More of the answer's text.
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// The model called a tool: the answer is not held to the format.
    pub fn called(&mut self) {
        self.called = true;
    }

    /// Whether the answer validates. Logs only the fact when it does not:
    /// never the text or the schema.
    pub fn holds(&self) -> bool {
        if self.called {
            return true;
        }
        match verdict(&self.schema, &self.text) {
            Verdict::Valid => true,
            // Not ours to refuse: the grammar let it end, and the schema
            // passed the meta-schema when the run was prepared.
            Verdict::Unchecked => {
                tracing::warn!("no validator for the answer's schema; the answer is not checked");
                true
            }
            verdict @ (Verdict::Invalid | Verdict::NotJson) => {
                tracing::warn!(
                    problem = verdict.as_str(),
                    "a constrained answer does not validate against its schema; reported incomplete"
                );
                false
            }
        }
    }
}

/// The client's schema inside `target`, if the answer is held to one.
fn answer_schema(target: &Target) -> Option<&Value> {
    match target {
        Target::Schema(schema) => Some(schema),
        Target::AfterReasoning { then, .. } | Target::HarmonyFinal(then) => answer_schema(then),
        Target::Either(options) => options.iter().find_map(answer_schema),
        Target::AnyObject
        | Target::ToolCall(_)
        | Target::Tagged { .. }
        | Target::HarmonyCall { .. } => None,
    }
}

/// What validating an answer found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// JSON that validates.
    Valid,
    /// JSON that does not.
    Invalid,
    /// Not JSON at all.
    NotJson,
    /// The validator could not be built from the schema (an external
    /// `$ref`, which nothing here resolves).
    Unchecked,
}

impl Verdict {
    /// The log's name for it.
    fn as_str(self) -> &'static str {
        match self {
            Self::Valid => "valid",
            Self::Invalid => "invalid",
            Self::NotJson => "not_json",
            Self::Unchecked => "unchecked",
        }
    }
}

/// Parses `text` (whitespace around it allowed) and validates it against
/// `schema`.
fn verdict(schema: &Value, text: &str) -> Verdict {
    let Ok(answer) = serde_json::from_str::<Value>(text) else {
        return Verdict::NotJson;
    };
    match jsonschema::validator_for(schema) {
        Ok(validator) if validator.is_valid(&answer) => Verdict::Valid,
        Ok(_) => Verdict::Invalid,
        Err(_) => Verdict::Unchecked,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn person() -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string"}},
            "required": ["name"], "additionalProperties": false})
    }

    #[test]
    fn a_valid_answer_validates() {
        assert_eq!(verdict(&person(), r#"{"name": "Ana"}"#), Verdict::Valid);
        // The whitespace after a reasoning block's close is no JSON error.
        assert_eq!(
            verdict(&person(), "\n\n{\"name\":\"Ana\"} "),
            Verdict::Valid
        );
        assert_eq!(verdict(&json!({"type": "integer"}), "12"), Verdict::Valid);
        assert_eq!(verdict(&json!(true), "[1, 2]"), Verdict::Valid);
    }

    #[test]
    fn an_invalid_answer_does_not() {
        assert_eq!(verdict(&person(), r#"{"name": 7}"#), Verdict::Invalid);
        assert_eq!(
            verdict(&person(), r#"{"name": "a", "x": 1}"#),
            Verdict::Invalid
        );
        // What the grammar engine lets through a pattern class: an escaped
        // quote in a string whose pattern has none.
        let no_quote = json!({"type": "string", "pattern": "^[^\"]*$"});
        assert_eq!(verdict(&no_quote, r#""plain""#), Verdict::Valid);
        assert_eq!(verdict(&no_quote, r#""a\"b""#), Verdict::Invalid);
    }

    #[test]
    fn text_that_is_not_json_is_not_valid() {
        assert_eq!(verdict(&person(), "Sure! Ana."), Verdict::NotJson);
        assert_eq!(verdict(&person(), r#"{"name": "Ana""#), Verdict::NotJson);
        assert_eq!(verdict(&person(), ""), Verdict::NotJson);
        let mut check = SchemaCheck::of(&Target::Schema(person())).unwrap();
        check.push("{\"name\": ");
        assert!(!check.holds());
        check.push("\"Ana\"}");
        assert!(check.holds());
    }

    #[test]
    fn a_schema_no_validator_reads_leaves_the_answer_unchecked() {
        assert_eq!(verdict(&json!({"type": 7}), "1"), Verdict::Unchecked);
        let check = SchemaCheck {
            schema: json!({"type": 7}),
            text: "1".into(),
            called: false,
        };
        assert!(check.holds());
    }

    #[test]
    fn only_a_clients_schema_is_checked() {
        let schema = || Box::new(Target::Schema(json!({"type": "integer"})));
        let after = Target::AfterReasoning {
            open: Some("<think>".into()),
            close: "</think>".into(),
            then: schema(),
        };
        for target in [
            Target::Schema(json!({"type": "integer"})),
            after,
            Target::HarmonyFinal(schema()),
        ] {
            let check = SchemaCheck::of(&target).expect("a schema's answer is checked");
            assert_eq!(check.schema, json!({"type": "integer"}));
        }
        let tagged = Target::Tagged {
            open: "<tool_call>".into(),
            close: "</tool_call>".into(),
            then: Box::new(Target::ToolCall(vec![("f".into(), json!({}))])),
        };
        let required_after_reasoning = Target::AfterReasoning {
            open: None,
            close: "</think>".into(),
            then: Box::new(tagged.clone()),
        };
        for target in [Target::AnyObject, tagged, required_after_reasoning] {
            assert!(SchemaCheck::of(&target).is_none(), "{target:?}");
        }
    }

    #[test]
    fn an_answer_that_called_a_tool_is_not_held_to_the_format() {
        let either = Target::Either(vec![
            Target::Schema(person()),
            Target::ToolCall(vec![("f".into(), json!({}))]),
        ]);
        let mut check = SchemaCheck::of(&either).expect("the format is checked");
        assert!(!check.holds(), "no answer at all is not the format");
        check.called();
        assert!(check.holds());
    }
}
