//! Tokens picked in the graph and not yet read, as the next pass's
//! inputs: a row of their pass's picks (`[rows, 1]` int32), or a
//! constrained token picked on its own once its mask is in ([`pick`]).
//! A decoding batch that goes on unchanged feeds rows `0..N` of the last
//! pass's picks in order: joined here as one view of them, where a slice
//! per row joined by a concatenation was 2N + 1 operations a step (on a
//! GPU, a copy launched per row). Reading waits for the picks' own pass,
//! never for the pass that took them as input, and reads every row from
//! one host copy.

use mlx_rs::Array;
use mlx_rs::error::Result as R;
use mlx_rs::ops::indexing::TryIndexOp;

use super::draw::{self, Draw};
use crate::mlx::error::mlx_err;
use crate::mlx::model::join_ids;
use crate::{EngineError, TokenMask};

/// An unread token: row `row` of the picks of pass `pass`.
#[derive(Clone)]
pub(crate) struct Picked {
    /// The pass's picks, `[rows, 1]`; a token picked on its own (a
    /// constrained token, from its masked logits) is its own picks,
    /// `[1, 1]`.
    picks: Array,
    row: i32,
    /// Which pass's picks (`None`: picked on its own), so that rows of the
    /// same picks are known to be so without comparing arrays.
    pass: Option<u64>,
    /// The logits row (`[1, vocab]`) it was picked from, kept where the
    /// request reports log-probabilities (`logprobs.rs`).
    logits: Option<Array>,
}

impl Picked {
    /// Row `row` of the picks of pass `pass`.
    pub fn row_of(picks: &Array, pass: u64, row: i32) -> Self {
        Self {
            picks: picks.clone(),
            row,
            pass: Some(pass),
            logits: None,
        }
    }

    /// A token picked on its own (`[1, 1]` int32).
    fn alone(token: Array) -> Self {
        Self {
            picks: token,
            row: 0,
            pass: None,
            logits: None,
        }
    }

    /// The same token, with the logits row it was picked from.
    pub fn with_logits(self, row: Array) -> Self {
        Self {
            logits: Some(row),
            ..self
        }
    }

    /// The logits row it was picked from, where it was kept.
    pub fn logits(&self) -> Option<&Array> {
        self.logits.as_ref()
    }

    /// The token, where it was picked on its own: not queued with a pass,
    /// so the caller queues it (a pass's picks are queued with the pass).
    pub fn unqueued(&self) -> Option<&Array> {
        self.pass.is_none().then_some(&self.picks)
    }
}

/// The next token from `logits` (`[1, vocab]`) among the tokens `mask`
/// allows, a token picked on its own, lazily: their argmax, or with
/// `draw` their draw for that position (`draw.rs`, on the device like a
/// free token's). A mask that allows none of them is an error, not
/// token 0.
pub(crate) fn pick(
    logits: &Array,
    mask: Option<&TokenMask>,
    draw: Option<(Draw, usize)>,
) -> Result<Picked, EngineError> {
    let err = mlx_err("choosing a constrained token");
    let scores = match mask {
        None => logits.clone(),
        Some(mask) => {
            let vocab = logits.shape().last().copied().unwrap_or(0).max(0) as usize;
            let Some(allowed) = mask.flags(vocab) else {
                return Err(EngineError::InvalidRequest(
                    "the output constraint allows no token".into(),
                ));
            };
            let allowed = Array::from_slice(&allowed, &[1, vocab as i32]);
            let floor = Array::from_f32(f32::NEG_INFINITY);
            mlx_rs::ops::select(&allowed, logits, &floor).map_err(err)?
        }
    };
    draw::picks(&scores, &[draw])
        .map(Picked::alone)
        .map_err(mlx_err("choosing a constrained token"))
}

/// What one part of a pass feeds the model.
pub(crate) enum Input {
    /// Ids the host knows: a prompt's chunk, forced tokens, a token
    /// sampled on the host or read already.
    Known(Vec<u32>),
    /// An unread token.
    Picked(Picked),
}

/// Consecutive inputs that make one piece of a pass's ids.
enum Run<'a> {
    /// Known ids, one array for all of them.
    Known(Vec<i32>),
    /// Rows `first.row..end` of one pass's picks, one view of them.
    Rows(&'a Picked, i32),
}

impl<'a> Run<'a> {
    fn start(input: &'a Input) -> Self {
        match input {
            Input::Known(ids) => Self::Known(ids.iter().map(|&t| t as i32).collect()),
            Input::Picked(p) => Self::Rows(p, p.row + 1),
        }
    }

    /// `input` added to the run, or the run and `input` apart.
    fn extend(self, input: &'a Input) -> Result<Self, (Self, &'a Input)> {
        match (self, input) {
            (Self::Known(mut ids), Input::Known(more)) => {
                ids.extend(more.iter().map(|&t| t as i32));
                Ok(Self::Known(ids))
            }
            (Self::Rows(first, end), Input::Picked(next))
                if first.pass.is_some() && first.pass == next.pass && next.row == end =>
            {
                Ok(Self::Rows(first, end + 1))
            }
            (run, input) => Err((run, input)),
        }
    }

    /// The run's ids, `[1, n]`.
    fn piece(self) -> R<Array> {
        match self {
            Self::Known(ids) => Ok(Array::from_slice(&ids, &[1, ids.len() as i32])),
            Self::Rows(first, end) => {
                let all = first.picks.shape().first().copied().unwrap_or(0);
                let taken = match first.row == 0 && end == all {
                    true => first.picks.clone(),
                    false => first.picks.try_index(first.row..end)?,
                };
                // `[n, 1]` to a row: a view (MLX returns the array itself
                // where the shape is already that).
                taken.reshape(&[1, end - first.row])
            }
        }
    }
}

