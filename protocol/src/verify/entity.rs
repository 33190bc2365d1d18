//! Rule 4: text messages, tool calls, reasoning spans and reasoning
//! messages. START of an open id is an error, CONTENT/ARGS/END need an open
//! id, an id may be reused after its END, and several may be open at once.
//! Each also records or checks who owns the id ([`super::owner`]).

use super::error::{already_open, not_open};
use super::owner::{Owner, check_owner};
use super::{Entity, Verifier, VerifyError, contains, remove};
use crate::event::{EventType, ToolCallStart};

impl Verifier {
    /// `TEXT_MESSAGE_START`.
    pub(super) fn text_start(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        id: &str,
    ) -> Result<(), VerifyError> {
        if contains(&self.open_messages, id) {
            return Err(already_open(ty, Entity::TextMessage, id));
        }
        let existing = self.owners.message.get(id);
        check_owner(ty, tag, existing, Entity::TextMessage, id)?;
        if existing.is_none() {
            self.owners
                .message
                .insert(id.to_owned(), tag.map(str::to_owned));
        }
        self.open_messages.push(id.to_owned());
        Ok(())
    }

    /// `TEXT_MESSAGE_CONTENT` and `TEXT_MESSAGE_END`.
    pub(super) fn text_continue(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        id: &str,
    ) -> Result<(), VerifyError> {
        if !contains(&self.open_messages, id) {
            return Err(not_open(ty, Entity::TextMessage, id));
        }
        check_owner(
            ty,
            tag,
            self.owners.message.get(id),
            Entity::TextMessage,
            id,
        )?;
        if ty == EventType::TextMessageEnd {
            remove(&mut self.open_messages, id);
        }
        Ok(())
    }

    /// `TOOL_CALL_START`.
    pub(super) fn tool_call_start(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        e: &ToolCallStart,
    ) -> Result<(), VerifyError> {
        let id = &e.tool_call_id;
        if contains(&self.open_tool_calls, id) {
            return Err(already_open(ty, Entity::ToolCall, id));
        }
        // A call lives inside its parent message: an untagged call
        // inherits that message's owner, a tagged one must match it.
        let mut inherited: Option<Owner> = None;
        if let Some(parent) = &e.parent_message_id {
            if let Some(parent_owner) = self.owners.message.get(parent) {
                if let Some(tag) = tag {
                    if parent_owner.as_deref() != Some(tag) {
                        return Err(VerifyError::ParentOwnerMismatch {
                            tool_call_id: id.clone(),
                            parent_message_id: parent.clone(),
                            subagent: Some(tag.to_owned()),
                            parent_owner: parent_owner.clone(),
                        });
                    }
                }
                inherited = Some(parent_owner.clone());
            }
        }
        let existing = self.owners.tool_call.get(id).cloned();
        if let Some(existing) = &existing {
            check_owner(ty, tag, Some(existing), Entity::ToolCall, id)?;
            if let (None, Some(inherited)) = (tag, &inherited) {
                if inherited != existing {
                    return Err(VerifyError::ParentOwnerMismatch {
                        tool_call_id: id.clone(),
                        parent_message_id: e.parent_message_id.clone().unwrap_or_default(),
                        subagent: existing.clone(),
                        parent_owner: inherited.clone(),
                    });
                }
            }
        } else {
            let owner = match tag {
                Some(tag) => Some(tag.to_owned()),
                None => inherited.unwrap_or(None),
            };
            self.owners.tool_call.insert(id.clone(), owner);
        }
        self.open_tool_calls.push(id.clone());
        Ok(())
    }

    /// `TOOL_CALL_ARGS` and `TOOL_CALL_END`.
    pub(super) fn tool_call_continue(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        id: &str,
    ) -> Result<(), VerifyError> {
        if !contains(&self.open_tool_calls, id) {
            return Err(not_open(ty, Entity::ToolCall, id));
        }
        check_owner(ty, tag, self.owners.tool_call.get(id), Entity::ToolCall, id)?;
        if ty == EventType::ToolCallEnd {
            remove(&mut self.open_tool_calls, id);
        }
        Ok(())
    }

    /// `REASONING_START` and `REASONING_MESSAGE_START`.
    pub(super) fn reasoning_start(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        id: &str,
    ) -> Result<(), VerifyError> {
        let (open, entity) = if ty == EventType::ReasoningStart {
            (&mut self.open_reasoning_spans, Entity::ReasoningSpan)
        } else {
            (&mut self.open_reasoning_messages, Entity::ReasoningMessage)
        };
        if contains(open, id) {
            return Err(already_open(ty, entity, id));
        }
        let existing = self.owners.reasoning.get(id);
        check_owner(ty, tag, existing, entity, id)?;
        open.push(id.to_owned());
        if existing.is_none() {
            self.owners
                .reasoning
                .insert(id.to_owned(), tag.map(str::to_owned));
        }
        Ok(())
    }

    /// `REASONING_MESSAGE_CONTENT`, `REASONING_MESSAGE_END` and `REASONING_END`.
    pub(super) fn reasoning_continue(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        id: &str,
    ) -> Result<(), VerifyError> {
        let (open, entity) = if ty == EventType::ReasoningEnd {
            (&mut self.open_reasoning_spans, Entity::ReasoningSpan)
        } else {
            (&mut self.open_reasoning_messages, Entity::ReasoningMessage)
        };
        if !contains(open, id) {
            return Err(not_open(ty, entity, id));
        }
        if ty != EventType::ReasoningMessageContent {
            remove(open, id);
        }
        check_owner(ty, tag, self.owners.reasoning.get(id), entity, id)?;
        Ok(())
    }
}
