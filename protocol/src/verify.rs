//! The event-sequence rules the official AG-UI client enforces (its
//! `verifyEvents` stage, preceded by the chunk expansion it runs first). A
//! stream this [`Verifier`] rejects is one the official client would abort.
//!
//! Rules (see `shared/design/agui-1.0.md`, "What the official client
//! verifies"):
//!
//! 1. The first event is `RUN_STARTED` or `RUN_ERROR`.
//! 2. No `RUN_STARTED` while a run is active; after `RUN_FINISHED` or
//!    `RUN_ERROR` a `RUN_STARTED` begins a fresh run (all state reset).
//! 3. After `RUN_ERROR` only `RUN_STARTED`; after `RUN_FINISHED` only
//!    `RUN_STARTED` or `RUN_ERROR`.
//! 4. Text messages, tool calls, reasoning spans and reasoning messages:
//!    START of an open id is an error, CONTENT/ARGS/END need an open id, ids
//!    may be reused after END, several may be open at once.
//! 5. Steps: a duplicate `STEP_STARTED` or an unmatched `STEP_FINISHED` is an
//!    error (steps are keyed by subagent and name).
//! 6. `RUN_FINISHED` while a step, message, tool call, reasoning span or
//!    message, or subagent is open is an error.
//!
//! Where the design note is silent this follows the official client's source:
//! `*_CHUNK` events are expanded into START/CONTENT/END first (a chunk lane is
//! closed by the next non-chunk event of its producer); subagent lifecycle
//! events are checked; and a `subagentRunId` on a continuation must agree with
//! whoever opened the entity.
//!
//! ```
//! use thinkwire_protocol::*;
//!
//! let mut v = Verifier::new();
//! v.check(&RunStarted::new("t", "r").into()).unwrap();
//! v.check(&TextMessageStart::assistant("m1").into()).unwrap();
//! let err = v.check(&RunFinished::new("t", "r").into()).unwrap_err();
//! assert!(err.to_string().contains("m1"));
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::event::{
    EncryptedValueSubtype, Event, EventKind, EventType, ReasoningMessageContent,
    ReasoningMessageEnd, ReasoningMessageStart, TextMessageContent, TextMessageEnd,
    TextMessageRole, TextMessageStart, ToolCallArgs, ToolCallEnd, ToolCallStart,
};
use crate::message::Message;

/// The kinds of entity the verifier tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entity {
    /// `TEXT_MESSAGE_*` (and any message id, for attribution).
    TextMessage,
    /// `TOOL_CALL_*`.
    ToolCall,
    /// `REASONING_START` / `REASONING_END`.
    ReasoningSpan,
    /// `REASONING_MESSAGE_*`.
    ReasoningMessage,
    /// `ACTIVITY_*`.
    Activity,
    /// `STEP_*`.
    Step,
    /// `SUBAGENT_*`.
    Subagent,
}

