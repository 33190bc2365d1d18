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

/// Each byte's eight bits as flags, lowest first: a mask unpacks a byte
/// at a time.
const BYTE_FLAGS: [[bool; 8]; 256] = {
    let mut table = [[false; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut bit = 0;
        while bit < 8 {
            table[byte][bit] = (byte >> bit) & 1 != 0;
            bit += 1;
        }
        byte += 1;
    }
    table
};

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

    /// One flag per id below `vocab` (the form MLX's select takes),
    /// unpacked a byte at a time from a table: a per-id loop over a
    /// 152k vocabulary took ~7x as long; `None` when none of them is
    /// allowed.
    #[must_use]
    pub fn flags(&self, vocab: usize) -> Option<Vec<bool>> {
        let mut flags = Vec::with_capacity(vocab.next_multiple_of(32));
        let mut any = 0u32;
        for w in self.words.iter().take(vocab.div_ceil(32)) {
            let left = vocab - flags.len();
            let w = match left < 32 {
                true => w & ((1u32 << left) - 1),
                false => *w,
            };
            any |= w;
            for byte in w.to_le_bytes() {
                flags.extend_from_slice(&BYTE_FLAGS[byte as usize]);
            }
        }
        flags.resize(vocab, false);
        (any != 0).then_some(flags)
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

    #[test]
    fn flags_are_the_allowed_ids_below_the_vocabulary() {
        let mut m = TokenMask::none(100);
        for id in [0, 31, 32, 63, 64, 70, 99] {
            m.allow(id);
        }
        for vocab in [0, 1, 31, 32, 33, 64, 65, 71, 99, 100, 130] {
            let want: Vec<bool> = (0..vocab as u32).map(|id| m.allows(id)).collect();
            match m.flags(vocab) {
                Some(f) => assert_eq!(f, want, "vocab {vocab}"),
                None => assert!(!want.contains(&true), "vocab {vocab}"),
            }
        }
        // Allowed only past the vocabulary: none allowed within it.
        let mut past = TokenMask::none(64);
        past.allow(40);
        assert!(past.flags(40).is_none());
        assert_eq!(past.flags(41).map(|f| f[40]), Some(true));
    }
}
