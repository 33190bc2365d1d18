//! Prompts of one pass attended as one padded batch. On MLX's own
//! attention (a GPU, `keep`, `bf16`) a prompt's rotation, cache writes and
//! attention otherwise run per prompt, so a burst of N prompts built N
//! chains of operations per layer. Here the pass's rows (concatenated,
//! `[1, T, ..]`) are gathered into `[N, longest, ..]`, each prompt padded
//! by repeating its last row; rotated and attended in one operation each
//! under a mask that hides the padding; and gathered back.
//!
//! Fresh prompts entering new slots at the end of the batch attend only
//! their own rows, which then enter those slots with one write per buffer
//! (`BatchCache::enter_burst`), so their first decode step copies
//! nothing. Otherwise (free slots to reuse, prompts that continue cached
//! rows: a prefix-cache hit, a long prompt's next chunk, forced tokens)
//! the rows are written into the batch slots first, each at its own
//! position, and the prompts attend the slots (`BatchCache::prefill`). A prompt that shares its start with an
//! earlier one of the pass (a fork) reads that start from the slot that
//! writes it, and its own slot gets a copy, in one gather and one scatter
//! per buffer for the whole pass.
//!
//! A lone prompt whose cache is in a batch slot is a burst of one (one
//! piece, no padding, the causal mask): its rows go into the slot rather
//! than the cache leaving it for the pass and coming back at its next
//! decode step, a copy each way.

use std::cell::RefCell;

use mlx_rs::Array;

use super::Fork;

/// The padded layout of a pass's prompts, built once per pass for every
/// layer.
pub(crate) struct Burst {
    /// Each prompt's rows in the pass, in order.
    pub lens: Vec<i32>,
    /// Each prompt's cached (or shared) positions: where its rows start.
    pub bases: Vec<i32>,
    /// The padded batch's rows: each prompt whole, or cut into pieces of
    /// `longest` rows where one prompt much longer than the others would
    /// otherwise pad them all to its length (a shared start's leader, a
    /// long prompt beside chat turns).
    pub pieces: Vec<Piece>,
    /// The rows of a piece, padded.
    pub longest: i32,
    /// The keys a query may see: the furthest prompt's end.
    pub reach: i32,
    /// For each padded position (`[pieces * longest]`), the pass row it
    /// takes.
    pub gather: Array,
    /// For each pass row (`[T]`), its padded position.
    pub scatter: Array,
    /// `[pieces, 1, longest, reach]`: query `i` of a piece from position
    /// `base` with `len` rows sees key `j` when `j <= base + min(i, len -
    /// 1)` (a padded query sees what its piece's last row sees). Built on
    /// the device from the queries' positions, not as host booleans.
    pub mask: Array,
    /// The pieces' first positions as `[pieces]` int32 (their RoPE
    /// offsets); `None` when every prompt is one fresh piece.
    pub starts: Option<Array>,
    /// Each prompt's shared start, if it has one (its base is `at`).
    pub forks: Vec<Option<Fork>>,
    /// For each padded row (`[pieces * longest]`), the position its key
    /// and value are written at in its prompt's slot: its own, or for
    /// padding `reach`, a position past every prompt's end.
    pub writes: Vec<i32>,
    /// [`Burst::sources`] of the last slots asked for: every layer asks.
    sources: RefCell<Option<(Vec<i32>, Vec<i32>)>>,
}

/// Rows of one prompt in the padded batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Its prompt's index in the pass.
    pub prompt: usize,
    /// Its first row's position.
    pub base: i32,
    /// Its rows.
    pub len: i32,
}

/// Prompts are cut into pieces no shorter than this: each piece reads
/// every key up to the pass's reach.
const SHORTEST_PIECE: i32 = 32;

/// The most attention scores a padded pass may compute, as a multiple of
/// what its prompts would one by one.
const KEY_WORK: i64 = 4;

