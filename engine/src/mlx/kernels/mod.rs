//! thinkwire's native kernels (`mlx-sys/native`) as MLX operations, and the
//! choice of which of them (or MLX's own) multiplies a weight.
//!
//! This folder holds the only unsafe code of the workspace outside mlx-sys
//! (the FFI calls of `quantized`, `panels`, `mxfp4`, `fused`, `draw` and `compiled`, each
//! behind a safe function), and imports nothing else of `mlx/`. The rest
//! of the engine sees the choice ([`Quant`], [`Precision`], [`Kernel`],
//! [`Activations`], [`kernel_activations`], [`in_panels`], [`supported`]),
//! the products (`quantized`, `mxfp4`, [`repack_in_panels`]), the fused
//! decode-step operations (`fused`), a step's token draw on the CPU
//! (`draw`) and the functions MLX compiles (`compiled`).

mod choice;
// FFI into thinkwire's MLX-compiled functions (mlx-sys/native/compiled).
#[allow(unsafe_code)]
pub(crate) mod compiled;
// FFI into thinkwire's one-operation token draw (mlx-sys/native/draw).
#[allow(unsafe_code)]
pub(crate) mod draw;
// FFI: the C API's error slot, read by every module below.
#[allow(unsafe_code)]
mod error;
// FFI into thinkwire's fused operations (mlx-sys/native).
#[allow(unsafe_code)]
pub(crate) mod fused;
// FFI: which GPU backend MLX was built with; waiting for its queued work.
#[allow(unsafe_code)]
mod device;
// FFI: MLX's graph export, to count a step's operations.
#[allow(unsafe_code)]
pub(crate) mod graph;
// FFI into thinkwire's MXFP4 kernels and MLX's own MXFP4 operations.
#[allow(unsafe_code)]
pub(crate) mod mxfp4;
// FFI into thinkwire's int8 panel repacking (mlx-sys/native).
#[allow(unsafe_code)]
mod panels;
// FFI: MLX's gathers and scatters that mlx-rs does not reach (the batch
// cache's writes and a shared prefix's rows, a step's penalties counting
// its tokens).
#[allow(unsafe_code)]
pub(crate) mod indexed;
// FFI into thinkwire's quantized kernels (mlx-sys/native).
#[allow(unsafe_code)]
pub(crate) mod quantized;

pub use self::choice::Precision;
pub(crate) use self::choice::{Activations, Kernel, Quant, default_device_is_cpu};
pub use self::device::device_name;
pub(crate) use self::device::{
    ONE_ROW_GEMV_OUTPUTS, at_exit, device_memory, one_row_gemv_outputs, synchronize_this_thread,
    wire_for_generation,
};
pub(crate) use self::panels::repack as repack_in_panels;
pub(crate) use self::quantized::supported;
pub use self::quantized::{int8_isa, kernel_threads, kernel_time, tiles_available};

/// The activations thinkwire's kernels multiply packed weights with under
/// `precision` (`auto`: x as it is, `int8`: in 8 bits); `None` under the
/// other policies and off the CPU (the kernels run nowhere else).
pub(crate) fn kernel_activations(precision: Precision) -> Option<Activations> {
    match precision {
        Precision::Auto => Some(Activations::F32),
        Precision::Int8 => Some(Activations::Int8),
        _ => None,
    }
    .filter(|_| default_device_is_cpu())
}

/// Whether a weight of `rows` rows in format `q`, bound for `kernel`, is
/// held in 16-row panels ([`repack_in_panels`]), and the activations that
/// then multiply it: batches of int8 activations take 16 weight rows per
/// instruction, f32 ones AMX tiles (4-bit weights, where the CPU has them)
/// and FMAs over the panels (decode steps; 8-bit weights, e.g. a Q8_0
/// output layer, always).
pub(crate) fn in_panels(kernel: Kernel, q: Quant, rows: usize) -> Option<Activations> {
    let act = match kernel {
        Kernel::Thinkwire(Activations::Int8) if panels::available() => Activations::Int8Panels,
        Kernel::Thinkwire(Activations::F32) if matches!(q.bits, 4 | 8) && tiles_available() => {
            Activations::F32Tiles
        }
        _ => return None,
    };
    panels::fits(rows, q).then_some(act)
}
