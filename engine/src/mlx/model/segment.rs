//! A pass's segments: the part of the pass each sequence feeds, its
//! cache, and where its cache starts as another's prefix. The pass's ids
//! are every segment's tokens joined in order ([`join_ids`]).

use mlx_rs::Array;

use super::{KvCache, R};

/// One sequence's part of a [`super::Network::forward`] step.
pub(crate) struct Segment<'a> {
    /// How many of the pass's tokens are its own (the next `len` after
    /// the earlier segments').
    pub len: i32,
    /// The sequence's cache, one per layer.
    pub caches: &'a mut [KvCache],
    /// Its cache starts as an earlier segment's prefix, taken layer by
    /// layer in this pass.
    pub fork: Option<Fork>,
}

/// Pieces of a pass's ids (`[1, n]` each) joined in order, `[1, Σ n]`:
/// what [`super::Network::forward`] takes.
pub(crate) fn join_ids(mut pieces: Vec<Array>) -> R<Array> {
    match pieces.len() {
        1 => Ok(pieces.remove(0)),
        _ => {
            let all: Vec<&Array> = pieces.iter().collect();
            mlx_rs::ops::concatenate(&all, 1)
        }
    }
}

/// How many leading segments of a pass decode beside prompts: a row each,
/// no fork, and none the source of a later segment's fork (a fork reads
/// its source in the same part). 0 where the pass only decodes or only
/// prefills.
pub(super) fn decoding_head(segments: &[Segment<'_>]) -> usize {
    let mut d = segments
        .iter()
        .take_while(|s| s.len == 1 && s.fork.is_none())
        .count();
    while let Some(from) = segments[d..]
        .iter()
        .filter_map(|s| s.fork.map(|f| f.from))
        .filter(|&from| from < d)
        .min()
    {
        d = from;
    }
    match d == segments.len() {
        true => 0,
        false => d,
    }
}

/// A prompt prefix one segment shares with an earlier one in the same
/// pass: at each layer, once segment `from` has written its rows, the
/// first `at` positions of its cache become this segment's cache, so the
/// shared rows are computed once for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fork {
    pub from: usize,
    pub at: i32,
}
