//! What the agent and the upstream adapters share about a conversation,
//! below both: the agent builds it from a run's messages
//! (`agent::history`), an upstream adapter reads it to write its request
//! (`upstream::*`). Neither imports the other.

use thinkwire_seal::ProviderItem;

/// One replayed reasoning message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayedBlock {
    /// Index in the history's turns of the assistant turn it precedes.
    pub turn: usize,
    /// Its text.
    pub text: String,
    /// What its provider needs back, if it came from one.
    pub provider: Option<ProviderItem>,
}
