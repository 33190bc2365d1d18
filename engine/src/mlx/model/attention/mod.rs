//! Attention of the shared decoder: the fused q/k/v product split into
//! heads and rotated, each sequence's rows against its own cache. A
//! decode step's rows go together (`decode.rs`), a pass's prompts as one
//! padded batch where MLX's attention serves them (`burst.rs` of the
//! model) or per segment; a pass with both splits its rows between them.

use mlx_rs::Array;
use mlx_rs::fast::ScaledDotProductAttentionMask;

mod decode;

use super::burst::Burst;
use super::cache::KvCache;
use super::linear::Linear;
use super::rope::{Rope, RopeRows};
use super::{Pass, R, Segment, Split};
use crate::mlx::kernels::fused;

pub(super) struct Attention {
    pub(super) qkv: Linear,
    pub(super) o: Linear,
    pub(super) q_norm: Option<Array>,
    pub(super) k_norm: Option<Array>,
    pub(super) heads: i32,
    pub(super) kv_heads: i32,
    pub(super) head_dim: i32,
    pub(super) scale: f32,
    pub(super) eps: f32,
    /// False for a NoPE layer (SmolLM3): queries and keys keep their
    /// positions unrotated.
    pub(super) rotate: bool,
    /// A sliding-window layer (Gemma 3): each query sees only the last
    /// `window` positions, itself included.
    pub(super) window: Option<i32>,
    /// gpt-oss: a learned logit per head that joins every softmax (so a
    /// head can attend to nothing); taken by MLX's attention.
    pub(super) sinks: Option<Array>,
    /// On the CPU: the fused split-and-rotate and decode attention
    /// (`kernels/fused`) instead of chains of MLX operations.
    pub(super) fused: bool,
}

impl Attention {
    /// Projections over every row of the batch; a decode step's attention
    /// in one operation for all sequences (the fused one on the CPU, else
    /// MLX's over the layer's `batch` cache); a pass's prompts together on
    /// MLX's attention as one padded batch (`pass.burst`: fresh, after
    /// cached rows or sharing a start); other prompts' RoPE, cache and
    /// attention per segment, against that sequence's own cache. A pass
    /// that decodes some sequences and prefills others (`pass.split`)
    /// shares the projections and splits the attention.
    pub(super) fn forward(
        &self,
        x: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        rotation: (&Rope, Option<&RopeRows>),
        pass: Pass<'_>,
    ) -> R<Array> {
        let qkv = self.qkv.forward(x)?;
        let out = match pass.split {
            Some(split) if split.decoding > 0 && split.decoding < segments.len() => {
                self.attend_split(&qkv, layer, segments, rotation, split, pass)?
            }
            _ => self.attend(&qkv, layer, segments, rotation, pass)?,
        };
        self.o.forward(&out)
    }

    /// The attention of a pass whose first `split.decoding` segments
    /// decode (a row each) and the rest prefill: the decode rows as a
    /// decode step, the prompts as a prefill pass, out in the pass's row
    /// order. On MLX's attention the decode rows are written first, the
    /// prompts written and read, the decode rows read last: nothing reads
    /// the layer's batch buffers until every write to them is queued, so
    /// MLX writes them in place (a view held across a write would copy
    /// them whole). The CPU's fused decode attends at once, in the
    /// sequences' own caches.
    fn attend_split(
        &self,
        qkv: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        (rope, rows): (&Rope, Option<&RopeRows>),
        split: Split<'_>,
        pass: Pass<'_>,
    ) -> R<Array> {
        let [head, tail] = split_rows(qkv, split.decoding as i32)?;
        let (decoding, prompts) = segments.split_at_mut(split.decoding);
        let decoded = self.decode_rows(&head, layer, decoding, (rope, rows), pass)?;
        let prompted = self.attend(&tail, layer, prompts, (rope, split.rows), pass)?;
        let decoded = self.decode_read(decoded, pass)?;
        mlx_rs::ops::concatenate(&[decoded, prompted], 1)
    }

