//! A pass of prompts in the batch slots (`model/burst.rs`): every cache
//! moved into its slot, the pass's padded rows written at their own
//! positions with one scatter per buffer, and what each piece attends
//! read back from the slots.

use mlx_rs::Array;
use mlx_rs::ops::indexing::TryIndexOp;

use super::super::super::burst::Burst;
use super::super::super::step_arrays::StepArrays;
use super::{BatchCache, KvCache, R, typed_as};
use crate::mlx::kernels::indexed::{gather, scatter, write_at};

impl BatchCache {
    /// A burst whose prompts continue cached rows (`burst.rs`): every
    /// cache moved into a slot (its rows copied in once, as a decode
    /// step's newcomers are), the padded rows `k`, `v` (`[N, H, longest,
    /// D]`) written at their own positions (`burst.writes`) with one
    /// scatter per buffer, and the offsets advanced by `burst.lens`.
    /// A prompt that shares an earlier one's start (`burst.forks`) enters
    /// empty and gets that start copied from the slot that writes it.
    /// Returns the N prompts' keys and values up to `burst.reach` (`[N, H,
    /// reach, D]`), for the burst's mask: a written row past a prompt's
    /// length is padding that no query sees and the next write replaces.
    pub(crate) fn prefill(
        &self,
        caches: &mut [&mut KvCache],
        k: &Array,
        v: &Array,
        burst: &Burst,
        arrays: &StepArrays,
    ) -> R<(Array, Array)> {
        // One padded row group per piece (a prompt, or a cut of one).
        let n = burst.pieces.len() as i32;
        let longest = k.shape()[2];
        if burst.bases.len() != caches.len() || k.shape()[0] != n || longest != burst.longest {
            return Err(mlx_rs::error::Exception::custom(
                "a burst's rows for other caches",
            ));
        }
        // Room for every prompt's rows, and `reach` itself, where padding
        // rows are written.
        let room = burst.reach + 1;
        let newcomers: Vec<usize> = (0..caches.len())
            .filter(|&i| !matches!(&caches[i].slot, Some(s) if s.batch.same(self)))
            .collect();
        if !newcomers.is_empty() {
            self.enter(caches, &newcomers, room, k, v)?;
        }
        let mut slots = Vec::with_capacity(caches.len());
        for ((c, &base), fork) in caches.iter().zip(&burst.bases).zip(&burst.forks) {
            // A shared start is copied in below: such a cache is empty.
            let offset = if fork.is_some() { 0 } else { base };
            match &c.slot {
                Some(s) if c.offset == offset => slots.push(s.index),
                _ => {
                    return Err(mlx_rs::error::Exception::custom(
                        "a burst's cache moved from its position",
                    ));
                }
            }
        }
        let mut guard = self.lock();
        let b = &mut *guard;
        let (keys, values) = b.take_fitted(room)?;
        // On an error the buffers stay as they were, for the other slots.
        match write_and_read(&keys, &values, k, v, burst, &slots, arrays) {
            Ok((new_k, new_v, seen)) => {
                b.keys = Some(new_k);
                b.values = Some(new_v);
                drop(guard);
                for ((c, &base), &l) in caches.iter_mut().zip(&burst.bases).zip(&burst.lens) {
                    c.offset = base + l;
                }
                Ok(seen)
            }
            Err(e) => {
                b.keys = Some(keys);
                b.values = Some(values);
                Err(e)
            }
        }
    }
}

