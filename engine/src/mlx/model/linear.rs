//! The layers built from the weights: [`Linear`] (`y = x W^T + b`, dense,
//! quantized or MXFP4, on the kernel the policy chose) and [`Embedding`].

use mlx_rs::{Array, Dtype};

use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::kernels::{self, Activations, Kernel, Quant, mxfp4, quantized};
use crate::mlx::load::Weight;

/// `y = x W^T (+ b)`, dense or quantized.
pub(crate) struct Linear {
    weight: LinearWeight,
    bias: Option<Array>,
    /// Rows of each weight fused into this one, in order.
    parts: Vec<i32>,
    /// Views of a quantized weight on MLX's matmul, a few rows each, that
    /// a one-row input is multiplied by in turn (`split_one_row`); empty:
    /// one call.
    one_row: Vec<RowBlock>,
}

/// Rows of a quantized weight: views of its arrays.
struct RowBlock {
    w: Array,
    scales: Array,
    biases: Array,
    /// Its columns of the layer's bias.
    bias: Option<Array>,
    /// Its first row in the whole weight.
    start: i32,
}

enum LinearWeight {
    /// `W^T` as a transposed view, so each step adds no transpose node and
    /// BLAS receives the transposed flag.
    Dense(Array),
    Quantized {
        w: Array,
        scales: Array,
        biases: Array,
        q: Quant,
        kernel: Kernel,
    },
    Mxfp4 {
        w: Array,
        scales: Array,
        kernel: Kernel,
    },
}

impl Linear {
    /// Builds one layer from several weights stacked by rows, so that one
    /// matmul computes them all (q/k/v, gate/up).
    pub fn fused(parts: Vec<Weight>, bias: Option<Vec<Array>>) -> Result<Self, EngineError> {
        let err = mlx_err("building a linear layer");
        let part_rows = parts.iter().map(Weight::rows).collect();
        let packings: Vec<Option<(Quant, Kernel)>> = parts.iter().map(Weight::packing).collect();
        let common = match packings.first() {
            Some(Some(first)) if packings.iter().all(|p| *p == Some(*first)) => Some(*first),
            _ => None,
        };
        let mxfp4_kernel = match parts.first() {
            Some(Weight::Mxfp4 { kernel, .. })
                if parts
                    .iter()
                    .all(|p| matches!(p, Weight::Mxfp4 { kernel: k, .. } if k == kernel)) =>
            {
                Some(*kernel)
            }
            _ => None,
        };
        let weight = match common {
            _ if mxfp4_kernel.is_some() => {
                let (mut ws, mut ss) = (Vec::new(), Vec::new());
                for p in parts {
                    if let Weight::Mxfp4 { w, scales, .. } = p {
                        ws.push(w);
                        ss.push(scales);
                    }
                }
                LinearWeight::Mxfp4 {
                    w: concat_rows(ws).map_err(&err)?,
                    scales: concat_rows(ss).map_err(&err)?,
                    kernel: mxfp4_kernel.unwrap_or(Kernel::Mlx),
                }
            }
            Some((q, kernel)) => {
                let (mut ws, mut ss, mut bs) = (Vec::new(), Vec::new(), Vec::new());
                for p in parts {
                    if let Weight::Quantized {
                        w, scales, biases, ..
                    } = p
                    {
                        ws.push(w);
                        ss.push(scales);
                        bs.push(biases);
                    }
                }
                let (w, scales, biases) = (
                    concat_rows(ws).map_err(&err)?,
                    concat_rows(ss).map_err(&err)?,
                    concat_rows(bs).map_err(&err)?,
                );
                let rows = w.shape().first().map_or(0, |&n| n as usize);
                // Weights in 16-row panels where the kernels gain from them
                // (`kernels::in_panels` says which).
                match kernels::in_panels(kernel, q, rows) {
                    Some(act) => {
                        let (w, scales, biases) =
                            kernels::repack_in_panels(&w, &scales, &biases, q).map_err(&err)?;
                        LinearWeight::Quantized {
                            w,
                            scales,
                            biases,
                            q,
                            kernel: Kernel::Thinkwire(act),
                        }
                    }
                    None => LinearWeight::Quantized {
                        w,
                        scales,
                        biases,
                        q,
                        kernel,
                    },
                }
            }
            // Dense, or parts quantized differently: one dense matrix.
            None => {
                let dtype = parts
                    .iter()
                    .find_map(|p| match p {
                        Weight::Dense(w) => Some(w.dtype()),
                        _ => None,
                    })
                    .unwrap_or(Dtype::Float32);
                let dense = parts
                    .into_iter()
                    .map(|p| p.dense(dtype))
                    .collect::<Result<Vec<_>, _>>()?;
                let w = concat_rows(dense).map_err(&err)?;
                LinearWeight::Dense(w.transpose().map_err(&err)?)
            }
        };
        let bias = match bias {
            Some(b) => Some(concat_rows(b).map_err(&err)?),
            None => None,
        };
        Ok(Self {
            weight,
            bias,
            parts: part_rows,
            one_row: Vec::new(),
        })
    }

