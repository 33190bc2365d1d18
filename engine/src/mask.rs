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
        // A word at a time: a grammar's words are mostly empty (or full),
        // which then cost one fill (or one scan) for 32 logits.
        let mut any = false;
        let words = self.words.iter().copied().chain(std::iter::repeat(0));
        for (chunk, w) in logits.chunks_mut(32).zip(words) {
            match w {
                0 => chunk.fill(f32::NEG_INFINITY),
                u32::MAX => any |= chunk.iter().any(|l| !l.is_nan()),
                w => {
                    for (bit, l) in chunk.iter_mut().enumerate() {
                        let keep = (w >> bit) & 1 != 0;
                        any |= keep & !l.is_nan();
                        *l = if keep { *l } else { f32::NEG_INFINITY };
                    }
                }
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
    fn applying_keeps_what_each_id_allows_whatever_its_word() {
        // Words empty, full and mixed, and logits past the words.
        let mut m = TokenMask::none(96);
        (32..64).for_each(|id| m.allow(id));
        [65, 70, 95].into_iter().for_each(|id| m.allow(id));
        let mut logits: Vec<f32> = (0..110).map(|i| i as f32).collect();
        logits[40] = f32::NAN;
        assert!(m.apply(&mut logits));
        for (id, l) in logits.iter().enumerate() {
            match (m.allows(id as u32), id) {
                (true, 40) => assert!(l.is_nan()),
                (true, _) => assert_eq!(*l, id as f32, "id {id}"),
                (false, _) => assert_eq!(*l, f32::NEG_INFINITY, "id {id}"),
            }
        }
        // Allowed logits that are all NaN: nothing to pick.
        let mut full = TokenMask::none(32);
        (0..32).for_each(|id| full.allow(id));
        assert!(!full.apply(&mut [f32::NAN; 32]));
        let mut one = TokenMask::none(32);
        one.allow(3);
        assert!(!one.apply(&mut [f32::NAN; 8]));
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