/// [`BatchCache::prefill`]'s writes and reads: the burst's padded rows
/// `k`, `v` (`[pieces, H, longest, D]`) written row by row into the
/// batch buffers `keys`, `values` (each at its prompt's slot and its own
/// position, padding at `reach`), then every piece's keys and values up to
/// `reach` read back (`[pieces, H, reach, D]`): a slice and a take of the
/// slots, or where prompts share a start or are cut into pieces, a gather
/// position by position from the slot that holds it (a shared start is
/// then written into its follower's slot). Returns the new buffers and
/// what the pieces attend.
#[allow(clippy::type_complexity)]
fn write_and_read(
    keys: &Array,
    values: &Array,
    k: &Array,
    v: &Array,
    burst: &Burst,
    slots: &[i32],
    arrays: &StepArrays,
) -> R<(Array, Array, (Array, Array))> {
    let (n, longest, reach) = (burst.pieces.len() as i32, burst.longest, burst.reach);
    if burst.whole() {
        // One prompt: its rows written as one block from its base, its
        // slot read back up to the reach.
        let (s, base) = (slots[0], burst.pieces[0].base);
        let keys = write_at(keys, &typed_as(k, keys)?, &[s, 0, base, 0])?;
        let values = write_at(values, &typed_as(v, values)?, &[s, 0, base, 0])?;
        let theirs = |a: &Array| a.try_index((s..s + 1, .., ..reach, ..));
        let seen = (theirs(&keys)?, theirs(&values)?);
        return Ok((keys, values, seen));
    }
    let piece_slots: Vec<i32> = burst.pieces.iter().map(|p| slots[p.prompt]).collect();
    let slot_idx = arrays.ints(&piece_slots, &[n, 1])?;
    let pos_idx = arrays.ints(&burst.writes, &[n, longest])?;
    // [pieces, H, longest, D] → [pieces, longest, 1, H, 1, D]: a row per
    // (piece, position) index.
    let rows = |a: &Array, like: &Array| -> R<Array> {
        let sh = a.shape();
        let a = a
            .transpose_axes(&[0, 2, 1, 3])?
            .reshape(&[sh[0], sh[2], 1, sh[1], 1, sh[3]])?;
        typed_as(&a, like)
    };
    let keys = scatter(keys, &[&slot_idx, &pos_idx], &rows(k, keys)?, &[0, 2])?;
    let values = scatter(values, &[&slot_idx, &pos_idx], &rows(v, values)?, &[0, 2])?;
    if !(burst.shares() || burst.cut()) {
        // One piece per prompt: its slot, up to the reach. Slots `0..n`
        // in order are a slice (the buffers may keep slots past them).
        let in_order = piece_slots.iter().enumerate().all(|(i, &s)| s == i as i32);
        let flat = arrays.ints(&piece_slots, &[n])?;
        let theirs = |a: &Array| -> R<Array> {
            let (held, capacity) = (a.shape()[0], a.shape()[2]);
            match (in_order, n == held, reach == capacity) {
                (true, true, true) => Ok(a.clone()),
                (true, true, false) => a.try_index((.., .., ..reach, ..)),
                (true, false, _) => a.try_index((..n, .., ..reach, ..)),
                (false, _, true) => a.take_axis(&flat, 0),
                (false, _, false) => a.try_index((.., .., ..reach, ..))?.take_axis(&flat, 0),
            }
        };
        let seen = (theirs(&keys)?, theirs(&values)?);
        return Ok((keys, values, seen));
    }
    let sources = arrays.ints(&burst.sources(slots), &[n, reach])?;
    let positions: Vec<i32> = (0..reach).collect();
    let positions = arrays.ints(&positions, &[1, reach])?;
    let mut out = Vec::with_capacity(4);
    for buf in [keys, values] {
        let sh = buf.shape().to_vec();
        let rows = gather(
            &buf,
            &[&sources, &positions],
            &[0, 2],
            &[1, sh[1], 1, sh[3]],
        )?;
        out.push(match burst.shares() {
            // Pieces of one prompt write the same rows.
            true => scatter(&buf, &[&slot_idx, &positions], &rows, &[0, 2])?,
            false => buf,
        });
        // [pieces, reach, 1, H, 1, D] → [pieces, H, reach, D].
        out.push(
            rows.reshape(&[n, reach, sh[1], sh[3]])?
                .transpose_axes(&[0, 2, 1, 3])?,
        );
    }
    let [keys, seen_k, values, seen_v] = <[Array; 4]>::try_from(out)
        .map_err(|_| mlx_rs::error::Exception::custom("a burst's rows"))?;
    Ok((keys, values, (seen_k, seen_v)))
}