    /// The attention of `qkv`'s rows (`[1, T, width]`), before the output
    /// projection: `[1, T, heads * head_dim]`.
    fn attend(
        &self,
        qkv: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        (rope, rows): (&Rope, Option<&RopeRows>),
        pass: Pass<'_>,
    ) -> R<Array> {
        let (t, hd) = (qkv.shape()[1], self.head_dim);
        let (nq, nkv) = (self.heads, self.kv_heads);
        let rows = rows.filter(|_| self.rotate);
        let decoding = segments.iter().all(|s| s.len == 1 && s.fork.is_none());
        if decoding {
            let decoded = self.decode_rows(qkv, layer, segments, (rope, rows), pass)?;
            return self.decode_read(decoded, pass);
        }
        if let Some(burst) = pass.burst.filter(|_| rows.is_none() && self.takes_bursts()) {
            return self.prefill_burst(qkv, burst, layer, segments, rope, pass);
        }
        // Heads first ([1, heads, T, head_dim]) once for the whole batch;
        // each sequence then takes its rows with one slice per array.
        let (q, k, v) = match (rows, &self.q_norm, self.fused) {
            (Some(rows), None, true) => {
                let (cos, sin) = rows.tables();
                fused::rope_split(qkv, cos, sin, nq, nkv, hd)?
            }
            _ => self.split_and_rotate(qkv, rows)?,
        };
        let single = segments.len() == 1;
        let mut outs = Vec::with_capacity(segments.len());
        let mut r0 = 0;
        for i in 0..segments.len() {
            if let Some(fork) = segments[i].fork {
                let (before, rest) = segments.split_at_mut(i);
                // A split pass's prompts are numbered after its decode rows.
                let base = pass.split.map_or(0, |s| s.decoding);
                let Some(from) = fork.from.checked_sub(base).and_then(|f| before.get(f)) else {
                    return Err(mlx_rs::error::Exception::custom(
                        "a segment forks a later one",
                    ));
                };
                rest[0].caches[layer] = from.caches[layer].fork(fork.at)?;
            }
            let seg = &mut segments[i];
            let l = seg.len;
            let part = |a: &Array| -> R<Array> {
                if single {
                    Ok(a.clone())
                } else {
                    a.try_index_axis2(r0, r0 + l)
                }
            };
            let (qi, ki, vi) = (part(&q)?, part(&k)?, part(&v)?);
            let (qi, ki) = match rows {
                Some(_) => (qi, ki),
                None if !self.rotate => (qi, ki),
                // Past the tables: `fast::rope` from the cache's length.
                None => {
                    let offset = seg.caches[layer].offset();
                    (rope.apply(&qi, offset)?, rope.apply(&ki, offset)?)
                }
            };
            // The fused attention reads halves itself; MLX's takes floats.
            let own_attention = self.fused && self.sinks.is_none();
            let (keys, values) = if own_attention {
                seg.caches[layer].update_and_view(&ki, &vi)?
            } else {
                seg.caches[layer].update_and_fetch(&ki, &vi)?
            };
            let total = keys.shape()[2];
            let (keys, values, window_mask) = match self.window {
                // A lone query sees the last `window` positions.
                Some(w) if l == 1 && total > w => {
                    let recent = |a: &Array| a.try_index_axis2_from(total - w);
                    (recent(&keys)?, recent(&values)?, None)
                }
                Some(w) if l > 1 && total > w => {
                    (keys, values, Some(window_mask(total - l, l, total, w)?))
                }
                _ => (keys, values, None),
            };
            // [1, l, heads * head_dim] per sequence: a prompt's rows on the
            // fused attention too (MLX's CPU attention builds the whole
            // score matrix and takes its exponentials one at a time).
            outs.push(if own_attention && window_mask.is_none() {
                fused::attend(&qi, &keys, &values, self.scale)?
            } else {
                let widen = |a: Array| match a.dtype() {
                    d if d == qi.dtype() => Ok(a),
                    _ => a.as_dtype(qi.dtype()),
                };
                let (keys, values) = (widen(keys)?, widen(values)?);
                let mask = match &window_mask {
                    Some(m) => Some(ScaledDotProductAttentionMask::Array(m)),
                    None => (l > 1).then_some(ScaledDotProductAttentionMask::Causal),
                };
                mlx_rs::fast::scaled_dot_product_attention(
                    &qi,
                    &keys,
                    &values,
                    self.scale,
                    mask,
                    self.sinks.as_ref(),
                )?
                .transpose_axes(&[0, 2, 1, 3])?
                .reshape(&[1, l, nq * hd])?
            });
            r0 += l;
        }
        let out = match outs.pop() {
            Some(one) if outs.is_empty() => one,
            Some(last) => {
                outs.push(last);
                mlx_rs::ops::concatenate(&outs, 1)?
            }
            None => return Err(mlx_rs::error::Exception::custom("a step without segments")),
        };
        debug_assert_eq!(out.shape(), &[1, t, nq * hd]);
        Ok(out)
    }

