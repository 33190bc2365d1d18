//! Weights by Hugging Face name, the precision policy applied at load, and
//! the linear/embedding layers built from them.

use std::collections::HashMap;

use mlx_rs::ops::indexing::TryIndexOp;
use mlx_rs::{Array, Dtype};

use super::quantized::Activations;
use crate::EngineError;

/// What precision the weights are kept in after loading.
///
/// On a CPU, MLX sends only f32 matmuls to BLAS; its half-precision and
/// quantized matmuls run generic loops, much slower per FLOP. thinkwire's
/// own kernels (`quantized.rs`) make 4- and 8-bit weights the fast path
/// instead, so `Auto` keeps those packed and everything else in f32 (see
/// `thinkwire bench` and the engine README for the figures behind that).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// On the CPU: 4/8-bit quantized weights stay packed and run on
    /// thinkwire's kernels, all others become f32. On a GPU: as stored
    /// (MLX's own kernels are the fast ones there).
    #[default]
    Auto,
    /// Dequantize everything to f32 (BLAS for every matmul).
    F32,
    /// Dequantize everything to bf16 (half the memory, slow on CPUs).
    Bf16,
    /// Keep quantized weights quantized (MLX's quantized matmul) and dense
    /// weights in their dtype.
    Keep,
    /// As `Auto`, but thinkwire's kernels quantize the activations to 8 bits
    /// per block of 32 for integer dot products (llama.cpp's way): faster
    /// decoding, logits within a stated tolerance of the exact ones
    /// (`precision_parity.rs`). On a GPU, `Auto`.
    Int8,
}

impl Precision {
    /// Parses `auto`, `f32`, `bf16` or `keep` (CLI and config spelling).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "f32" | "float32" => Some(Self::F32),
            "bf16" | "bfloat16" => Some(Self::Bf16),
            "keep" | "quantized" => Some(Self::Keep),
            "int8" => Some(Self::Int8),
            _ => None,
        }
    }

    /// The name [`Precision::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
            Self::Keep => "keep",
            Self::Int8 => "int8",
        }
    }

    /// Every name [`Precision::parse`] accepts, for help and errors.
    pub const NAMES: &'static str = "auto, int8, f32, bf16 or keep";

    /// The dtype dense tensors (norms, biases, unquantized weights) get;
    /// `None` keeps theirs.
    pub(crate) fn dense_dtype(self) -> Option<Dtype> {
        match self {
            Self::Auto | Self::Int8 if !super::quantized::default_device_is_cpu() => None,
            Self::Auto | Self::Int8 | Self::F32 => Some(Dtype::Float32),
            Self::Bf16 => Some(Dtype::Bfloat16),
            Self::Keep => None,
        }
    }
}

pub(crate) fn mlx_err(context: &str) -> impl Fn(mlx_rs::error::Exception) -> EngineError + '_ {
    move |e| EngineError::Backend(format!("{context}: {e}"))
}

/// Affine quantization parameters of one tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quant {
    pub group_size: i32,
    pub bits: i32,
}

/// A weight's key, its tensor and, when quantized, its scales and biases
/// (none for MXFP4).
type TakenWeight = (String, Array, Option<(Array, Option<Array>)>);

/// Weights by Hugging Face tensor name, with the file they came from (for
/// error messages).
pub(crate) struct WeightMap {
    pub tensors: HashMap<String, Array>,
    pub source: String,
    /// Quantization of every `*.scales`-carrying tensor; `None` means infer
    /// per tensor (GGUF: groups of 32).
    pub quant: Option<Quant>,
    /// Modules quantized differently from `quant` (mlx-lm's per-module
    /// entries in `quantization`), by module path.
    pub quant_overrides: HashMap<String, Quant>,
}

/// A weight in the form the policy chose. Clones share the arrays.
#[derive(Clone)]
pub(crate) enum Weight {
    Dense(Array),
    Quantized {
        w: Array,
        scales: Array,
        biases: Array,
        q: Quant,
        /// `Thinkwire` only with f32 scales/biases and a supported format.
        kernel: Kernel,
    },
    /// MXFP4 (`mxfp4.rs`): `w` uint32 `[.., n, k / 8]`, `scales` e8m0
    /// bytes `[.., n, k / 32]`, no biases. `Thinkwire` always multiplies x
    /// as it is (the int8 activations are an affine-kernel feature).
    Mxfp4 {
        w: Array,
        scales: Array,
        kernel: Kernel,
    },
}

