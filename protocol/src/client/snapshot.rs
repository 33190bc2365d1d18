//! Snapshots: an activity's whole state, or the server's view of the whole
//! conversation merged into the client's.

use super::Conversation;
use crate::event::ActivitySnapshot;
use crate::message::{ActivityMessage, Message};

impl Conversation {
    pub(super) fn snapshot_activity(&mut self, e: &ActivitySnapshot, attribution: Option<String>) {
        let replace = e.replace.unwrap_or(true);
        let fresh = || {
            Message::Activity(ActivityMessage {
                id: e.message_id.clone(),
                activity_type: e.activity_type.clone(),
                content: e.content.clone(),
                metadata: None,
                subagent_run_id: attribution.clone(),
            })
        };
        match self.position(&e.message_id) {
            None => self.messages.push(fresh()),
            Some(at) if replace => match &mut self.messages[at] {
                Message::Activity(activity) => {
                    activity.activity_type = e.activity_type.clone();
                    activity.content = e.content.clone();
                }
                other => *other = fresh(),
            },
            Some(_) => {}
        }
    }

    /// Merges a `MESSAGES_SNAPSHOT`: messages it holds replace the client's
    /// copies, messages it lacks are dropped, except the client-only ones
    /// (activities always; reasoning unless the snapshot carries its own),
    /// and new ones are appended.
    pub(super) fn merge_snapshot(&mut self, snapshot: &[Message]) {
        let snapshot_has_reasoning = snapshot.iter().any(|m| matches!(m, Message::Reasoning(_)));
        let client_only = |m: &Message| match m {
            Message::Activity(_) => true,
            Message::Reasoning(_) => !snapshot_has_reasoning,
            _ => false,
        };
        let mut merged: Vec<Message> = std::mem::take(&mut self.messages)
            .into_iter()
            .filter_map(|m| {
                if client_only(&m) {
                    return Some(m);
                }
                snapshot.iter().find(|s| s.id() == m.id()).cloned()
            })
            .collect();
        for message in snapshot {
            if !merged.iter().any(|m| m.id() == message.id()) {
                merged.push(message.clone());
            }
        }
        self.messages = merged;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{json_of, user};
    use super::*;
    use crate::event::{Event, MessagesSnapshot};
    use crate::message::ReasoningMessage;
    use serde_json::json;

    #[test]
    fn activity_snapshots_create_replace_or_keep() {
        let snapshot = |content: serde_json::Value, replace: Option<bool>| -> Event {
            ActivitySnapshot {
                message_id: "act".into(),
                activity_type: "progress".into(),
                content: serde_json::from_value(content).unwrap(),
                replace,
            }
            .into()
        };
        let mut c = Conversation::default();
        c.apply(&snapshot(json!({"step": 1}), None));
        c.apply(&snapshot(json!({"step": 2}), Some(false)));
        assert_eq!(json_of(&c)[0]["content"], json!({"step": 1}));
        c.apply(&snapshot(json!({"step": 3}), None));
        assert_eq!(json_of(&c)[0]["content"], json!({"step": 3}));
        assert_eq!(c.messages.len(), 1);
    }

    #[test]
    fn a_messages_snapshot_merges_and_keeps_client_only_messages() {
        let reasoning = Message::Reasoning(ReasoningMessage {
            id: "r1".into(),
            encrypted_value: Some("sealed".into()),
            ..ReasoningMessage::default()
        });
        let mut c = Conversation::new(vec![user("u1", "old"), reasoning, user("gone", "x")]);
        c.apply(
            &MessagesSnapshot {
                messages: vec![user("u1", "new"), user("u2", "added")],
            }
            .into(),
        );
        let ids: Vec<&str> = c.messages.iter().map(Message::id).collect();
        assert_eq!(ids, ["u1", "r1", "u2"]);
        assert_eq!(json_of(&c)[0]["content"], "new");
        // A snapshot with reasoning of its own is the truth for reasoning too.
        let theirs = Message::Reasoning(ReasoningMessage {
            id: "r9".into(),
            ..ReasoningMessage::default()
        });
        c.apply(
            &MessagesSnapshot {
                messages: vec![theirs],
            }
            .into(),
        );
        let ids: Vec<&str> = c.messages.iter().map(Message::id).collect();
        assert_eq!(ids, ["r9"]);
    }
}
