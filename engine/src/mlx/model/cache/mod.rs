//! The key/value cache of one attention layer: `offset()` and
//! `update_and_fetch(k, v)`, growing in steps so that decoding writes in
//! place instead of concatenating every token. It may keep its rows in a
//! narrower type than it is given (f16 under `--precision int8`): a decode
//! step's attention over a long cache is bound by reading it.
//!
//! On MLX's own attention (a GPU, or layers the fused CPU operations do
//! not cover) a decode step keeps every sequence's cache in a slot of one
//! [`BatchCache`] per layer (`batch/`); anything else first takes the
//! rows back into buffers of the cache's own ([`KvCache::detach`]).

mod batch;

use mlx_rs::ops::indexing::TryIndexOp;
use mlx_rs::{Array, Dtype};

use self::batch::Slot;
pub(crate) use self::batch::{BatchCache, Written, in_order};
use crate::mlx::kernels::indexed::write_at;

/// Keys/values grow by this many positions at a time.
const STEP: i32 = 256;

/// One layer's cache; arrays are `[batch, kv_heads, positions, head_dim]`.
#[derive(Default)]
pub struct KvCache {
    keys: Option<Array>,
    values: Option<Array>,
    offset: i32,
    /// The type the buffers hold; `None`: that of the rows written.
    dtype: Option<Dtype>,
    /// Where its rows are while it decodes in a batch (`keys` and
    /// `values` are then `None`).
    slot: Option<Slot>,
}

impl KvCache {
    /// An empty cache whose buffers hold `dtype` (`None`: the rows' own).
    pub fn with_dtype(dtype: Option<Dtype>) -> KvCache {
        KvCache {
            dtype,
            ..KvCache::default()
        }
    }

    /// Positions stored so far (the RoPE offset of the next token).
    pub fn offset(&self) -> i32 {
        self.offset
    }

    /// Forgets positions from `offset` on (their slots get overwritten).
    pub fn truncate(&mut self, offset: i32) {
        self.offset = self.offset.min(offset.max(0));
    }

    /// Appends `k`, `v` (`[B, H, L, D]`) and returns all keys and values,
    /// typed as `k` and `v` are.
    pub fn update_and_fetch(
        &mut self,
        k: &Array,
        v: &Array,
    ) -> mlx_rs::error::Result<(Array, Array)> {
        let (keys, values) = self.update_and_view(k, v)?;
        let like = |a: Array, like: &Array| {
            if a.dtype() == like.dtype() {
                Ok(a)
            } else {
                a.as_dtype(like.dtype())
            }
        };
        Ok((like(keys, k)?, like(values, v)?))
    }

    /// As [`update_and_fetch`](Self::update_and_fetch), but the keys and
    /// values come back as the cache holds them (halves stay halves, for
    /// an attention that widens them as it reads: no widened copy).
    pub fn update_and_view(
        &mut self,
        k: &Array,
        v: &Array,
    ) -> mlx_rs::error::Result<(Array, Array)> {
        self.detach()?;
        let prev = self.offset;
        let l = k.shape()[2];
        let end = prev + l;
        let stored = |a: &Array| match self.dtype {
            Some(d) if a.dtype() != d => a.as_dtype(d),
            _ => Ok(a.clone()),
        };
        let (ks, vs) = (stored(k)?, stored(v)?);
        let (keys, values) = self.reserve(l, &ks, &vs)?;
        *keys = write_at(keys, &ks, &[0, 0, prev, 0])?;
        *values = write_at(values, &vs, &[0, 0, prev, 0])?;
        let fetched = (
            keys.try_index((.., .., ..end, ..))?,
            values.try_index((.., .., ..end, ..))?,
        );
        self.offset = end;
        Ok(fetched)
    }

    /// The whole key and value buffers, with room for `l` positions from
    /// `offset()` on (grown if needed), shaped like `k` and `v` (`[B, H,
    /// _, D]`) and typed as the cache keeps them.
    pub fn reserve(
        &mut self,
        l: i32,
        k: &Array,
        v: &Array,
    ) -> mlx_rs::error::Result<(&mut Array, &mut Array)> {
        self.detach()?;
        let prev = self.offset;
        let shape = k.shape().to_vec();
        let (b, h, d) = (shape[0], shape[1], shape[3]);
        let vd = v.shape()[3];
        let capacity = self.keys.as_ref().map_or(0, |a| a.shape()[2]);
        if prev + l > capacity {
            // The old buffer is cut to its `prev` filled positions, so the
            // new part must hold all `l` new ones.
            let grow = (l + STEP - 1) / STEP * STEP;
            let new_k =
                mlx_rs::ops::zeros_dtype(&[b, h, grow, d], self.dtype.unwrap_or(k.dtype()))?;
            let new_v =
                mlx_rs::ops::zeros_dtype(&[b, h, grow, vd], self.dtype.unwrap_or(v.dtype()))?;
            let (keys, values) = match (self.keys.take(), self.values.take()) {
                (Some(ok), Some(ov)) => (
                    mlx_rs::ops::concatenate(&[ok.try_index((.., .., ..prev, ..))?, new_k], 2)?,
                    mlx_rs::ops::concatenate(&[ov.try_index((.., .., ..prev, ..))?, new_v], 2)?,
                ),
                _ => (new_k, new_v),
            };
            self.keys = Some(keys);
            self.values = Some(values);
        }
        match (self.keys.as_mut(), self.values.as_mut()) {
            (Some(keys), Some(values)) => Ok((keys, values)),
            _ => Err(mlx_rs::error::Exception::custom("a cache without buffers")),
        }
    }