impl WeightMap {
    fn missing(&self, name: &str) -> EngineError {
        EngineError::Load(format!("{}: tensor `{name}` is missing", self.source))
    }

    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(&format!("{name}.weight"))
    }

    /// Whether a plain tensor named exactly `name` is there.
    pub fn has_tensor(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Removes and returns a plain tensor (norm weights, biases).
    pub fn take(&mut self, name: &str) -> Result<Array, EngineError> {
        self.tensors.remove(name).ok_or_else(|| self.missing(name))
    }

    /// Removes `{name}.weight` and, when it is quantized, its scales and
    /// biases; returns the weight's key for messages.
    fn take_parts(&mut self, name: &str) -> Result<TakenWeight, EngineError> {
        let key = format!("{name}.weight");
        let w = self
            .tensors
            .remove(&key)
            .ok_or_else(|| self.missing(&key))?;
        let Some(scales) = self.tensors.remove(&format!("{name}.scales")) else {
            return Ok((key, w, None));
        };
        let biases_key = format!("{name}.biases");
        let biases = self.tensors.remove(&biases_key);
        // Only the affine mode has biases (MLX keeps its scales in the
        // weights' float dtype; the other modes' are bytes).
        if biases.is_none() && scales.dtype() != Dtype::Uint8 {
            return Err(self.missing(&biases_key));
        }
        Ok((key, w, Some((scales, biases))))
    }

    /// An MXFP4 weight from its parts, or what is wrong with them: uint8
    /// scales mean a microscaling mode, and only MXFP4 (4-bit values in
    /// blocks of 32, no biases) is supported.
    fn mxfp4(
        &self,
        key: &str,
        w: Array,
        scales: Array,
        biases: Option<Array>,
    ) -> Result<Weight, EngineError> {
        let (ws, ss) = (w.shape(), scales.shape());
        let packed = ws.len() == ss.len()
            && ws.len() >= 2
            && ws[..ws.len() - 1] == ss[..ss.len() - 1]
            && w.dtype() == Dtype::Uint32;
        // [.., n, k / 8] words and [.., n, k / 32] scales.
        if biases.is_some() || !packed || ws[ws.len() - 1] != ss[ss.len() - 1] * 4 {
            return Err(EngineError::Load(format!(
                "{}: tensor `{key}` has byte scales (a microscaling mode) but is not MXFP4 \
                 (4-bit values in blocks of 32, no biases): weight {ws:?} {:?}, scales {ss:?}",
                self.source,
                w.dtype()
            )));
        }
        Ok(Weight::Mxfp4 {
            w,
            scales,
            kernel: Kernel::Mlx,
        })
    }

    /// Removes `{name}.weight` stacked on a leading expert axis (`[E, out,
    /// in]`, or MLX-quantized `[E, out, packed]` with `[E, out, groups]`
    /// scales and biases), as mlx-lm saves a mixture of experts.
    pub fn take_stacked(&mut self, name: &str) -> Result<Weight, EngineError> {
        let (key, w, packing) = self.take_parts(name)?;
        let Some((scales, biases)) = packing else {
            if w.ndim() != 3 || w.dtype() == Dtype::Uint32 {
                return Err(EngineError::Load(format!(
                    "{}: tensor `{key}` must be [experts, out, in], got {:?} {:?}",
                    self.source,
                    w.shape(),
                    w.dtype()
                )));
            }
            return Ok(Weight::Dense(w));
        };
        let biases = match biases {
            Some(b) if scales.dtype() != Dtype::Uint8 => b,
            b => {
                if w.ndim() != 3 {
                    return Err(EngineError::Load(format!(
                        "{}: tensor `{key}` must be [experts, out, packed], got {:?}",
                        self.source,
                        w.shape()
                    )));
                }
                return self.mxfp4(&key, w, scales, b);
            }
        };
        let (ws, ss) = (w.shape(), scales.shape());
        let q = self.quant_overrides.get(name).copied().or(self.quant);
        // A GGUF's experts (Q4_0/Q4_1/Q8_0 beside MXFP4): blocks of 32,
        // the packing gives the bits, as `take_weight` infers them.
        let q = q.or_else(|| {
            let (packed, groups) = (*ws.last()?, *ss.last()?);
            (groups > 0 && packed % groups == 0).then(|| Quant {
                group_size: 32,
                bits: packed / groups,
            })
        });
        match q {
            Some(q)
                if ws.len() == 3
                    && ss.len() == 3
                    && ws[..2] == ss[..2]
                    && [2, 3, 4, 5, 6, 8].contains(&q.bits)
                    && ws[2] * 32 == ss[2] * q.group_size * q.bits =>
            {
                Ok(Weight::Quantized {
                    w,
                    scales,
                    biases,
                    q,
                    kernel: Kernel::Mlx,
                })
            }
            _ => Err(EngineError::Load(format!(
                "{}: quantized tensor `{key}` has shape {ws:?} that does not match its scales {ss:?} and the config's quantization",
                self.source
            ))),
        }
    }

    /// Removes `{name}.weight` (and its scales/biases when quantized).
    pub fn take_weight(&mut self, name: &str) -> Result<Weight, EngineError> {
        let (key, w, packing) = self.take_parts(name)?;
        let Some((scales, biases)) = packing else {
            if w.dtype() == Dtype::Uint32 {
                return Err(EngineError::Load(format!(
                    "{}: tensor `{key}` is packed (uint32) but `{name}.scales` is missing",
                    self.source
                )));
            }
            return Ok(Weight::Dense(w));
        };
        let biases = match biases {
            Some(b) if scales.dtype() != Dtype::Uint8 => b,
            b => {
                if w.ndim() != 2 {
                    return Err(EngineError::Load(format!(
                        "{}: tensor `{key}` must be [out, packed], got {:?}",
                        self.source,
                        w.shape()
                    )));
                }
                return self.mxfp4(&key, w, scales, b);
            }
        };
        let (ws, ss) = (w.shape(), scales.shape());
        let shape_err = || {
            EngineError::Load(format!(
                "{}: quantized tensor `{key}` has shape {ws:?} that does not match its scales {ss:?}",
                self.source
            ))
        };
        if ws.len() != 2 || ss.len() != 2 || ws[0] != ss[0] || ss[1] == 0 {
            return Err(shape_err());
        }
        let q = match self.quant_overrides.get(name).copied().or(self.quant) {
            Some(q) => {
                // columns * 32 / bits == groups * group_size
                if ws[1] * 32 != ss[1] * q.group_size * q.bits {
                    return Err(shape_err());
                }
                q
            }
            None => {
                // GGML blocks hold 32 weights; the packing gives the bits.
                if ws[1] % ss[1] != 0 {
                    return Err(shape_err());
                }
                Quant {
                    group_size: 32,
                    bits: ws[1] / ss[1],
                }
            }
        };
        if ![2, 3, 4, 5, 6, 8].contains(&q.bits) {
            return Err(EngineError::Load(format!(
                "{}: tensor `{key}` uses unsupported {}-bit quantization",
                self.source, q.bits
            )));
        }
        Ok(Weight::Quantized {
            w,
            scales,
            biases,
            q,
            kernel: Kernel::Mlx,
        })
    }
}

