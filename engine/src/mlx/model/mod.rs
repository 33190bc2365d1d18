//! The decoder: llama, mistral, phi3, qwen2, qwen3, qwen3_moe, smollm3,
//! gemma3_text and gpt_oss share one block, whose differences are data (optional
//! biases, q/k norms, post norms, windows, sinks, NoPE layers, experts), so a fix
//! to attention or the MLP reaches every family at once.
//!
//! Order as in mlx-lm's model files: attention → MLP → block → model; the
//! weights become a model in `build.rs`. The q/k/v and gate/up projections
//! are fused into one matmul each at load.

use mlx_rs::Array;

mod attention;
mod build;
mod burst;
mod cache;
mod linear;
mod mlp;
mod moe;
mod rope;
mod segment;
mod step_arrays;
mod weights;

use self::attention::Attention;
use self::burst::Burst;
use self::cache::BatchCache;
pub(crate) use self::cache::KvCache;
use self::linear::{Embedding, Linear};
use self::mlp::FeedForward;
use self::rope::{Rope, RopeRows};
use self::segment::decoding_head;
pub(crate) use self::segment::{Fork, Segment, join_ids};
use self::step_arrays::StepArrays;
use crate::mlx::kernels::fused;
use crate::mlx::load::config::Architecture;

type R<T> = mlx_rs::error::Result<T>;

struct Block {
    attn_norm: Array,
    attn: Attention,
    mlp_norm: Array,
    mlp: FeedForward,
    /// Gemma 3: norms of the attention and MLP outputs before the adds.
    post_norms: Option<(Array, Array)>,
    /// Gemma 3's sliding layers rotate with their own base.
    local_rope: bool,
    eps: f32,
}

impl Block {
    fn forward(
        &self,
        x: &Array,
        layer: usize,
        segments: &mut [Segment<'_>],
        rotation: (&Rope, Option<&RopeRows>),
        pass: Pass<'_>,
    ) -> R<Array> {
        let norm = |x: &Array, w: &Array| mlx_rs::fast::rms_norm(x, Some(w), self.eps);
        let h = norm(x, &self.attn_norm)?;
        let mut a = self.attn.forward(&h, layer, segments, rotation, pass)?;
        if let Some((after_attn, _)) = &self.post_norms {
            a = norm(&a, after_attn)?;
        }
        let x = x.add(a)?;
        let mut m = self.mlp.forward(&norm(&x, &self.mlp_norm)?)?;
        if let Some((_, after_mlp)) = &self.post_norms {
            m = norm(&m, after_mlp)?;
        }
        x.add(m)
    }

    /// [`Block::forward`] with the residual adds folded into the fused RMS
    /// norms (the same bits): `pending` is the previous block's MLP output,
    /// still to be added to `x`; returns `x` and this block's MLP output.
    fn forward_fused(
        &self,
        x: &Array,
        pending: Option<&Array>,
        layer: usize,
        segments: &mut [Segment<'_>],
        rotation: (&Rope, Option<&RopeRows>),
        pass: Pass<'_>,
    ) -> R<(Array, Array)> {
        let (x, h) = match pending {
            Some(p) => fused::add_rms_norm(x, p, &self.attn_norm, self.eps)?,
            None => (x.clone(), fused::rms_norm(x, &self.attn_norm, self.eps)?),
        };
        let a = self.attn.forward(&h, layer, segments, rotation, pass)?;
        let (x, h) = fused::add_rms_norm(&x, &a, &self.mlp_norm, self.eps)?;
        Ok((x, self.mlp.forward(&h)?))
    }
}

/// What every layer of one pass shares besides the rotation: the layer's
/// batch buffers (decode steps), a burst of prompts' padded layout
/// (`burst.rs`), the small index arrays built once for all layers
/// (`step_arrays.rs`), and where a pass decodes some sequences and
/// prefills others, where the two parts meet.
#[derive(Clone, Copy)]
pub(super) struct Pass<'a> {
    pub batch: &'a BatchCache,
    pub burst: Option<&'a Burst>,
    pub arrays: &'a StepArrays,
    pub split: Option<Split<'a>>,
}

/// A pass whose first `decoding` segments decode (a row each) and the
/// rest prefill: one forward for both, the weights read once, with the
/// attention in two parts (`attention/`). The rotation's table rows are
/// the decode rows'; `rows` are the prompts'. The burst and the prompts'
/// forks (`Fork::from`, numbered in the whole pass) are the prompts'.
#[derive(Clone, Copy)]
pub(super) struct Split<'a> {
    pub decoding: usize,
    pub rows: Option<&'a RopeRows>,
}

