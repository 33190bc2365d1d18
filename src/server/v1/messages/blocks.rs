//! A Messages conversation's content blocks onto the run's messages.
//!
//! Each user message's `tool_result` blocks become tool messages (one
//! with `is_error: true` carries AG-UI's `error`) and its text a user
//! message; each assistant message's `thinking` blocks (their `signature`)
//! and `redacted_thinking` blocks (their `data`) become reasoning messages
//! carrying the sealed value, followed by the assistant message with its
//! text and `tool_use` calls. A `thinking` block whose text differs from
//! the reasoning its signature seals is refused: the signature is the
//! reasoning. Beside a sealed block, an unsigned `thinking` block (a
//! `summary` visibility's summary) is not reasoning: the sealed value is.

use serde_json::{Value, json};

use thinkwire_protocol::ToolCall;

use super::super::bridge::{RunInput, TextRole};
use super::super::carrier;
use super::super::content;
use super::super::error::{ApiError, quoted};
use super::super::wire::{At, Field};

/// Opens a sealed value (its message id, its envelope) to the reasoning
/// it seals; `None` when it does not open (the run refuses it then).
pub type Opener<'a> = &'a dyn Fn(&str, &str) -> Option<String>;

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

/// A user message: its `tool_result` blocks, then its text.
pub(super) fn user(input: &mut RunInput, at: &At<'_>) -> Result<(), ApiError> {
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
                match b.get("is_error").bool()? {
                    Some(true) => input.tool_error(id, result, &block.path),
                    Some(false) | None => input.tool_result(id, result, &block.path),
                }
            }
            other => {
                return Err(block.invalid(format!(
                    "content blocks of type {} are not supported: this model reads text only",
                    quoted(other)
                )));
            }
        }
    }
    if !text.is_empty() || blocks.is_empty() {
        input.text(TextRole::User, text, None, at.path());
    }
    Ok(())
}

/// An assistant message: its reasoning messages, then the message with
/// its text and calls. `open` opens signatures to compare them with the
/// thinking text sent back.
pub(super) fn assistant(
    input: &mut RunInput,
    at: &At<'_>,
    open: Opener<'_>,
) -> Result<(), ApiError> {
    let (text, blocks) = blocks(at)?;
    let mut text = text.unwrap_or_default();
    let mut calls = Vec::new();
    let mut sealed_blocks = 0;
    // Unsigned thinking, used only when no block of the message is sealed
    // (as chat's `reasoning_content` beside `reasoning_details`).
    let mut plaintext: Vec<(&str, String)> = Vec::new();
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
                        if let Some(reasoning) = open(id, sealed)
                            && !shown.is_empty()
                            && shown != reasoning
                        {
                            return Err(b.get("thinking").invalid(
                                "differs from the reasoning its signature seals: send thinking blocks back unchanged",
                            ));
                        }
                        input.reasoning(id, Some(sealed), "", &signature.path);
                        sealed_blocks += 1;
                    }
                    // A summary's block (its reasoning travels in the
                    // redacted block after it), or client-written thinking.
                    None if !shown.is_empty() => {
                        plaintext.push((shown, b.child_path("thinking")));
                    }
                    None => {}
                }
            }
            "redacted_thinking" => {
                let data = b.get("data");
                let (id, sealed) = carrier::unpack(data.required_str()?)
                    .ok_or_else(|| data.invalid("is not a value sealed by this server"))?;
                input.reasoning(id, Some(sealed), "", &data.path);
                sealed_blocks += 1;
            }
            "tool_use" => {
                let id = b.get("id").required_str()?;
                let name = b.get("name").required_str()?;
                let arguments = b.get("input").value.cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall::function(id, name, arguments.to_string()));
            }
            other => {
                let message = format!("unknown content block type {}", quoted(other));
                return Err(block.invalid(message));
            }
        }
    }
    if sealed_blocks == 0 {
        for (shown, path) in &plaintext {
            input.reasoning("", None, shown, path);
        }
    }
    input.assistant(Some(text), calls, None, at.path());
    Ok(())
}

#[cfg(test)]
mod tests {
    use thinkwire_protocol::{Content, Message};

    use super::*;