impl Weight {
    /// Dense weights as `dtype`; quantized ones dequantized with f32 scales
    /// (as llama.cpp does) and then cast.
    pub fn dense(self, dtype: Dtype) -> Result<Array, EngineError> {
        let err = mlx_err("dequantizing a weight");
        match self {
            Weight::Mxfp4 { w, scales, .. } => {
                let d = super::mxfp4::dequantize(&w, &scales).map_err(&err)?;
                if dtype == Dtype::Float32 {
                    Ok(d)
                } else {
                    d.as_dtype(dtype).map_err(err)
                }
            }
            Weight::Dense(w) => {
                if w.dtype() == dtype {
                    Ok(w)
                } else {
                    w.as_dtype(dtype).map_err(err)
                }
            }
            Weight::Quantized {
                w,
                scales,
                biases,
                q,
                ..
            } => {
                let s = scales.as_dtype(Dtype::Float32).map_err(&err)?;
                let b = biases.as_dtype(Dtype::Float32).map_err(&err)?;
                let d = mlx_rs::ops::dequantize(&w, &s, &b, q.group_size, q.bits).map_err(&err)?;
                if dtype == Dtype::Float32 {
                    Ok(d)
                } else {
                    d.as_dtype(dtype).map_err(err)
                }
            }
        }
    }

