//! What the agent and the upstream adapters share about a conversation,
//! below both: the agent builds it from a run's messages
//! (`agent::history`), an upstream adapter reads it to write its request
//! (`upstream::*`). Neither imports the other.

use thinkwire_seal::ProviderItem;

/// One replayed reasoning message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayedBlock {
    /// Which assistant turn it precedes, counted among the assistant turns
    /// only (0: the first). Not a turn index: turns put before or between
    /// (a context system turn) leave it right.
    pub assistant: usize,
    /// Its text.
    pub text: String,
    /// What its provider needs back, if it came from one.
    pub provider: Option<ProviderItem>,
}

impl ReplayedBlock {
    /// The blocks of the `assistant`-th assistant turn, in order.
    pub fn of(blocks: &[Self], assistant: usize) -> impl Iterator<Item = &Self> {
        blocks.iter().filter(move |b| b.assistant == assistant)
    }
}