    /// Whether its prompts may go as one padded batch (`burst.rs`): on
    /// MLX's attention, without a sliding window.
    pub(super) fn takes_bursts(&self) -> bool {
        !(self.fused && self.sinks.is_none()) && self.window.is_none()
    }

    /// Every segment's prompt rotated and attended in one operation each
    /// over `burst`'s padded layout, its rows written into the layer's
    /// batch slots in the same pass. Returns the pass's rows.
    fn prefill_burst(
        &self,
        qkv: &Array,
        burst: &Burst,
        layer: usize,
        segments: &mut [Segment<'_>],
        rope: &Rope,
        pass: Pass<'_>,
    ) -> R<Array> {
        let (n, longest) = (burst.pieces.len() as i32, burst.longest);
        let width = qkv.shape()[2];
        // One prompt in one piece is its rows as they are.
        let whole = burst.whole();
        let padded = match whole {
            true => qkv.clone(),
            false => qkv
                .take_axis(&burst.gather, 1)?
                .reshape(&[n, longest, width])?,
        };
        let (q, k, v) = self.split_and_rotate(&padded, None)?;
        let (q, k) = match (self.rotate, &burst.starts) {
            (false, _) => (q, k),
            (true, None) => (rope.apply(&q, 0)?, rope.apply(&k, 0)?),
            (true, Some(at)) => (rope.apply_at(&q, at)?, rope.apply_at(&k, at)?),
        };
        let mut caches: Vec<&mut KvCache> =
            segments.iter_mut().map(|s| &mut s.caches[layer]).collect();
        // Fresh prompts into new slots at the batch's end attend their own
        // rows; otherwise (free slots to reuse, cached rows, shared starts,
        // pieces) the rows go into the slots first and are read back.
        let entered = burst.fresh() && pass.batch.enter_burst(&mut caches, &k, &v, &burst.lens)?;
        let (keys, values) = if entered {
            (k, v)
        } else {
            let (keys, values) = pass
                .batch
                .prefill(&mut caches, &k, &v, burst, pass.arrays)?;
            let widen = |a: Array| match a.dtype() {
                d if d == q.dtype() => Ok(a),
                _ => a.as_dtype(q.dtype()),
            };
            (widen(keys)?, widen(values)?)
        };
        // A whole prompt's queries see the keys up to their own positions:
        // the causal mask aligned at the last key, which MLX's fused
        // attention takes without a mask array.
        let mask = match whole {
            true => (longest > 1).then_some(ScaledDotProductAttentionMask::Causal),
            false => Some(ScaledDotProductAttentionMask::Array(&burst.mask)),
        };
        let out = mlx_rs::fast::scaled_dot_product_attention(
            &q,
            &keys,
            &values,
            self.scale,
            mask,
            self.sinks.as_ref(),
        )?;
        let out = out.transpose_axes(&[0, 2, 1, 3])?.reshape(&[
            1,
            n * longest,
            self.heads * self.head_dim,
        ])?;
        match whole {
            true => Ok(out),
            false => out.take_axis(&burst.scatter, 1),
        }
    }

    /// [`Self::split_heads`], heads first (`[B, heads, T, d]`).
    fn split_and_rotate(&self, qkv: &Array, rows: Option<&RopeRows>) -> R<(Array, Array, Array)> {
        let (q, k, v) = self.split_heads(qkv, rows)?;
        Ok((
            q.transpose_axes(&[0, 2, 1, 3])?,
            k.transpose_axes(&[0, 2, 1, 3])?,
            v.transpose_axes(&[0, 2, 1, 3])?,
        ))
    }

    /// The fused product (`[B, T, width]`) split into q, k, v (`[B, T,
    /// heads, d]`) with
    /// MLX's operations, q and k normed (qwen3) and rotated by the step's
    /// rows where they are within the tables. One split operation gives
    /// all three (a GPU pays per operation, views included).
    fn split_heads(&self, qkv: &Array, rows: Option<&RopeRows>) -> R<(Array, Array, Array)> {
        let (b, t, hd) = (qkv.shape()[0], qkv.shape()[1], self.head_dim);
        let (nq, nkv) = (self.heads, self.kv_heads);
        let qkv = qkv.reshape(&[b, t, nq + 2 * nkv, hd])?;
        let norms = self.q_norm.as_ref().zip(self.k_norm.as_ref());
        if norms.is_some() || rows.is_none() {
            let [q, k, v] = split3(&qkv, nq, nq + nkv)?;
            let Some((qn, kn)) = norms else {
                return Ok((q, k, v));
            };
            let q = mlx_rs::fast::rms_norm(&q, Some(qn), self.eps)?;
            let k = mlx_rs::fast::rms_norm(&k, Some(kn), self.eps)?;
            return Ok((rotate(rows, &q)?, rotate(rows, &k)?, v));
        }
        // Queries and keys rotate together: one RoPE per layer.
        let [qk, v] = split2(&qkv, nq + nkv)?;
        let [q, k] = split2(&rotate(rows, &qk)?, nq)?;
        Ok((q, k, v))
    }
}

/// `qkv`'s first `at` rows and the rest (axis 1).
fn split_rows(qkv: &Array, at: i32) -> R<[Array; 2]> {
    let parts = qkv.split_at_indices(&[at], 1)?;
    <[Array; 2]>::try_from(parts).map_err(|_| mlx_rs::error::Exception::custom("a split in two"))
}

/// `a` split along axis 2 at `at`.
fn split2(a: &Array, at: i32) -> R<[Array; 2]> {
    let parts = a.split_at_indices(&[at], 2)?;
    <[Array; 2]>::try_from(parts).map_err(|_| mlx_rs::error::Exception::custom("a split in two"))
}

/// `a` split along axis 2 at `first` and `second`.
fn split3(a: &Array, first: i32, second: i32) -> R<[Array; 3]> {
    let parts = a.split_at_indices(&[first, second], 2)?;
    <[Array; 3]>::try_from(parts).map_err(|_| mlx_rs::error::Exception::custom("a split in three"))
}

/// Rotates `[1, T, heads, head_dim]` by the step's rows of the tables
/// (unchanged when they are past the tables: see [`Attention::forward`]).
fn rotate(rows: Option<&RopeRows>, x: &Array) -> R<Array> {
    match rows {
        Some(rows) => rows.apply(x),
        None => Ok(x.clone()),
    }
}

/// Which of `total` keys the `l` queries from `offset` see in a sliding
/// window of `window` (each its own position and the `window - 1` before),
/// as mlx-lm's `create_causal_mask` builds it: `[l, total]` booleans.
fn window_mask(offset: i32, l: i32, total: i32, window: i32) -> R<Array> {
    let queries = mlx_rs::ops::arange::<_, i32>(offset, offset + l, None)?.reshape(&[l, 1])?;
    let keys = mlx_rs::ops::arange::<_, i32>(0, total, None)?.reshape(&[1, total])?;
    let causal = queries.ge(&keys)?;
    let recent = queries.lt(keys.add(Array::from_int(window))?)?;
    causal.logical_and(&recent)
}

/// Slicing of axis 2 of a 4-d array.
trait Axes {
    fn try_index_axis2(&self, start: i32, end: i32) -> R<Array>;
    fn try_index_axis2_from(&self, start: i32) -> R<Array>;
}

impl Axes for Array {
    fn try_index_axis2(&self, start: i32, end: i32) -> R<Array> {
        use mlx_rs::ops::indexing::TryIndexOp;
        self.try_index((.., .., start..end, ..))
    }
    fn try_index_axis2_from(&self, start: i32) -> R<Array> {
        use mlx_rs::ops::indexing::TryIndexOp;
        self.try_index((.., .., start.., ..))
    }
}
