//! What a violation looks like: [`VerifyError`] names the rule, the event
//! type and the id involved, never message text, so it is safe to log.

use std::fmt;

use crate::event::EventType;

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
    /// [`Verifier::finish`](super::Verifier::finish): the stream ended inside a run.
    #[error("stream ended inside a run: RUN_FINISHED or RUN_ERROR is missing")]
    Unterminated,
    /// [`Verifier::finish`](super::Verifier::finish): the stream carried no event at all.
    #[error("stream ended without any event")]
    Empty,
}

pub(super) fn already_open(event_type: EventType, entity: Entity, id: &str) -> VerifyError {
    VerifyError::AlreadyOpen {
        event_type,
        entity,
        id: id.to_owned(),
    }
}

pub(super) fn not_open(event_type: EventType, entity: Entity, id: &str) -> VerifyError {
    VerifyError::NotOpen {
        event_type,
        entity,
        id: id.to_owned(),
    }
}
