//! Snapshots: an activity's whole state, or the server's view of the whole
//! conversation merged into the client's.

use std::collections::HashSet;

use serde_json::Value;

use super::{Conversation, merge_metadata, metadata_mut};
use crate::event::ActivitySnapshot;
use crate::message::{ActivityMessage, Message, Role};
use crate::wire::JsonObject;

impl Conversation {
    /// Creates an activity message, or replaces its type and content
    /// (unless `replace: false`); a message of another role under the id is
    /// replaced whole.
    pub(super) fn snapshot_activity(
        &mut self,
        e: &ActivitySnapshot,
        attribution: Option<String>,
        metadata: Option<&JsonObject>,
    ) {
        let replace = e.replace.unwrap_or(true);
        let fresh = |subagent_run_id| {
            Message::Activity(ActivityMessage {
                id: e.message_id.clone(),
                activity_type: e.activity_type.clone(),
                content: e.content.clone(),
                metadata: None,
                subagent_run_id,
            })
        };
        let target = match self.position(&e.message_id) {
            None => {
                self.messages.push(fresh(attribution));
                self.messages.len() - 1
            }
            Some(at) => {
                match &mut self.messages[at] {
                    Message::Activity(activity) if replace => {
                        activity.activity_type.clone_from(&e.activity_type);
                        activity.content.clone_from(&e.content);
                        activity.subagent_run_id = attribution;
                    }
                    Message::Activity(_) => {}
                    other if replace => *other = fresh(attribution),
                    _ => return,
                }
                at
            }
        };
        merge_metadata(metadata_mut(&mut self.messages[target]), metadata);
    }

    /// Merges a `MESSAGES_SNAPSHOT` as the official client does: a message
    /// the snapshot holds takes the snapshot's version, one it lacks is
    /// dropped unless it is client-only, and new ones are appended.
    /// Reasoning is client-only unless the snapshot carries reasoning of its
    /// own; activities unless the snapshot speaks for their type.
    pub(super) fn merge_snapshot(&mut self, snapshot: &[Message], metadata: Option<&JsonObject>) {
        let authoritative = authoritative_activity_types(metadata);
        let has = |role| snapshot.iter().any(|m| m.role() == role);
        let (has_reasoning, has_activity) = (has(Role::Reasoning), has(Role::Activity));
        let client_only = |m: &Message| match m {
            Message::Reasoning(_) => !has_reasoning,
            Message::Activity(a) => match &authoritative {
                Authoritative::Unset => !has_activity,
                Authoritative::All => false,
                Authoritative::Only(types) => !types.contains(&a.activity_type),
            },
            _ => false,
        };
        // The last of several snapshot messages with one id wins the lookup.
        let in_snapshot = |id: &str| snapshot.iter().rev().find(|s| s.id() == id);
        let mut merged: Vec<Message> = std::mem::take(&mut self.messages)
            .into_iter()
            .filter_map(|m| match in_snapshot(m.id()) {
                Some(theirs) => Some(theirs.clone()),
                None => client_only(&m).then_some(m),
            })
            .collect();
        let held: HashSet<String> = merged.iter().map(|m| m.id().to_owned()).collect();
        merged.extend(snapshot.iter().filter(|m| !held.contains(m.id())).cloned());
        self.messages = merged;
    }
}

/// Which activity types a `MESSAGES_SNAPSHOT` speaks for, from its
/// `metadata["@ag-ui/client"].authoritativeActivityTypes`.
enum Authoritative {
    /// Not said: the snapshot speaks for activities if it holds any.
    Unset,
    /// `null`: for every type.
    All,
    /// A list (malformed reads as empty): for these types.
    Only(Vec<String>),
}

fn authoritative_activity_types(metadata: Option<&JsonObject>) -> Authoritative {
    let Some(ours) = metadata.and_then(|m| m.get("@ag-ui/client")) else {
        return Authoritative::Unset;
    };
    let Value::Object(ours) = ours else {
        return Authoritative::Only(Vec::new());
    };
    match ours.get("authoritativeActivityTypes") {
        None => Authoritative::Unset,
        Some(Value::Null) => Authoritative::All,
        Some(Value::Array(items)) => Authoritative::Only(
            items
                .iter()
                .map(|t| t.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
        ),
        Some(_) => Authoritative::Only(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{json_of, user};
    use super::*;
    use crate::event::{Event, MessagesSnapshot};
    use crate::message::ReasoningMessage;
    use crate::wire::JsonObject;
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

    #[test]
    fn activities_stay_unless_the_snapshot_speaks_for_them() {
        let activity = |id: &str, kind: &str| {
            Message::Activity(ActivityMessage {
                id: id.into(),
                activity_type: kind.into(),
                content: JsonObject::new(),
                metadata: None,
                subagent_run_id: None,
            })
        };
        let snapshot = |messages: Vec<Message>, metadata: Option<serde_json::Value>| -> Event {
            let event = Event::from(MessagesSnapshot { messages });
            match metadata {
                Some(m) => event.with_metadata(serde_json::from_value(m).unwrap()),
                None => event,
            }
        };
        let ids = |c: &Conversation| -> Vec<String> {
            c.messages.iter().map(|m| m.id().to_owned()).collect()
        };
        let start = || Conversation::new(vec![activity("p", "progress"), activity("c", "card")]);

        let mut c = start();
        c.apply(&snapshot(vec![user("u", "x")], None));
        assert_eq!(ids(&c), ["p", "c", "u"]);
        // A snapshot holding activities speaks for all of them.
        let mut c = start();
        c.apply(&snapshot(vec![activity("q", "progress")], None));
        assert_eq!(ids(&c), ["q"]);
        // Or for the types it names, or for every type with `null`.
        let mut c = start();
        let only = json!({"@ag-ui/client": {"authoritativeActivityTypes": ["card"]}});
        c.apply(&snapshot(vec![], Some(only)));
        assert_eq!(ids(&c), ["p"]);
        let mut c = start();
        let all = json!({"@ag-ui/client": {"authoritativeActivityTypes": null}});
        c.apply(&snapshot(vec![], Some(all)));
        assert!(c.messages.is_empty());
    }
}
