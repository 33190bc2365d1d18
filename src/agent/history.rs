//! From a `RunAgentInput`'s messages to the turns a chat template renders.
//!
//! The interesting part is reasoning. A reasoning message the client replays
//! carries the value the server sealed at the end of that message; it is
//! opened (bound to this thread and that message id) and attached, as
//! `reasoning_content`, to the assistant turn that follows it. The chat
//! template then decides what earlier turns keep (Qwen3 keeps reasoning only
//! after the last user turn, so tool loops keep theirs); for a model that
//! does not think natively the separate pass moves it into its system
//! prompts instead (`prompt::take_replayed_reasoning`). A reasoning
//! message's plaintext `content` is never taken as the model's own reasoning
//! unless the operator allows it: a client could write anything there.

use thinkwire_chat::{TemplateMessage, TemplateToolCall};
use thinkwire_protocol::{AssistantMessage, Content, ContentPart, Message};
use thinkwire_seal::{Binding, KeyRing, OpenError, ProviderItem};

use super::rejection::{RejectKind, RunRejected};

/// What to do with a sealed value that does not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayFailure {
    /// Refuse the run before it starts (HTTP 422 / `RUN_ERROR`).
    #[default]
    Reject,
    /// Run without that reasoning and say so in a `CUSTOM` event.
    Drop,
}

/// How replayed reasoning is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayPolicy {
    /// A sealed value that does not open.
    pub on_failure: ReplayFailure,
    /// Take a reasoning message's plaintext `content` as the model's own
    /// reasoning when it has no sealed value. Off by default.
    pub trust_client_reasoning: bool,
}

/// One turn as the chat template sees it.
pub type Turn = TemplateMessage;

/// A sealed value that was dropped (drop mode), for the `CUSTOM` warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedReasoning {
    /// The reasoning message's id.
    pub message_id: String,
    /// Why it did not open (no content, just the class of failure).
    pub reason: String,
}

/// The turns of a conversation, and what was dropped on the way.
#[derive(Debug, Default)]
pub struct History {
    /// Turns in order.
    pub turns: Vec<Turn>,
    /// Sealed values that did not open (drop mode only).
    pub dropped: Vec<DroppedReasoning>,
    /// How many replayed reasoning messages were opened.
    pub opened: usize,
    /// Each replayed reasoning message, by the assistant turn it belongs
    /// to: an upstream provider gets its blocks back one by one, with its
    /// own item (signature, encrypted content) where it left one.
    pub blocks: Vec<ReplayedBlock>,
}

pub use crate::conversation::ReplayedBlock;