/// A loaded decoder.
pub(crate) struct Network {
    embed: Embedding,
    blocks: Vec<Block>,
    norm: Array,
    lm_head: Linear,
    rope: Rope,
    /// Gemma 3's sliding layers' rotation (its local base, no scaling).
    local_rope: Option<Rope>,
    /// Gemma 3 multiplies the embeddings by sqrt(hidden), rounded to bf16.
    embed_scale: Option<f32>,
    eps: f32,
    /// What the attention caches hold (`None`: the f32 rows as they are).
    cache_dtype: Option<mlx_rs::Dtype>,
    /// Per layer, the buffers decode steps on MLX's attention keep every
    /// sequence's cache in (`cache/batch/`).
    batches: Vec<BatchCache>,
    pub architecture: Architecture,
    pub vocab: usize,
}

impl Network {
    /// A fresh cache for one sequence.
    pub fn new_cache(&self) -> Vec<KvCache> {
        (0..self.blocks.len())
            .map(|_| KvCache::with_dtype(self.cache_dtype))
            .collect()
    }

    /// Every layer's batch buffers: what a decode step wrote for all the
    /// sequences in slots, to evaluate with it once rather than once per
    /// sequence.
    pub fn batch_arrays(&self) -> Vec<Array> {
        self.batches.iter().flat_map(BatchCache::arrays).collect()
    }

    /// The most slots a layer's batch buffers hold, those kept past the
    /// batch's included: what the KV budget counts them for.
    pub fn batch_slots_held(&self) -> usize {
        self.batches
            .iter()
            .map(BatchCache::slots_held)
            .max()
            .unwrap_or(0)
    }

    /// Every layer gives up the batch slots it keeps past the batch's
    /// (`BatchCache::drop_spare_slots`).
    pub fn drop_spare_batch_slots(&self) -> R<()> {
        self.batches
            .iter()
            .try_for_each(BatchCache::drop_spare_slots)
    }

    /// Makes the caches hold `dtype` (`None`: the rows' own type).
    pub fn set_cache_dtype(&mut self, dtype: Option<mlx_rs::Dtype>) {
        self.cache_dtype = dtype;
    }

