//! One constrained generation's grammar state.

use llguidance::Matcher;

use crate::{GrammarError, Target, Vocabulary};

/// A target compiled over a vocabulary, advanced token by token.
pub struct Grammar {
    matcher: Matcher,
    stop_ids: Vec<u32>,
    committed: usize,
}

impl std::fmt::Debug for Grammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grammar")
            .field("committed", &self.committed)
            .finish_non_exhaustive()
    }
}

impl Grammar {
    /// Compiles `target` (under a millisecond for a typical schema); a
    /// schema the engine cannot enforce is a [`GrammarError::Schema`].
    pub fn new(vocab: &Vocabulary, target: &Target) -> Result<Self, GrammarError> {
        let grammar = target.grammar()?;
        // A schema is client input: a panic inside the grammar engine on
        // some corner of it is a refused schema, not a lost server thread.
        let parser = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            vocab.factory.create_parser(grammar)
        }))
        .map_err(|_| compile_error("the grammar engine failed on this schema"))?
        .map_err(|e| compile_error(&e.to_string()))?;
        Ok(Self {
            matcher: Matcher::new(Ok(parser)),
            stop_ids: vocab.stop_ids.clone(),
            committed: 0,
        })
    }

    /// Advances past `id`; a token the grammar does not allow is an error
    /// (the mask should have prevented it).
    pub fn commit(&mut self, id: u32) -> Result<(), GrammarError> {
        let index = self.committed;
        self.committed += 1;
        self.matcher
            .consume_token(id)
            .map_err(|_| GrammarError::Rejected { index })
    }

    /// The tokens allowed next, one bit per id in 32-bit words; where the
    /// output may end, every stop id is allowed.
    pub fn mask(&mut self) -> Result<Vec<u32>, GrammarError> {
        let index = self.committed;
        let vob = self
            .matcher
            .compute_mask_or_eos()
            .map_err(|_| GrammarError::Rejected { index })?;
        let mut words = vob.as_slice().to_vec();
        let eos = self.stop_ids[0] as usize;
        let allows_end = words
            .get(eos / 32)
            .is_some_and(|w| w & (1 << (eos % 32)) != 0);
        if allows_end {
            for &id in &self.stop_ids {
                if let Some(w) = words.get_mut(id as usize / 32) {
                    *w |= 1 << (id % 32);
                }
            }
        }
        Ok(words)
    }

    /// Whether the output is complete: nothing but its end may follow.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.matcher.is_stopped() && !self.matcher.is_error()
    }
}

/// llguidance's compile errors carry no path; the messages name the
/// keyword (`Unknown format`, `Unsatisfiable schema`, ...).
fn compile_error(message: &str) -> GrammarError {
    let message = message.lines().next().unwrap_or("").trim();
    GrammarError::Schema {
        path: String::new(),
        message: format!("cannot be enforced: {message}"),
    }
}
