//! One constrained generation's grammar state.

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, TokenParser};

use crate::compiled::Compiled;
use crate::{GrammarError, Target, Vocabulary, locate};

/// The stack a compile runs on: 32 times a blocking thread's, reserved
/// rather than touched.
const COMPILE_STACK: usize = 64 << 20;

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
    /// Compiles `target` (a millisecond or a few for a typical schema), or
    /// copies the vocabulary's kept compile of it; a schema the engine
    /// cannot enforce is a [`GrammarError::Schema`].
    pub fn new(vocab: &Vocabulary, target: &Target) -> Result<Self, GrammarError> {
        // A kept grammar passed `check_schema`, a function of the target
        // alone: a target that serializes the same needs neither again.
        let key = Compiled::key(target);
        let parser = match key.and_then(|key| vocab.compiled.take(&key)) {
            Some(kept) => kept,
            None => {
                let parser = compile(vocab, target, target.grammar()?)?;
                if let Some(key) = key {
                    vocab.compiled.keep(key, &parser);
                }
                parser
            }
        };
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

    /// Whether the output may end here: it is whole, though the grammar
    /// would let it go on (an integer's next digit, another tagged call).
    /// A generation that stopped here is not cut short; the stop token
    /// itself is never committed.
    pub fn may_end(&mut self) -> bool {
        !self.matcher.is_error() && self.matcher.is_accepting().unwrap_or(false)
    }
}

/// Compiles `grammar` (`target`'s) over `vocab`, on a thread of its own.
fn compile(
    vocab: &Vocabulary,
    target: &Target,
    grammar: TopLevelGrammar,
) -> Result<TokenParser, GrammarError> {
    let failed = || GrammarError::Schema {
        path: String::new(),
        message: "cannot be enforced: the grammar engine failed on this schema".into(),
    };
    // The engine compiles by recursion on the caller's stack, which may
    // be a 2 MiB blocking thread: `check_schema` bounds what a schema
    // can ask, and a thread of its own with room to spare takes what
    // it misses. A schema is client input: a panic inside the engine on
    // some corner of it is a refused schema, not a lost server thread.
    let compiled = std::thread::scope(|scope| {
        let compile = std::thread::Builder::new()
            .name("grammar-compile".into())
            .stack_size(COMPILE_STACK)
            .spawn_scoped(scope, || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    vocab.factory.create_parser(grammar)
                }))
            });
        match compile {
            Ok(handle) => handle.join().ok().and_then(Result::ok),
            Err(_) => None,
        }
    });
    compiled
        .ok_or_else(failed)?
        .map_err(|e| locate::refusal(&e.to_string(), target))
}
