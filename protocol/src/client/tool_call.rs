//! Tool calls as the client holds them: inside assistant messages, each
//! followed by its result.

use super::{Conversation, merge_metadata};
use crate::event::{ToolCallResult, ToolCallStart};
use crate::message::{AssistantMessage, Message, ToolCall, ToolMessage};
use crate::wire::JsonObject;

impl Conversation {
    /// Adds a call to the assistant message `parentMessageId` names, or to
    /// a new one: keyed by the parent id, or by the call id when there is no
    /// parent or the parent id belongs to a message of another role. A START
    /// for a call the client holds renames it instead of adding another.
    pub(super) fn start_tool_call(
        &mut self,
        e: &ToolCallStart,
        attribution: Option<String>,
        metadata: Option<&JsonObject>,
    ) {
        if let Some(call) = self.tool_call_mut(&e.tool_call_id) {
            call.function.name.clone_from(&e.tool_call_name);
            merge_metadata(&mut call.metadata, metadata);
            return;
        }
        let existing = e
            .parent_message_id
            .as_deref()
            .and_then(|p| self.position(p));
        let at = match existing {
            Some(at) if matches!(self.messages[at], Message::Assistant(_)) => at,
            _ => {
                let id = match (&e.parent_message_id, existing) {
                    (Some(parent), None) => parent.clone(),
                    _ => e.tool_call_id.clone(),
                };
                self.messages.push(Message::Assistant(AssistantMessage {
                    id,
                    tool_calls: Some(Vec::new()),
                    subagent_run_id: attribution,
                    ..AssistantMessage::default()
                }));
                self.messages.len() - 1
            }
        };
        let mut call = ToolCall::function(&e.tool_call_id, &e.tool_call_name, "");
        merge_metadata(&mut call.metadata, metadata);
        if let Message::Assistant(message) = &mut self.messages[at] {
            message.tool_calls.get_or_insert_default().push(call);
        }
    }

    /// The call with `id`, in whichever assistant message holds it.
    pub(super) fn tool_call_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        self.messages
            .iter_mut()
            .filter_map(|m| match m {
                Message::Assistant(a) => a.tool_calls.as_mut(),
                _ => None,
            })
            .flatten()
            .find(|call| call.id == id)
    }

    /// Puts a tool's result right after the assistant message holding the
    /// call (after any results already there), not at the end: a provider
    /// wants each call followed by its result.
    pub(super) fn insert_tool_result(
        &mut self,
        e: &ToolCallResult,
        attribution: Option<String>,
        metadata: Option<&JsonObject>,
    ) {
        let message = Message::Tool(ToolMessage {
            id: e.message_id.clone(),
            content: e.content.clone(),
            tool_call_id: e.tool_call_id.clone(),
            error: None,
            encrypted_value: None,
            metadata: metadata.cloned(),
            subagent_run_id: attribution,
        });
        let owner = self.messages.iter().position(|m| {
            matches!(m, Message::Assistant(a)
                if a.tool_calls.iter().flatten().any(|c| c.id == e.tool_call_id))
        });
        match owner {
            Some(owner) => {
                let mut at = owner + 1;
                while matches!(self.messages.get(at), Some(Message::Tool(_))) {
                    at += 1;
                }
                self.messages.insert(at, message);
            }
            None => self.messages.push(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{json_of, text, tool_start, user};
    use super::*;
    use crate::event::Event;
    use crate::message::Role;
    use serde_json::json;

    #[test]
    fn text_and_tool_calls_share_their_assistant_message() {
        let mut c = Conversation::default();
        c.apply_all(&text("m1", "Let me check."));
        c.apply(&tool_start("call-1", Some("m1")));
        c.apply(&tool_start("call-2", Some("m1")));
        let [Message::Assistant(a)] = c.messages.as_slice() else {
            panic!("{:?}", c.messages);
        };
        assert_eq!(a.content.as_deref(), Some("Let me check."));
        let ids: Vec<&str> = a
            .tool_calls
            .iter()
            .flatten()
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(ids, ["call-1", "call-2"]);
    }

    #[test]
    fn a_tool_call_without_an_assistant_parent_gets_its_own_message() {
        let mut c = Conversation::new(vec![user("u1", "hi")]);
        c.apply(&tool_start("call-1", None));
        // The parent id names the user message: keyed by the call instead.
        c.apply(&tool_start("call-2", Some("u1")));
        let ids: Vec<&str> = c.messages.iter().map(Message::id).collect();
        assert_eq!(ids, ["u1", "call-1", "call-2"]);
    }

    #[test]
    fn a_tool_result_follows_its_call_and_earlier_results() {
        let mut c = Conversation::default();
        c.apply(&tool_start("call-1", Some("a1")));
        c.apply(&tool_start("call-2", Some("a1")));
        c.apply_all(&text("a2", "Waiting for results."));
        for (message, call) in [("t1", "call-1"), ("t2", "call-2"), ("t3", "elsewhere")] {
            c.apply(
                &ToolCallResult {
                    message_id: message.into(),
                    tool_call_id: call.into(),
                    content: "42".into(),
                    role: None,
                }
                .into(),
            );
        }
        let ids: Vec<&str> = c.messages.iter().map(Message::id).collect();
        assert_eq!(ids, ["a1", "t1", "t2", "a2", "t3"]);
        assert_eq!(c.messages[1].role(), Role::Tool);
    }

    #[test]
    fn a_repeated_start_renames_the_call_and_metadata_merges() {
        let mut c = Conversation::default();
        let tagged = |event: Event, key: &str| {
            event.with_metadata(serde_json::from_value(json!({ key: 1, "last": key })).unwrap())
        };
        c.apply(&tagged(tool_start("call-1", Some("a1")), "start"));
        let again = ToolCallStart {
            tool_call_id: "call-1".into(),
            tool_call_name: "get_time".into(),
            parent_message_id: Some("a1".into()),
        };
        c.apply(&tagged(again.into(), "again"));
        c.apply(
            &ToolCallResult {
                message_id: "t1".into(),
                tool_call_id: "call-1".into(),
                content: "noon".into(),
                role: None,
            }
            .into(),
        );
        let value = json_of(&c);
        assert_eq!(value[0]["toolCalls"].as_array().map(Vec::len), Some(1));
        assert_eq!(value[0]["toolCalls"][0]["function"]["name"], "get_time");
        assert_eq!(
            value[0]["toolCalls"][0]["metadata"],
            json!({"start": 1, "again": 1, "last": "again"})
        );
        assert_eq!(value[1]["role"], "tool");
    }
}
