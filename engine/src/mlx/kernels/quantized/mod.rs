//! thinkwire's CPU kernels for MLX-quantized weights (`mlx-sys/native`), as
//! an MLX operation.
//!
//! MLX's CPU backend multiplies quantized weights in generic loops that are
//! slower than BLAS on the same weights dequantized to f32, although the
//! packed form is 4-8x fewer bytes. thinkwire's kernels read the packed
//! bytes once per decode step on all cores (AVX2 where the CPU has it) and
//! hand prefill to BLAS tile by tile, so a quantized model decodes faster
//! than its f32 copy and keeps its small footprint. A batched decode step
//! (one row of x per sequence, up to [`max_kernel_rows`]) reads the packed
//! weights once for all its rows, and each row's result is bit-identical to
//! what that row alone gives.

use std::ffi::CStr;

use mlx_rs::error::Exception;
use mlx_rs::{Array, Dtype, StreamOrDevice};

use super::choice::{Activations, Quant};
use super::error::last_error;

/// Whether the kernels handle this quantization (4 or 8 bits, groups of
/// 32, 64 or 128).
pub(crate) fn supported(q: Quant) -> bool {
    // SAFETY: a pure function of two integers.
    unsafe { mlx_sys::thinkwire_quantized_supported(q.group_size, q.bits) }
}

/// Threads the kernels use (`THINKWIRE_KERNEL_THREADS`, else every CPU this
/// process may run on, at most 16).
pub fn kernel_threads() -> usize {
    // SAFETY: reads a lazily built, never destroyed thread pool.
    let n = unsafe { mlx_sys::thinkwire_kernel_threads() };
    usize::try_from(n).unwrap_or(1)
}

/// Up to this many rows of x (the sequences of a batched decode step), the
/// kernels read the weights once for all rows and every row's result is
/// bit-identical to that row's alone; longer inputs go through BLAS.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn max_kernel_rows() -> usize {
    // SAFETY: returns a constant.
    let n = unsafe { mlx_sys::thinkwire_kernel_max_rows() };
    usize::try_from(n).unwrap_or(1)
}

/// Whether this CPU and process run [`Activations::F32Tiles`] (AMX-BF16,
/// granted by the kernel; `THINKWIRE_KERNEL_ISA=avx512` or below says no).
pub fn tiles_available() -> bool {
    // SAFETY: reads a CPU feature check.
    unsafe { mlx_sys::thinkwire_f32_tiles_available() }
}

/// The instruction set the int8 kernels use on this CPU (`avx512-vnni`,
/// `avx-vnni`, `avx2` or `portable`).
pub fn int8_isa() -> String {
    // SAFETY: returns a static NUL-terminated string.
    let name = unsafe { CStr::from_ptr(mlx_sys::thinkwire_int8_isa()) };
    name.to_string_lossy().into_owned()
}

/// Time the MLX operation of [`matmul`] has spent in the kernels since the
/// process started, and how many times it ran (the per-step breakdown of
/// `thinkwire bench`).
pub fn kernel_time() -> (std::time::Duration, u64) {
    let (mut ns, mut calls) = (0u64, 0u64);
    // SAFETY: writes two integers through valid pointers.
    unsafe { mlx_sys::thinkwire_kernel_time(&mut ns, &mut calls) };
    (std::time::Duration::from_nanos(ns), calls)
}

/// How [`matmul_now`] computes (tests and the kernel benchmark compare them).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// What [`matmul`] does: the kernels up to [`max_kernel_rows`] rows
    /// (int8 panels: any number).
    Auto = 0,
    /// The kernels, one pass over the weights for all rows of x.
    Kernel = 1,
    /// The kernels, one pass over the weights per row of x.
    RowByRow = 2,
    /// Dequantized tiles through BLAS.
    Blas = 3,
}

/// A quantized matrix as plain buffers: `w` is MLX's packing as bytes,
/// `[n, k * bits / 8]`; `scales` and `biases` `[n, k / group_size]`.
#[cfg(test)]
pub(crate) struct Packed {
    pub w: Vec<u8>,
    pub scales: Vec<f32>,
    pub biases: Vec<f32>,
    pub n: usize,
    pub k: usize,
    pub q: Quant,
}

#[cfg(test)]
impl Packed {
    /// `y[m, n] = x[m, k] . W^T`, computed now (no MLX graph) by `path`.
    pub(crate) fn matmul_now(&self, x: &[f32], m: usize, path: Path) -> Result<Vec<f32>, String> {
        self.matmul_now_with(x, m, path, Activations::F32)
    }

