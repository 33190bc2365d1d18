//! Fresh prompts of one pass attended as one padded batch. On MLX's own
//! attention (a GPU, `keep`, `bf16`) a prompt's rotation, cache writes and
//! attention otherwise run per prompt, so a burst of N prompts built N
//! chains of operations per layer. Here the pass's rows (concatenated,
//! `[1, T, ..]`) are gathered into `[N, longest, ..]`, each prompt padded
//! by repeating its last row; rotated and attended in one operation each
//! under a mask that hides the padding; and gathered back. The prompts'
//! rows then enter the layer's batch slots with one write per buffer
//! (`BatchCache::enter_burst`), so their first decode step copies
//! nothing; where the batch has free slots to reuse, each prompt's cache
//! keeps views of its own rows instead, as a shared prefix does (`fork`).

use mlx_rs::Array;

/// The padded layout of a pass of fresh prompts (no cached positions, no
/// shared prefix), built once per pass for every layer.
pub(crate) struct Burst {
    /// Each prompt's rows in the pass, in order.
    pub lens: Vec<i32>,
    /// The longest (the padded length).
    pub longest: i32,
    /// For each padded position (`[N * longest]`), the pass row it takes.
    pub gather: Array,
    /// For each pass row (`[T]`), its padded position.
    pub scatter: Array,
    /// `[N, 1, longest, longest]`: query `i` of prompt `n` sees key `j`
    /// when `j <= i` and `j < lens[n]` (a padded query sees its prompt).
    pub mask: Array,
}

impl Burst {
    /// The layout for prompts of `lens` rows; `None` where it does not pay:
    /// fewer than two prompts, or padding that would more than double the
    /// rows attended (one long prompt beside short ones).
    pub fn new(lens: &[i32]) -> Option<Burst> {
        let n = lens.len() as i32;
        let longest = *lens.iter().max()?;
        let total: i32 = lens.iter().sum();
        if n < 2 || lens.iter().any(|&l| l < 1) || n * longest > 2 * total {
            return None;
        }
        let mut gather = Vec::with_capacity((n * longest) as usize);
        let mut scatter = Vec::with_capacity(total as usize);
        let mut mask = Vec::with_capacity((n * longest * longest) as usize);
        let mut start = 0;
        for (p, &l) in lens.iter().enumerate() {
            gather.extend((0..longest).map(|j| start + j.min(l - 1)));
            scatter.extend((0..l).map(|j| p as i32 * longest + j));
            for i in 0..longest {
                mask.extend((0..longest).map(|j| j <= i && j < l));
            }
            start += l;
        }
        Some(Burst {
            lens: lens.to_vec(),
            longest,
            gather: Array::from_slice(&gather, &[n * longest]),
            scatter: Array::from_slice(&scatter, &[total]),
            mask: Array::from_slice(&mask, &[n, 1, longest, longest]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_pads_each_prompt_with_its_last_row() {
        let b = Burst::new(&[3, 1, 2]).unwrap();
        assert_eq!(b.longest, 3);
        assert_eq!(b.gather.as_slice::<i32>(), &[0, 1, 2, 3, 3, 3, 4, 5, 5]);
        assert_eq!(b.scatter.as_slice::<i32>(), &[0, 1, 2, 3, 6, 7]);
        let mask = b.mask.as_slice::<bool>();
        // Prompt 1 (one row): every query sees key 0 only.
        assert_eq!(
            &mask[9..18],
            &[true, false, false, true, false, false, true, false, false]
        );
        // Prompt 2 (two rows): causal within them, the padding hidden.
        assert_eq!(
            &mask[18..27],
            &[true, false, false, true, true, false, true, true, false]
        );
    }

    #[test]
    fn a_lone_prompt_or_much_padding_goes_per_prompt() {
        assert!(Burst::new(&[5]).is_none());
        assert!(Burst::new(&[100, 2, 2]).is_none());
        assert!(Burst::new(&[30, 24, 28, 31]).is_some());
    }
}
