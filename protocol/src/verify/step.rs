//! Rule 5: steps. A duplicate `STEP_STARTED` or an unmatched
//! `STEP_FINISHED` is an error; steps are keyed by producer and name, so a
//! subagent's step cannot finish the parent's.

use super::{Verifier, VerifyError};
use crate::event::{StepFinished, StepStarted};

impl Verifier {
    /// `STEP_STARTED`.
    pub(super) fn step_started(
        &mut self,
        tag: Option<&str>,
        e: &StepStarted,
    ) -> Result<(), VerifyError> {
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
        Ok(())
    }

    /// `STEP_FINISHED`.
    pub(super) fn step_finished(
        &mut self,
        tag: Option<&str>,
        e: &StepFinished,
    ) -> Result<(), VerifyError> {
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
        Ok(())
    }
}