    /// Where this layer's weight is quantized on MLX's matmul with more
    /// than `limit` rows, a one-row input (a decode step of one sequence)
    /// is multiplied by blocks of at most `limit` rows in turn, each
    /// fused part's rows apart, and the outputs joined. MLX's CUDA backend
    /// runs a one-row quantized matmul as a matrix-vector product only up
    /// to 16,384 outputs; past that (a 152k vocabulary's output layer,
    /// Qwen3-4B's gate and up together) it takes its tiled GEMM, whose
    /// tile has room for 256 input rows and gets one, and which copies the
    /// scales and biases on every call. Inputs of more rows still take one
    /// call.
    pub fn split_one_row(&mut self, limit: usize) -> Result<(), EngineError> {
        let LinearWeight::Quantized {
            w,
            scales,
            biases,
            q,
            kernel: Kernel::Mlx,
        } = &self.weight
        else {
            return Ok(());
        };
        let (rows, inputs) = match w.shape() {
            [rows, packed] => (*rows, *packed as usize * 32 / q.bits as usize),
            _ => return Ok(()),
        };
        let (rows, limit) = (rows.max(0) as usize, limit.max(1));
        if rows <= limit || inputs > limit {
            return Ok(());
        }
        // Block boundaries: each part's rows in equal blocks, rounded up to
        // 64 rows so that every view starts aligned.
        let mut starts: Vec<i32> = Vec::new();
        let mut start = 0usize;
        for &part in &self.parts {
            let part = part.max(0) as usize;
            let blocks = part.div_ceil(limit).max(1);
            let size = (part.div_ceil(blocks).div_ceil(64) * 64).min(limit).max(1);
            starts.extend((0..part).step_by(size).map(|at| (start + at) as i32));
            start += part;
        }
        if start != rows || starts.len() < 2 {
            return Ok(());
        }
        let err = mlx_err("splitting a layer's rows");
        let cuts = &starts[1..];
        let split = |a: &Array| a.split_at_indices(cuts, 0).map_err(&err);
        let (ws, ss, bs) = (split(w)?, split(scales)?, split(biases)?);
        let bias: Vec<Option<Array>> = match &self.bias {
            Some(b) => split(b)?.into_iter().map(Some).collect(),
            None => vec![None; starts.len()],
        };
        let blocks: Vec<RowBlock> = (ws.into_iter().zip(ss).zip(bs).zip(bias).zip(starts))
            .map(|((((w, scales), biases), bias), start)| RowBlock {
                w,
                scales,
                biases,
                bias,
                start,
            })
            .collect();
        let views =
            (blocks.iter()).flat_map(|b| [&b.w, &b.scales, &b.biases].into_iter().chain(&b.bias));
        mlx_rs::transforms::eval(views).map_err(&err)?;
        self.one_row = blocks;
        Ok(())
    }