    /// [`Packed::matmul_now`] with a choice of activations.
    pub(crate) fn matmul_now_with(
        &self,
        x: &[f32],
        m: usize,
        path: Path,
        act: Activations,
    ) -> Result<Vec<f32>, String> {
        let (n, k) = (self.n, self.k);
        let bits = usize::try_from(self.q.bits).map_err(|e| e.to_string())?;
        let group = usize::try_from(self.q.group_size).map_err(|e| e.to_string())?;
        if group == 0
            || x.len() != m * k
            || self.w.len() != n * k * bits / 8
            || self.scales.len() != n * (k / group)
            || self.biases.len() != self.scales.len()
        {
            return Err(format!(
                "buffer sizes do not match m={m}, n={n}, k={k}: x {}, w {}, scales {}, biases {}",
                x.len(),
                self.w.len(),
                self.scales.len(),
                self.biases.len()
            ));
        }
        let int = |v: usize| i32::try_from(v).map_err(|_| format!("{v} is too large"));
        let (mi, ki, ni) = (int(m)?, int(k)?, int(n)?);
        let mut y = vec![0.0f32; m * n];
        // SAFETY: every buffer's size was checked above against m, n, k and
        // the format; the call reads x, w, scales and biases and writes y.
        let rc = unsafe {
            mlx_sys::thinkwire_quantized_matmul_raw(
                x.as_ptr(),
                mi,
                ki,
                self.w.as_ptr(),
                self.scales.as_ptr(),
                self.biases.as_ptr(),
                ni,
                self.q.group_size,
                self.q.bits,
                y.as_mut_ptr(),
                path as i32,
                act as i32,
            )
        };
        if rc != 0 {
            return Err(last_error());
        }
        Ok(y)
    }
}

/// `x . dequantize(w, scales, biases)^T` as one lazy operation; `x` is f32
/// `[..., k]`, `scales`/`biases` f32.
pub(crate) fn matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    q: Quant,
    act: Activations,
) -> mlx_rs::error::Result<Array> {
    if x.dtype() != Dtype::Float32 {
        return Err(Exception::custom(format!(
            "thinkwire quantized matmul takes f32 activations, got {:?}",
            x.dtype()
        )));
    }
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_quantized_matmul(
                res,
                x.as_ptr(),
                w.as_ptr(),
                scales.as_ptr(),
                biases.as_ptr(),
                q.group_size,
                q.bits,
                act as i32,
                stream,
            )
        })
    }
}

/// Mixture-of-experts products on the kernels: `[rows, per_row, n]` where
/// entry `(r, j)` is `x[r] . W[indices[r, j]]^T`; `x` f32 `[rows, k]`,
/// `indices` uint32 `[rows, per_row]`, the experts stacked `[experts, n,
/// k * bits / 32]` with f32 `[experts, n, k / group_size]` scales and
/// biases. Each expert the step routes to is read once for all its rows.
pub(crate) fn gather_matmul(
    x: &Array,
    indices: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    q: Quant,
    act: Activations,
) -> mlx_rs::error::Result<Array> {
    // SAFETY: live input handles owned by the caller; see `lazy_op`.
    unsafe {
        lazy_op(|res, stream| {
            mlx_sys::thinkwire_gather_quantized_matmul(
                res,
                x.as_ptr(),
                indices.as_ptr(),
                w.as_ptr(),
                scales.as_ptr(),
                biases.as_ptr(),
                q.group_size,
                q.bits,
                act as i32,
                stream,
            )
        })
    }
}

/// Builds one lazy operation through `build`, which fills a fresh result
/// handle on the default stream and returns non-zero (with
/// `thinkwire_last_error` set) on failure.
///
/// # Safety
/// `build` must only write a fresh result into the handle it is given.
pub(super) unsafe fn lazy_op(
    build: impl FnOnce(&mut mlx_sys::mlx_array, mlx_sys::mlx_stream) -> i32,
) -> mlx_rs::error::Result<Array> {
    let stream = StreamOrDevice::default();
    // SAFETY: `res` is a fresh handle that either receives the result (and
    // is then owned by the returned Array) or is freed here; the stream
    // outlives the call.
    unsafe {
        let mut res = mlx_sys::mlx_array_new();
        if build(&mut res, stream.as_ref().as_ptr()) != 0 {
            mlx_sys::mlx_array_free(res);
            return Err(Exception::custom(last_error()));
        }
        Ok(Array::from_ptr(res))
    }
}

/// Runs `tests` (full names) in child processes whose kernels are capped
/// at the portable loops, at AVX2 and at AVX-512 without AMX tiles
/// (`THINKWIRE_KERNEL_ISA`), so a machine with AVX-512 or AMX checks the
/// paths other CPUs take; every test must pass.
#[cfg(test)]
pub(crate) fn run_under_narrower_isas(tests: &[&str]) {
    for isa in ["portable", "avx2", "avx512"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(tests)
            .args(["--exact", "--test-threads=1"])
            .env("THINKWIRE_KERNEL_ISA", isa)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{isa}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains(&format!("{} passed", tests.len())),
            "{isa}: {text}"
        );
    }
}

/// A random matrix quantized by MLX, as arrays and as plain buffers.
#[cfg(test)]
pub(crate) fn random_packed(n: i32, k: i32, q: Quant) -> (Array, Array, Array, Packed) {
    let wf = mlx_rs::random::normal::<f32>(&[n, k], None, None, None).unwrap();
    let (w, s, b) = mlx_rs::ops::quantize(&wf, q.group_size, q.bits).unwrap();
    let (s, b) = (
        s.as_dtype(Dtype::Float32).unwrap(),
        b.as_dtype(Dtype::Float32).unwrap(),
    );
    let bytes = w
        .as_slice::<u32>()
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .collect();
    let packed = Packed {
        w: bytes,
        scales: s.as_slice::<f32>().to_vec(),
        biases: b.as_slice::<f32>().to_vec(),
        n: n as usize,
        k: k as usize,
        q,
    };
    (w, s, b, packed)
}

#[cfg(test)]
mod tests;
