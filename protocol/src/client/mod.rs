//! The client side of a run: the message list a client holds, rebuilt from
//! the events it receives the way `@ag-ui/client` does (`defaultApplyEvents`).
//!
//! AG-UI servers keep nothing between runs; the client sends the whole
//! conversation back as the next `RunAgentInput.messages`. For sealed
//! reasoning to survive that round trip the client must hold each reasoning
//! message with the `encryptedValue` the server sent for it, before the
//! assistant message it belongs to. [`Conversation`] does exactly that, so a
//! Rust client (or a test) replays what the official client would.
//!
//! ```
//! use thinkwire_protocol::client::Conversation;
//! use thinkwire_protocol::*;
//!
//! let mut conversation = Conversation::new(vec![
//!     UserMessage { id: "u1".into(), content: "Hi".into(), name: None, encrypted_value: None,
//!                   metadata: None, subagent_run_id: None }.into(),
//! ]);
//! let events: Vec<Event> = vec![
//!     RunStarted::new("t1", "r1").into(),
//!     ReasoningMessageStart::new("r1-think").into(),
//!     ReasoningMessageEnd { message_id: "r1-think".into() }.into(),
//!     ReasoningEncryptedValue::message("r1-think", "c2VhbGVk").into(),
//!     TextMessageStart::assistant("m1").into(),
//!     TextMessageContent { message_id: "m1".into(), delta: "Hello".into() }.into(),
//!     TextMessageEnd { message_id: "m1".into() }.into(),
//!     RunFinished::new("t1", "r1").into(),
//! ];
//! conversation.apply_all(&events);
//!
//! // The next run's input: the reasoning travels back sealed, in place.
//! let next = RunAgentInput::new("t1", "r2", conversation.messages.clone());
//! assert_eq!(
//!     serde_json::to_value(&next.messages).unwrap(),
//!     serde_json::json!([
//!         {"role": "user", "id": "u1", "content": "Hi"},
//!         {"role": "reasoning", "id": "r1-think", "content": "", "encryptedValue": "c2VhbGVk"},
//!         {"role": "assistant", "id": "m1", "content": "Hello"},
//!     ])
//! );
//! ```
//!
//! Only messages are rebuilt: shared state (`STATE_*`) and `ACTIVITY_DELTA`
//! patches are left to the application, as this crate applies no JSON
//! Patch; and the `metadata` of a `*_CHUNK` event is not merged into its
//! message. The reducer trusts the stream's order; check the stream with a
//! [`Verifier`](crate::Verifier) to reject one the official client would.

mod snapshot;
mod text;
mod tool_call;

use text::text_message;

use crate::chunk::ChunkExpander;
use crate::event::{
    EncryptedValueSubtype, Event, EventKind, ReasoningEncryptedValue, ReasoningMessageContent,
    ReasoningMessageEnd, TextMessageContent, TextMessageEnd,
};
use crate::message::{Message, ReasoningMessage};
use crate::wire::JsonObject;

/// The messages a client holds, kept up to date event by event.
#[derive(Debug, Default)]
pub struct Conversation {
    /// The conversation, in order: what the next `RunAgentInput.messages`
    /// should carry. Add the user's next message or a tool's result here.
    pub messages: Vec<Message>,
    chunks: ChunkExpander,
}

impl Conversation {
    /// A conversation holding `messages` (what the client sent).
    pub fn new(messages: Vec<Message>) -> Self {
        Conversation {
            messages,
            chunks: ChunkExpander::default(),
        }
    }

