//! Token generation: the [`Engine`] contract the agent loop drives, and (with
//! the `mlx` feature) the MLX engine that implements it.
//!
//! An engine knows token ids and arrays, never messages or events: the agent
//! renders the prompt, the engine prefills it and yields one token id per
//! decode step to a [`TokenSink`], which may stop it between any two steps.
//!
//! ```
//! use thinkwire_engine::{Directive, TokenSink};
//!
//! struct Collect(Vec<u32>);
//! impl TokenSink for Collect {
//!     fn on_token(&mut self, id: u32) -> Directive {
//!         self.0.push(id);
//!         if self.0.len() < 8 { Directive::Continue } else { Directive::Stop }
//!     }
//! }
//! ```

use std::ops::ControlFlow;
use std::time::Duration;

mod mask;
#[cfg(feature = "mlx")]
pub mod mlx;
mod sampling;

pub use mask::TokenMask;
pub use sampling::{GREEDY_BELOW, SamplingParams};

/// One generation: a prompt already tokenized, and how to continue it.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationRequest {
    /// Prompt token ids, chat template already applied.
    pub prompt: Vec<u32>,
    /// Upper bound on generated tokens (the stop token included).
    pub max_tokens: usize,
    /// How the next token is chosen.
    pub sampling: SamplingParams,
    /// Token ids that end generation (end-of-turn, end-of-text). The stop
    /// token is reported through [`Finish::StopToken`], not to the sink.
    pub stop_token_ids: Vec<u32>,
    /// Report each generated token's log-probability and those of the
    /// `k` most likely tokens at its place ([`TokenSink::on_logprobs`],
    /// `k` at most [`MAX_TOP_LOGPROBS`]); `None`: report none.
    pub logprobs: Option<usize>,
}

/// The most alternatives a token's [`TokenLogprobs`] may list, as OpenAI's
/// API allows.
pub const MAX_TOP_LOGPROBS: usize = 20;

/// How likely the model found a token it generated: natural-log
/// probabilities under its distribution at that place (the logits after
/// the request's logit bias and penalties, before temperature and the
/// top-k/top-p/min-p filters; under an output constraint, over the whole
/// vocabulary).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    /// The generated token's.
    pub logprob: f32,
    /// The most likely tokens at that place and theirs, most likely
    /// first (ties: the lower id first).
    pub top: Vec<(u32, f32)>,
}

/// What the sink wants after a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// Decode the next token.
    Continue,
    /// End generation now with [`Finish::Cancelled`]: a disconnected client
    /// or a matched stop string stops the model within one decode step.
    Stop,
    /// Feed these tokens to the model as if it had generated them, then go
    /// on decoding. This is how a reasoning budget closes the model's
    /// thinking with its own close marker. Forced tokens are not echoed to
    /// the sink; they count towards `max_tokens`.
    Force(Vec<u32>),
}

/// Receives what the engine produces, and may stop or steer it.
pub trait TokenSink {
    /// One generated token id (never a stop token).
    fn on_token(&mut self, id: u32) -> Directive;

    /// How likely the token the next [`on_token`](Self::on_token) hands
    /// over was, when the request asked ([`GenerationRequest::logprobs`]).
    fn on_logprobs(&mut self, _logprobs: TokenLogprobs) {}

    /// The prompt's own tokens' log-probabilities, from the second token
    /// on, when the generation was asked to score them
    /// ([`Engine::generate_scored`]): once, before any token.
    fn on_prompt_logprobs(&mut self, _scored: Vec<TokenLogprobs>) {}

    /// Prefill progress after each chunk of the prompt. Long prompts take
    /// seconds on a CPU; this lets a run be cancelled and transports keep
    /// the connection alive meanwhile.
    fn on_prefill(&mut self, _done: usize, _total: usize) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// Whether the next token (the first, before any `on_token`) is
    /// constrained. Asked before the generation starts and after each
    /// `on_token`; when it says yes, the engine samples that token under
    /// [`next_mask`](Self::next_mask)'s answer.
    fn constrains_next(&self) -> bool {
        false
    }

    /// The tokens allowed next, given every token so far (forced ones
    /// too); `None` lifts the constraint. The engine asks after it has the
    /// directive, on the sink's own thread, so a grammar computes its mask
    /// while the model computes the logits it applies to.
    fn next_mask(&mut self) -> Option<TokenMask> {
        None
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model produced one of the request's stop token ids.
    StopToken(u32),
    /// `max_tokens` were generated.
    Length,
    /// The sink asked to stop.
    Cancelled,
}

/// What one generation cost, for `usage` and `thinkwire bench`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenerationStats {
    /// Why it ended.
    pub finish: Finish,
    /// Prompt tokens processed.
    pub prompt_tokens: usize,
    /// Of those, the tokens whose attention cache was reused rather than
    /// computed: from the prefix cache, or from a running sequence whose
    /// prompt starts the same way.
    pub cached_prompt_tokens: usize,
    /// Tokens handed to the sink.
    pub generated_tokens: usize,
    /// Wall time from start to the first generated token's availability.
    pub prefill_time: Duration,
    /// Wall time of the decode steps after the first token.
    pub decode_time: Duration,
}

