//! One layer's key and value buffers for the whole decode batch:
//! `[slots, kv_heads, capacity, head_dim]`, a slot per sequence. A decode
//! step writes every sequence's new row at its own (slot, position) in one
//! scatter and attends all slots in one attention call, so its graph has
//! as many operations for 32 sequences as for one (issue #33; mlx-lm's
//! `BatchKVCache` does the same with left padding, this keeps per-slot
//! lengths instead, so sequences join and leave without realigning).
//!
//! A sequence's [`KvCache`] enters a slot at its first batched decode
//! step (its rows copied in once; those joining together grow the
//! buffers once), with the rest of a burst of fresh prompts at their
//! prefill (one write for all, [`BatchCache::enter_burst`]), or with a
//! burst of prompts that continue cached rows, which then attend the slots
//! ([`BatchCache::prefill`]: a prompt's next chunk or forced tokens stay
//! in the slot, alone in their pass too). It leaves it, copied back into
//! buffers of its own, whenever anything else touches it (the prefix
//! pool, a pass on a layer that takes no bursts), so every other use of
//! the cache is unchanged. A slot left at the end leaves the batch (no
//! step attends it) but stays in the buffers, so the next sequence to
//! join writes there: in a server sequences come and go every few steps,
//! and growing the buffers by a slot copies every slot.

use std::sync::{Arc, Mutex, MutexGuard};

use mlx_rs::Array;
use mlx_rs::ops::indexing::TryIndexOp;

use super::super::step_arrays::StepArrays;
use super::{KvCache, STEP};
use crate::mlx::kernels::indexed::{scatter, write_at};

mod prefill;

type R<T> = mlx_rs::error::Result<T>;

/// One layer's batch buffers; shared by the network and the slots' caches.
#[derive(Clone, Default)]
pub(crate) struct BatchCache(Arc<Mutex<Buffers>>);

#[derive(Default)]
struct Buffers {
    keys: Option<Array>,
    values: Option<Array>,
    /// Which slots a cache holds; as long as the batch's slots (the
    /// buffers may keep more, left at the end: see `Slot`'s drop).
    taken: Vec<bool>,
}

/// A cache's place in a [`BatchCache`]; dropping it frees the slot.
pub(super) struct Slot {
    batch: BatchCache,
    index: i32,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut guard = self.batch.lock();
        let b = &mut *guard;
        if let Some(t) = b.taken.get_mut(self.index as usize) {
            *t = false;
        }
        match b.taken.iter().rposition(|&t| t) {
            // Nobody decodes: the memory goes back.
            None => *b = Buffers::default(),
            // Free slots at the end leave the batch, so the remaining ones
            // stay `0..N` (see `in_order`) and no step attends them. The
            // buffers keep them for the next sequences to join without
            // growing (a copy of every slot), until their positions next
            // grow or the KV budget wants the memory back
            // (`BatchCache::drop_spare_slots`); the budget counts them.
            Some(last) => b.taken.truncate(last + 1),
        }
    }
}

impl Slot {
    /// This slot's first `upto` positions as `[1, H, upto, D]` views.
    pub(super) fn view(&self, upto: i32) -> R<Option<(Array, Array)>> {
        let b = self.batch.lock();
        let (Some(k), Some(v)) = (&b.keys, &b.values) else {
            return Ok(None);
        };
        let s = self.index;
        Ok(Some((
            k.try_index((s..s + 1, .., ..upto, ..))?,
            v.try_index((s..s + 1, .., ..upto, ..))?,
        )))
    }

    /// The whole batch buffers (to evaluate with a step).
    pub(super) fn buffers(&self) -> Vec<Array> {
        let b = self.batch.lock();
        b.keys.iter().chain(b.values.iter()).cloned().collect()
    }
}

/// What a batched decode step attends: the buffers up to the longest
/// sequence (`[slots, H, len, D]`), each segment's slot, each slot's
/// length (1 for a slot no segment of this step holds).
pub(crate) struct BatchView {
    pub keys: Array,
    pub values: Array,
    pub slots: Vec<i32>,
    pub lens: Vec<i32>,
}

/// What a decode step wrote ([`BatchCache::write_decode`]), to read back
/// with [`BatchCache::view`] once the pass's other writes are done.
pub(crate) struct Written {
    slots: Vec<i32>,
    lens: Vec<i32>,
    len: i32,
}

