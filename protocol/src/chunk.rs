//! `*_CHUNK` events, expanded into the START/CONTENT/END events the official
//! client derives before it verifies or applies anything. Both the
//! [`Verifier`](crate::Verifier) and the [`client`](crate::client) reducer
//! read a stream through one [`ChunkExpander`], so they agree on what a
//! chunk means.
//!
//! A chunk stream is a lane per producer (parent agent or subagent), closed
//! by that producer's next non-chunk event.

use crate::event::{
    Event, EventKind, EventType, ReasoningMessageChunk, ReasoningMessageContent,
    ReasoningMessageEnd, ReasoningMessageStart, TextMessageChunk, TextMessageContent,
    TextMessageEnd, TextMessageRole, TextMessageStart, ToolCallArgs, ToolCallChunk, ToolCallEnd,
    ToolCallStart,
};
use crate::verify::{Entity, Owner, VerifyError, tag_of};

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

    fn owner(&self) -> &Owner {
        match self {
            Pending::Text { owner, .. }
            | Pending::Tool { owner, .. }
            | Pending::Reasoning { owner, .. } => owner,
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

/// What one incoming event stands for once chunks are expanded.
#[derive(Debug)]
pub(crate) struct Expanded {
    /// Derived events to handle first: the END of a chunk stream the event
    /// closes, or the START/CONTENT/END events a chunk becomes.
    pub(crate) derived: Vec<Event>,
    /// Whether the incoming event itself follows them (every event but a
    /// chunk, which is replaced by what it derives).
    pub(crate) and_itself: bool,
}

/// The open chunk streams of one event stream.
#[derive(Debug, Default)]
pub(crate) struct ChunkExpander {
    lanes: Vec<(Owner, Pending)>,
}

impl ChunkExpander {
    /// Expands the next event of the stream. An error is a chunk the
    /// official client rejects; the expander is then as the client leaves it.
    pub(crate) fn expand(&mut self, event: &Event) -> Result<Expanded, VerifyError> {
        let ty = event.event_type();
        let mut derived = Vec::new();
        match &event.kind {
            EventKind::TextMessageChunk(_)
            | EventKind::ToolCallChunk(_)
            | EventKind::ReasoningMessageChunk(_) => {
                return Ok(Expanded {
                    derived: self.expand_chunk(event)?,
                    and_itself: false,
                });
            }
            EventKind::RunStarted(_)
            | EventKind::RunFinished(_)
            | EventKind::RunError(_)
            | EventKind::MessagesSnapshot(_) => {
                derived.extend(
                    std::mem::take(&mut self.lanes)
                        .into_iter()
                        .map(|(_, pending)| pending.end_event()),
                );
            }
            EventKind::Raw(_)
            | EventKind::ActivitySnapshot(_)
            | EventKind::ActivityDelta(_)
            | EventKind::ReasoningEncryptedValue(_)
            | EventKind::SubagentStarted(_) => {}
            EventKind::SubagentFinished(f) => {
                self.close_lane_into(&Some(f.subagent_run_id.clone()), &mut derived);
            }
            EventKind::SubagentError(e) => {
                self.close_lane_into(&Some(e.subagent_run_id.clone()), &mut derived);
            }
            _ => {
                debug_assert!(ty.is_attributable());
                self.close_lane_into(&tag_of(event).map(str::to_owned), &mut derived);
            }
        }
        Ok(Expanded {
            derived,
            and_itself: true,
        })
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
        let (id, owner, delta, content): (String, Owner, &Option<String>, ContentOf) =
            match &event.kind {
                EventKind::TextMessageChunk(chunk) => {
                    let (id, owner) = self.text_lane(ty, tag, chunk, &mut out)?;
                    let content: ContentOf =
                        |message_id, delta| TextMessageContent { message_id, delta }.into();
                    (id, owner, &chunk.delta, content)
                }
                EventKind::ToolCallChunk(chunk) => {
                    let (id, owner) = self.tool_call_lane(ty, tag, chunk, &mut out)?;
                    let content: ContentOf = |tool_call_id, delta| {
                        ToolCallArgs {
                            tool_call_id,
                            delta,
                        }
                        .into()
                    };
                    (id, owner, &chunk.delta, content)
                }
                EventKind::ReasoningMessageChunk(chunk) => {
                    let (id, owner) = self.reasoning_lane(ty, tag, chunk, &mut out)?;
                    let content: ContentOf =
                        |message_id, delta| ReasoningMessageContent { message_id, delta }.into();
                    (id, owner, &chunk.delta, content)
                }
                _ => return Ok(out),
            };
        // A chunk whose only payload is rawEvent/metadata still becomes an
        // (empty) content event in the client.
        let carries_extra = event.raw_event.is_some() || event.metadata.is_some();
        if delta.is_some() || event.raw_event.is_some() || (out.is_empty() && carries_extra) {
            let content = content(id, delta.clone().unwrap_or_default());
            out.push(attributed(
                Event::new(content),
                tag.map(str::to_owned).or(owner),
            ));
        }
        Ok(out)
    }

    /// Continues the text message open in the chunk's lane, or opens one.
    fn text_lane(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        chunk: &TextMessageChunk,
        out: &mut Vec<Event>,
    ) -> Result<(String, Owner), VerifyError> {
        let entity = Entity::TextMessage;
        let lane = self.resolve_lane(ty, entity, chunk.message_id.as_deref(), tag)?;
        if let Some(Pending::Text {
            id,
            role,
            name,
            owner,
        }) = self.lane(&lane)
            && chunk.message_id.as_ref().is_none_or(|m| m == id)
        {
            let conflict = if chunk.role.is_some_and(|r| r != *role) {
                Some("role")
            } else if chunk.name.is_some() && chunk.name != *name {
                Some("name")
            } else {
                None
            };
            check_conflict(ty, entity, id, conflict)?;
            return Ok((id.clone(), owner.clone()));
        }
        self.close_lane_into(&lane, out);
        let id = chunk
            .message_id
            .clone()
            .ok_or_else(|| missing(ty, entity, "messageId"))?;
        let role = chunk.role.unwrap_or_default();
        let start = TextMessageStart {
            message_id: id.clone(),
            role: Some(role),
            name: chunk.name.clone(),
        };
        let pending = Pending::Text {
            id,
            role,
            name: chunk.name.clone(),
            owner: tag.map(str::to_owned),
        };
        Ok(self.start_lane(lane, pending, start.into(), out))
    }

    /// Continues the tool call open in the chunk's lane, or opens one.
    fn tool_call_lane(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        chunk: &ToolCallChunk,
        out: &mut Vec<Event>,
    ) -> Result<(String, Owner), VerifyError> {
        let entity = Entity::ToolCall;
        let lane = self.resolve_lane(ty, entity, chunk.tool_call_id.as_deref(), tag)?;
        if let Some(Pending::Tool {
            id,
            name,
            parent,
            owner,
        }) = self.lane(&lane)
            && chunk.tool_call_id.as_ref().is_none_or(|c| c == id)
        {
            let conflict = if chunk.tool_call_name.as_ref().is_some_and(|n| n != name) {
                Some("toolCallName")
            } else if chunk.parent_message_id.is_some() && chunk.parent_message_id != *parent {
                Some("parentMessageId")
            } else {
                None
            };
            check_conflict(ty, entity, id, conflict)?;
            return Ok((id.clone(), owner.clone()));
        }
        self.close_lane_into(&lane, out);
        let id = chunk
            .tool_call_id
            .clone()
            .ok_or_else(|| missing(ty, entity, "toolCallId"))?;
        let name = chunk
            .tool_call_name
            .clone()
            .ok_or_else(|| missing(ty, entity, "toolCallName"))?;
        let start = ToolCallStart {
            tool_call_id: id.clone(),
            tool_call_name: name.clone(),
            parent_message_id: chunk.parent_message_id.clone(),
        };
        let pending = Pending::Tool {
            id,
            name,
            parent: chunk.parent_message_id.clone(),
            owner: tag.map(str::to_owned),
        };
        Ok(self.start_lane(lane, pending, start.into(), out))
    }

    /// Continues the reasoning message open in the chunk's lane, or opens one.
    fn reasoning_lane(
        &mut self,
        ty: EventType,
        tag: Option<&str>,
        chunk: &ReasoningMessageChunk,
        out: &mut Vec<Event>,
    ) -> Result<(String, Owner), VerifyError> {
        let entity = Entity::ReasoningMessage;
        let lane = self.resolve_lane(ty, entity, chunk.message_id.as_deref(), tag)?;
        if let Some(Pending::Reasoning { id, owner }) = self.lane(&lane)
            && chunk.message_id.as_ref().is_none_or(|m| m == id)
        {
            return Ok((id.clone(), owner.clone()));
        }
        self.close_lane_into(&lane, out);
        let id = chunk
            .message_id
            .clone()
            .ok_or_else(|| missing(ty, entity, "messageId"))?;
        let start = ReasoningMessageStart::new(id.clone());
        let pending = Pending::Reasoning {
            id,
            owner: tag.map(str::to_owned),
        };
        Ok(self.start_lane(lane, pending, start.into(), out))
    }

    /// Opens `pending` in `lane` and emits its START, attributed to the
    /// chunk's producer.
    fn start_lane(
        &mut self,
        lane: Owner,
        pending: Pending,
        start: EventKind,
        out: &mut Vec<Event>,
    ) -> (String, Owner) {
        let opened = (pending.id().to_owned(), pending.owner().clone());
        out.push(attributed(Event::new(start), opened.1.clone()));
        self.lanes.push((lane, pending));
        opened
    }

    fn close_lane_into(&mut self, owner: &Owner, out: &mut Vec<Event>) {
        if let Some(at) = self.lanes.iter().position(|(o, _)| o == owner) {
            let (_, pending) = self.lanes.remove(at);
            out.push(pending.end_event());
        }
    }
}

/// Builds the CONTENT/ARGS event a chunk's delta becomes.
type ContentOf = fn(String, String) -> EventKind;

fn missing(event_type: EventType, entity: Entity, field: &'static str) -> VerifyError {
    VerifyError::ChunkMissingField {
        event_type,
        entity,
        field,
    }
}

/// A continuation chunk may repeat its entity's fields, not change them.
fn check_conflict(
    event_type: EventType,
    entity: Entity,
    id: &str,
    field: Option<&'static str>,
) -> Result<(), VerifyError> {
    match field {
        Some(field) => Err(VerifyError::ChunkFieldConflict {
            event_type,
            entity,
            id: id.to_owned(),
            field,
        }),
        None => Ok(()),
    }
}