impl Entity {
    fn name(self) -> &'static str {
        match self {
            Entity::TextMessage => "text message",
            Entity::ToolCall => "tool call",
            Entity::ReasoningSpan => "reasoning span",
            Entity::ReasoningMessage => "reasoning message",
            Entity::Activity => "activity",
            Entity::Step => "step",
            Entity::Subagent => "subagent",
        }
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn who(owner: &Option<String>) -> String {
    match owner {
        Some(id) => format!("subagent '{id}'"),
        None => "the parent agent".to_owned(),
    }
}

/// A violation of the AG-UI event-sequence rules. Messages name the event
/// type and the id involved; they never include message text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// Rule 1.
    #[error("first event must be RUN_STARTED or RUN_ERROR, got {event_type}")]
    FirstEvent {
        /// The offending event's type.
        event_type: EventType,
    },
    /// Rule 2.
    #[error("RUN_STARTED while a run is still active; end it with RUN_FINISHED first")]
    RunAlreadyActive,
    /// Rule 3, after `RUN_ERROR`.
    #[error("{event_type} after RUN_ERROR: only RUN_STARTED may follow")]
    AfterRunError {
        /// The offending event's type.
        event_type: EventType,
    },
    /// Rule 3, after `RUN_FINISHED`.
    #[error("{event_type} after RUN_FINISHED: only RUN_STARTED or RUN_ERROR may follow")]
    AfterRunFinished {
        /// The offending event's type.
        event_type: EventType,
    },
    /// Rule 4: START of an id that is open.
    #[error("{event_type}: {entity} '{id}' is already open; end it first")]
    AlreadyOpen {
        /// The offending event's type.
        event_type: EventType,
        /// What kind of entity.
        entity: Entity,
        /// Its id.
        id: String,
    },
    /// Rule 4: CONTENT/ARGS/END of an id that is not open.
    #[error("{event_type}: no open {entity} with id '{id}'")]
    NotOpen {
        /// The offending event's type.
        event_type: EventType,
        /// What kind of entity.
        entity: Entity,
        /// Its id.
        id: String,
    },
    /// Rule 5: duplicate `STEP_STARTED`.
    #[error("STEP_STARTED: step '{name}' of {} is already active", who(subagent))]
    StepAlreadyActive {
        /// Step name.
        name: String,
        /// Its producer (`None` = the parent agent).
        subagent: Option<String>,
    },
    /// Rule 5: `STEP_FINISHED` without its `STEP_STARTED`.
    #[error("STEP_FINISHED: step '{name}' of {} was not started", who(subagent))]
    StepNotStarted {
        /// Step name.
        name: String,
        /// Its producer (`None` = the parent agent).
        subagent: Option<String>,
    },
    /// Rule 5: `STEP_FINISHED` from a different producer than the start.
    #[error(
        "STEP_FINISHED: step '{name}' attributed to {} is open under {}",
        who(subagent),
        who(owner)
    )]
    StepOwnerMismatch {
        /// Step name.
        name: String,
        /// The finishing event's producer.
        subagent: Option<String>,
        /// The producer that started it.
        owner: Option<String>,
    },
    /// Rule 6.
    #[error("RUN_FINISHED while {entity} entities are still open: {}", ids.join(", "))]
    OpenAtRunFinished {
        /// What is still open.
        entity: Entity,
        /// Their ids (steps: `name` or `name (subagent 's')`).
        ids: Vec<String>,
    },
    /// A continuation's `subagentRunId` disagrees with its entity's opener.
    #[error(
        "{event_type}: subagentRunId '{subagent}' does not match {entity} '{id}' owned by {}",
        who(owner)
    )]
    OwnerMismatch {
        /// The offending event's type.
        event_type: EventType,
        /// What kind of entity.
        entity: Entity,
        /// Its id.
        id: String,
        /// The event's attribution.
        subagent: String,
        /// The entity's owner (`None` = the parent agent).
        owner: Option<String>,
    },
    /// A tool call attributed differently from its parent message.
    #[error(
        "TOOL_CALL_START: tool call '{tool_call_id}' by {} does not belong to message '{parent_message_id}' of {}",
        who(subagent),
        who(parent_owner)
    )]
    ParentOwnerMismatch {
        /// The call.
        tool_call_id: String,
        /// Its parent message.
        parent_message_id: String,
        /// The call's (effective) owner.
        subagent: Option<String>,
        /// The parent message's owner.
        parent_owner: Option<String>,
    },
    /// `SUBAGENT_STARTED` for an active subagent.
    #[error("SUBAGENT_STARTED: subagent '{id}' is already active")]
    SubagentAlreadyActive {
        /// The subagent run id.
        id: String,
    },
    /// `SUBAGENT_STARTED` reusing a finished subagent's id.
    #[error(
        "SUBAGENT_STARTED: subagent '{id}' already finished in this run; ids are per invocation"
    )]
    SubagentReused {
        /// The subagent run id.
        id: String,
    },
    /// `SUBAGENT_STARTED` naming a parent that never started.
    #[error("SUBAGENT_STARTED: parent subagent '{parent}' of '{id}' was not started in this run")]
    SubagentParentUnknown {
        /// The subagent run id.
        id: String,
        /// The unknown parent.
        parent: String,
    },
    /// `SUBAGENT_FINISHED`/`SUBAGENT_ERROR` of a subagent that is not active.
    #[error("{event_type}: no active subagent '{id}'")]
    SubagentNotActive {
        /// The offending event's type.
        event_type: EventType,
        /// The subagent run id.
        id: String,
    },
    /// The first chunk of an entity lacks a field the START needs.
    #[error("{event_type}: the first chunk of a {entity} needs `{field}`")]
    ChunkMissingField {
        /// The chunk's type.
        event_type: EventType,
        /// What the chunk opens.
        entity: Entity,
        /// The missing field.
        field: &'static str,
    },
    /// A continuation chunk repeats a field with a different value.
    #[error("{event_type}: `{field}` differs from the open {entity} '{id}'")]
    ChunkFieldConflict {
        /// The chunk's type.
        event_type: EventType,
        /// What the chunk continues.
        entity: Entity,
        /// Its id.
        id: String,
        /// The conflicting field.
        field: &'static str,
    },
    /// A chunk names no id and no producer while several producers stream.
    #[error(
        "{event_type}: no id and no subagentRunId, but several producers have an open {entity}"
    )]
    ChunkAmbiguous {
        /// The chunk's type.
        event_type: EventType,
        /// What kind of entity.
        entity: Entity,
    },
    /// [`Verifier::finish`]: the stream ended inside a run.
    #[error("stream ended inside a run: RUN_FINISHED or RUN_ERROR is missing")]
    Unterminated,
    /// [`Verifier::finish`]: the stream carried no event at all.
    #[error("stream ended without any event")]
    Empty,
}

