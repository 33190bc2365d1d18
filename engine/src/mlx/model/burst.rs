//! Prompts of one pass attended as one padded batch. On MLX's own
//! attention (a GPU, `keep`, `bf16`) a prompt's rotation, cache writes and
//! attention otherwise run per prompt, so a burst of N prompts built N
//! chains of operations per layer. Here the pass's rows (concatenated,
//! `[1, T, ..]`) are gathered into `[N, longest, ..]`, each prompt padded
//! by repeating its last row; rotated and attended in one operation each
//! under a mask that hides the padding; and gathered back.
//!
//! Fresh prompts attend only their own rows: those then enter the layer's
//! batch slots with one write per buffer (`BatchCache::enter_burst`), so
//! their first decode step copies nothing; where the batch has free slots
//! to reuse, each prompt's cache keeps views of its own rows instead, as a
//! shared prefix does (`fork`). Prompts that continue cached rows (a
//! prefix-cache hit, a long prompt's next chunk, forced tokens) are written
//! into their batch slots first, each from its own position, and attend the
//! slots (`BatchCache::prefill`).

use mlx_rs::Array;

/// The padded layout of a pass's prompts, built once per pass for every
/// layer.
pub(crate) struct Burst {
    /// Each prompt's rows in the pass, in order.
    pub lens: Vec<i32>,
    /// Each prompt's cached positions (where its rows start).
    pub bases: Vec<i32>,
    /// The longest (the padded length).
    pub longest: i32,
    /// The keys a query may see: the furthest prompt's end.
    pub reach: i32,
    /// For each padded position (`[N * longest]`), the pass row it takes.
    pub gather: Array,
    /// For each pass row (`[T]`), its padded position.
    pub scatter: Array,
    /// `[N, 1, longest, reach]`: query `i` of prompt `n` sees key `j` when
    /// `j <= bases[n] + min(i, lens[n] - 1)` (a padded query sees what
    /// its prompt's last row sees). Built on the device from the queries'
    /// positions, not as `N × longest × reach` host booleans.
    pub mask: Array,
    /// `bases` as `[N]` int32 (each prompt's RoPE offset); `None` when
    /// every prompt is fresh.
    pub starts: Option<Array>,
}

impl Burst {
    /// The layout for prompts of `lens` rows after `bases` cached
    /// positions; `None` where it does not pay: fewer than two prompts, or
    /// padding that would more than double the rows computed (one long
    /// prompt beside short ones).
    pub fn new(bases: &[i32], lens: &[i32]) -> mlx_rs::error::Result<Option<Burst>> {
        let n = lens.len() as i32;
        let Some(&longest) = lens.iter().max() else {
            return Ok(None);
        };
        let total: i32 = lens.iter().sum();
        if n < 2
            || bases.len() != lens.len()
            || lens.iter().any(|&l| l < 1)
            || bases.iter().any(|&b| b < 0)
            || n * longest > 2 * total
        {
            return Ok(None);
        }
        let reach = bases
            .iter()
            .zip(lens)
            .map(|(b, l)| b + l)
            .max()
            .unwrap_or(0);
        let mut gather = Vec::with_capacity((n * longest) as usize);
        let mut scatter = Vec::with_capacity(total as usize);
        let mut seen = Vec::with_capacity((n * longest) as usize);
        let mut start = 0;
        for (p, (&l, &b)) in lens.iter().zip(bases).enumerate() {
            gather.extend((0..longest).map(|j| start + j.min(l - 1)));
            scatter.extend((0..l).map(|j| p as i32 * longest + j));
            seen.extend((0..longest).map(|i| b + i.min(l - 1)));
            start += l;
        }
        let seen = Array::from_slice(&seen, &[n, 1, longest, 1]);
        let keys = mlx_rs::ops::arange::<_, i32>(0, reach, None)?.reshape(&[1, 1, 1, reach])?;
        let cached = bases.iter().any(|&b| b > 0);
        Ok(Some(Burst {
            lens: lens.to_vec(),
            bases: bases.to_vec(),
            longest,
            reach,
            gather: Array::from_slice(&gather, &[n * longest]),
            scatter: Array::from_slice(&scatter, &[total]),
            mask: keys.le(&seen)?,
            starts: cached.then(|| Array::from_slice(bases, &[n])),
        }))
    }

    /// Whether every prompt starts at position 0.
    pub fn fresh(&self) -> bool {
        self.starts.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(b: &Burst) -> Vec<bool> {
        b.mask.eval().unwrap();
        b.mask.as_slice::<bool>().to_vec()
    }

    #[test]
    fn the_layout_pads_each_prompt_with_its_last_row() {
        let b = Burst::new(&[0, 0, 0], &[3, 1, 2]).unwrap().unwrap();
        assert!(b.fresh());
        assert_eq!((b.longest, b.reach), (3, 3));
        assert_eq!(b.gather.as_slice::<i32>(), &[0, 1, 2, 3, 3, 3, 4, 5, 5]);
        assert_eq!(b.scatter.as_slice::<i32>(), &[0, 1, 2, 3, 6, 7]);
        assert_eq!(b.mask.shape(), &[3, 1, 3, 3]);
        let mask = mask(&b);
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
    fn prompts_after_cached_rows_see_them_and_their_own() {
        // Prompt 0: 2 rows after 3 cached; prompt 1: 1 fresh row.
        let b = Burst::new(&[3, 0], &[2, 1]).unwrap().unwrap();
        assert!(!b.fresh());
        assert_eq!((b.longest, b.reach), (2, 5));
        assert_eq!(b.mask.shape(), &[2, 1, 2, 5]);
        let mask = mask(&b);
        assert_eq!(&mask[0..5], &[true, true, true, true, false]);
        assert_eq!(&mask[5..10], &[true; 5]);
        // The padded query of prompt 1 sees what its one row sees.
        assert_eq!(&mask[10..15], &[true, false, false, false, false]);
        assert_eq!(&mask[15..20], &[true, false, false, false, false]);
        let starts = b.starts.as_ref().unwrap();
        assert_eq!(starts.as_slice::<i32>(), &[3, 0]);
    }

    #[test]
    fn a_lone_prompt_or_much_padding_goes_per_prompt() {
        let none = |bases: &[i32], lens: &[i32]| Burst::new(bases, lens).unwrap().is_none();
        assert!(none(&[0], &[5]));
        assert!(none(&[0, 0, 0], &[100, 2, 2]));
        assert!(none(&[0, 0], &[3, 0]));
        assert!(!none(&[0, 0, 0, 0], &[30, 24, 28, 31]));
        assert!(!none(&[40, 0, 7, 900], &[30, 24, 28, 31]));
    }
}
