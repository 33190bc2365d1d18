//! A decode step's attention (one row per sequence): on the CPU's fused
//! path every sequence's cache write and attention in one operation; on
//! MLX's attention (a GPU's path) the rows written into the layer's batch
//! buffers, then all slots attended in one call. The two halves stay
//! apart so a pass that also prefills writes everything before it reads.

use mlx_rs::Array;
use mlx_rs::fast::ScaledDotProductAttentionMask;

use super::super::cache::{KvCache, Written, in_order};
use super::super::rope::{Rope, RopeRows};
use super::super::{Pass, R, Segment};
use super::{Attention, Axes};
use crate::mlx::kernels::fused;
use crate::mlx::kernels::indexed::scatter;

impl Attention {
    /// A decode step's rows (one per segment) of `qkv`: attended at once
    /// on the CPU's fused path; on MLX's attention (a GPU's path) written
    /// into the layer's batch buffers, to read with
    /// [`Self::decode_read`] after whatever else the pass writes there.
    pub(super) fn decode_rows(
        &self,
        qkv: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        (rope, rows): (&Rope, Option<&RopeRows>),
        pass: Pass<'_>,
    ) -> R<Decoded> {
        let (nq, nkv, hd) = (self.heads, self.kv_heads, self.head_dim);
        let rows = rows.filter(|_| self.rotate);
        // Past the tables RoPE goes per sequence (below).
        let rotatable = rows.is_some() || !self.rotate;
        if self.fused && self.window.is_none() && self.sinks.is_none() && rotatable {
            let (q, k, v) = match (rows, &self.q_norm) {
                (Some(rows), None) => {
                    let (cos, sin) = rows.tables();
                    fused::rope_split(qkv, cos, sin, nq, nkv, hd)?
                }
                // Qwen3's q/k norms: MLX's split, the fused attention.
                _ => self.split_and_rotate(qkv, rows)?,
            };
            return Ok(Decoded::Attended(
                self.decode_step(&q, &k, &v, layer, segments)?,
            ));
        }
        // Without the step's table rows, `decode_write` rotates.
        let (q, k, v) = self.split_heads(qkv, rows)?;
        let rope = (rows.is_none() && self.rotate).then_some(rope);
        let written = self.decode_write(&q, &k, &v, layer, segments, pass, rope)?;
        Ok(Decoded::Written(written))
    }

    /// A decode step (one token per segment): every sequence's cache write
    /// and attention in one operation (`fused::attend_cached`).
    fn decode_step(
        &self,
        q: &Array,
        k: &Array,
        v: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
    ) -> R<Array> {
        let mut offsets = Vec::with_capacity(segments.len());
        for seg in segments.iter_mut() {
            let cache = &mut seg.caches[layer];
            offsets.push(cache.offset());
            cache.reserve(1, k, v)?;
        }
        let (out, written) = {
            let mut buffers = Vec::with_capacity(segments.len());
            for seg in segments.iter() {
                let Some(pair) = seg.caches[layer].buffers() else {
                    return Err(mlx_rs::error::Exception::custom("a cache without buffers"));
                };
                buffers.push(pair);
            }
            fused::attend_cached(q, k, v, &buffers, &offsets, self.scale)?
        };
        // The old buffers are dropped here, so when the step runs the
        // operation is their only holder and writes into them in place.
        for (seg, (keys, values)) in segments.iter_mut().zip(written) {
            seg.caches[layer].advance(keys, values, 1);
        }
        Ok(out)
    }

