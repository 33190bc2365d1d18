//! MXFP4 weights (gpt-oss's experts; MLX's `mxfp4` quantization mode and
//! GGUF's MXFP4 type): blocks of 32 four-bit e2m1 floats sharing an e8m0
//! scale byte. MLX packs them like its 4-bit affine weights (`uint32`
//! words, `[n, k / 8]`) with `uint8` scales `[n, k / 32]` and no biases.
//!
//! On the CPU, thinkwire's kernels (`mlx-sys/native/mxfp4/mxfp4.*`)
//! multiply them as stored, reading 4.25 bits per weight once per decode
//! step for every sequence of a batch, a row's result independent of its
//! batch; prefill goes through dequantized tiles and BLAS. MLX's own
//! operations serve `--precision keep` and GPUs.

use mlx_rs::Array;
use mlx_rs::error::{Exception, Result};

use super::quantized::lazy_op;

/// `x . dequantize(w, scales)^T` on thinkwire's kernels; `x` f32 `[..., k]`.
pub(crate) fn matmul(x: &Array, w: &Array, scales: &Array) -> Result<Array> {
    if x.dtype() != mlx_rs::Dtype::Float32 {
        return Err(Exception::custom(format!(
            "thinkwire MXFP4 matmul takes f32 activations, got {:?}",
            x.dtype()
        )));
    }
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_mxfp4_matmul(res, x.as_ptr(), w.as_ptr(), scales.as_ptr(), stream)
        })
    }
}

/// Mixture-of-experts products on the kernels, as
/// `quantized::gather_matmul`: `[rows, per_row, n]` for `x` f32 `[rows,
/// k]`, `indices` uint32 `[rows, per_row]`, experts `[experts, n, k / 8]`
/// with scales `[experts, n, k / 32]`.
pub(crate) fn gather_matmul(
    x: &Array,
    indices: &Array,
    w: &Array,
    scales: &Array,
) -> Result<Array> {
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_gather_mxfp4_matmul(
                res,
                x.as_ptr(),
                indices.as_ptr(),
                w.as_ptr(),
                scales.as_ptr(),
                stream,
            )
        })
    }
}

/// MLX's `quantized_matmul` in `mxfp4` mode (`x . W^T`).
pub(crate) fn mlx_matmul(x: &Array, w: &Array, scales: &Array) -> Result<Array> {
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_mlx_mxfp4_matmul(
                res,
                x.as_ptr(),
                w.as_ptr(),
                scales.as_ptr(),
                stream,
            )
        })
    }
}

/// MLX's `gather_qmm` in `mxfp4` mode: `x` times the experts `indices`
/// pick (`sorted`: rows grouped by expert).
pub(crate) fn mlx_gather(
    x: &Array,
    w: &Array,
    scales: &Array,
    indices: &Array,
    sorted: bool,
) -> Result<Array> {
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_mlx_mxfp4_gather(
                res,
                x.as_ptr(),
                w.as_ptr(),
                scales.as_ptr(),
                indices.as_ptr(),
                sorted,
                stream,
            )
        })
    }
}

/// The weights as f32 (MLX's `dequantize` in `mxfp4` mode).
pub(crate) fn dequantize(w: &Array, scales: &Array) -> Result<Array> {
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_mlx_mxfp4_dequantize(res, w.as_ptr(), scales.as_ptr(), stream)
        })
    }
}

/// `y[m, n] = x[m, k] . W^T` now, on raw buffers, by `path` (0 default, 1
/// kernels for all rows, 2 kernels row by row, 3 BLAS tiles).
#[cfg(test)]
pub(crate) fn matmul_raw(
    x: &[f32],
    m: usize,
    k: usize,
    w: &[u8],
    scales: &[u8],
    n: usize,
    path: i32,
) -> std::result::Result<Vec<f32>, String> {
    if x.len() != m * k || w.len() != n * k / 2 || scales.len() != n * (k / 32) {
        return Err(format!("buffer sizes do not match m={m}, n={n}, k={k}"));
    }
    let int = |v: usize| i32::try_from(v).map_err(|_| format!("{v} is too large"));
    let mut y = vec![0.0f32; m * n];
    // SAFETY: the buffer sizes were checked above against m, n and k.
    let rc = unsafe {
        mlx_sys::thinkwire_mxfp4_matmul_raw(
            x.as_ptr(),
            int(m)?,
            int(k)?,
            w.as_ptr(),
            scales.as_ptr(),
            int(n)?,
            y.as_mut_ptr(),
            path,
        )
    };
    if rc != 0 {
        return Err(super::error::last_error());
    }
    Ok(y)
}

#[cfg(test)]
mod tests;