    /// The messages, leaving the conversation.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// Applies each of `events` in turn.
    pub fn apply_all<'a>(&mut self, events: impl IntoIterator<Item = &'a Event>) {
        for event in events {
            self.apply(event);
        }
    }

    /// Applies the next event of the stream. `*_CHUNK` events are expanded
    /// first, as the official client does; a chunk it would reject (say, the
    /// first of a message without `messageId`) changes nothing.
    pub fn apply(&mut self, event: &Event) {
        let Ok(expanded) = self.chunks.expand(event) else {
            return;
        };
        for derived in &expanded.derived {
            self.apply_expanded(derived);
        }
        if expanded.and_itself {
            self.apply_expanded(event);
        }
    }

    fn apply_expanded(&mut self, event: &Event) {
        let metadata = event.metadata.as_ref();
        match &event.kind {
            EventKind::TextMessageStart(e) => self.start_message(&e.message_id, metadata, || {
                text_message(e, attribution(event))
            }),
            EventKind::ReasoningMessageStart(e) => {
                self.start_message(&e.message_id, metadata, || {
                    Message::Reasoning(ReasoningMessage {
                        id: e.message_id.clone(),
                        subagent_run_id: attribution(event),
                        ..ReasoningMessage::default()
                    })
                });
            }
            EventKind::TextMessageContent(TextMessageContent { message_id, delta })
            | EventKind::ReasoningMessageContent(ReasoningMessageContent { message_id, delta }) => {
                self.append_streamed(message_id, delta, metadata);
            }
            EventKind::TextMessageEnd(TextMessageEnd { message_id })
            | EventKind::ReasoningMessageEnd(ReasoningMessageEnd { message_id }) => {
                self.end_streamed(message_id, metadata);
            }
            EventKind::ReasoningEncryptedValue(e) => self.store_encrypted_value(e),
            EventKind::ToolCallStart(e) => self.start_tool_call(e, attribution(event), metadata),
            EventKind::ToolCallArgs(e) => {
                if let Some(call) = self.tool_call_mut(&e.tool_call_id) {
                    call.function.arguments.push_str(&e.delta);
                    merge_metadata(&mut call.metadata, metadata);
                }
            }
            EventKind::ToolCallEnd(e) => {
                if let Some(call) = self.tool_call_mut(&e.tool_call_id) {
                    merge_metadata(&mut call.metadata, metadata);
                }
            }
            EventKind::ToolCallResult(e) => {
                self.insert_tool_result(e, attribution(event), metadata);
            }
            EventKind::ActivitySnapshot(e) => {
                self.snapshot_activity(e, attribution(event), metadata);
            }
            EventKind::MessagesSnapshot(e) => self.merge_snapshot(&e.messages, metadata),
            EventKind::RunStarted(e) => {
                // The input echo adds what the client does not hold yet.
                for message in e.input.iter().flat_map(|input| &input.messages) {
                    if self.position(message.id()).is_none() {
                        self.messages.push(message.clone());
                    }
                }
            }
            _ => {}
        }
    }

    /// The first message with `id`, as the official client looks it up.
    fn position(&self, id: &str) -> Option<usize> {
        self.messages.iter().position(|m| m.id() == id)
    }

    /// Stores a sealed value on its entity; a value for an entity the client
    /// does not hold is dropped, as the official client drops it.
    fn store_encrypted_value(&mut self, e: &ReasoningEncryptedValue) {
        let value = Some(e.encrypted_value.clone());
        match e.subtype {
            EncryptedValueSubtype::ToolCall => {
                if let Some(call) = self.tool_call_mut(&e.entity_id) {
                    call.encrypted_value = value;
                }
            }
            EncryptedValueSubtype::Message => {
                let Some(at) = self.position(&e.entity_id) else {
                    return;
                };
                match &mut self.messages[at] {
                    Message::Developer(m) => m.encrypted_value = value,
                    Message::System(m) => m.encrypted_value = value,
                    Message::Assistant(m) => m.encrypted_value = value,
                    Message::User(m) => m.encrypted_value = value,
                    Message::Tool(m) => m.encrypted_value = value,
                    Message::Reasoning(m) => m.encrypted_value = value,
                    // Activities carry no sealed value.
                    Message::Activity(_) => {}
                }
            }
        }
    }
}

impl From<Vec<Message>> for Conversation {
    fn from(messages: Vec<Message>) -> Self {
        Conversation::new(messages)
    }
}

/// The `subagentRunId` an event attributes its entity to, where its type
/// allows one.
fn attribution(event: &Event) -> Option<String> {
    event
        .subagent_run_id
        .clone()
        .filter(|_| event.event_type().is_attributable())
}

fn metadata_mut(message: &mut Message) -> &mut Option<JsonObject> {
    match message {
        Message::Developer(m) => &mut m.metadata,
        Message::System(m) => &mut m.metadata,
        Message::Assistant(m) => &mut m.metadata,
        Message::User(m) => &mut m.metadata,
        Message::Tool(m) => &mut m.metadata,
        Message::Activity(m) => &mut m.metadata,
        Message::Reasoning(m) => &mut m.metadata,
    }
}