impl BatchCache {
    fn lock(&self) -> MutexGuard<'_, Buffers> {
        // A panic while holding it left plain data behind: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The buffers, to evaluate with a step (once for every slot).
    pub(crate) fn arrays(&self) -> Vec<Array> {
        let b = self.lock();
        b.keys.iter().chain(b.values.iter()).cloned().collect()
    }

    /// Slots the buffers hold: those in the batch and any kept past them.
    pub(crate) fn slots_held(&self) -> usize {
        self.lock()
            .keys
            .as_ref()
            .map_or(0, |k| k.shape()[0] as usize)
    }

    /// Gives up the slots kept past the batch's (see `Slot`'s drop): the
    /// buffers become views of the batch's slots, which their next write
    /// copies into buffers of that size (MLX writes in place only into
    /// memory the result fills), so the rest is freed.
    pub(crate) fn drop_spare_slots(&self) -> R<()> {
        let mut guard = self.lock();
        let b = &mut *guard;
        let keep = b.taken.len() as i32;
        for buf in [&mut b.keys, &mut b.values] {
            if let Some(a) = buf.take() {
                *buf = Some(match a.shape()[0] > keep {
                    true => a.try_index((..keep, .., .., ..))?,
                    false => a,
                });
            }
        }
        Ok(())
    }

    fn same(&self, other: &BatchCache) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// One decode step of `caches` (one per segment, in order): their new
    /// rows `k`, `v` (`[N, H, 1, D]`) written at their slots and offsets,
    /// caches not yet in a slot moved into one, offsets advanced; then
    /// what the step attends.
    #[cfg(test)]
    pub(crate) fn decode(
        &self,
        caches: &mut [&mut KvCache],
        k: &Array,
        v: &Array,
        arrays: &StepArrays,
    ) -> R<BatchView> {
        let written = self.write_decode(caches, k, v, arrays)?;
        self.view(written)
    }

    /// [`BatchCache::decode`]'s writes. A pass that also prefills writes
    /// its prompts' rows before the step reads ([`BatchCache::view`]), so
    /// no view of the buffers is held while they are written and MLX
    /// writes each in place.
    pub(crate) fn write_decode(
        &self,
        caches: &mut [&mut KvCache],
        k: &Array,
        v: &Array,
        arrays: &StepArrays,
    ) -> R<Written> {
        let newcomers: Vec<usize> = (0..caches.len())
            .filter(|&i| !matches!(&caches[i].slot, Some(s) if s.batch.same(self)))
            .collect();
        let len = caches.iter().map(|c| c.offset + 1).max().unwrap_or(1);
        if !newcomers.is_empty() {
            self.enter(caches, &newcomers, len, k, v)?;
        }
        let mut slots = Vec::with_capacity(caches.len());
        let mut offsets = Vec::with_capacity(caches.len());
        for c in caches.iter() {
            let Some(s) = &c.slot else {
                return Err(mlx_rs::error::Exception::custom("a cache left its slot"));
            };
            slots.push(s.index);
            offsets.push(c.offset);
        }
        let mut guard = self.lock();
        let b = &mut *guard;
        let (keys, values) = b.take_fitted(len)?;
        let write = || -> R<(Array, Array)> {
            if let (&[slot], &[offset]) = (slots.as_slice(), offsets.as_slice()) {
                // One sequence: its row written at a constant position, as
                // mlx-lm writes (no index arrays for the device to read).
                let at = [slot, 0, offset, 0];
                let new_k = write_at(&keys, &typed_as(k, &keys)?, &at)?;
                return Ok((new_k, write_at(&values, &typed_as(v, &values)?, &at)?));
            }
            let n = slots.len() as i32;
            let slot_idx = arrays.ints(&slots, &[n])?;
            let pos_idx = arrays.ints(&offsets, &[n])?;
            let rows = |a: &Array, like: &Array| -> R<Array> {
                let sh = a.shape();
                typed_as(&a.reshape(&[sh[0], 1, sh[1], 1, sh[3]])?, like)
            };
            let at = [&slot_idx, &pos_idx];
            let new_k = scatter(&keys, &at, &rows(k, &keys)?, &[0, 2])?;
            Ok((new_k, scatter(&values, &at, &rows(v, &values)?, &[0, 2])?))
        };
        let written = write();
        let (keys, values) = match written {
            Ok(new) => new,
            Err(e) => {
                // The buffers stay as they were, for the other slots.
                b.keys = Some(keys);
                b.values = Some(values);
                return Err(e);
            }
        };
        b.keys = Some(keys);
        b.values = Some(values);
        let mut lens = vec![1; b.taken.len()];
        for (&s, &o) in slots.iter().zip(&offsets) {
            lens[s as usize] = o + 1;
        }
        drop(guard);
        for c in caches.iter_mut() {
            c.offset += 1;
        }
        Ok(Written { slots, lens, len })
    }