    /// Another sequence's cache holding this one's first `upto` positions
    /// (a shared prompt prefix). Its buffers are views of this cache's,
    /// exactly `upto` long, so its first write grows them into buffers of
    /// its own (see `reserve`): this cache's later in-place writes land at
    /// positions past `upto` and never reach the copy.
    pub fn fork(&self, upto: i32) -> mlx_rs::error::Result<KvCache> {
        let upto = upto.clamp(0, self.offset);
        let empty = KvCache::with_dtype(self.dtype);
        if upto == 0 {
            return Ok(empty);
        }
        let (keys, values) = match (&self.slot, &self.keys, &self.values) {
            // A view of the batch buffers: their next write copies them
            // once instead of writing in place, while the view lives (in
            // its pass; `fork_all` copies, for a fork that may wait).
            (Some(slot), _, _) => match slot.view(upto)? {
                Some(kv) => kv,
                None => return Ok(empty),
            },
            (None, Some(keys), Some(values)) => (
                keys.try_index((.., .., ..upto, ..))?,
                values.try_index((.., .., ..upto, ..))?,
            ),
            _ => return Ok(empty),
        };
        Ok(KvCache {
            keys: Some(keys),
            values: Some(values),
            offset: upto,
            dtype: self.dtype,
            slot: None,
        })
    }

    /// Takes its rows out of a batch slot (if it is in one) into buffers of
    /// its own, with room past its offset, and frees the slot.
    pub fn detach(&mut self) -> mlx_rs::error::Result<()> {
        let Some(slot) = self.slot.take() else {
            return Ok(());
        };
        if self.offset == 0 {
            return Ok(());
        }
        let Some((k, v)) = slot.view(self.offset)? else {
            return Err(mlx_rs::error::Exception::custom(
                "a batch slot without buffers",
            ));
        };
        self.keys = Some(with_room(k)?);
        self.values = Some(with_room(v)?);
        Ok(())
    }

    /// [`KvCache::fork`] of every layer's cache: where a layer's rows are
    /// in a batch slot, the copy is built now, into buffers of its own, and
    /// the copies are queued together. A view of the slot held until the
    /// follower's prompt runs (steps later, when a pass has room) would
    /// make the batch buffers' next write copy them whole (as in
    /// [`KvCache::detach_all`]).
    pub fn fork_all(caches: &[KvCache], upto: i32) -> mlx_rs::error::Result<Vec<KvCache>> {
        let mut forks = Vec::with_capacity(caches.len());
        let mut copies = Vec::new();
        for c in caches {
            let mut f = c.fork(upto)?;
            if c.in_batch()
                && let (Some(k), Some(v)) = (f.keys.take(), f.values.take())
            {
                f.keys = Some(with_room(k)?);
                f.values = Some(with_room(v)?);
                copies.extend(f.arrays());
            }
            forks.push(f);
        }
        queue(&copies)?;
        Ok(forks)
    }

    /// Takes every one of `caches` out of its batch slot
    /// ([`KvCache::detach`]) to keep it (the prefix pool), the copies
    /// queued now, together. Until a copy has been queued, it holds the
    /// batch buffers it reads, so their next write (the other sequences'
    /// next step) could not go in place: MLX would copy them whole, every
    /// layer, and the kept copy would hold the old ones alive.
    pub fn detach_all(caches: &mut [KvCache]) -> mlx_rs::error::Result<()> {
        let mut copies = Vec::new();
        for c in caches.iter_mut() {
            let slotted = c.in_batch();
            c.detach()?;
            if slotted {
                copies.extend(c.arrays());
            }
        }
        queue(&copies)
    }

    /// The whole key and value buffers, if any.
    pub fn buffers(&self) -> Option<(&Array, &Array)> {
        self.keys.as_ref().zip(self.values.as_ref())
    }

    /// Takes the buffers an operation wrote `written` new positions into
    /// (see `fused::attend_cached`).
    pub fn advance(&mut self, keys: Array, values: Array, written: i32) {
        self.keys = Some(keys);
        self.values = Some(values);
        self.offset += written;
    }

    /// Whether its rows are in a batch slot (evaluated with the batch's
    /// buffers, [`super::Network::batch_arrays`]).
    pub fn in_batch(&self) -> bool {
        self.slot.is_some()
    }

    /// The arrays to evaluate with a step's output (in a slot: the whole
    /// batch buffers).
    pub fn arrays(&self) -> Vec<Array> {
        match &self.slot {
            Some(slot) => slot.buffers(),
            None => self
                .keys
                .iter()
                .chain(self.values.iter())
                .cloned()
                .collect(),
        }
    }
}

/// Queues `copies` of batch rows for evaluation now, together, so none
/// still holds the batch buffers when their next write is built.
fn queue(copies: &[Array]) -> mlx_rs::error::Result<()> {
    match copies.is_empty() {
        true => Ok(()),
        false => mlx_rs::transforms::async_eval(copies.iter()),
    }
}

/// `a` (`[1, H, n, D]`, the rows a cache holds) followed by room up to the
/// next step: a new buffer, not a view that would keep another's alive.
fn with_room(a: Array) -> mlx_rs::error::Result<Array> {
    let sh = a.shape().to_vec();
    let room = STEP - sh[2] % STEP;
    let zeros = mlx_rs::ops::zeros_dtype(&[sh[0], sh[1], room, sh[3]], a.dtype())?;
    mlx_rs::ops::concatenate(&[a, zeros], 2)
}

#[cfg(test)]
mod tests;