impl Burst {
    /// The layout for prompts of `lens` rows after `bases` cached (or
    /// shared: `forks`) positions; `None` where it does not pay: padding
    /// that would more than double the query rows even with the longest
    /// prompts cut into pieces, or keys read past [`KEY_WORK`] times what
    /// the prompts would read one by one. One prompt is one piece without
    /// padding: the caller decides when that pays (its cache in a batch
    /// slot, which it then need not leave).
    pub fn new(
        bases: &[i32],
        lens: &[i32],
        forks: &[Option<Fork>],
    ) -> mlx_rs::error::Result<Option<Burst>> {
        let n = lens.len();
        let Some(&most) = lens.iter().max() else {
            return Ok(None);
        };
        let total: i32 = lens.iter().sum();
        if bases.len() != n || forks.len() != n {
            return Ok(None);
        }
        // A shared start lies within rows its leader holds by the pass's end.
        let forks_fit = forks.iter().enumerate().all(|(i, f)| match f {
            Some(f) => f.from < i && f.at == bases[i] && f.at <= bases[f.from] + lens[f.from],
            None => true,
        });
        if !forks_fit || lens.iter().any(|&l| l < 1) || bases.iter().any(|&b| b < 0) {
            return Ok(None);
        }
        // A long piece whose padding at most doubles the rows: halved
        // until it fits, down to the shortest.
        let padded = |p: i32| lens.iter().map(|&l| (l + p - 1) / p * p).sum::<i32>();
        let mut longest = most;
        while padded(longest) > 2 * total {
            if longest <= SHORTEST_PIECE {
                return Ok(None);
            }
            longest = ((longest + 1) / 2).max(SHORTEST_PIECE);
        }
        let mut pieces = Vec::new();
        for (prompt, (&l, &b)) in lens.iter().zip(bases).enumerate() {
            pieces.extend((0..l).step_by(longest as usize).map(|at| Piece {
                prompt,
                base: b + at,
                len: longest.min(l - at),
            }));
        }
        let reach = bases
            .iter()
            .zip(lens)
            .map(|(b, l)| b + l)
            .max()
            .unwrap_or(0);
        // Every piece attends every key up to `reach`: at most `KEY_WORK`
        // times the scores prompt by prompt would compute (a short
        // continuation of a long cache beside fresh prompts would make
        // them all attend its length).
        let apart: i64 = bases
            .iter()
            .zip(lens)
            .map(|(&b, &l)| l as i64 * (b + l) as i64)
            .sum();
        if pieces.len() as i64 * longest as i64 * reach as i64 > KEY_WORK * apart {
            return Ok(None);
        }
        let count = pieces.len() as i32;
        let mut gather = Vec::with_capacity((count * longest) as usize);
        let mut scatter = Vec::with_capacity(total as usize);
        let mut seen = Vec::with_capacity((count * longest) as usize);
        let mut writes = Vec::with_capacity((count * longest) as usize);
        // Each prompt's first row in the pass.
        let firsts: Vec<i32> = lens
            .iter()
            .scan(0, |row, &l| {
                let first = *row;
                *row += l;
                Some(first)
            })
            .collect();
        for (k, piece) in pieces.iter().enumerate() {
            let (l, b) = (piece.len, piece.base);
            let first = firsts[piece.prompt] + b - bases[piece.prompt];
            gather.extend((0..longest).map(|j| first + j.min(l - 1)));
            scatter.extend((0..l).map(|j| k as i32 * longest + j));
            seen.extend((0..longest).map(|i| b + i.min(l - 1)));
            writes.extend((0..longest).map(|i| if i < l { b + i } else { reach }));
        }
        let seen = Array::from_slice(&seen, &[count, 1, longest, 1]);
        let keys = mlx_rs::ops::arange::<_, i32>(0, reach, None)?.reshape(&[1, 1, 1, reach])?;
        let cached = pieces.iter().any(|p| p.base > 0);
        let starts: Vec<i32> = pieces.iter().map(|p| p.base).collect();
        Ok(Some(Burst {
            lens: lens.to_vec(),
            bases: bases.to_vec(),
            longest,
            reach,
            gather: Array::from_slice(&gather, &[count * longest]),
            scatter: Array::from_slice(&scatter, &[total]),
            mask: keys.le(&seen)?,
            starts: cached.then(|| Array::from_slice(&starts, &[count])),
            forks: forks.to_vec(),
            pieces,
            writes,
            sources: RefCell::default(),
        }))
    }

    /// Whether the pass is one prompt in one piece: its rows need no
    /// padding or reordering, and the causal mask from its base is its
    /// mask.
    pub fn whole(&self) -> bool {
        self.pieces.len() == 1 && self.lens.len() == 1
    }

    /// Whether some prompt is cut into pieces.
    pub fn cut(&self) -> bool {
        self.pieces.len() > self.lens.len()
    }

    /// Whether a prompt shares its start with an earlier one.
    pub fn shares(&self) -> bool {
        self.forks.iter().any(Option::is_some)
    }