/// `None` is the parent agent.
type Owner = Option<String>;

#[derive(Debug, Clone)]
enum Pending {
    Text {
        id: String,
        role: TextMessageRole,
        name: Option<String>,
        owner: Owner,
    },
    Tool {
        id: String,
        name: String,
        parent: Option<String>,
        owner: Owner,
    },
    Reasoning {
        id: String,
        owner: Owner,
    },
}

impl Pending {
    fn entity(&self) -> Entity {
        match self {
            Pending::Text { .. } => Entity::TextMessage,
            Pending::Tool { .. } => Entity::ToolCall,
            Pending::Reasoning { .. } => Entity::ReasoningMessage,
        }
    }

    fn id(&self) -> &str {
        match self {
            Pending::Text { id, .. } | Pending::Tool { id, .. } | Pending::Reasoning { id, .. } => {
                id
            }
        }
    }

    /// The END event that closes this chunk stream.
    fn end_event(self) -> Event {
        let (kind, owner): (EventKind, Owner) = match self {
            Pending::Text { id, owner, .. } => (TextMessageEnd { message_id: id }.into(), owner),
            Pending::Tool { id, owner, .. } => (ToolCallEnd { tool_call_id: id }.into(), owner),
            Pending::Reasoning { id, owner } => {
                (ReasoningMessageEnd { message_id: id }.into(), owner)
            }
        };
        attributed(Event::new(kind), owner)
    }
}

fn attributed(mut event: Event, owner: Owner) -> Event {
    event.subagent_run_id = owner;
    event
}

/// The common `subagentRunId` of an event, where its type allows one.
fn tag_of(event: &Event) -> Option<&str> {
    event
        .subagent_run_id
        .as_deref()
        .filter(|_| event.event_type().is_attributable())
}

#[derive(Debug, Default)]
struct Owners {
    message: HashMap<String, Owner>,
    tool_call: HashMap<String, Owner>,
    activity: HashMap<String, Owner>,
    reasoning: HashMap<String, Owner>,
}

/// Checks an AG-UI event stream against the official client's rules, one
/// event at a time. One verifier per stream (an SSE response, a WebSocket
/// connection); it follows several consecutive runs.
///
/// After an error the stream is invalid (the client aborts it); further
/// results are unspecified.
#[derive(Debug, Default)]
pub struct Verifier {
    first_seen: bool,
    run_started: bool,
    run_finished: bool,
    run_errored: bool,
    open_messages: Vec<String>,
    open_tool_calls: Vec<String>,
    open_reasoning_spans: Vec<String>,
    open_reasoning_messages: Vec<String>,
    owners: Owners,
    /// Open steps as (owner, name), in start order.
    steps: Vec<(Owner, String)>,
    active_subagents: Vec<String>,
    closed_subagents: HashSet<String>,
    /// Chunk streams being assembled, one lane per producer.
    lanes: Vec<(Owner, Pending)>,
}