    /// How one message is read.
    type Read = fn(&mut RunInput, &At<'_>) -> Result<(), ApiError>;

    /// The run's messages made of one message `body` by `read`.
    fn messages(body: Value, read: Read) -> Result<Vec<Message>, ApiError> {
        let wrapped = json!({ "messages": [body] });
        let root = At::root(&wrapped)?;
        let items = root.get("messages").array()?;
        let at = items[0].at()?.ok_or_else(|| items[0].invalid("absent"))?;
        let mut input = RunInput::new();
        read(&mut input, &at)?;
        Ok(input.to_input("run-1", None).messages)
    }

    fn assistant_unopened(input: &mut RunInput, at: &At<'_>) -> Result<(), ApiError> {
        assistant(input, at, &|_, _| None)
    }

    fn reasoning(messages: &[Message]) -> Vec<(String, Option<String>)> {
        (messages.iter())
            .filter_map(|m| match m {
                Message::Reasoning(r) => Some((r.content.clone(), r.encrypted_value.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_sealed_block_wins_over_the_summary_beside_it() {
        // What `summary` visibility wrote: the summary unsigned, then the
        // carrier of the reasoning itself.
        let summary = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Compared the options.", "signature": ""},
            {"type": "redacted_thinking", "data": "tw1.r1.AAAA"},
            {"type": "text", "text": "Take the second."},
        ]});
        let all = messages(summary, assistant_unopened).unwrap();
        assert_eq!(
            reasoning(&all),
            [(String::new(), Some("AAAA".to_owned()))],
            "{all:?}"
        );
        assert!(matches!(all.last(), Some(Message::Assistant(_))));
        // Signed thinking is a sealed block too.
        let signed = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "client notes"},
            {"type": "thinking", "thinking": "", "signature": "tw1.r2.BBBB"},
        ]});
        let all = messages(signed, assistant_unopened).unwrap();
        assert_eq!(reasoning(&all), [(String::new(), Some("BBBB".to_owned()))]);
        // Alone, unsigned thinking is the client's plaintext reasoning.
        let plain = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "first"},
            {"type": "thinking", "thinking": "second", "signature": ""},
            {"type": "text", "text": "a"},
        ]});
        let all = messages(plain, assistant_unopened).unwrap();
        assert_eq!(
            reasoning(&all),
            [("first".to_owned(), None), ("second".to_owned(), None)]
        );
    }

    #[test]
    fn a_tool_result_marked_as_an_error_carries_it() {
        let body = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "no such city", "is_error": true},
            {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "18"}],
             "is_error": false},
            {"type": "tool_result", "tool_use_id": "c3", "content": "19", "is_error": null},
            {"type": "tool_result", "tool_use_id": "c4", "content": "20"},
        ]});
        let all = messages(body, user).unwrap();
        let tools: Vec<_> = (all.iter())
            .filter_map(|m| match m {
                Message::Tool(t) => Some((t.tool_call_id.as_str(), t.error.as_deref(), &t.content)),
                _ => None,
            })
            .collect();
        let text = |t: &str| Content::Text(t.into());
        assert_eq!(
            tools,
            [
                ("c1", Some("no such city"), &text("no such city")),
                ("c2", None, &text("18")),
                ("c3", None, &text("19")),
                ("c4", None, &text("20")),
            ]
        );
        for bad in [json!("true"), json!(1), json!({})] {
            let body = json!({"role": "user", "content": [
                {"type": "text", "text": "x"},
                {"type": "tool_result", "tool_use_id": "c1", "content": "r", "is_error": bad},
            ]});
            let err = messages(body, user).unwrap_err();
            assert_eq!(
                err.param.as_deref(),
                Some("messages[0].content[1].is_error")
            );
            assert_eq!(err.status, 400);
        }
    }

    #[test]
    fn a_block_type_is_quoted_within_a_bound() {
        let long = "é".repeat(5_000);
        let cases: [(Value, Read); 2] = [
            (json!({"role": "user", "content": [{"type": long}]}), user),
            (
                json!({"role": "assistant", "content": [{"type": long}]}),
                assistant_unopened,
            ),
        ];
        for (body, read) in cases {
            let err = messages(body, read).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("messages[0].content[0]"));
            assert!(err.message.chars().count() < 120, "{}", err.message);
            assert!(!err.message.contains(&long));
        }
    }
}