/// Converts `messages` of `thread_id`, opening sealed reasoning with `keys`
/// at time `now_ms`.
///
/// `open_tag` is the reasoning format's open marker (e.g. `<think>`): an
/// assistant turn whose content already holds a think block gets no second
/// copy injected.
pub fn build(
    messages: &[Message],
    thread_id: &str,
    keys: &KeyRing,
    policy: ReplayPolicy,
    open_tag: Option<&str>,
    now_ms: u64,
) -> Result<History, RunRejected> {
    let mut history = History::default();
    // Reasoning waiting for the assistant turn it belongs to.
    let mut pending: Vec<(String, Option<ProviderItem>)> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let path = |field: &str| format!("messages[{index}]{field}");
        match message {
            Message::Developer(m) => history.turns.push(text_turn("system", &m.content, &m.name)),
            Message::System(m) => history.turns.push(text_turn("system", &m.content, &m.name)),
            Message::User(m) => {
                pending.clear();
                let content = content_text(&m.content, &path(".content"))?;
                history.turns.push(text_turn("user", &content, &m.name));
            }
            Message::Tool(m) => {
                let content = content_text(&m.content, &path(".content"))?;
                // An error, even one without words (Anthropic's `is_error`
                // on an empty result), says the tool failed.
                let failed = m.error.is_some();
                let content = with_error(content, m.error.as_deref());
                history.turns.push(Turn {
                    is_error: failed,
                    ..Turn::tool(m.tool_call_id.clone(), content)
                });
            }
            Message::Assistant(m) => {
                let mut turn = assistant_turn(m);
                if !pending.is_empty() {
                    let already_there = match (open_tag, &turn.content) {
                        (Some(tag), Some(content)) => content.contains(tag),
                        _ => false,
                    };
                    let blocks = std::mem::take(&mut pending);
                    let reasoning: Vec<&str> = blocks
                        .iter()
                        .map(|(text, _)| text.as_str())
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !already_there && !reasoning.is_empty() {
                        turn.reasoning_content = Some(reasoning.join("\n\n"));
                    }
                    let assistant = history
                        .turns
                        .iter()
                        .filter(|t| t.role == "assistant")
                        .count();
                    history
                        .blocks
                        .extend(blocks.into_iter().map(|(text, provider)| ReplayedBlock {
                            assistant,
                            text,
                            provider,
                        }));
                }
                history.turns.push(turn);
            }
            Message::Reasoning(m) => {
                if let Some(sealed) = &m.encrypted_value {
                    match keys.open(sealed, Binding::new(thread_id, &m.id), now_ms) {
                        Ok(opened) => {
                            history.opened += 1;
                            pending.push((opened.text, opened.provider));
                        }
                        Err(err) => {
                            let reason = open_failure(&err);
                            match policy.on_failure {
                                ReplayFailure::Reject => {
                                    return Err(RunRejected::new(
                                        RejectKind::Unprocessable,
                                        "SEALED_REASONING_REJECTED",
                                        format!(
                                            "the sealed reasoning of message {:?} {reason}",
                                            m.id
                                        ),
                                    )
                                    .at(path(".encryptedValue")));
                                }
                                ReplayFailure::Drop => history.dropped.push(DroppedReasoning {
                                    message_id: m.id.clone(),
                                    reason: reason.to_owned(),
                                }),
                            }
                        }
                    }
                } else if policy.trust_client_reasoning && !m.content.is_empty() {
                    pending.push((m.content.clone(), None));
                }
            }
            // Activity messages are UI state, not conversation.
            Message::Activity(_) => {}
        }
    }
    Ok(history)
}

/// Why a value did not open, in words safe to show: the class of failure,
/// never key material or content.
fn open_failure(err: &OpenError) -> &'static str {
    match err {
        OpenError::Malformed(_) => "is malformed or truncated",
        OpenError::UnknownKey(_) => "was sealed by a key this server does not hold",
        OpenError::Authentication => {
            "does not authenticate: it was altered, or belongs to another thread or message"
        }
        OpenError::Expired { .. } => "has expired",
        OpenError::UnsupportedPayload => "holds a payload this server version does not understand",
    }
}

/// A tool result's text with its `error`: the model reads a failure only
/// in the text, so an error the content does not already say is added.
fn with_error(content: String, error: Option<&str>) -> String {
    match error.filter(|e| !e.is_empty()) {
        None => content,
        Some(error) if content.is_empty() => error.to_owned(),
        Some(error) if content.contains(error) => content,
        Some(error) => format!("{content}\n\n{error}"),
    }
}

fn text_turn(role: &str, content: &str, name: &Option<String>) -> Turn {
    Turn {
        role: role.to_owned(),
        content: Some(content.to_owned()),
        name: name.clone(),
        ..Turn::default()
    }
}