    /// Applies the policy.
    pub fn with_policy(self, precision: Precision) -> Result<Weight, EngineError> {
        let err = mlx_err("preparing packed weights");
        Ok(match (precision, self) {
            (Precision::Auto | Precision::Int8, w)
                if !super::quantized::default_device_is_cpu() =>
            {
                w
            }
            (
                Precision::Auto | Precision::Int8,
                Weight::Quantized {
                    w,
                    scales,
                    biases,
                    q,
                    ..
                },
            ) if super::quantized::supported(q) => Weight::Quantized {
                w,
                scales: scales.as_dtype(Dtype::Float32).map_err(&err)?,
                biases: biases.as_dtype(Dtype::Float32).map_err(&err)?,
                q,
                kernel: Kernel::Thinkwire(if precision == Precision::Int8 {
                    Activations::Int8
                } else {
                    Activations::F32
                }),
            },
            (Precision::Auto | Precision::Int8, Weight::Mxfp4 { w, scales, .. }) => Weight::Mxfp4 {
                w,
                scales,
                kernel: Kernel::Thinkwire(Activations::F32),
            },
            (Precision::Auto | Precision::Int8 | Precision::F32, w) => {
                Weight::Dense(w.dense(Dtype::Float32)?)
            }
            (Precision::Bf16, w) => Weight::Dense(w.dense(Dtype::Bfloat16)?),
            (Precision::Keep, w) => w,
        })
    }
}

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

/// Who multiplies a quantized weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// MLX's quantized matmul.
    Mlx,
    /// thinkwire's CPU kernels (`quantized.rs`), with x as it is or
    /// quantized to 8 bits.
    Thinkwire(Activations),
}

impl Weight {
    fn packing(&self) -> Option<(Quant, Kernel)> {
        match self {
            Weight::Quantized { q, kernel, .. } => Some((*q, *kernel)),
            Weight::Dense(_) | Weight::Mxfp4 { .. } => None,
        }
    }
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
                // Weights in 16-row panels: batches of int8 activations take
                // 16 weight rows per instruction, f32 ones AMX tiles (4-bit
                // weights, where the CPU has them) and FMAs over the panels
                // (decode steps; 8-bit weights, e.g. a Q8_0 output layer,
                // always).
                let in_panels = match kernel {
                    Kernel::Thinkwire(Activations::Int8) if super::panels::available() => {
                        Some(Activations::Int8Panels)
                    }
                    Kernel::Thinkwire(Activations::F32)
                        if matches!(q.bits, 4 | 8) && super::quantized::tiles_available() =>
                    {
                        Some(Activations::F32Tiles)
                    }
                    _ => None,
                };
                match in_panels {
                    Some(act) if super::panels::fits(rows, q) => {
                        let (w, scales, biases) =
                            super::panels::repack(&w, &scales, &biases, q).map_err(&err)?;
                        LinearWeight::Quantized {
                            w,
                            scales,
                            biases,
                            q,
                            kernel: Kernel::Thinkwire(act),
                        }
                    }
                    _ => LinearWeight::Quantized {
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
                    Kernel::Thinkwire(super::quantized::Activations::F32) => "thinkwire's kernels",
                    Kernel::Thinkwire(super::quantized::Activations::Int8) => {
                        "thinkwire's kernels, int8 activations"
                    }
                    Kernel::Thinkwire(super::quantized::Activations::Int8Panels) => {
                        "thinkwire's kernels, int8 activations, 16-row panels"
                    }
                    Kernel::Thinkwire(super::quantized::Activations::F32Tiles) if q.bits == 4 => {
                        "thinkwire's kernels, 16-row panels on AMX tiles"
                    }
                    Kernel::Thinkwire(super::quantized::Activations::F32Tiles) => {
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
            } => super::quantized::matmul(x, w, scales, biases, *q, *activations)?,
            LinearWeight::Mxfp4 {
                w,
                scales,
                kernel: Kernel::Mlx,
            } => super::mxfp4::mlx_matmul(x, w, scales)?,
            LinearWeight::Mxfp4 { w, scales, .. } => super::mxfp4::matmul(x, w, scales)?,
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
                super::mxfp4::dequantize(&w.take_axis(ids, 0)?, &scales.take_axis(ids, 0)?)
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

/// Selects `[.., start..end]` along the last axis (used for splits).
pub(crate) fn last_axis(x: &Array, start: i32, end: i32) -> mlx_rs::error::Result<Array> {
    x.try_index((.., .., start..end))
}