/// An event's `metadata` merged into its entity's, key by key (the official
/// client's `mergeMetadata`: the event's keys win).
fn merge_metadata(target: &mut Option<JsonObject>, incoming: Option<&JsonObject>) {
    if let Some(incoming) = incoming {
        target.get_or_insert_default().extend(incoming.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{
        ActivitySnapshot, ReasoningEnd, ReasoningMessageContent, ReasoningMessageEnd,
        ReasoningMessageStart, ReasoningStart, RunFinished, RunStarted, TextMessageContent,
        TextMessageEnd, TextMessageStart, ToolCallArgs, ToolCallEnd, ToolCallStart,
    };
    use crate::input::RunAgentInput;
    use crate::message::UserMessage;
    use serde_json::json;

    pub(super) fn user(id: &str, text: &str) -> Message {
        Message::User(UserMessage {
            id: id.into(),
            content: text.into(),
            name: None,
            encrypted_value: None,
            metadata: None,
            subagent_run_id: None,
        })
    }

    pub(super) fn json_of(conversation: &Conversation) -> serde_json::Value {
        serde_json::to_value(&conversation.messages).unwrap()
    }

    pub(super) fn tool_start(call: &str, parent: Option<&str>) -> Event {
        ToolCallStart {
            tool_call_id: call.into(),
            tool_call_name: "get_weather".into(),
            parent_message_id: parent.map(Into::into),
        }
        .into()
    }

    pub(super) fn text(id: &str, delta: &str) -> Vec<Event> {
        vec![
            TextMessageStart::assistant(id).into(),
            TextMessageContent {
                message_id: id.into(),
                delta: delta.into(),
            }
            .into(),
            TextMessageEnd {
                message_id: id.into(),
            }
            .into(),
        ]
    }

    #[test]
    fn sealed_reasoning_then_a_tool_call_as_thinkwire_streams_them() {
        let mut c = Conversation::new(vec![user("u1", "Weather in Paris?")]);
        c.apply_all(&[
            RunStarted::new("t", "r").into(),
            ReasoningStart {
                message_id: "r-think".into(),
            }
            .into(),
            ReasoningMessageStart::new("r-think").into(),
            ReasoningMessageContent {
                message_id: "r-think".into(),
                delta: "Look it ".into(),
            }
            .into(),
            ReasoningMessageContent {
                message_id: "r-think".into(),
                delta: "up.".into(),
            }
            .into(),
            ReasoningMessageEnd {
                message_id: "r-think".into(),
            }
            .into(),
            ReasoningEncryptedValue::message("r-think", "sealed").into(),
            ReasoningEnd {
                message_id: "r-think".into(),
            }
            .into(),
            tool_start("call-1", Some("r-answer")),
            ToolCallArgs {
                tool_call_id: "call-1".into(),
                delta: "{\"city\":".into(),
            }
            .into(),
            ToolCallArgs {
                tool_call_id: "call-1".into(),
                delta: "\"Paris\"}".into(),
            }
            .into(),
            ToolCallEnd {
                tool_call_id: "call-1".into(),
            }
            .into(),
            ReasoningEncryptedValue {
                subtype: EncryptedValueSubtype::ToolCall,
                entity_id: "call-1".into(),
                encrypted_value: "call-seal".into(),
            }
            .into(),
            RunFinished::new("t", "r").into(),
        ]);
        assert_eq!(
            json_of(&c),
            json!([
                {"role": "user", "id": "u1", "content": "Weather in Paris?"},
                {"role": "reasoning", "id": "r-think", "content": "Look it up.", "encryptedValue": "sealed"},
                {"role": "assistant", "id": "r-answer", "toolCalls": [{
                    "id": "call-1", "type": "function", "encryptedValue": "call-seal",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                }]},
            ])
        );
    }

    #[test]
    fn sealed_values_need_a_known_entity() {
        let mut c = Conversation::default();
        c.apply(&ReasoningEncryptedValue::message("r1", "early").into());
        assert!(c.messages.is_empty());
        c.apply(
            &ActivitySnapshot {
                message_id: "act".into(),
                activity_type: "progress".into(),
                content: Default::default(),
                replace: None,
            }
            .into(),
        );
        c.apply(&ReasoningEncryptedValue::message("act", "ignored").into());
        assert_eq!(c.messages[0].encrypted_value(), None);
    }

    #[test]
    fn the_input_echo_adds_missing_messages() {
        let mut c = Conversation::new(vec![user("u1", "hi")]);
        let mut started = RunStarted::new("t", "r");
        started.input = Some(Box::new(RunAgentInput::new(
            "t",
            "r",
            vec![user("u1", "changed"), user("u2", "more")],
        )));
        c.apply(&started.into());
        assert_eq!(
            json_of(&c),
            json!([
                {"role": "user", "id": "u1", "content": "hi"},
                {"role": "user", "id": "u2", "content": "more"},
            ])
        );
        assert_eq!(c.into_messages().len(), 2);
    }
}