fn remove(set: &mut Vec<String>, id: &str) -> bool {
    match set.iter().position(|x| x == id) {
        Some(at) => {
            set.remove(at);
            true
        }
        None => false,
    }
}

fn contains(set: &[String], id: &str) -> bool {
    set.iter().any(|x| x == id)
}

/// A continuation must not disagree with its entity's owner; an absent tag
/// always agrees.
fn check_owner(
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
    /// A verifier expecting a stream's first event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a run has started and not yet finished or errored.
    pub fn is_run_active(&self) -> bool {
        self.run_started && !self.run_finished && !self.run_errored
    }

    /// Checks the next event of the stream.
    pub fn check(&mut self, event: &Event) -> Result<(), VerifyError> {
        let ty = event.event_type();
        let tag = tag_of(event).map(str::to_owned);
        match &event.kind {
            EventKind::TextMessageChunk(_)
            | EventKind::ToolCallChunk(_)
            | EventKind::ReasoningMessageChunk(_) => {
                for synthetic in self.expand_chunk(event)? {
                    self.apply(&synthetic)?;
                }
                return Ok(());
            }
            EventKind::RunStarted(_)
            | EventKind::RunFinished(_)
            | EventKind::RunError(_)
            | EventKind::MessagesSnapshot(_) => {
                for (_, pending) in std::mem::take(&mut self.lanes) {
                    self.apply(&pending.end_event())?;
                }
            }
            EventKind::Raw(_)
            | EventKind::ActivitySnapshot(_)
            | EventKind::ActivityDelta(_)
            | EventKind::ReasoningEncryptedValue(_)
            | EventKind::SubagentStarted(_) => {}
            EventKind::SubagentFinished(f) => {
                let owner = Some(f.subagent_run_id.clone());
                self.close_lane(&owner)?;
            }
            EventKind::SubagentError(e) => {
                let owner = Some(e.subagent_run_id.clone());
                self.close_lane(&owner)?;
            }
            _ => {
                debug_assert!(ty.is_attributable());
                self.close_lane(&tag)?;
            }
        }
        self.apply(event)
    }

    /// Checks the end of the stream. Stricter than the official client
    /// (which only drops a dangling run): thinkwire always ends a run with
    /// `RUN_FINISHED` or `RUN_ERROR`, and always sends at least one event.
    pub fn finish(&mut self) -> Result<(), VerifyError> {
        if !self.first_seen {
            return Err(VerifyError::Empty);
        }
        if self.is_run_active() {
            return Err(VerifyError::Unterminated);
        }
        Ok(())
    }

    fn close_lane(&mut self, owner: &Owner) -> Result<(), VerifyError> {
        if let Some(at) = self.lanes.iter().position(|(o, _)| o == owner) {
            let (_, pending) = self.lanes.remove(at);
            self.apply(&pending.end_event())?;
        }
        Ok(())
    }

    fn lane(&self, owner: &Owner) -> Option<&Pending> {
        self.lanes.iter().find(|(o, _)| o == owner).map(|(_, p)| p)
    }

    /// Which producer's lane a chunk belongs to (the official client's
    /// `resolveLane`).
    fn resolve_lane(
        &self,
        event_type: EventType,
        entity: Entity,
        id: Option<&str>,
        tag: Option<&str>,
    ) -> Result<Owner, VerifyError> {
        if let Some(id) = id {
            if let Some((holder, _)) = self
                .lanes
                .iter()
                .find(|(_, p)| p.entity() == entity && p.id() == id)
            {
                if let Some(tag) = tag {
                    if holder.as_deref() != Some(tag) {
                        return Err(VerifyError::OwnerMismatch {
                            event_type,
                            entity,
                            id: id.to_owned(),
                            subagent: tag.to_owned(),
                            owner: holder.clone(),
                        });
                    }
                }
                return Ok(holder.clone());
            }
            return Ok(tag.map(str::to_owned));
        }
        if let Some(tag) = tag {
            return Ok(Some(tag.to_owned()));
        }
        if self.lane(&None).is_some_and(|p| p.entity() == entity) {
            return Ok(None);
        }
        let mut candidates = self.lanes.iter().filter(|(_, p)| p.entity() == entity);
        match (candidates.next(), candidates.next()) {
            (Some((owner, _)), None) => Ok(owner.clone()),
            (Some(_), Some(_)) => Err(VerifyError::ChunkAmbiguous { event_type, entity }),
            _ => Ok(None),
        }
    }

    /// Expands a chunk into the START/CONTENT/END events the client derives.
    fn expand_chunk(&mut self, event: &Event) -> Result<Vec<Event>, VerifyError> {
        let ty = event.event_type();
        let tag = tag_of(event);
        let mut out = Vec::new();
        // A chunk whose only payload is rawEvent/metadata still becomes an
        // (empty) content event in the client.
        let carries_extra = event.raw_event.is_some() || event.metadata.is_some();
        match &event.kind {
            EventKind::TextMessageChunk(chunk) => {
                let entity = Entity::TextMessage;
                let lane = self.resolve_lane(ty, entity, chunk.message_id.as_deref(), tag)?;
                let (id, owner) = match self.lane(&lane) {
                    Some(Pending::Text {
                        id,
                        role,
                        name,
                        owner,
                    }) if chunk.message_id.as_ref().is_none_or(|m| m == id) => {
                        let conflict = if chunk.role.is_some_and(|r| r != *role) {
                            Some("role")
                        } else if chunk.name.is_some() && chunk.name != *name {
                            Some("name")
                        } else {
                            None
                        };
                        if let Some(field) = conflict {
                            return Err(VerifyError::ChunkFieldConflict {
                                event_type: ty,
                                entity,
                                id: id.clone(),
                                field,
                            });
                        }
                        (id.clone(), owner.clone())
                    }
                    _ => {
                        self.close_lane_into(&lane, &mut out);
                        let Some(id) = chunk.message_id.clone() else {
                            return Err(VerifyError::ChunkMissingField {
                                event_type: ty,
                                entity,
                                field: "messageId",
                            });
                        };
                        let role = chunk.role.unwrap_or_default();
                        let owner = tag.map(str::to_owned);
                        self.lanes.push((
                            lane,
                            Pending::Text {
                                id: id.clone(),
                                role,
                                name: chunk.name.clone(),
                                owner: owner.clone(),
                            },
                        ));
                        let start = TextMessageStart {
                            message_id: id.clone(),
                            role: Some(role),
                            name: chunk.name.clone(),
                        };
                        out.push(attributed(start.into(), owner.clone()));
                        (id, owner)
                    }
                };
                if chunk.delta.is_some()
                    || event.raw_event.is_some()
                    || (out.is_empty() && carries_extra)
                {
                    let content = TextMessageContent {
                        message_id: id,
                        delta: chunk.delta.clone().unwrap_or_default(),
                    };
                    out.push(attributed(content.into(), tag.map(str::to_owned).or(owner)));
                }
            }
            EventKind::ToolCallChunk(chunk) => {
                let entity = Entity::ToolCall;
                let lane = self.resolve_lane(ty, entity, chunk.tool_call_id.as_deref(), tag)?;
                let (id, owner) = match self.lane(&lane) {
                    Some(Pending::Tool {
                        id,
                        name,
                        parent,
                        owner,
                    }) if chunk.tool_call_id.as_ref().is_none_or(|c| c == id) => {
                        let conflict = if chunk.tool_call_name.as_ref().is_some_and(|n| n != name) {
                            Some("toolCallName")
                        } else if chunk.parent_message_id.is_some()
                            && chunk.parent_message_id != *parent
                        {
                            Some("parentMessageId")
                        } else {
                            None
                        };
                        if let Some(field) = conflict {
                            return Err(VerifyError::ChunkFieldConflict {
                                event_type: ty,
                                entity,
                                id: id.clone(),
                                field,
                            });
                        }
                        (id.clone(), owner.clone())
                    }
                    _ => {
                        self.close_lane_into(&lane, &mut out);
                        let Some(id) = chunk.tool_call_id.clone() else {
                            return Err(VerifyError::ChunkMissingField {
                                event_type: ty,
                                entity,
                                field: "toolCallId",
                            });
                        };
                        let Some(name) = chunk.tool_call_name.clone() else {
                            return Err(VerifyError::ChunkMissingField {
                                event_type: ty,
                                entity,
                                field: "toolCallName",
                            });
                        };
                        let owner = tag.map(str::to_owned);
                        self.lanes.push((
                            lane,
                            Pending::Tool {
                                id: id.clone(),
                                name: name.clone(),
                                parent: chunk.parent_message_id.clone(),
                                owner: owner.clone(),
                            },
                        ));
                        let start = ToolCallStart {
                            tool_call_id: id.clone(),
                            tool_call_name: name,
                            parent_message_id: chunk.parent_message_id.clone(),
                        };
                        out.push(attributed(start.into(), owner.clone()));
                        (id, owner)
                    }
                };
                if chunk.delta.is_some()
                    || event.raw_event.is_some()
                    || (out.is_empty() && carries_extra)
                {
                    let args = ToolCallArgs {
                        tool_call_id: id,
                        delta: chunk.delta.clone().unwrap_or_default(),
                    };
                    out.push(attributed(args.into(), tag.map(str::to_owned).or(owner)));
                }
            }
            EventKind::ReasoningMessageChunk(chunk) => {
                let entity = Entity::ReasoningMessage;
                let lane = self.resolve_lane(ty, entity, chunk.message_id.as_deref(), tag)?;
                let (id, owner) = match self.lane(&lane) {
                    Some(Pending::Reasoning { id, owner })
                        if chunk.message_id.as_ref().is_none_or(|m| m == id) =>
                    {
                        (id.clone(), owner.clone())
                    }
                    _ => {
                        self.close_lane_into(&lane, &mut out);
                        let Some(id) = chunk.message_id.clone() else {
                            return Err(VerifyError::ChunkMissingField {
                                event_type: ty,
                                entity,
                                field: "messageId",
                            });
                        };
                        let owner = tag.map(str::to_owned);
                        self.lanes.push((
                            lane,
                            Pending::Reasoning {
                                id: id.clone(),
                                owner: owner.clone(),
                            },
                        ));
                        let start = ReasoningMessageStart::new(id.clone());
                        out.push(attributed(start.into(), owner.clone()));
                        (id, owner)
                    }
                };
                if chunk.delta.is_some()
                    || event.raw_event.is_some()
                    || (out.is_empty() && carries_extra)
                {
                    let content = ReasoningMessageContent {
                        message_id: id,
                        delta: chunk.delta.clone().unwrap_or_default(),
                    };
                    out.push(attributed(content.into(), tag.map(str::to_owned).or(owner)));
                }
            }
            _ => {}
        }
        Ok(out)
    }

    fn close_lane_into(&mut self, owner: &Owner, out: &mut Vec<Event>) {
        if let Some(at) = self.lanes.iter().position(|(o, _)| o == owner) {
            let (_, pending) = self.lanes.remove(at);
            out.push(pending.end_event());
        }
    }

    fn reset_run(&mut self) {
        let lanes = std::mem::take(&mut self.lanes);
        *self = Verifier {
            first_seen: true,
            run_started: true,
            lanes,
            ..Verifier::default()
        };
    }

    /// Records the owners of messages replayed in a snapshot or in the
    /// `RUN_STARTED` input echo, so later events cannot re-attribute them.
    fn seed_owners(&mut self, messages: &[Message], authoritative: bool) {
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

    /// The official `verifyEvents` state machine for one (expanded) event.
    fn apply(&mut self, event: &Event) -> Result<(), VerifyError> {
        let ty = event.event_type();
        let tag = tag_of(event);

        if self.run_errored && ty != EventType::RunStarted {
            return Err(VerifyError::AfterRunError { event_type: ty });
        }
        if self.run_finished && ty != EventType::RunError && ty != EventType::RunStarted {
            return Err(VerifyError::AfterRunFinished { event_type: ty });
        }
        if !self.first_seen {
            self.first_seen = true;
            if ty != EventType::RunStarted && ty != EventType::RunError {
                return Err(VerifyError::FirstEvent { event_type: ty });
            }
        } else if ty == EventType::RunStarted {
            if self.is_run_active() {
                return Err(VerifyError::RunAlreadyActive);
            }
            if self.run_finished || self.run_errored {
                self.reset_run();
            }
        }

        match &event.kind {
            EventKind::TextMessageStart(e) => {
                let id = &e.message_id;
                if contains(&self.open_messages, id) {
                    return Err(already_open(ty, Entity::TextMessage, id));
                }
                let existing = self.owners.message.get(id);
                check_owner(ty, tag, existing, Entity::TextMessage, id)?;
                if existing.is_none() {
                    self.owners
                        .message
                        .insert(id.clone(), tag.map(str::to_owned));
                }
                self.open_messages.push(id.clone());
            }
            EventKind::TextMessageContent(TextMessageContent { message_id: id, .. })
            | EventKind::TextMessageEnd(TextMessageEnd { message_id: id }) => {
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
            }
            EventKind::ToolCallStart(e) => {
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
            }
            EventKind::ToolCallArgs(ToolCallArgs {
                tool_call_id: id, ..
            })
            | EventKind::ToolCallEnd(ToolCallEnd { tool_call_id: id }) => {
                if !contains(&self.open_tool_calls, id) {
                    return Err(not_open(ty, Entity::ToolCall, id));
                }
                check_owner(ty, tag, self.owners.tool_call.get(id), Entity::ToolCall, id)?;
                if ty == EventType::ToolCallEnd {
                    remove(&mut self.open_tool_calls, id);
                }
            }
            EventKind::StepStarted(e) => {
                let owner = tag.map(str::to_owned);
                if self
                    .steps
                    .iter()
                    .any(|(o, n)| *o == owner && *n == e.step_name)
                {
                    return Err(VerifyError::StepAlreadyActive {
                        name: e.step_name.clone(),
                        subagent: owner,
                    });
                }
                self.steps.push((owner, e.step_name.clone()));
            }
            EventKind::StepFinished(e) => {
                let owner = tag.map(str::to_owned);
                match self
                    .steps
                    .iter()
                    .position(|(o, n)| *o == owner && *n == e.step_name)
                {
                    Some(at) => {
                        self.steps.remove(at);
                    }
                    None => {
                        return Err(match self.steps.iter().find(|(_, n)| *n == e.step_name) {
                            Some((other, _)) => VerifyError::StepOwnerMismatch {
                                name: e.step_name.clone(),
                                subagent: owner,
                                owner: other.clone(),
                            },
                            None => VerifyError::StepNotStarted {
                                name: e.step_name.clone(),
                                subagent: owner,
                            },
                        });
                    }
                }
            }
            EventKind::ActivitySnapshot(e) => {
                // Only a replacing snapshot (or the first) re-owns the activity.
                let is_new = !self.owners.activity.contains_key(&e.message_id);
                if is_new || e.replace != Some(false) {
                    self.owners
                        .activity
                        .insert(e.message_id.clone(), tag.map(str::to_owned));
                }
            }
            EventKind::ActivityDelta(e) => {
                let owner = self.owners.activity.get(&e.message_id);
                check_owner(ty, tag, owner, Entity::Activity, &e.message_id)?;
            }
            EventKind::ToolCallResult(e) => {
                // Mints a tool message: the newest mint owns it.
                self.owners
                    .message
                    .insert(e.message_id.clone(), tag.map(str::to_owned));
            }
            EventKind::ReasoningStart(crate::event::ReasoningStart { message_id: id })
            | EventKind::ReasoningMessageStart(ReasoningMessageStart { message_id: id, .. }) => {
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
                open.push(id.clone());
                if existing.is_none() {
                    self.owners
                        .reasoning
                        .insert(id.clone(), tag.map(str::to_owned));
                }
            }
            EventKind::ReasoningMessageContent(ReasoningMessageContent {
                message_id: id, ..
            })
            | EventKind::ReasoningMessageEnd(ReasoningMessageEnd { message_id: id })
            | EventKind::ReasoningEnd(crate::event::ReasoningEnd { message_id: id }) => {
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
            }
            EventKind::ReasoningEncryptedValue(e) => {
                let id = &e.entity_id;
                let (owner, entity) = match e.subtype {
                    EncryptedValueSubtype::ToolCall => {
                        (self.owners.tool_call.get(id), Entity::ToolCall)
                    }
                    EncryptedValueSubtype::Message => (
                        self.owners
                            .message
                            .get(id)
                            .or_else(|| self.owners.reasoning.get(id)),
                        Entity::ReasoningMessage,
                    ),
                };
                check_owner(ty, tag, owner, entity, id)?;
            }
            EventKind::SubagentStarted(e) => {
                let id = &e.subagent_run_id;
                if contains(&self.active_subagents, id) {
                    return Err(VerifyError::SubagentAlreadyActive { id: id.clone() });
                }
                if self.closed_subagents.contains(id) {
                    return Err(VerifyError::SubagentReused { id: id.clone() });
                }
                if let Some(parent) = &e.parent_subagent_run_id {
                    if !contains(&self.active_subagents, parent)
                        && !self.closed_subagents.contains(parent)
                    {
                        return Err(VerifyError::SubagentParentUnknown {
                            id: id.clone(),
                            parent: parent.clone(),
                        });
                    }
                }
                self.active_subagents.push(id.clone());
            }
            EventKind::SubagentFinished(crate::event::SubagentFinished {
                subagent_run_id: id,
                ..
            })
            | EventKind::SubagentError(crate::event::SubagentError {
                subagent_run_id: id,
                ..
            }) => {
                if !remove(&mut self.active_subagents, id) {
                    return Err(VerifyError::SubagentNotActive {
                        event_type: ty,
                        id: id.clone(),
                    });
                }
                self.closed_subagents.insert(id.clone());
            }
            EventKind::MessagesSnapshot(e) => self.seed_owners(&e.messages, true),
            EventKind::RunStarted(e) => {
                self.run_started = true;
                if let Some(input) = &e.input {
                    self.seed_owners(&input.messages, false);
                }
            }
            EventKind::RunFinished(_) => {
                self.check_nothing_open()?;
                self.run_finished = true;
            }
            EventKind::RunError(_) => self.run_errored = true,
            EventKind::TextMessageChunk(_)
            | EventKind::ToolCallChunk(_)
            | EventKind::ReasoningMessageChunk(_)
            | EventKind::StateSnapshot(_)
            | EventKind::StateDelta(_)
            | EventKind::Raw(_)
            | EventKind::Custom(_) => {}
        }
        Ok(())
    }

    /// Rule 6, in the official client's order.
    fn check_nothing_open(&self) -> Result<(), VerifyError> {
        if !self.steps.is_empty() {
            let ids = self
                .steps
                .iter()
                .map(|(owner, name)| match owner {
                    Some(o) => format!("{name} (subagent '{o}')"),
                    None => name.clone(),
                })
                .collect();
            return Err(VerifyError::OpenAtRunFinished {
                entity: Entity::Step,
                ids,
            });
        }
        for (set, entity) in [
            (&self.open_messages, Entity::TextMessage),
            (&self.open_reasoning_messages, Entity::ReasoningMessage),
            (&self.open_reasoning_spans, Entity::ReasoningSpan),
            (&self.open_tool_calls, Entity::ToolCall),
            (&self.active_subagents, Entity::Subagent),
        ] {
            if !set.is_empty() {
                return Err(VerifyError::OpenAtRunFinished {
                    entity,
                    ids: set.clone(),
                });
            }
        }
        Ok(())
    }
}

fn already_open(event_type: EventType, entity: Entity, id: &str) -> VerifyError {
    VerifyError::AlreadyOpen {
        event_type,
        entity,
        id: id.to_owned(),
    }
}

fn not_open(event_type: EventType, entity: Entity, id: &str) -> VerifyError {
    VerifyError::NotOpen {
        event_type,
        entity,
        id: id.to_owned(),
    }
}