/// Every input of a pass in order, `[1, Σ len]`: consecutive known ids as
/// one array, consecutive rows of one pass's picks as one view of them
/// (the whole picks where they are all of them), joined by one
/// concatenation where more than one piece is left.
pub(crate) fn join<'a>(inputs: impl IntoIterator<Item = &'a Input>) -> R<Array> {
    let mut pieces: Vec<Array> = Vec::new();
    let mut run: Option<Run<'a>> = None;
    for input in inputs {
        run = Some(match run {
            None => Run::start(input),
            Some(r) => match r.extend(input) {
                Ok(r) => r,
                Err((done, input)) => {
                    pieces.push(done.piece()?);
                    Run::start(input)
                }
            },
        });
    }
    pieces.extend(run.map(Run::piece).transpose()?);
    join_ids(pieces)
}

/// The ids of `tokens`, in order: one wait for every picks array among
/// them, then each row read from the host.
pub(crate) fn read(tokens: &[&Picked]) -> Result<Vec<u32>, String> {
    let same = |a: &Picked, b: &Picked| a.pass.is_some() && a.pass == b.pass;
    let mut arrays: Vec<&Array> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !tokens[..i].iter().any(|u| same(u, t)) {
            arrays.push(&t.picks);
        }
    }
    mlx_rs::transforms::eval(arrays).map_err(|e| format!("evaluating a step: {e}"))?;
    // Each picks array's host copy, read once.
    let mut host: Vec<(&Picked, &[i32])> = Vec::new();
    let mut ids = Vec::with_capacity(tokens.len());
    for t in tokens {
        let v = match host.iter().find(|(u, _)| same(u, t)) {
            Some((_, v)) => *v,
            None => {
                let v = t
                    .picks
                    .try_as_slice::<i32>()
                    .map_err(|e| format!("reading a token: {e}"))?;
                host.push((t, v));
                v
            }
        };
        let id = v
            .get(t.row as usize)
            .ok_or_else(|| "a step produced no token for a row".to_owned())?;
        ids.push(*id as u32);
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx::kernels::graph::count_operations;

    /// A pass's picks, `[rows, 1]`, lazy (as a step leaves them).
    fn picks(ids: &[i32]) -> Array {
        let a = Array::from_slice(ids, &[ids.len() as i32, 1]);
        a.add(Array::from_int(0)).unwrap()
    }

    fn values(a: &Array) -> Vec<i32> {
        a.eval().unwrap();
        a.as_slice::<i32>().to_vec()
    }

    fn rows(picks: &Array, pass: u64, rows: std::ops::Range<i32>) -> Vec<Input> {
        rows.map(|r| Input::Picked(Picked::row_of(picks, pass, r)))
            .collect()
    }

    #[test]
    fn a_batch_going_on_unchanged_takes_its_picks_as_they_are() {
        let p = picks(&[11, 12, 13, 14]);
        p.eval().unwrap();
        let all = rows(&p, 7, 0..4);
        let joined = join(&all).unwrap();
        assert_eq!(joined.shape(), [1, 4]);
        // One reshape: no slice per row, no concatenation.
        assert!(count_operations(&[&joined]).unwrap() <= 1);
        assert_eq!(values(&joined), [11, 12, 13, 14]);
        // Rows 1..3 in order: one slice and its reshape.
        let joined = join(&rows(&p, 7, 1..3)).unwrap();
        assert!(count_operations(&[&joined]).unwrap() <= 2);
        assert_eq!(values(&joined), [12, 13]);
        // Rows read already, one known id each: one array, no operation.
        let known = [
            Input::Known(vec![3]),
            Input::Known(vec![1]),
            Input::Known(vec![2]),
        ];
        let joined = join(&known).unwrap();
        assert_eq!(count_operations(&[&joined]).unwrap(), 0);
        assert_eq!(values(&joined), [3, 1, 2]);
    }

    #[test]
    fn inputs_out_of_order_or_of_other_passes_keep_their_own_tokens() {
        let a = picks(&[1, 2, 3]);
        let b = picks(&[4, 5]);
        let mut inputs = rows(&a, 1, 1..3);
        inputs.push(Input::Known(vec![8, 9]));
        inputs.extend(rows(&a, 1, 0..1));
        // Row 1 of another pass follows row 0 of this one: not one run.
        inputs.extend(rows(&b, 2, 1..2));
        inputs.extend(rows(&b, 2, 0..1));
        // Two tokens picked alone never join as rows of one array.
        inputs.push(Input::Picked(Picked::alone(picks(&[6]))));
        inputs.push(Input::Picked(Picked::alone(picks(&[7]))));
        let joined = join(&inputs).unwrap();
        assert_eq!(values(&joined), [2, 3, 8, 9, 1, 5, 4, 6, 7]);
    }

    #[test]
    fn reading_gives_each_token_its_own_row() {
        let a = picks(&[21, 22, 23]);
        let b = picks(&[31, 32]);
        // Two tokens picked alone are two arrays, whatever their rows.
        let tokens = [
            Picked::row_of(&a, 1, 2),
            Picked::row_of(&b, 2, 0),
            Picked::alone(picks(&[41])),
            Picked::row_of(&a, 1, 0),
            Picked::alone(picks(&[42])),
            Picked::row_of(&b, 2, 1),
        ];
        let refs: Vec<&Picked> = tokens.iter().collect();
        assert_eq!(read(&refs).unwrap(), [23, 31, 41, 21, 42, 32]);
        // A row the picks do not have is an error, not a token.
        let missing = Picked::row_of(&a, 1, 3);
        assert!(read(&[&missing]).is_err());
    }
}
