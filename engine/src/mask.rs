//! The tokens a constrained generation may produce next.
//!
//! A grammar (JSON schema, tool arguments) lives above the engine, beside
//! the tokenizer; the engine only sees its verdict for the next step: one
//! bit per token id, applied to the logits before any sampling filter.

/// One bit per token id: set where the token is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenMask {
    words: Vec<u32>,
}

impl TokenMask {
    /// A mask over `words` (bit `id % 32` of word `id / 32`, as grammar
    /// engines lay them out). Ids past the last word are not allowed.
    #[must_use]
    pub fn from_words(words: Vec<u32>) -> Self {
        Self { words }
    }

    /// A mask that allows nothing yet, room for `vocab` ids.
    #[must_use]
    pub fn none(vocab: usize) -> Self {
        Self {
            words: vec![0; vocab.div_ceil(32)],
        }
    }

    /// Allows `id` (ignored past the mask's room).
    pub fn allow(&mut self, id: u32) {
        if let Some(w) = self.words.get_mut((id / 32) as usize) {
            *w |= 1 << (id % 32);
        }
    }

    /// Whether `id` is allowed.
    #[must_use]
    pub fn allows(&self, id: u32) -> bool {
        self.words
            .get((id / 32) as usize)
            .is_some_and(|w| w & (1 << (id % 32)) != 0)
    }

    /// How many ids are allowed.
    #[must_use]
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Sets every disallowed logit to minus infinity; `false` when no
    /// token at all is allowed among `logits`.
    pub fn apply(&self, logits: &mut [f32]) -> bool {
        let mut any = false;
        for (i, l) in logits.iter_mut().enumerate() {
            if self.allows(i as u32) {
                any |= !l.is_nan();
            } else {
                *l = f32::NEG_INFINITY;
            }
        }
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_logits_and_ignores_ids_past_its_room() {
        let mut m = TokenMask::none(40);
        m.allow(3);
        m.allow(33);
        m.allow(1000);
        assert!(m.allows(3) && m.allows(33) && !m.allows(4) && !m.allows(1000));
        assert_eq!(m.count(), 2);
        let mut logits = vec![1.0; 70];
        assert!(m.apply(&mut logits));
        assert_eq!(logits[3], 1.0);
        assert_eq!(logits[33], 1.0);
        assert_eq!(logits[4], f32::NEG_INFINITY);
        assert_eq!(logits[69], f32::NEG_INFINITY);
        assert!(!TokenMask::none(40).apply(&mut [0.5; 8]));
    }
}
