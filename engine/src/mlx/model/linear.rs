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
        Ok(Self { weight, bias })
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
                format!("{}-bit/{} on {who}", q.bits, q.group_size)
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
