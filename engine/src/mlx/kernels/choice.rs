//! What multiplies a weight: its quantization format ([`Quant`]), the
//! precision policy ([`Precision`]) and the kernel it selects ([`Kernel`],
//! [`Activations`]).

use mlx_rs::{Device, DeviceType, Dtype};

/// What precision the weights are kept in after loading.
///
/// On a CPU, MLX sends only f32 matmuls to BLAS; its half-precision and
/// quantized matmuls run generic loops, much slower per FLOP. thinkwire's
/// own kernels (`kernels/quantized`) make 4- and 8-bit weights the fast path
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
    /// (`bench/precision_parity.rs`). On a GPU, `Auto`.
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
            Self::Auto | Self::Int8 if !default_device_is_cpu() => None,
            Self::Auto | Self::Int8 | Self::F32 => Some(Dtype::Float32),
            Self::Bf16 => Some(Dtype::Bfloat16),
            Self::Keep => None,
        }
    }
}

/// Whether MLX's default device is the CPU (the kernels run nowhere else).
pub(crate) fn default_device_is_cpu() -> bool {
    matches!(Device::default().get_type(), Ok(DeviceType::Cpu))
}

/// Affine quantization parameters of one tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quant {
    pub group_size: i32,
    pub bits: i32,
}

/// Who multiplies a quantized weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// MLX's quantized matmul.
    Mlx,
    /// thinkwire's CPU kernels (`kernels/quantized`), with x as it is or
    /// quantized to 8 bits.
    Thinkwire(Activations),
}

/// What the kernels multiply the packed weights with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activations {
    /// x as it is: the product of the dequantized weights up to float
    /// rounding (what mlx-lm computes on the same weights).
    F32 = 0,
    /// x quantized to 8 bits per block of 32 (scale max|x| / 127) and
    /// integer dot products (AVX2, VNNI where the CPU has it): ~1.5x the
    /// kernels' speed, ~0.5 % relative error per product.
    Int8 = 1,
    /// As `Int8`, the weights repacked in panels of 16 rows at load
    /// (`panels.rs`): batches take 16 rows per integer instruction.
    Int8Panels = 2,
    /// x as it is against 4-bit weights in those panels, on AMX-BF16 tiles
    /// (`mlx-sys/native/panels/bf16_tiles.h`): x split exactly into three
    /// bf16 parts, exact products, f32 sums (`F32`'s accuracy, its
    /// rounding in another order); a batch of 8 costs ~2x one row, not
    /// ~3.5x, and prompts skip BLAS. Decode steps (up to 8 rows) run on
    /// AVX-512 FMAs over the same panels (`mlx-sys/native/panels/fma.h`),
    /// whose rounding differs from the tiles' in the last bits; 8-bit
    /// weights in panels (a Q8_0 output layer) run on those FMAs always.
    F32Tiles = 3,
}
