//! The prompts `thinkwire bench` runs: `--prompt` (or, for
//! `--concurrency`, eight different user messages) under the model's chat
//! template, or with `--prompt-tokens N` token ids drawn at random from
//! the tokenizer's vocabulary, as `python -m mlx_lm.benchmark -p N` draws
//! its prompts (it draws from the config's `vocab_size`, which may hold
//! padding rows past the tokenizer's ids; an id past the model's is
//! refused by the engine, naming it). Random prompts give both engines
//! prompts of one length: their times to first token then compare the
//! same work, and a batch of them decodes without a ragged mask, as
//! mlx-lm's benchmark batch does.

use anyhow::{Result, bail};
use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage};

use crate::cli::rng::Rng;

/// Different user messages for concurrent generations.
const CONCURRENT_PROMPTS: [&str; 8] = [
    "Explain in one paragraph what a CPU cache is and why programs run faster when their data fits in it.",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "What are the main differences between TCP and UDP? Answer in a few sentences.",
    "Describe how photosynthesis works to a ten-year-old.",
    "Give three tips for writing clear technical documentation, with a sentence on each.",
    "Why is the sky blue? Explain the physics briefly.",
    "Summarize the plot of Romeo and Juliet in one paragraph.",
    "List the planets of the solar system and one fact about each.",
];

/// The seed of `--prompt-tokens`' draws: fixed, so every invocation and
/// every build times the same ids.
const SEED: u64 = 0x7468_696e_6b77_6972;

/// Where a bench's prompts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompts<'a> {
    /// A user message under the chat template.
    Chat(&'a str),
    /// This many random token ids each.
    Random(usize),
}

impl<'a> Prompts<'a> {
    /// `--prompt-tokens` if given, else `--prompt`.
    pub fn from_flags(prompt: &'a str, prompt_tokens: Option<usize>) -> Result<Self> {
        match prompt_tokens {
            Some(0) => bail!("--prompt-tokens must be at least 1"),
            Some(n) => Ok(Self::Random(n)),
            None => Ok(Self::Chat(prompt)),
        }
    }

    /// The one prompt of a single-stream bench.
    pub fn single(self, chat: &ChatModel) -> Result<Vec<u32>> {
        match self {
            Self::Chat(message) => encode(chat, message),
            Self::Random(n) => Ok(random_ids(vocab(chat)?, n, 0)),
        }
    }

    /// Prompts for up to `most` concurrent generations (generation `i`
    /// takes prompt `i % len`): the eight messages, or `most` different
    /// random prompts.
    pub fn concurrent(self, chat: &ChatModel, most: usize) -> Result<Vec<Vec<u32>>> {
        match self {
            Self::Chat(_) => CONCURRENT_PROMPTS
                .iter()
                .map(|message| encode(chat, message))
                .collect(),
            Self::Random(n) => {
                let vocab = vocab(chat)?;
                Ok((0..most.max(1))
                    .map(|i| random_ids(vocab, n, i as u64))
                    .collect())
            }
        }
    }

    /// How the header names them.
    pub fn describe(self) -> String {
        match self {
            Self::Chat(_) => "different chat prompts".into(),
            Self::Random(n) => format!("different random {n}-token prompts"),
        }
    }
}

fn encode(chat: &ChatModel, message: &str) -> Result<Vec<u32>> {
    Ok(chat.encode_chat(
        &[TemplateMessage::user(message)],
        &RenderOptions::generation(),
    )?)
}

/// The ids a random prompt may hold: every id the tokenizer has.
fn vocab(chat: &ChatModel) -> Result<usize> {
    match chat.tokenizer.vocab_size() {
        0 => bail!("the tokenizer has no vocabulary to draw --prompt-tokens from"),
        n => Ok(n),
    }
}

/// Prompt `index`'s `len` ids, uniform over `0..vocab`.
fn random_ids(vocab: usize, len: usize, index: u64) -> Vec<u32> {
    let mut rng = Rng::for_item(SEED, 0, index);
    (0..len).map(|_| rng.range(0, vocab - 1) as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_length_is_refused_and_no_flag_means_the_message() {
        assert!(Prompts::from_flags("hi", Some(0)).is_err());
        assert_eq!(
            Prompts::from_flags("hi", None).ok(),
            Some(Prompts::Chat("hi"))
        );
        assert_eq!(
            Prompts::from_flags("hi", Some(64)).ok(),
            Some(Prompts::Random(64))
        );
    }

    #[test]
    fn random_prompts_are_the_same_each_time_and_differ_by_index() {
        let a = random_ids(1000, 64, 3);
        assert_eq!(a.len(), 64);
        assert!(a.iter().all(|&id| id < 1000));
        assert_eq!(a, random_ids(1000, 64, 3));
        assert_ne!(a, random_ids(1000, 64, 4));
        // Spread over the vocabulary, not stuck at one end.
        assert!(a.iter().any(|&id| id < 500) && a.iter().any(|&id| id >= 500));
    }
}
