//! Rules 1–3 and 6: the run frame. The first event starts a run (or fails
//! it), nothing but a new run follows a terminal event, and a run may not
//! finish while anything inside it is still open.

use super::{Entity, Verifier, VerifyError};
use crate::event::EventType;

impl Verifier {
    /// Rules 1–3, checked before any other rule; a `RUN_STARTED` after a
    /// terminal event resets everything but the chunk lanes.
    pub(super) fn check_run_order(&mut self, ty: EventType) -> Result<(), VerifyError> {
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
        Ok(())
    }

    /// Rule 6, in the official client's order.
    pub(super) fn check_nothing_open(&self) -> Result<(), VerifyError> {
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

    fn reset_run(&mut self) {
        let chunks = std::mem::take(&mut self.chunks);
        *self = Verifier {
            first_seen: true,
            run_started: true,
            chunks,
            ..Verifier::default()
        };
    }
}
