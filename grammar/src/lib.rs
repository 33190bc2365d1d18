//! Constrained decoding: a JSON schema (an answer's `responseFormat`, a
//! tool's `parameters`) compiled into a grammar that says, before each
//! step, which tokens keep the output valid.
//!
//! The grammar engine is [llguidance] (what llama.cpp and vLLM use): it
//! computes a token mask from the grammar's state in tens of microseconds,
//! so a run computes it on its own thread while the model computes the
//! logits it applies to (`TokenSink::next_mask` in the engine).
//!
//! - [`Vocabulary`]: a tokenizer's token bytes in llguidance's trie, built
//!   once per model.
//! - [`Target`]: what to constrain to (a schema, any JSON object, a tool
//!   call), and [`check_schema`], which refuses a bad schema naming the
//!   path inside it: not a JSON Schema, references chained past
//!   [`MAX_SCHEMA_DEPTH`], a pattern that unrolls past
//!   [`MAX_PATTERN_SIZE`]. What the engine itself refuses is named where
//!   it is in the schema (`locate`).
//! - [`Grammar`]: one generation's state: commit each token, ask the mask.
//!   What compiled is kept for the next run that asks for the same target
//!   (`compiled`: the last [`MAX_KEPT_GRAMMARS`] of a vocabulary, keyed by
//!   digest, within [`KEPT_GRAMMAR_BYTES`] of targets).
//!
//! Errors never contain model output: a token the grammar refuses is
//! reported by position, not by text.
//!
//! [llguidance]: https://github.com/guidance-ai/llguidance

#![forbid(unsafe_code)]

mod compiled;
mod depth;
mod grammar;
mod locate;
mod patterns;
mod target;
mod vocabulary;
mod walk;

pub use compiled::{BUDGET_BYTES as KEPT_GRAMMAR_BYTES, CAPACITY as MAX_KEPT_GRAMMARS};
pub use depth::MAX_SCHEMA_DEPTH;
pub use grammar::Grammar;
pub use patterns::MAX_PATTERN_SIZE;
pub use target::{Target, check_schema};
pub use vocabulary::Vocabulary;

/// Why a grammar could not be built or followed.
#[derive(Debug, thiserror::Error)]
pub enum GrammarError {
    /// The schema is invalid or uses what the grammar engine cannot
    /// enforce; `path` is a JSON pointer inside the schema (`""`: the root).
    #[error("schema {}: {message}", if path.is_empty() { "root" } else { path.as_str() })]
    Schema {
        /// Where inside the schema.
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// The tokenizer's vocabulary could not be read into the grammar
    /// engine.
    #[error("building the grammar vocabulary: {0}")]
    Vocabulary(String),
    /// A token the grammar does not allow was committed (a forced token,
    /// or a bug): the output can no longer satisfy the constraint.
    #[error("token {index} of the constrained output does not fit the grammar")]
    Rejected {
        /// The token's index among the committed ones.
        index: usize,
    },
}
