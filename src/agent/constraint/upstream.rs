//! The same asks for an upstream backend: it holds the model, so a
//! response format or a required call goes with the request for it to
//! enforce, in the form its API takes, rather than as a grammar here.

use serde_json::Value;
use thinkwire_grammar::Target;

use super::super::rejection::{RejectKind, RunRejected};
use crate::upstream::{AnswerConstraint, UpstreamKind};

/// What an upstream of `kind` is asked the answer must be: `format` (the
/// run's response format), or a call of `required` tools (`named`: the
/// one the client named). `thinking`: the upstream is asked to think.
pub(crate) fn upstream_answer(
    format: Option<Target>,
    required: Option<&[thinkwire_protocol::Tool]>,
    forwarded: Option<&Value>,
    kind: UpstreamKind,
    thinking: bool,
) -> Result<Option<AnswerConstraint>, RunRejected> {
    let refused = |code, message: &str, at: &str| {
        Err(RunRejected::new(RejectKind::Unprocessable, code, message.to_owned()).at(at))
    };
    let answer = match (format, required) {
        (_, Some(tools)) => {
            let named = forwarded
                .and_then(|f| f.get("toolChoice"))
                .is_some_and(Value::is_object);
            match (named, tools) {
                (true, [tool]) => AnswerConstraint::Call(tool.name.clone()),
                _ => AnswerConstraint::AnyCall,
            }
        }
        (Some(Target::Schema(schema)), None) => {
            let label = super::format_label(forwarded);
            AnswerConstraint::Schema {
                name: label.name,
                schema,
                strict: label.strict,
            }
        }
        (Some(Target::AnyObject), None) => AnswerConstraint::AnyObject,
        (Some(_), None) => {
            return refused(
                "UNSUPPORTED_RESPONSE_FORMAT",
                "this response format cannot be passed to an upstream",
                super::FIELD,
            );
        }
        (None, None) => return Ok(None),
    };
    match (kind, &answer) {
        (UpstreamKind::Anthropic, AnswerConstraint::AnyObject) => refused(
            "UNSUPPORTED_RESPONSE_FORMAT",
            "an Anthropic upstream takes a JSON schema, not json_object",
            super::FIELD,
        ),
        // Anthropic's API refuses a forced tool call while it thinks.
        (UpstreamKind::Anthropic, AnswerConstraint::AnyCall | AnswerConstraint::Call(_))
            if thinking =>
        {
            refused(
                "UNSUPPORTED_TOOL_CHOICE",
                "an Anthropic upstream cannot be required to call a tool while it thinks: ask with reasoning visibility off",
                "forwardedProps.toolChoice",
            )
        }
        _ => Ok(Some(answer)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> thinkwire_protocol::Tool {
        serde_json::from_value(json!({"name": name, "description": "", "parameters": {}})).unwrap()
    }

    #[test]
    fn a_format_or_a_required_call_goes_up_in_the_clients_terms() {
        let schema = json!({"type": "object"});
        let nested = json!({"responseFormat": {"type": "json_schema",
            "json_schema": {"name": "person", "strict": true, "schema": schema}}});
        let got = upstream_answer(
            Some(Target::Schema(schema.clone())),
            None,
            Some(&nested),
            UpstreamKind::OpenAiChat,
            true,
        );
        let want = AnswerConstraint::Schema {
            name: "person".into(),
            schema: schema.clone(),
            strict: Some(true),
        };
        assert_eq!(got, Ok(Some(want)));
        let flat = json!({"responseFormat": {"type": "json_schema", "schema": schema}});
        let got = upstream_answer(
            Some(Target::Schema(schema.clone())),
            None,
            Some(&flat),
            UpstreamKind::OpenAiResponses,
            false,
        );
        let want = AnswerConstraint::Schema {
            name: "answer".into(),
            schema,
            strict: None,
        };
        assert_eq!(got, Ok(Some(want)));
        let tools = [tool("a"), tool("b")];
        let named = json!({"toolChoice": {"name": "b"}});
        let kind = UpstreamKind::OpenAiChat;
        assert_eq!(
            upstream_answer(None, Some(&tools[1..]), Some(&named), kind, true),
            Ok(Some(AnswerConstraint::Call("b".into())))
        );
        let any = json!({"toolChoice": "required"});
        assert_eq!(
            upstream_answer(None, Some(&tools), Some(&any), kind, true),
            Ok(Some(AnswerConstraint::AnyCall))
        );
        assert_eq!(upstream_answer(None, None, None, kind, true), Ok(None));
    }

    #[test]
    fn what_anthropic_cannot_take_is_refused_before_the_run() {
        let kind = UpstreamKind::Anthropic;
        let err = upstream_answer(Some(Target::AnyObject), None, None, kind, false).unwrap_err();
        assert_eq!(err.code, "UNSUPPORTED_RESPONSE_FORMAT");
        let tools = [tool("a")];
        let any = json!({"toolChoice": "required"});
        let err = upstream_answer(None, Some(&tools), Some(&any), kind, true).unwrap_err();
        assert_eq!(err.path.as_deref(), Some("forwardedProps.toolChoice"));
        assert!(upstream_answer(None, Some(&tools), Some(&any), kind, false).is_ok());
    }
}
