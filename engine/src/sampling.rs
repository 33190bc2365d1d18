//! Sampling parameters shared by every engine.
//!
//! The parameters are plain data so the agent can build them from a run's
//! `forwardedProps`; the MLX engine applies them per request, on the host
//! or in the step's graph.

use crate::EngineError;

/// Temperatures under this pick the argmax, as vLLM's do: dividing by
/// one (1e-40 is a valid request) would scale logits past what `f32`
/// holds, and the draw would be of infinities. At 1e-5 a logit ahead by
/// 1e-4 is already e^10 times as likely: greedy in all but name.
pub const GREEDY_BELOW: f32 = 1e-5;

/// How the next token is picked from the logits.
///
/// A temperature under [`GREEDY_BELOW`] (0 included) means greedy
/// (argmax); the other filters then have no effect. A `seed` makes
/// sampled runs reproducible.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// Softmax temperature; 0 (or under [`GREEDY_BELOW`]) selects greedy
    /// decoding.
    pub temperature: f32,
    /// Keep only the `top_k` most likely tokens (0 = off).
    pub top_k: usize,
    /// Keep the smallest set whose probability mass reaches `top_p` (1 = off).
    pub top_p: f32,
    /// Drop tokens less likely than `min_p` times the best one (0 = off).
    pub min_p: f32,
    /// Divide positive logits (multiply negative ones) of recently seen
    /// tokens by this factor (1 = off).
    pub repetition_penalty: f32,
    /// How many recent tokens the repetition penalty looks at (the
    /// prompt's included).
    pub repetition_context: usize,
    /// Subtracted from a token's logit once per time it was generated so
    /// far (OpenAI's `frequency_penalty`; 0 = off). Prompt tokens do not
    /// count.
    pub frequency_penalty: f32,
    /// Subtracted from the logit of every token generated so far, once
    /// (OpenAI's `presence_penalty`; 0 = off).
    pub presence_penalty: f32,
    /// Added to these tokens' logits before anything else (OpenAI's
    /// `logit_bias`: -100 bans a token, 100 all but forces it).
    pub logit_bias: Vec<(u32, f32)>,
    /// Where the run's own output begins in the prompt, for a generation
    /// resumed after tokens it already produced (`None`: at the prompt's
    /// end). The frequency and presence penalties count from there.
    pub generated_from: Option<usize>,
    /// Seed of the random generator; `None` seeds from the clock.
    pub seed: Option<u64>,
}

impl SamplingParams {
    /// Greedy decoding: always the most likely token.
    #[must_use]
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            repetition_context: 64,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            logit_bias: Vec::new(),
            generated_from: None,
            seed: None,
        }
    }

    /// Whether this picks the argmax (no randomness involved): a
    /// temperature under [`GREEDY_BELOW`].
    #[must_use]
    pub fn is_greedy(&self) -> bool {
        self.temperature < GREEDY_BELOW
    }

    /// Rejects values no sampler can honour, naming the parameter.
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |name: &str, why: &str| {
            Err(EngineError::InvalidRequest(format!(
                "sampling {name} {why}"
            )))
        };
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return bad("temperature", "must be a finite number >= 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p", "must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return bad("min_p", "must be in [0, 1]");
        }
        if !self.repetition_penalty.is_finite() || self.repetition_penalty <= 0.0 {
            return bad("repetition_penalty", "must be a finite number > 0");
        }
        for (name, value) in [
            ("frequency_penalty", self.frequency_penalty),
            ("presence_penalty", self.presence_penalty),
        ] {
            if !(-2.0..=2.0).contains(&value) {
                return bad(name, "must be in [-2, 2]");
            }
        }
        if let Some((id, _)) = self
            .logit_bias
            .iter()
            .find(|(_, b)| !(-100.0..=100.0).contains(b))
        {
            return bad(
                "logit_bias",
                &format!("of token {id} must be in [-100, 100]"),
            );
        }
        Ok(())
    }
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self::greedy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_parameter() {
        let mut p = SamplingParams::greedy();
        assert!(p.validate().is_ok());
        p.top_p = 0.0;
        let err = p.validate().unwrap_err().to_string();
        assert!(err.contains("top_p"), "{err}");
        p.top_p = 1.0;
        p.temperature = f32::NAN;
        assert!(
            p.validate()
                .unwrap_err()
                .to_string()
                .contains("temperature")
        );
    }
}
