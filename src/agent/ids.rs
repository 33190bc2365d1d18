//! The ids a client gives (its thread, run, messages and tool calls). They
//! come back in the run's events and the server writes the run's id in its
//! logs, so each is bounded and printable: a UUID is 36 bytes and the
//! providers' tool-call ids are under 64, so 512 refuses nobody's; a
//! control character (a newline) in one would forge a log line.

use thinkwire_protocol::{Message, RunAgentInput};

use super::rejection::{RejectKind, RunRejected};

/// Longest id accepted, in bytes.
pub(crate) const MAX_ID_BYTES: usize = 512;

/// Refuses the first id of `input` that is too long or holds a control
/// character, naming its field.
pub(crate) fn check_ids(input: &RunAgentInput) -> Result<(), RunRejected> {
    check(&input.thread_id, || "threadId".into())?;
    check(&input.run_id, || "runId".into())?;
    if let Some(parent) = &input.parent_run_id {
        check(parent, || "parentRunId".into())?;
    }
    for (i, message) in input.messages.iter().enumerate() {
        check(message.id(), || format!("messages[{i}].id"))?;
        match message {
            Message::Assistant(m) => {
                for (j, call) in m.tool_calls.iter().flatten().enumerate() {
                    check(&call.id, || format!("messages[{i}].toolCalls[{j}].id"))?;
                }
            }
            Message::Tool(m) => check(&m.tool_call_id, || format!("messages[{i}].toolCallId"))?,
            _ => {}
        }
    }
    Ok(())
}

/// One id, at the field `field` names (written only for a refusal); the
/// refusal quotes none of it.
fn check(id: &str, field: impl FnOnce() -> String) -> Result<(), RunRejected> {
    if id.len() > MAX_ID_BYTES {
        return Err(RunRejected::new(
            RejectKind::TooLarge,
            "INPUT_TOO_LARGE",
            format!(
                "an id of {} bytes exceeds the limit of {MAX_ID_BYTES}",
                id.len()
            ),
        )
        .at(field()));
    }
    if id.chars().any(char::is_control) {
        return Err(RunRejected::new(
            RejectKind::Malformed,
            "INVALID_INPUT",
            "an id may not hold control characters",
        )
        .at(field()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn input(value: serde_json::Value) -> RunAgentInput {
        serde_json::from_value(value).unwrap()
    }

    fn base() -> serde_json::Value {
        json!({"threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [
                {"id": "u", "role": "user", "content": "hi"},
                {"id": "a", "role": "assistant", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "ok"}]})
    }

    #[test]
    fn ids_within_bounds_pass_and_each_field_is_named() {
        assert_eq!(check_ids(&input(base())), Ok(()));
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let cases = [
            ("/threadId", "threadId"),
            ("/runId", "runId"),
            ("/messages/0/id", "messages[0].id"),
            ("/messages/1/toolCalls/0/id", "messages[1].toolCalls[0].id"),
            ("/messages/2/toolCallId", "messages[2].toolCallId"),
        ];
        for (pointer, field) in cases {
            for (bad, code) in [
                (long.as_str(), "INPUT_TOO_LARGE"),
                ("a\nb", "INVALID_INPUT"),
            ] {
                let mut value = base();
                *value.pointer_mut(pointer).unwrap() = json!(bad);
                let err = check_ids(&input(value)).unwrap_err();
                assert_eq!((err.code, err.path.as_deref()), (code, Some(field)));
                assert!(!err.message.contains(bad), "{}", err.message);
            }
        }
        let mut value = base();
        value["parentRunId"] = json!("p\u{7}");
        let err = check_ids(&input(value)).unwrap_err();
        assert_eq!(err.path.as_deref(), Some("parentRunId"));
        // A UUID, and non-ASCII text, are ids like any other.
        let mut value = base();
        value["threadId"] = json!("3f0c2a9e-5b7d-4c1e-9a8f-2d6b4e1c7a90");
        value["runId"] = json!("запуск-1");
        assert_eq!(check_ids(&input(value)), Ok(()));
    }
}