    /// For each piece and key position `j < reach` (`[pieces * reach]`),
    /// the slot that holds it, given each prompt's slot: its prompt's own,
    /// or for a shared start its leader's (whose own start may be shared
    /// in turn).
    pub fn sources(&self, slots: &[i32]) -> Vec<i32> {
        if let Some((asked, sources)) = &*self.sources.borrow()
            && asked == slots
        {
            return sources.clone();
        }
        let mut out = Vec::with_capacity(self.pieces.len() * self.reach as usize);
        for piece in &self.pieces {
            out.extend((0..self.reach).map(|j| {
                let mut at = piece.prompt;
                while let Some(f) = self.forks[at].filter(|f| j < f.at) {
                    at = f.from;
                }
                slots.get(at).copied().unwrap_or(0)
            }));
        }
        *self.sources.borrow_mut() = Some((slots.to_vec(), out.clone()));
        out
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
        let b = Burst::new(&[0, 0, 0], &[3, 1, 2], &[None; 3])
            .unwrap()
            .unwrap();
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
        let b = Burst::new(&[3, 0], &[2, 1], &[None; 2]).unwrap().unwrap();
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
    fn a_shared_start_is_read_from_the_slot_that_writes_it() {
        // Prompt 1 shares prompt 0's first 2 positions; prompt 2 shares
        // prompt 1's first 3 (so its first 2 are prompt 0's).
        let fork = |from, at| Some(Fork { from, at });
        let forks = [None, fork(0, 2), fork(1, 3)];
        let b = Burst::new(&[0, 2, 3], &[3, 2, 1], &forks).unwrap().unwrap();
        assert!(b.shares() && !b.fresh());
        assert_eq!(b.reach, 4);
        assert_eq!(
            b.sources(&[5, 7, 9]),
            [[5, 5, 5, 5], [5, 5, 7, 7], [5, 5, 7, 9]].concat()
        );
        // A fork of a later prompt, at another position or past what its
        // leader holds: per prompt.
        assert!(
            Burst::new(&[0, 4], &[3, 3], &[None, fork(0, 4)])
                .unwrap()
                .is_none()
        );
        assert!(
            Burst::new(&[2, 0], &[3, 3], &[fork(1, 2), None])
                .unwrap()
                .is_none()
        );
        assert!(
            Burst::new(&[0, 1], &[3, 3], &[None, fork(0, 2)])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_prompt_much_longer_than_the_others_is_cut_into_pieces() {
        // 100 rows beside two of 2 would pad to 300: pieces of 50 pad to
        // 200, at most twice the 104 rows.
        let b = Burst::new(&[0, 7, 0], &[100, 2, 2], &[None; 3])
            .unwrap()
            .unwrap();
        assert!(b.cut() && !b.fresh());
        assert_eq!((b.longest, b.reach), (50, 100));
        let piece = |prompt, base, len| Piece { prompt, base, len };
        assert_eq!(
            b.pieces,
            [
                piece(0, 0, 50),
                piece(0, 50, 50),
                piece(1, 7, 2),
                piece(2, 0, 2)
            ]
        );
        let gather = b.gather.as_slice::<i32>();
        assert_eq!((gather[49], gather[50], gather[99]), (49, 50, 99));
        // Prompt 1's rows are pass rows 100 and 101, then its padding.
        assert_eq!(&gather[100..103], &[100, 101, 101]);
        let scatter = b.scatter.as_slice::<i32>();
        assert_eq!(&scatter[98..104], &[98, 99, 100, 101, 150, 151]);
        assert_eq!(b.starts.as_ref().unwrap().as_slice::<i32>(), &[0, 50, 7, 0]);
        // Written at their own positions; padding at the reach, past
        // every prompt's end.
        assert_eq!(&b.writes[48..52], &[48, 49, 50, 51]);
        assert_eq!(&b.writes[100..104], &[7, 8, 100, 100]);
        // The second piece sees the first one's keys.
        let mask = mask(&b);
        let row = |piece: usize, i: usize| &mask[(piece * 50 + i) * 100..][..100];
        assert!(row(1, 0)[..51].iter().all(|&m| m) && !row(1, 0)[51]);
        assert_eq!(row(2, 0).iter().filter(|&&m| m).count(), 8);
    }

    #[test]
    fn a_lone_prompt_is_one_piece_and_much_padding_goes_per_prompt() {
        let lone = Burst::new(&[7], &[5], &[None]).unwrap().unwrap();
        assert_eq!(
            lone.pieces,
            [Piece {
                prompt: 0,
                base: 7,
                len: 5
            }]
        );
        assert_eq!((lone.longest, lone.reach), (5, 12));
        assert_eq!(lone.writes, [7, 8, 9, 10, 11]);
        assert!(lone.whole());
        let none = |bases: &[i32], lens: &[i32]| {
            Burst::new(bases, lens, &vec![None; lens.len()])
                .unwrap()
                .is_none()
        };
        assert!(none(&[], &[]));
        // A short continuation of a long cache beside fresh prompts: every
        // piece would attend its 8,050 keys.
        assert!(none(&[8000, 0, 0], &[50, 1000, 1000]));
        // Pieces of 40 would fit; shorter than `SHORTEST_PIECE` they do not.
        assert!(none(&[0; 9], &[40, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(none(&[0, 0], &[3, 0]));
        assert!(!none(&[0, 0, 0, 0], &[30, 24, 28, 31]));
        assert!(!none(&[40, 0, 7, 900], &[30, 24, 28, 31]));
    }
}
