//! The key/value cache of one attention layer: `offset()` and
//! `update_and_fetch(k, v)`, growing in steps so that decoding writes in
//! place instead of concatenating every token. It may keep its rows in a
//! narrower type than it is given (f16 under `--precision int8`): a decode
//! step's attention over a long cache is bound by reading it.

use mlx_rs::ops::indexing::{TryIndexMutOp, TryIndexOp};
use mlx_rs::{Array, Dtype};

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
        let prev = self.offset;
        let l = k.shape()[2];
        let end = prev + l;
        let stored = |a: &Array| match self.dtype {
            Some(d) if a.dtype() != d => a.as_dtype(d),
            _ => Ok(a.clone()),
        };
        let (ks, vs) = (stored(k)?, stored(v)?);
        let (keys, values) = self.reserve(l, &ks, &vs)?;
        keys.try_index_mut((.., .., prev..end, ..), &ks)?;
        values.try_index_mut((.., .., prev..end, ..), &vs)?;
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
        let (Some(keys), Some(values)) = (&self.keys, &self.values) else {
            return Ok(KvCache::with_dtype(self.dtype));
        };
        if upto == 0 {
            return Ok(KvCache::with_dtype(self.dtype));
        }
        Ok(KvCache {
            keys: Some(keys.try_index((.., .., ..upto, ..))?),
            values: Some(values.try_index((.., .., ..upto, ..))?),
            offset: upto,
            dtype: self.dtype,
        })
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

    /// The arrays to evaluate with a step's output.
    pub fn arrays(&self) -> impl Iterator<Item = &Array> {
        self.keys.iter().chain(self.values.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contiguous copy's values (the cache returns strided views).
    fn contents(a: &Array) -> Vec<f32> {
        let c = a.multiply(Array::from_f32(1.0)).unwrap();
        c.eval().unwrap();
        c.as_slice::<f32>().to_vec()
    }

    #[test]
    fn grows_and_returns_everything_written() {
        let mut c = KvCache::default();
        let k = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
        let (keys, _) = c.update_and_fetch(&k, &k).unwrap();
        assert_eq!(keys.shape(), &[1, 1, 2, 2]);
        let k2 = Array::from_slice(&[5.0f32, 6.0], &[1, 1, 1, 2]);
        let (keys, values) = c.update_and_fetch(&k2, &k2).unwrap();
        assert_eq!(c.offset(), 3);
        assert_eq!(contents(&keys), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(values.shape(), &[1, 1, 3, 2]);
        c.truncate(2);
        let (keys, _) = c.update_and_fetch(&k2, &k2).unwrap();
        assert_eq!(contents(&keys), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // Crossing the step boundary keeps the old contents.
        let big = mlx_rs::ops::ones::<f32>(&[1, 1, 300, 2]).unwrap();
        let (keys, _) = c.update_and_fetch(&big, &big).unwrap();
        assert_eq!(keys.shape(), &[1, 1, 303, 2]);
        assert_eq!(&contents(&keys)[..4], &[1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn a_fork_keeps_the_prefix_and_writes_apart() {
        let mut a = KvCache::default();
        let k = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 1, 3, 2]);
        a.update_and_fetch(&k, &k).unwrap();
        let mut b = a.fork(2).unwrap();
        assert_eq!(b.offset(), 2);
        // Each writes its own third position.
        let ka = Array::from_slice(&[7.0f32, 8.0], &[1, 1, 1, 2]);
        let kb = Array::from_slice(&[9.0f32, 10.0], &[1, 1, 1, 2]);
        let (from_a, _) = a.update_and_fetch(&ka, &ka).unwrap();
        let (from_b, _) = b.update_and_fetch(&kb, &kb).unwrap();
        assert_eq!(contents(&from_a), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(contents(&from_b), &[1.0, 2.0, 3.0, 4.0, 9.0, 10.0]);
        // Past the source's length, or of an empty cache: what there is.
        assert_eq!(a.fork(99).unwrap().offset(), 4);
        assert_eq!(KvCache::default().fork(3).unwrap().offset(), 0);
    }

    #[test]
    fn a_cache_of_halves_rounds_rows_and_returns_the_callers_type() {
        let mut c = KvCache::with_dtype(Some(Dtype::Float16));
        // 1 + 2^-12 is not a half: it rounds to 1 (ties to even).
        let k = Array::from_slice(&[1.0f32 + 1.0 / 4096.0, -2.5, 65504.0, 1e-3], &[1, 1, 2, 2]);
        let (keys, values) = c.update_and_fetch(&k, &k).unwrap();
        assert_eq!(keys.dtype(), Dtype::Float32);
        assert_eq!(contents(&values), &[1.0, -2.5, 65504.0, 0.001_000_404_4]);
        let (kb, _) = c.buffers().unwrap();
        assert_eq!(kb.dtype(), Dtype::Float16);
        // A decode step's buffers (`reserve`) and a fork keep halves too.
        let (kr, _) = c.reserve(300, &k, &k).unwrap();
        assert_eq!(kr.dtype(), Dtype::Float16);
        let mut f = c.fork(1).unwrap();
        let (fk, _) = f.update_and_fetch(&k, &k).unwrap();
        assert_eq!(
            contents(&fk),
            &[1.0, -2.5, 1.0, -2.5, 65504.0, 0.001_000_404_4]
        );
        assert_eq!(f.buffers().unwrap().0.dtype(), Dtype::Float16);
    }
}