/// Static facts about the loaded model that the layers above need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// A stable id for the model (file stem or folder name).
    pub id: String,
    /// Architecture name as the config spells it (`llama`, `qwen3`, ...).
    pub architecture: String,
    /// Longest prompt + generation the model supports.
    pub context_length: usize,
    /// Vocabulary size of the output layer.
    pub vocab_size: usize,
    /// How the stored weights are quantized and how the engine runs them
    /// (`thinkwire inspect`); `None` where that means nothing (scripted or
    /// upstream engines).
    pub quantization: Option<String>,
}

/// What an engine holds at a moment: for metrics and admission decisions.
/// Engines without a scheduler report zeros.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineLoad {
    /// Sequences in the batch.
    pub active_sequences: usize,
    /// Sequences waiting for a place in the batch.
    pub queued_sequences: usize,
    /// Attention-cache bytes reserved by the sequences in the batch: each
    /// sequence's prompt and all its tokens, and where decode steps keep
    /// the rows in batch buffers (a GPU), a slot for each sequence at the
    /// longest one's length.
    pub kv_reserved_bytes: usize,
    /// The most they may reserve together.
    pub kv_budget_bytes: usize,
    /// Bytes kept by the prefix-cache pool.
    pub prefix_cache_bytes: usize,
    /// Bytes of freed buffers MLX keeps to reuse, as of the last step
    /// (handed back after long prompts and every 256 steps).
    pub buffer_cache_bytes: usize,
    /// Model steps run so far.
    pub steps: u64,
    /// Tokens decoded in those steps (their ratio is the mean batch size).
    pub batched_tokens: u64,
    /// Prompt tokens taken from a concurrent sequence's cache instead of
    /// computed (`--share-prefixes`).
    pub shared_prompt_tokens: u64,
    /// Prompt positions scored for their own tokens' log-probabilities
    /// (`score_prompt`, `generate_scored`): once for all who asked for the
    /// same scores together.
    pub scored_prompt_tokens: u64,
    /// Microseconds the scheduler spent blocked on the device, reading a
    /// step's tokens or logits. The rest of its time builds and queues
    /// the next steps: where this stays near zero, decoding is bound by
    /// the host, not the device (what `thinkwire bench` reports per step).
    pub device_wait_us: u64,
    /// Microseconds spent in MLX's `async_eval`, which walks a step's graph
    /// and launches its operations (on a GPU, one kernel each): of a
    /// step's host time, what building the graph does not explain.
    pub queue_us: u64,
}

/// Errors an engine reports. Messages name the file, tensor or limit at
/// fault and never contain prompt or generated text.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// The prompt plus `max_tokens` does not fit the model's context.
    #[error("prompt of {prompt} tokens does not fit the context of {context} tokens")]
    ContextOverflow {
        /// Prompt length in tokens.
        prompt: usize,
        /// Model context length in tokens.
        context: usize,
    },
    /// The request was malformed (empty prompt, token id out of range, ...).
    #[error("invalid generation request: {0}")]
    InvalidRequest(String),
    /// Loading weights, config or tokenizer failed.
    #[error("{0}")]
    Load(String),
    /// The backend failed during computation.
    #[error("backend error: {0}")]
    Backend(String),
}

/// A loaded model that turns prompts into token ids.
///
/// `generate` blocks the calling thread for the whole generation; async
/// callers run it on a blocking thread. Concurrent calls are how several
/// runs share the model: the MLX engine decodes them together in batches.
pub trait Engine: Send + Sync {
    /// Facts about the loaded model.
    fn info(&self) -> &ModelInfo;

    /// Prefill `request.prompt`, then decode until a stop token, the token
    /// limit, or the sink breaks.
    fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError>;

    /// What the engine holds now (batch, queue, cache memory).
    fn load(&self) -> EngineLoad {
        EngineLoad::default()
    }

    /// How long a prompt of `prompt_tokens` submitted now would wait for
    /// the work queued ahead of it, and for the prompts `ahead` (the
    /// lengths of those a request submits just before it: its other
    /// choices or prompts), by the engine's recent pace; `None` where it
    /// cannot tell (no pace measured yet, or no queue of its own, as with
    /// upstream engines).
    fn expected_wait(&self, prompt_tokens: usize, ahead: &[usize]) -> Option<Duration> {
        let _ = (prompt_tokens, ahead);
        None
    }