    /// A single weight.
    pub fn new(weight: Weight, bias: Option<Array>) -> Result<Self, EngineError> {
        Self::fused(vec![weight], bias.map(|b| vec![b]))
    }

    /// How this layer's weight is held and multiplied, for `thinkwire
    /// inspect` (e.g. `4-bit/32 on thinkwire's kernels`, `f32 dense`).
    pub fn describe(&self) -> String {
        match &self.weight {
            LinearWeight::Dense(w) => format!("{:?} dense", w.dtype()).to_lowercase(),
            LinearWeight::Quantized { q, kernel, .. } => {
                let who = match kernel {
                    Kernel::Mlx => "MLX's quantized matmul",
                    Kernel::Thinkwire(Activations::F32) => "thinkwire's kernels",
                    Kernel::Thinkwire(Activations::Int8) => "thinkwire's kernels, int8 activations",
                    Kernel::Thinkwire(Activations::Int8Panels) => {
                        "thinkwire's kernels, int8 activations, 16-row panels"
                    }
                    Kernel::Thinkwire(Activations::F32Tiles) if q.bits == 4 => {
                        "thinkwire's kernels, 16-row panels on AMX tiles"
                    }
                    Kernel::Thinkwire(Activations::F32Tiles) => {
                        "thinkwire's kernels, 16-row panels on FMAs"
                    }
                };
                let blocks = match self.one_row.len() {
                    0 => String::new(),
                    n => format!(", one row in {n} blocks"),
                };
                format!("{}-bit/{} on {who}{blocks}", q.bits, q.group_size)
            }
            LinearWeight::Mxfp4 { kernel, .. } => match kernel {
                Kernel::Mlx => "mxfp4 on MLX's quantized matmul".into(),
                Kernel::Thinkwire(_) => "mxfp4 on thinkwire's kernels".into(),
            },
        }
    }

    /// The arrays to evaluate once at load.
    pub fn arrays(&self) -> Vec<&Array> {
        let mut v = match &self.weight {
            LinearWeight::Dense(w) => vec![w],
            LinearWeight::Quantized {
                w, scales, biases, ..
            } => vec![w, scales, biases],
            LinearWeight::Mxfp4 { w, scales, .. } => vec![w, scales],
        };
        v.extend(self.bias.as_ref());
        v
    }

    pub fn forward(&self, x: &Array) -> mlx_rs::error::Result<Array> {
        if self.by_row_blocks(x) {
            return concat_last(self.times_blocks(x)?);
        }
        let y = match &self.weight {
            LinearWeight::Dense(wt) => x.matmul(wt)?,
            LinearWeight::Quantized {
                w,
                scales,
                biases,
                q,
                kernel: Kernel::Mlx,
            } => mlx_rs::ops::quantized_matmul(x, w, scales, biases, true, q.group_size, q.bits)?,
            LinearWeight::Quantized {
                w,
                scales,
                biases,
                q,
                kernel: Kernel::Thinkwire(activations),
            } => quantized::matmul(x, w, scales, biases, *q, *activations)?,
            LinearWeight::Mxfp4 {
                w,
                scales,
                kernel: Kernel::Mlx,
            } => mxfp4::mlx_matmul(x, w, scales)?,
            LinearWeight::Mxfp4 { w, scales, .. } => mxfp4::matmul(x, w, scales)?,
        };
        match &self.bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }

    /// The output in two at column `at` (gate and up): where `x` is one
    /// row multiplied by blocks meeting at `at`, each half joins only its
    /// own blocks' outputs.
    pub fn forward_halves(&self, x: &Array, at: i32) -> mlx_rs::error::Result<(Array, Array)> {
        if self.by_row_blocks(x) && self.one_row.iter().any(|b| b.start == at) {
            let mut ys = self.times_blocks(x)?;
            let second = ys.split_off(self.one_row.iter().take_while(|b| b.start < at).count());
            return Ok((concat_last(ys)?, concat_last(second)?));
        }
        halves(&self.forward(x)?, at)
    }