    /// A decode step's writes on MLX's attention: every sequence's new
    /// row into its slot of the layer's batch cache. q, k, v arrive as
    /// [`Self::split_heads`] gives them (`[1, N, heads, d]`). With `rope`,
    /// q and k arrive unrotated and are rotated here, each row from its
    /// sequence's position, in one operation each.
    #[allow(clippy::too_many_arguments)]
    fn decode_write(
        &self,
        q: &Array,
        k: &Array,
        v: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        pass: Pass<'_>,
        rope: Option<&Rope>,
    ) -> R<DecodeWrite> {
        let n = segments.len() as i32;
        // [1, N, heads, d] → [N, heads, 1, d]: the sequences as the batch.
        let by_sequence = |a: &Array| a.transpose_axes(&[1, 2, 0, 3]);
        let (mut q, mut k, v) = (by_sequence(q)?, by_sequence(k)?, by_sequence(v)?);
        match (rope, &*segments) {
            (None, _) => {}
            // One sequence: its offset a constant of the operation, as
            // mlx-lm rotates (no array for the device to read).
            (Some(rope), [one]) => {
                let at = one.caches[layer].offset();
                (q, k) = (rope.apply(&q, at)?, rope.apply(&k, at)?);
            }
            (Some(rope), _) => {
                let at: Vec<i32> = segments.iter().map(|s| s.caches[layer].offset()).collect();
                let at = pass.arrays.ints(&at, &[n])?;
                (q, k) = (rope.apply_at(&q, &at)?, rope.apply_at(&k, &at)?);
            }
        }
        let mut caches: Vec<&mut KvCache> =
            segments.iter_mut().map(|s| &mut s.caches[layer]).collect();
        let written = pass.batch.write_decode(&mut caches, &k, &v, pass.arrays)?;
        Ok(DecodeWrite { q, written })
    }

    /// The attention [`Self::decode_rows`] left: as it is, or on MLX's
    /// attention read now, all slots attended in one call, masked to each
    /// slot's length.
    pub(super) fn decode_read(&self, decoded: Decoded, pass: Pass<'_>) -> R<Array> {
        let DecodeWrite { q, written } = match decoded {
            Decoded::Attended(out) => return Ok(out),
            Decoded::Written(step) => step,
        };
        let view = pass.batch.view(written)?;
        let n = view.slots.len() as i32;
        let (nq, hd) = (self.heads, self.head_dim);
        let slots = view.lens.len() as i32;
        let ordered = in_order(&view);
        let slot_idx = pass.arrays.ints(&view.slots, &[n])?;
        // Rows for every slot; a slot no sequence of this step holds
        // computes a row nobody reads.
        let q = if ordered {
            q
        } else {
            let zeros = mlx_rs::ops::zeros_dtype(&[slots, nq, 1, hd], q.dtype())?;
            scatter(&zeros, &[&slot_idx], &q.reshape(&[n, 1, nq, 1, hd])?, &[0])?
        };
        let len = view.keys.shape()[2];
        let (mut keys, mut values) = (view.keys, view.values);
        let ragged = view.lens.iter().any(|&l| l != len);
        let mut window = self.window.filter(|&w| view.lens.iter().any(|&l| l > w));
        if let (Some(w), false) = (window, ragged) {
            // Equal lengths: the last `w` positions, as a lone sequence.
            keys = keys.try_index_axis2_from(len - w)?;
            values = values.try_index_axis2_from(len - w)?;
            window = None;
        }
        let mask = match ragged || window.is_some() {
            true => Some(pass.arrays.length_mask(&view.lens, len, window)?),
            false => None,
        };
        let widen = |a: Array| match a.dtype() {
            d if d == q.dtype() => Ok(a),
            _ => a.as_dtype(q.dtype()),
        };
        let (keys, values) = (widen(keys)?, widen(values)?);
        let out = mlx_rs::fast::scaled_dot_product_attention(
            &q,
            &keys,
            &values,
            self.scale,
            mask.as_ref().map(ScaledDotProductAttentionMask::Array),
            self.sinks.as_ref(),
        )?;
        let out = if ordered {
            out
        } else {
            out.take_axis(&slot_idx, 0)?
        };
        // [N, heads, 1, d] is already each sequence's heads in a row.
        out.reshape(&[1, n, nq * hd])
    }
}

/// What [`Attention::decode_rows`] leaves: the step's attention, or its
/// writes to read.
pub(super) enum Decoded {
    Attended(Array),
    Written(DecodeWrite),
}

/// A decode step written into the batch buffers: its rotated queries
/// (`[N, heads, 1, d]`) and what it wrote.
pub(super) struct DecodeWrite {
    q: Array,
    written: Written,
}