    /// What the decode step `written` attends, from the buffers as they
    /// are now. Slots the pass's prompts added past the step's are left
    /// out (a slot no segment of the step holds computes a row nobody
    /// reads, as a reused free slot below them does); slots freed at the
    /// end since held none of its sequences.
    pub(crate) fn view(&self, written: Written) -> R<BatchView> {
        let Written {
            slots,
            mut lens,
            len,
        } = written;
        let b = self.lock();
        let (Some(keys), Some(values)) = (&b.keys, &b.values) else {
            return Err(mlx_rs::error::Exception::custom("a batch without buffers"));
        };
        let (held, capacity) = (keys.shape()[0], keys.shape()[2]);
        let count = (lens.len() as i32).min(held);
        if slots.iter().any(|&s| s >= count) {
            return Err(mlx_rs::error::Exception::custom(
                "a decode step's slot left the batch before it was read",
            ));
        }
        lens.truncate(count as usize);
        let view = |a: &Array| -> R<Array> {
            match (count == held, len == capacity) {
                (true, true) => Ok(a.clone()),
                (true, false) => a.try_index((.., .., ..len, ..)),
                (false, _) => a.try_index((..count, .., ..len, ..)),
            }
        };
        Ok(BatchView {
            keys: view(keys)?,
            values: view(values)?,
            slots,
            lens,
        })
    }

    /// A burst's fresh prompts (`caches`, all empty) straight into new
    /// slots at the end of the batch: their rotated rows `k`, `v` (`[N, H,
    /// longest, D]`, prompt n's first `lens[n]` its own, the rest padding
    /// no step attends) written with one operation per buffer, so their
    /// first decode step copies nothing. Returns `false`, doing nothing,
    /// where a cache holds rows or the batch has free slots to reuse
    /// ([`BatchCache::prefill`] then writes the rows into the slots).
    pub(crate) fn enter_burst(
        &self,
        caches: &mut [&mut KvCache],
        k: &Array,
        v: &Array,
        lens: &[i32],
    ) -> R<bool> {
        let n = caches.len() as i32;
        let fresh = caches.iter().all(|c| c.offset == 0 && c.slot.is_none());
        if !fresh || lens.len() != caches.len() || k.shape()[0] != n {
            return Ok(false);
        }
        let mut guard = self.lock();
        let b = &mut *guard;
        if b.taken.iter().any(|&t| !t) {
            return Ok(false);
        }
        let first = b.taken.len() as i32;
        let longest = k.shape()[2];
        let dtype = caches[0].dtype;
        let stored = |a: &Array| match dtype {
            Some(d) if a.dtype() != d => a.as_dtype(d),
            _ => Ok(a.clone()),
        };
        let (k, v) = (stored(k)?, stored(v)?);
        // Room for the next decode step's row too.
        b.create(first + n, longest + 1, &k, &v, None)?;
        b.taken.resize((first + n) as usize, true);
        b.fit(first + n, longest)?;
        for (buf, rows) in [(&mut b.keys, &k), (&mut b.values, &v)] {
            if let Some(a) = buf.take() {
                *buf = Some(write_at(&a, rows, &[first, 0, 0, 0])?);
            }
        }
        drop(guard);
        for (p, c) in caches.iter_mut().enumerate() {
            c.keys = None;
            c.values = None;
            c.offset = lens[p];
            c.slot = Some(Slot {
                batch: self.clone(),
                index: first + p as i32,
            });
        }
        Ok(true)
    }

