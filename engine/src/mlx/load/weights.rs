//! Weights by Hugging Face name as loaded, and the precision policy
//! applied to each (the layers built from them are `model/linear.rs`).

use std::collections::HashMap;

use mlx_rs::{Array, Dtype};

use crate::EngineError;
use crate::mlx::error::mlx_err;
use crate::mlx::kernels::{
    self, Activations, Kernel, Precision, Quant, default_device_is_cpu, mxfp4,
};

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
    /// MXFP4 (`kernels/mxfp4`): `w` uint32 `[.., n, k / 8]`, `scales` e8m0
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

    /// Widens every affine weight's f16 or bf16 scales and biases to f32
    /// when the activations are f32. MLX's quantized matmul computes in the
    /// common type of its input and the scales, so f16 scales beside f32
    /// activations (a GGUF under `keep`, or on a GPU) were widened again
    /// by two more operations per matrix on every step. f16 and bf16 are
    /// exact in f32, so the products are unchanged.
    pub fn widen_scales_for(&mut self, activations: Dtype) -> Result<(), EngineError> {
        if activations != Dtype::Float32 {
            return Ok(());
        }
        let narrow: Vec<String> = self
            .tensors
            .iter()
            .filter(|(name, a)| {
                (name.ends_with(".scales") || name.ends_with(".biases"))
                    && matches!(a.dtype(), Dtype::Float16 | Dtype::Bfloat16)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in narrow {
            if let Some(a) = self.tensors.remove(&name) {
                let wide = a
                    .as_dtype(Dtype::Float32)
                    .map_err(mlx_err("widening quantization scales"))?;
                self.tensors.insert(name, wide);
            }
        }
        Ok(())
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
                let d = mxfp4::dequantize(&w, &scales).map_err(&err)?;
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
            (Precision::Auto | Precision::Int8, w) if !default_device_is_cpu() => w,
            (
                Precision::Auto | Precision::Int8,
                Weight::Quantized {
                    w,
                    scales,
                    biases,
                    q,
                    ..
                },
            ) if kernels::supported(q) => Weight::Quantized {
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

    /// Its output rows (the first axis: weights are `[out, in]`).
    pub(crate) fn rows(&self) -> i32 {
        let (Weight::Dense(w) | Weight::Quantized { w, .. } | Weight::Mxfp4 { w, .. }) = self;
        w.shape().first().copied().unwrap_or(0)
    }

    /// Its packing and kernel, when affine-quantized (weights fused into
    /// one layer must share them).
    pub(crate) fn packing(&self) -> Option<(Quant, Kernel)> {
        match self {
            Weight::Quantized { q, kernel, .. } => Some((*q, *kernel)),
            Weight::Dense(_) | Weight::Mxfp4 { .. } => None,
        }
    }
}
