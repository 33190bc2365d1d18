//! A run's answer to a token: go on with the step already queued on it,
//! stop, or feed forced tokens after it (the queued step dropped and the
//! cache cut back to the token, as if the model had generated them).

use super::{Constraint, Next, Sequence, Spec};
use crate::{Directive, Finish};

impl Sequence {
    /// The run's directive on the last token, and whether the next one is
    /// constrained.
    pub fn directed(&mut self, directive: Directive, constrained: bool) {
        if !matches!(self.next, Next::Awaiting { .. }) {
            // An answer to a sequence that is not waiting: it already ended.
            return;
        }
        let Next::Awaiting { spec } = std::mem::replace(&mut self.next, Next::Feed(Vec::new()))
        else {
            return;
        };
        self.laggard = false;
        self.constraint = if constrained {
            Constraint::Waiting
        } else {
            Constraint::Free
        };
        let forced = match directive {
            Directive::Stop => return self.finish(Finish::Cancelled),
            Directive::Continue => None,
            Directive::Force(tokens) => Some(tokens).filter(|t| !t.is_empty()),
        };
        if self.budget == 0 {
            return self.finish(Finish::Length);
        }
        // A step queued on a pick made without the mask is dropped like one
        // before forced tokens: the token is fed again and its logits
        // sampled under the mask.
        let forced = match (forced, &spec) {
            (None, Some(Spec::Pick(_))) if constrained => Some(Vec::new()),
            (forced, _) => forced,
        };
        let Some(forced) = forced else {
            self.next = match spec {
                Some(Spec::Pick(pick)) => Next::Unread(pick),
                Some(Spec::Logits(logits)) if constrained => Next::Masked(logits),
                Some(Spec::Logits(logits)) => match self.pick_from(&logits, None) {
                    Ok(pick) => Next::Unread(pick),
                    Err(e) => return self.fail(e),
                },
                None if self.offset() >= self.context => return self.finish(Finish::Length),
                None => Next::Feed(self.history[self.history.len() - 1..].to_vec()),
            };
            return;
        };
        // Drop the queued step and feed the forced tokens after the token
        // just read, as if the model had generated them.
        let consumed_at = self.history.len() - 1;
        for c in &mut self.caches {
            c.truncate(consumed_at as i32);
        }
        let take = forced.len().min(self.budget);
        if consumed_at + 1 + take > self.context {
            return self.finish(Finish::Length);
        }
        self.history.extend_from_slice(&forced[..take]);
        self.budget -= take;
        if self.budget == 0 {
            return self.finish(Finish::Length);
        }
        self.next = Next::Feed(self.history[consumed_at..].to_vec());
    }
}
