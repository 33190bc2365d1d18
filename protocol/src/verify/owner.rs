//! Attribution: an event's `subagentRunId` must agree with whoever opened
//! the entity it continues (the official client checks this too), and a
//! snapshot or the `RUN_STARTED` input echo fixes the owners of the
//! messages it replays.

use std::collections::HashMap;

use super::{Entity, Verifier, VerifyError};
use crate::event::{
    ActivityDelta, ActivitySnapshot, EncryptedValueSubtype, Event, EventType,
    ReasoningEncryptedValue, ToolCallResult,
};
use crate::message::Message;

/// Who produced an entity; `None` is the parent agent.
pub(crate) type Owner = Option<String>;

#[derive(Debug, Default)]
pub(super) struct Owners {
    pub(super) message: HashMap<String, Owner>,
    pub(super) tool_call: HashMap<String, Owner>,
    pub(super) activity: HashMap<String, Owner>,
    pub(super) reasoning: HashMap<String, Owner>,
}

/// The common `subagentRunId` of an event, where its type allows one.
pub(crate) fn tag_of(event: &Event) -> Option<&str> {
    event
        .subagent_run_id
        .as_deref()
        .filter(|_| event.event_type().is_attributable())
}

/// A continuation must not disagree with its entity's owner; an absent tag
/// always agrees.
pub(super) fn check_owner(
    event_type: EventType,
    tag: Option<&str>,
    owner: Option<&Owner>,
    entity: Entity,
    id: &str,
) -> Result<(), VerifyError> {
    match (tag, owner) {
        (Some(tag), Some(owner)) if owner.as_deref() != Some(tag) => {
            Err(VerifyError::OwnerMismatch {
                event_type,
                entity,
                id: id.to_owned(),
                subagent: tag.to_owned(),
                owner: owner.clone(),
            })
        }
        _ => Ok(()),
    }
}

impl Verifier {
    /// Records the owners of messages replayed in a snapshot or in the
    /// `RUN_STARTED` input echo, so later events cannot re-attribute them.
    pub(super) fn seed_owners(&mut self, messages: &[Message], authoritative: bool) {
        for message in messages {
            let owner = message.subagent_run_id().map(str::to_owned);
            let bucket = match message {
                Message::Reasoning(_) => &mut self.owners.reasoning,
                Message::Activity(_) => &mut self.owners.activity,
                _ => &mut self.owners.message,
            };
            if authoritative || !bucket.contains_key(message.id()) {
                bucket.insert(message.id().to_owned(), owner.clone());
            }
            if let Message::Assistant(a) = message {
                for call in a.tool_calls.iter().flatten() {
                    if authoritative || !self.owners.tool_call.contains_key(&call.id) {
                        self.owners.tool_call.insert(call.id.clone(), owner.clone());
                    }
                }
            }
        }
    }

    /// `ACTIVITY_SNAPSHOT`.
    pub(super) fn activity_snapshot(&mut self, tag: Option<&str>, e: &ActivitySnapshot) {
        // Only a replacing snapshot (or the first) re-owns the activity.
        let is_new = !self.owners.activity.contains_key(&e.message_id);
        if is_new || e.replace != Some(false) {
            self.owners
                .activity
                .insert(e.message_id.clone(), tag.map(str::to_owned));
        }
    }

    /// `ACTIVITY_DELTA`.
    pub(super) fn activity_delta(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        e: &ActivityDelta,
    ) -> Result<(), VerifyError> {
        let owner = self.owners.activity.get(&e.message_id);
        check_owner(ty, tag, owner, Entity::Activity, &e.message_id)?;
        Ok(())
    }

    /// `TOOL_CALL_RESULT`.
    pub(super) fn tool_call_result(&mut self, tag: Option<&str>, e: &ToolCallResult) {
        // Mints a tool message: the newest mint owns it.
        self.owners
            .message
            .insert(e.message_id.clone(), tag.map(str::to_owned));
    }

    /// `REASONING_ENCRYPTED_VALUE`.
    pub(super) fn encrypted_value(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        e: &ReasoningEncryptedValue,
    ) -> Result<(), VerifyError> {
        let id = &e.entity_id;
        let (owner, entity) = match e.subtype {
            EncryptedValueSubtype::ToolCall => (self.owners.tool_call.get(id), Entity::ToolCall),
            EncryptedValueSubtype::Message => (
                self.owners
                    .message
                    .get(id)
                    .or_else(|| self.owners.reasoning.get(id)),
                Entity::ReasoningMessage,
            ),
        };
        check_owner(ty, tag, owner, entity, id)?;
        Ok(())
    }
}