fn assistant_turn(m: &AssistantMessage) -> Turn {
    let tool_calls = m
        .tool_calls
        .iter()
        .flatten()
        .map(|call| {
            // Templates print object arguments with `tojson`; arguments that
            // are not valid JSON are passed on as the string the client sent.
            let arguments = serde_json::from_str(&call.function.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.function.arguments.clone()));
            TemplateToolCall::function(Some(call.id.clone()), &call.function.name, arguments)
        })
        .collect();
    Turn {
        role: "assistant".to_owned(),
        // The official client sends a tool-calling assistant message without
        // `content`; templates (Qwen3's among them) call string methods on
        // it, so absent content is given as empty, as OpenAI-style servers do.
        content: Some(m.content.clone().unwrap_or_default()),
        tool_calls,
        name: m.name.clone(),
        ..Turn::default()
    }
}

/// The text of a message's content. These are text models: a part that is
/// not text is refused rather than silently dropped.
fn content_text(content: &Content, path: &str) -> Result<String, RunRejected> {
    match content {
        Content::Text(text) => Ok(text.clone()),
        Content::Parts(parts) => {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                match part {
                    ContentPart::Text(part) => text.push_str(&part.text),
                    _ => {
                        return Err(RunRejected::new(
                            RejectKind::Unprocessable,
                            "UNSUPPORTED_CONTENT",
                            "this model reads text only; remove image, audio or file parts",
                        )
                        .at(format!("{path}[{i}]")));
                    }
                }
            }
            Ok(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use thinkwire_seal::Key;

    use super::*;

    fn built(messages: serde_json::Value) -> History {
        let messages: Vec<Message> = serde_json::from_value(messages).unwrap();
        let keys = KeyRing::new(Key::from_bytes(&[7; 32]));
        let policy = ReplayPolicy {
            trust_client_reasoning: true,
            ..ReplayPolicy::default()
        };
        build(&messages, "t", &keys, policy, None, 0).unwrap()
    }

    #[test]
    fn blocks_name_their_assistant_turn_by_ordinal() {
        let history = built(json!([
            {"role": "system", "id": "s", "content": "be brief"},
            {"role": "user", "id": "u1", "content": "a"},
            {"role": "reasoning", "id": "r1", "content": "first"},
            {"role": "assistant", "id": "a1", "content": "x"},
            {"role": "user", "id": "u2", "content": "b"},
            {"role": "reasoning", "id": "r2", "content": "second"},
            {"role": "assistant", "id": "a2", "content": "y"},
        ]));
        let named: Vec<(usize, &str)> = history
            .blocks
            .iter()
            .map(|b| (b.assistant, b.text.as_str()))
            .collect();
        assert_eq!(named, [(0, "first"), (1, "second")]);
        let second: Vec<&str> = ReplayedBlock::of(&history.blocks, 1)
            .map(|b| b.text.as_str())
            .collect();
        assert_eq!(second, ["second"]);
    }

    #[test]
    fn a_tool_error_reaches_the_model() {
        let history = built(json!([
            {"role": "user", "id": "u", "content": "go"},
            {"role": "assistant", "id": "a", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c3", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ]},
            {"role": "tool", "id": "t1", "toolCallId": "c1", "content": "", "error": "timed out"},
            {"role": "tool", "id": "t2", "toolCallId": "c2", "content": "partial", "error": "timed out"},
            {"role": "tool", "id": "t3", "toolCallId": "c3", "content": "failed: timed out", "error": "timed out"},
            {"role": "tool", "id": "t4", "toolCallId": "c4", "content": "19"},
            {"role": "tool", "id": "t5", "toolCallId": "c5", "content": "", "error": ""},
        ]));
        let failed: Vec<bool> = (history.turns.iter())
            .filter(|t| t.role == "tool")
            .map(|t| t.is_error)
            .collect();
        assert_eq!(
            failed,
            [true, true, true, false, true],
            "flagged for an API that has one"
        );
        let tools: Vec<&str> = history
            .turns
            .iter()
            .filter(|t| t.role == "tool")
            .filter_map(|t| t.content.as_deref())
            .collect();
        assert_eq!(
            tools,
            [
                "timed out",
                "partial\n\ntimed out",
                "failed: timed out",
                "19",
                ""
            ]
        );
    }
}
