//! The operator's choices for every run, apart from the agent that holds
//! them so that preparing and executing a run can read them without
//! reaching back into the agent.

use std::time::Duration;

use thinkwire_engine::SamplingParams;

use super::controls::ReasoningPolicy;
use super::history::ReplayPolicy;

/// How the agent runs: the operator's choices.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Bounds on the reasoning controls clients may ask for.
    pub policy: ReasoningPolicy,
    /// What happens to replayed reasoning.
    pub replay: ReplayPolicy,
    /// Sealed values stop opening after this long (`None`: never).
    pub seal_ttl: Option<Duration>,
    /// Default and upper bound of a run's generated tokens: reasoning and
    /// answer together, over a separate reasoning pass and its answer
    /// pass too (a summary pass has the format's own bound).
    pub max_new_tokens: usize,
    /// Sampling when the client says nothing.
    pub sampling: SamplingParams,
    /// Most messages accepted in one input.
    pub max_messages: usize,
    /// Most tools accepted in one input.
    pub max_tools: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            policy: ReasoningPolicy::default(),
            replay: ReplayPolicy::default(),
            seal_ttl: None,
            max_new_tokens: 1024,
            // No repetition penalty by default, as in mlx-lm, vLLM and
            // llama.cpp: it changes greedy decoding too, so a client asking
            // for `temperature: 0` would not get the model's argmax answer.
            sampling: SamplingParams {
                temperature: 0.7,
                top_p: 0.9,
                ..SamplingParams::greedy()
            },
            max_messages: 1024,
            max_tools: 128,
        }
    }
}