    /// Moves `caches[i]` for each `i` of `which` into a free slot, their
    /// rows copied in. The buffers grow once for all of them, to `len`
    /// positions at least: grown one sequence at a time, a burst of N
    /// joining together copied the buffers N times (O(N²) bytes, and N
    /// concatenations per layer before its first tokens were read).
    fn enter(
        &self,
        caches: &mut [&mut KvCache],
        which: &[usize],
        len: i32,
        k: &Array,
        v: &Array,
    ) -> R<()> {
        for &i in which {
            caches[i].detach()?;
        }
        let mut guard = self.lock();
        let b = &mut *guard;
        let mut indices = Vec::with_capacity(which.len());
        for _ in which {
            let index = match b.taken.iter().position(|&t| !t) {
                Some(i) => i,
                None => {
                    b.taken.push(false);
                    b.taken.len() - 1
                }
            };
            b.taken[index] = true;
            indices.push(index as i32);
        }
        let slots = b.taken.len() as i32;
        b.create(slots, len, k, v, caches[which[0]].dtype)?;
        b.fit(slots, len)?;
        let (Some(keys), Some(values)) = (&mut b.keys, &mut b.values) else {
            return Err(mlx_rs::error::Exception::custom("a batch without buffers"));
        };
        for (&i, &s) in which.iter().zip(&indices) {
            let cache = &mut *caches[i];
            let end = cache.offset;
            if let (Some(own_k), Some(own_v)) = (cache.keys.take(), cache.values.take())
                && end > 0
            {
                let put = |buf: &mut Array, own: &Array| -> R<()> {
                    // A view exactly `end` long (a lent prefix) needs no
                    // slice of its own.
                    let rows = match own.shape()[2] == end {
                        true => own.clone(),
                        false => own.try_index((.., .., ..end, ..))?,
                    };
                    *buf = write_at(buf, &typed_as(&rows, buf)?, &[s, 0, 0, 0])?;
                    Ok(())
                };
                put(keys, &own_k)?;
                put(values, &own_v)?;
            }
            cache.slot = Some(Slot {
                batch: self.clone(),
                index: s,
            });
        }
        Ok(())
    }
}

/// `a` in `like`'s type (the buffers keep theirs; rows may come wider).
fn typed_as(a: &Array, like: &Array) -> R<Array> {
    match a.dtype() == like.dtype() {
        true => Ok(a.clone()),
        false => a.as_dtype(like.dtype()),
    }
}

impl Buffers {
    /// The buffers, taken out to be written (put them back after), grown
    /// to every slot taken and `len` positions at least.
    fn take_fitted(&mut self, len: i32) -> R<(Array, Array)> {
        let taken = self.taken.len() as i32;
        self.fit(taken, len)?;
        match (self.keys.take(), self.values.take()) {
            (Some(keys), Some(values)) => Ok((keys, values)),
            _ => Err(mlx_rs::error::Exception::custom("a batch without buffers")),
        }
    }

    /// Where there are no buffers yet: empty ones for `slots` slots and
    /// `len` positions (rounded up to a step), shaped like `k` and `v`
    /// (`[_, H, _, D]`) and typed `dtype` (`None`: as they are).
    fn create(
        &mut self,
        slots: i32,
        len: i32,
        k: &Array,
        v: &Array,
        dtype: Option<mlx_rs::Dtype>,
    ) -> R<()> {
        if self.keys.is_some() {
            return Ok(());
        }
        let room = (len + STEP - 1) / STEP * STEP;
        let zeros = |a: &Array| {
            let sh = a.shape();
            mlx_rs::ops::zeros_dtype(&[slots, sh[1], room, sh[3]], dtype.unwrap_or(a.dtype()))
        };
        self.keys = Some(zeros(k)?);
        self.values = Some(zeros(v)?);
        Ok(())
    }

    /// Grows the buffers to at least `slots` slots (those taken) and
    /// `len` positions. Slots kept past `slots` (sequences that left the
    /// end) are dropped when the positions grow, which copies the buffers
    /// anyway: only taken slots are copied.
    fn fit(&mut self, slots: i32, len: i32) -> R<()> {
        for buf in [&mut self.keys, &mut self.values] {
            let Some(mut a) = buf.take() else { continue };
            let sh = a.shape().to_vec();
            if sh[0] < slots {
                // No more than asked: the KV budget counts what is held.
                let more = slots - sh[0];
                let zeros = mlx_rs::ops::zeros_dtype(&[more, sh[1], sh[2], sh[3]], a.dtype())?;
                a = mlx_rs::ops::concatenate(&[a, zeros], 0)?;
            }
            if sh[2] < len {
                if sh[0] > slots {
                    a = a.try_index((..slots, .., .., ..))?;
                }
                let more = (len - sh[2] + STEP - 1) / STEP * STEP;
                let s = a.shape()[0];
                let zeros = mlx_rs::ops::zeros_dtype(&[s, sh[1], more, sh[3]], a.dtype())?;
                a = mlx_rs::ops::concatenate(&[a, zeros], 2)?;
            }
            *buf = Some(a);
        }
        Ok(())
    }
}

/// Whether a step's slots are exactly slots `0..N` in order (every slot
/// decodes, no row needs moving).
pub(crate) fn in_order(view: &BatchView) -> bool {
    view.slots.len() == view.lens.len()
        && view.slots.iter().enumerate().all(|(i, &s)| s == i as i32)
}
