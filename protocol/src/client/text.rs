//! Streamed text and reasoning messages: opened by a START, grown by
//! CONTENT deltas, and stamped with the metadata of each of their events.

use super::{Conversation, merge_metadata, metadata_mut};
use crate::event::{TextMessageRole, TextMessageStart};
use crate::message::{
    AssistantMessage, Content, DeveloperMessage, Message, SystemMessage, UserMessage,
};
use crate::wire::JsonObject;

impl Conversation {
    /// The message text or reasoning streams into: the first with `id`,
    /// unless that is an activity (ids are meant to be unique across both).
    pub(super) fn streamed_mut(&mut self, id: &str) -> Option<&mut Message> {
        let at = self.position(id)?;
        match &mut self.messages[at] {
            Message::Activity(_) => None,
            message => Some(message),
        }
    }

    /// Opens a streamed message; a START for one the client holds only
    /// merges the event's metadata.
    pub(super) fn start_message(
        &mut self,
        id: &str,
        metadata: Option<&JsonObject>,
        new: impl FnOnce() -> Message,
    ) {
        if self.position(id).is_none() {
            self.messages.push(new());
        }
        if let Some(message) = self.streamed_mut(id) {
            merge_metadata(metadata_mut(message), metadata);
        }
    }

    /// A CONTENT event: text appended to its message.
    pub(super) fn append_streamed(&mut self, id: &str, delta: &str, metadata: Option<&JsonObject>) {
        if let Some(message) = self.streamed_mut(id) {
            append_text(message, delta);
            merge_metadata(metadata_mut(message), metadata);
        }
    }

    /// An END event: only its metadata lands on the message.
    pub(super) fn end_streamed(&mut self, id: &str, metadata: Option<&JsonObject>) {
        if let Some(message) = self.streamed_mut(id) {
            merge_metadata(metadata_mut(message), metadata);
        }
    }
}

/// The message a `TEXT_MESSAGE_START` opens, empty, in its role.
pub(super) fn text_message(e: &TextMessageStart, subagent_run_id: Option<String>) -> Message {
    let id = e.message_id.clone();
    let name = e.name.clone();
    match e.role.unwrap_or_default() {
        TextMessageRole::Assistant => Message::Assistant(AssistantMessage {
            id,
            content: Some(String::new()),
            name,
            subagent_run_id,
            ..AssistantMessage::default()
        }),
        TextMessageRole::User => Message::User(UserMessage {
            id,
            content: Content::default(),
            name,
            encrypted_value: None,
            metadata: None,
            subagent_run_id,
        }),
        TextMessageRole::System => Message::System(SystemMessage {
            id,
            name,
            subagent_run_id,
            ..SystemMessage::default()
        }),
        TextMessageRole::Developer => Message::Developer(DeveloperMessage {
            id,
            name,
            subagent_run_id,
            ..DeveloperMessage::default()
        }),
    }
}

/// Appends streamed text to a message's content. Content parts are replaced
/// by the text, as the official client (which appends to a string only)
/// does; an activity's content is an object and is left alone.
fn append_text(message: &mut Message, delta: &str) {
    fn append(content: &mut Content, delta: &str) {
        match content {
            Content::Text(text) => text.push_str(delta),
            Content::Parts(_) => *content = Content::Text(delta.to_owned()),
        }
    }
    match message {
        Message::Developer(m) => m.content.push_str(delta),
        Message::System(m) => m.content.push_str(delta),
        Message::Assistant(m) => m.content.get_or_insert_default().push_str(delta),
        Message::User(m) => append(&mut m.content, delta),
        Message::Tool(m) => append(&mut m.content, delta),
        Message::Reasoning(m) => m.content.push_str(delta),
        Message::Activity(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::json_of;
    use super::*;
    use crate::event::{Event, ReasoningMessageChunk, TextMessageChunk, TextMessageContent};
    use serde_json::json;

    #[test]
    fn chunks_expand_into_messages() {
        let mut c = Conversation::default();
        c.apply_all(&[
            ReasoningMessageChunk {
                message_id: Some("r1".into()),
                delta: Some("th".into()),
            }
            .into(),
            ReasoningMessageChunk {
                message_id: None,
                delta: Some("ink".into()),
            }
            .into(),
            TextMessageChunk {
                message_id: Some("m1".into()),
                delta: Some("Hel".into()),
                ..TextMessageChunk::default()
            }
            .into(),
            TextMessageChunk {
                delta: Some("lo".into()),
                ..TextMessageChunk::default()
            }
            .into(),
            // Rejected by the official client: no message to continue.
            ReasoningMessageChunk {
                message_id: None,
                delta: Some("lost".into()),
            }
            .into(),
        ]);
        assert_eq!(
            json_of(&c),
            json!([
                {"role": "reasoning", "id": "r1", "content": "think"},
                {"role": "assistant", "id": "m1", "content": "Hello"},
            ])
        );
    }

    #[test]
    fn text_roles_and_attribution() {
        let mut c = Conversation::default();
        let start = TextMessageStart {
            message_id: "s1".into(),
            role: Some(TextMessageRole::System),
            name: Some("ops".into()),
        };
        c.apply(&Event::from(start).with_subagent_run_id("sub"));
        c.apply(
            &TextMessageContent {
                message_id: "s1".into(),
                delta: "Be brief.".into(),
            }
            .into(),
        );
        assert_eq!(
            json_of(&c),
            json!([{"role": "system", "id": "s1", "content": "Be brief.", "name": "ops", "subagentRunId": "sub"}])
        );
    }
}