    /// Forgets the pace measured so far, so that [`expected_wait`]
    /// (Self::expected_wait) knows none until steps run again: after a
    /// server's warm-up, whose steps paid for what a device does on first
    /// use and say nothing of the pace it will serve at.
    fn forget_pace(&self) {}

    /// Whether [`score_prompt`](Self::score_prompt) is served: a run
    /// asking for it is refused before it starts where it is not.
    fn scores_prompts(&self) -> bool {
        false
    }

    /// How likely the model finds each token of `prompt` after those
    /// before it: one [`TokenLogprobs`] per token from the second on
    /// (the first follows nothing), `top` alternatives each (at most
    /// [`MAX_TOP_LOGPROBS`]), under the model's raw distribution (no bias,
    /// penalty or temperature). What OpenAI's `echo` with `logprobs`
    /// reports, and what evaluation harnesses score continuations by.
    fn score_prompt(&self, prompt: &[u32], top: usize) -> Result<Vec<TokenLogprobs>, EngineError> {
        let _ = (prompt, top);
        Err(EngineError::InvalidRequest(
            "this engine does not score prompts".into(),
        ))
    }

    /// [`generate`](Self::generate), the prompt scored first as
    /// [`score_prompt`](Self::score_prompt) scores it and handed to the
    /// sink before any token ([`TokenSink::on_prompt_logprobs`]). Here the
    /// two one after the other; an engine that can continue from the
    /// scoring's caches computes the prompt once.
    fn generate_scored(
        &self,
        request: &GenerationRequest,
        top: usize,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        let scored = self.score_prompt(&request.prompt, top)?;
        sink.on_prompt_logprobs(scored);
        self.generate(request, sink)
    }
}

/// Checks the parts of a request every engine must refuse the same way.
pub fn check_request(info: &ModelInfo, request: &GenerationRequest) -> Result<(), EngineError> {
    if request.prompt.is_empty() {
        return Err(EngineError::InvalidRequest("empty prompt".into()));
    }
    if let Some(bad) = request
        .prompt
        .iter()
        .find(|&&id| id as usize >= info.vocab_size)
    {
        return Err(EngineError::InvalidRequest(format!(
            "token id {bad} is outside the vocabulary of {}",
            info.vocab_size
        )));
    }
    if let Some((bad, _)) = request
        .sampling
        .logit_bias
        .iter()
        .find(|&&(id, _)| id as usize >= info.vocab_size)
    {
        return Err(EngineError::InvalidRequest(format!(
            "sampling logit_bias names token {bad}, outside the vocabulary of {}",
            info.vocab_size
        )));
    }
    if let Some(k) = request.logprobs.filter(|&k| k > MAX_TOP_LOGPROBS) {
        return Err(EngineError::InvalidRequest(format!(
            "logprobs asks for {k} alternatives per token, more than {MAX_TOP_LOGPROBS}"
        )));
    }
    if request.prompt.len() + request.max_tokens.min(1) > info.context_length {
        return Err(EngineError::ContextOverflow {
            prompt: request.prompt.len(),
            context: info.context_length,
        });
    }
    request.sampling.validate()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ModelInfo {
        ModelInfo {
            id: "t".into(),
            architecture: "llama".into(),
            context_length: 8,
            vocab_size: 10,
            quantization: None,
        }
    }

    fn request(prompt: Vec<u32>) -> GenerationRequest {
        GenerationRequest {
            prompt,
            max_tokens: 4,
            sampling: SamplingParams::greedy(),
            stop_token_ids: vec![],
            logprobs: None,
        }
    }

    #[test]
    fn refuses_empty_out_of_vocab_and_too_long_prompts() {
        assert!(check_request(&info(), &request(vec![])).is_err());
        assert!(check_request(&info(), &request(vec![10])).is_err());
        assert!(matches!(
            check_request(&info(), &request(vec![1; 8])),
            Err(EngineError::ContextOverflow { prompt: 8, .. })
        ));
        assert!(check_request(&info(), &request(vec![1; 7])).is_ok());
    }

    #[test]
    fn refuses_a_logit_bias_outside_the_vocabulary_or_its_range() {
        let mut r = request(vec![1, 2]);
        r.sampling.logit_bias = vec![(9, -100.0), (3, 100.0)];
        assert!(check_request(&info(), &r).is_ok());
        r.sampling.logit_bias = vec![(3, 1.0), (10, 1.0)];
        let err = check_request(&info(), &r).unwrap_err().to_string();
        assert!(err.contains("logit_bias") && err.contains("10"), "{err}");
        r.sampling.logit_bias = vec![(3, 100.5)];
        let err = check_request(&info(), &r).unwrap_err().to_string();
        assert!(err.contains("logit_bias of token 3"), "{err}");
        r.sampling.logit_bias = vec![(3, f32::NAN)];
        assert!(check_request(&info(), &r).is_err());
    }
}
