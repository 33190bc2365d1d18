//! Subagent lifecycle, which the official client checks though the design
//! note does not list it: a subagent run id starts once per run, its parent
//! must have started, and only an active subagent can finish or fail.

use super::{Verifier, VerifyError, contains, remove};
use crate::event::{EventType, SubagentStarted};

impl Verifier {
    /// `SUBAGENT_STARTED`.
    pub(super) fn subagent_started(&mut self, e: &SubagentStarted) -> Result<(), VerifyError> {
        let id = &e.subagent_run_id;
        if contains(&self.active_subagents, id) {
            return Err(VerifyError::SubagentAlreadyActive { id: id.clone() });
        }
        if self.closed_subagents.contains(id) {
            return Err(VerifyError::SubagentReused { id: id.clone() });
        }
        if let Some(parent) = &e.parent_subagent_run_id {
            if !contains(&self.active_subagents, parent) && !self.closed_subagents.contains(parent)
            {
                return Err(VerifyError::SubagentParentUnknown {
                    id: id.clone(),
                    parent: parent.clone(),
                });
            }
        }
        self.active_subagents.push(id.clone());
        Ok(())
    }

    /// `SUBAGENT_FINISHED` and `SUBAGENT_ERROR`.
    pub(super) fn subagent_ended(&mut self, ty: EventType, id: &str) -> Result<(), VerifyError> {
        if !remove(&mut self.active_subagents, id) {
            return Err(VerifyError::SubagentNotActive {
                event_type: ty,
                id: id.to_owned(),
            });
        }
        self.closed_subagents.insert(id.to_owned());
        Ok(())
    }
}