    /// Whether `x` is one row and this layer has row blocks for it.
    fn by_row_blocks(&self, x: &Array) -> bool {
        let rows: i32 = x.shape().iter().rev().skip(1).product();
        rows == 1 && !self.one_row.is_empty()
    }

    /// `x` times each block of rows, with its columns of the bias.
    fn times_blocks(&self, x: &Array) -> mlx_rs::error::Result<Vec<Array>> {
        let LinearWeight::Quantized { q, .. } = &self.weight else {
            return Err(mlx_rs::error::Exception::custom(
                "row blocks of a dense layer",
            ));
        };
        (self.one_row.iter())
            .map(|b| {
                let y = mlx_rs::ops::quantized_matmul(
                    x,
                    &b.w,
                    &b.scales,
                    &b.biases,
                    true,
                    q.group_size,
                    q.bits,
                )?;
                match &b.bias {
                    Some(bias) => y.add(bias),
                    None => Ok(y),
                }
            })
            .collect()
    }
}

/// `y` in two at column `at`, as views (one operation).
pub(super) fn halves(y: &Array, at: i32) -> mlx_rs::error::Result<(Array, Array)> {
    match <[Array; 2]>::try_from(y.split_at_indices(&[at], -1)?) {
        Ok([a, b]) => Ok((a, b)),
        Err(_) => Err(mlx_rs::error::Exception::custom("an output in two")),
    }
}

/// `parts` side by side along the last axis (one part: itself).
fn concat_last(mut parts: Vec<Array>) -> mlx_rs::error::Result<Array> {
    if parts.len() == 1
        && let Some(p) = parts.pop()
    {
        return Ok(p);
    }
    mlx_rs::ops::concatenate(&parts, -1)
}

fn concat_rows(mut parts: Vec<Array>) -> mlx_rs::error::Result<Array> {
    if parts.len() == 1 {
        if let Some(p) = parts.pop() {
            return Ok(p);
        }
    }
    mlx_rs::ops::concatenate(&parts, 0)
}

/// Token embedding; also the output layer when embeddings are tied.
pub(crate) enum Embedding {
    Dense(Array),
    Quantized {
        w: Array,
        scales: Array,
        biases: Array,
        q: Quant,
    },
    Mxfp4 {
        w: Array,
        scales: Array,
    },
}

impl Embedding {
    pub fn new(weight: Weight) -> Self {
        match weight {
            Weight::Dense(w) => Self::Dense(w),
            Weight::Quantized {
                w,
                scales,
                biases,
                q,
                ..
            } => Self::Quantized {
                w,
                scales,
                biases,
                q,
            },
            Weight::Mxfp4 { w, scales, .. } => Self::Mxfp4 { w, scales },
        }
    }

    pub fn arrays(&self) -> Vec<&Array> {
        match self {
            Self::Dense(w) => vec![w],
            Self::Quantized {
                w, scales, biases, ..
            } => vec![w, scales, biases],
            Self::Mxfp4 { w, scales } => vec![w, scales],
        }
    }

    /// Rows for `ids` ([1, L] int32) → [1, L, hidden].
    pub fn lookup(&self, ids: &Array) -> mlx_rs::error::Result<Array> {
        match self {
            Self::Dense(w) => w.take_axis(ids, 0),
            Self::Quantized {
                w,
                scales,
                biases,
                q,
            } => {
                let (wr, sr, br) = (
                    w.take_axis(ids, 0)?,
                    scales.take_axis(ids, 0)?,
                    biases.take_axis(ids, 0)?,
                );
                mlx_rs::ops::dequantize(&wr, &sr, &br, q.group_size, q.bits)
            }
            Self::Mxfp4 { w, scales } => {
                mxfp4::dequantize(&w.take_axis(ids, 0)?, &scales.take_axis(ids, 0)?)
            }
        }
    }

    /// Rows of the vocabulary.
    pub fn rows(&self) -> i32 {
        match self {
            Self::Dense(w) | Self::Quantized { w, .. } | Self::Mxfp4 { w, .. } => w.shape()[0],
        }
    }
}