    /// What the caches hold, for logs and benchmarks.
    pub fn cache_dtype_name(&self) -> &'static str {
        match self.cache_dtype {
            Some(mlx_rs::Dtype::Float16) => "f16",
            Some(mlx_rs::Dtype::Bfloat16) => "bf16",
            Some(_) => "f32",
            None if self.norm.dtype() == mlx_rs::Dtype::Bfloat16 => "bf16",
            None if self.norm.dtype() == mlx_rs::Dtype::Float16 => "f16",
            None => "f32",
        }
    }

    /// Bytes the cache of one sequence holds per position.
    pub fn cache_bytes_per_token(&self) -> usize {
        self.blocks.len() * self.layer_cache_bytes_per_token()
    }

    /// Of [`Self::cache_bytes_per_token`], the bytes of the layers whose
    /// decode steps keep the rows in the layer's batch buffers
    /// (`cache/batch/`) while the longest sequence is under `longest`
    /// positions: MLX's attention (a GPU, `keep`, `bf16`), sliding-window
    /// and sink layers, and rotations the CPU's tables do not cover.
    /// Those buffers give every slot the longest sequence's length, so
    /// such a layer holds a batch of N sequences at N times the longest.
    pub fn batch_cache_bytes_per_token(&self, longest: usize) -> usize {
        let tables = self.rope.tables_cover(longest);
        let own = |a: &attention::Attention| {
            a.fused && a.window.is_none() && a.sinks.is_none() && (tables || !a.rotate)
        };
        let batched = self.blocks.iter().filter(|b| !own(&b.attn)).count();
        batched * self.layer_cache_bytes_per_token()
    }

    /// Bytes one layer's cache holds per position.
    fn layer_cache_bytes_per_token(&self) -> usize {
        let Some(b) = self.blocks.first() else {
            return 0;
        };
        let per_layer = 2 * b.attn.kv_heads as usize * b.attn.head_dim as usize;
        let bytes = match self.cache_dtype {
            Some(mlx_rs::Dtype::Float16 | mlx_rs::Dtype::Bfloat16) => 2,
            // f32 caches of a bf16 model: wider than its rows.
            Some(mlx_rs::Dtype::Float32) => 4,
            _ => self.norm.item_size(),
        };
        per_layer * bytes
    }

    /// One step of several sequences: every segment's tokens go through
    /// the decoder together (projections and MLP read each weight once for
    /// all rows); the attention takes leading one-row segments as a decode
    /// step and the rest as prompts (`Split`), each against its own cache.
    /// `ids` are every segment's tokens in order, `[1, Σ len]` int32 (may be
    /// lazy: tokens the previous step picked and nobody has read yet; the
    /// caller joins them, as it knows which are one view of its picks). With
    /// `logits`, returns the logits of each segment's last position
    /// (`[segments, vocab]`, f32); otherwise only the caches are filled.
    pub fn forward(
        &self,
        ids: &Array,
        segments: &mut [Segment<'_>],
        logits: bool,
    ) -> R<Option<Array>> {
        let rows = match logits {
            true => Rows::Last,
            false => Rows::None,
        };
        self.forward_rows(ids, segments, rows)
    }

    /// [`forward`](Self::forward) returning every position's logits
    /// (`[Σ len, vocab]`, f32): how likely each token made the next, for
    /// scoring a prompt.
    pub fn forward_every_row(&self, ids: &Array, segments: &mut [Segment<'_>]) -> R<Array> {
        self.forward_rows(ids, segments, Rows::Every)?
            .ok_or_else(|| mlx_rs::error::Exception::custom("a scoring pass made no logits"))
    }

    fn forward_rows(
        &self,
        ids: &Array,
        segments: &mut [Segment<'_>],
        want: Rows,
    ) -> R<Option<Array>> {
        let mut positions = Vec::new();
        let mut last_rows: Vec<i32> = Vec::with_capacity(segments.len());
        for seg in segments.iter() {
            let offset = match seg.fork {
                Some(f) => f.at,
                None => seg.caches.first().map_or(0, KvCache::offset),
            };
            positions.extend(offset..offset + seg.len);
            last_rows.push(positions.len() as i32 - 1);
        }
        if ids.shape() != [1, positions.len() as i32] {
            return Err(mlx_rs::error::Exception::custom(
                "a pass's ids and its segments' lengths disagree",
            ));
        }
        // Sequences that decode beside prompts: one pass, the attention
        // split (`Split`); the prompts are then laid out on their own.
        let d = decoding_head(segments);
        let prompts = &segments[d..];
        // The tables serve the CPU's fused path, whose `fast::rope` is slow;
        // elsewhere MLX's rope is one operation, in the step's own type
        // (the f32 tables would widen a bf16 step to f32).
        let tables = self.blocks.first().is_some_and(|b| b.attn.fused);
        let rows_of = |rope: &Rope, at: &[i32]| match tables {
            true => rope.rows(at),
            false => Ok(None),
        };
        // Each part's rows: a split pass's decode rows, then its prompts'.
        let (head, tail) = positions.split_at(d);
        let parted = |rope: &Rope| -> R<(Option<RopeRows>, Option<RopeRows>)> {
            match d {
                0 => Ok((rows_of(rope, &positions)?, None)),
                _ => Ok((rows_of(rope, head)?, rows_of(rope, tail)?)),
            }
        };
        let (rows, prompt_rows) = parted(&self.rope)?;
        let (local_rows, local_prompt_rows) = match &self.local_rope {
            Some(r) => parted(r)?,
            None => (None, None),
        };
        // Prompts together: one padded attention per layer where MLX's
        // attention serves them, fresh, after cached rows or after a
        // start shared with an earlier prompt of the pass. A lone prompt
        // goes so too where its cache is in a batch slot (forced tokens
        // of a decoding sequence, the next chunk of a prompt that began
        // in a burst): its rows are written into the slot, where alone it
        // would copy its cache out and, at its next decode step, back in.
        // (A pass of one row each without forks is a decode step: the
        // batch cache serves it.)
        let together = match prompts {
            [one] => one.len > 1 && one.fork.is_none() && one.caches.iter().any(KvCache::in_batch),
            _ => {
                prompts.iter().all(|s| !s.caches.is_empty())
                    && prompts.iter().any(|s| s.len > 1 || s.fork.is_some())
            }
        };
        let burst = match together && self.blocks.iter().any(|b| b.attn.takes_bursts()) {
            true => {
                let bases: Vec<i32> = prompts
                    .iter()
                    .map(|s| s.fork.map_or(s.caches[0].offset(), |f| f.at))
                    .collect();
                let lens: Vec<i32> = prompts.iter().map(|s| s.len).collect();
                // Numbered among the prompts (`decoding_head` keeps every
                // fork's source among them).
                let forks = prompts
                    .iter()
                    .map(|s| match s.fork {
                        None => Ok(None),
                        Some(f) => match f.from.checked_sub(d) {
                            Some(from) => Ok(Some(Fork { from, at: f.at })),
                            None => Err(mlx_rs::error::Exception::custom(
                                "a prompt forks a decode row",
                            )),
                        },
                    })
                    .collect::<R<Vec<Option<Fork>>>>()?;
                Burst::new(&bases, &lens, &forks)?
            }
            false => None,
        };
        let mut x = self.embed.lookup(ids)?;
        if let Some(s) = self.embed_scale {
            x = x.multiply(Array::from_f32(s).as_dtype(x.dtype())?)?;
        }
        let fused = self
            .blocks
            .first()
            .is_some_and(|b| b.attn.fused && b.post_norms.is_none())
            && x.ndim() == 3;
        let arrays = StepArrays::default();
        fn split(decoding: usize, rows: Option<&RopeRows>) -> Option<Split<'_>> {
            (decoding > 0).then_some(Split { decoding, rows })
        }
        let mut pending: Option<Array> = None;
        for (layer, block) in self.blocks.iter().enumerate() {
            if fused {
                let (nx, out) = block.forward_fused(
                    &x,
                    pending.as_ref(),
                    layer,
                    segments,
                    (&self.rope, rows.as_ref()),
                    Pass {
                        batch: &self.batches[layer],
                        burst: burst.as_ref(),
                        arrays: &arrays,
                        split: split(d, prompt_rows.as_ref()),
                    },
                )?;
                (x, pending) = (nx, Some(out));
            } else {
                let (rope, rows, prompt_rows) = match (&self.local_rope, block.local_rope) {
                    (Some(local), true) => (local, local_rows.as_ref(), local_prompt_rows.as_ref()),
                    _ => (&self.rope, rows.as_ref(), prompt_rows.as_ref()),
                };
                let pass = Pass {
                    batch: &self.batches[layer],
                    burst: burst.as_ref(),
                    arrays: &arrays,
                    split: split(d, prompt_rows),
                };
                x = block.forward(&x, layer, segments, (rope, rows), pass)?;
            }
        }
        if want == Rows::None {
            // Prefill only fills the caches: the last MLP output is not needed.
            return Ok(None);
        }
        let t = positions.len() as i32;
        if want == Rows::Every {
            last_rows = (0..t).collect();
        }
        let last = |a: Array| -> R<Array> {
            if last_rows.len() as i32 == t {
                Ok(a)
            } else {
                let idx = Array::from_slice(&last_rows, &[last_rows.len() as i32]);
                a.take_axis(&idx, 1)
            }
        };
        let x = match pending {
            // Only the last rows' sums are normed, as below.
            Some(p) => {
                let (x, p) = (last(x)?, last(p)?);
                fused::add_rms_norm(&x, &p, &self.norm, self.eps)?.1
            }
            None => mlx_rs::fast::rms_norm(&last(x)?, Some(&self.norm), self.eps)?,
        };
        let logits = self
            .lm_head
            .forward(&x)?
            .reshape(&[last_rows.len() as i32, -1])?;
        if logits.dtype() == mlx_rs::Dtype::Float32 {
            Ok(Some(logits))
        } else {
            logits.as_dtype(mlx_rs::Dtype::Float32).map(Some)
        }
    }
}

/// Which positions' logits a pass returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// None: prefill fills the caches.
    None,
    /// Each segment's last: its next token.
    Last,
    /// Every position's: scoring.
    Every,
}

#[cfg(test)]
mod tests;
