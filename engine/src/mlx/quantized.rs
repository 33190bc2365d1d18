//! thinkwire's CPU kernels for MLX-quantized weights (`mlx-sys/native`), as
//! an MLX operation.
//!
//! MLX's CPU backend multiplies quantized weights in generic loops that are
//! slower than BLAS on the same weights dequantized to f32, although the
//! packed form is 4-8x fewer bytes. thinkwire's kernels read the packed
//! bytes once per decode step on all cores (AVX2 where the CPU has it) and
//! hand prefill to BLAS tile by tile, so a quantized model decodes faster
//! than its f32 copy and keeps its small footprint.

use std::ffi::CStr;

use mlx_rs::error::Exception;
use mlx_rs::{Array, Device, DeviceType, Dtype, StreamOrDevice};

use super::weights::Quant;

/// Whether the kernels handle this quantization (4 or 8 bits, groups of
/// 32, 64 or 128).
pub(crate) fn supported(q: Quant) -> bool {
    // SAFETY: a pure function of two integers.
    unsafe { mlx_sys::thinkwire_quantized_supported(q.group_size, q.bits) }
}

/// Whether MLX's default device is the CPU (the kernels run nowhere else).
pub(crate) fn default_device_is_cpu() -> bool {
    matches!(Device::default().get_type(), Ok(DeviceType::Cpu))
}

/// Threads the kernels use (`THINKWIRE_KERNEL_THREADS`, else every CPU this
/// process may run on, at most 16).
pub fn kernel_threads() -> usize {
    // SAFETY: reads a lazily built, never destroyed thread pool.
    let n = unsafe { mlx_sys::thinkwire_kernel_threads() };
    usize::try_from(n).unwrap_or(1)
}

/// `x . dequantize(w, scales, biases)^T` as one lazy operation; `x` is f32
/// `[..., k]`, `scales`/`biases` f32.
pub(crate) fn matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    q: Quant,
) -> mlx_rs::error::Result<Array> {
    if x.dtype() != Dtype::Float32 {
        return Err(Exception::custom(format!(
            "thinkwire quantized matmul takes f32 activations, got {:?}",
            x.dtype()
        )));
    }
    let stream = StreamOrDevice::default();
    // SAFETY: every handle is a live mlx_array/mlx_stream owned by the
    // caller; `res` is a fresh handle that either receives the result (and
    // is then owned by the returned Array) or is freed here.
    unsafe {
        let mut res = mlx_sys::mlx_array_new();
        let rc = mlx_sys::thinkwire_quantized_matmul(
            &mut res,
            x.as_ptr(),
            w.as_ptr(),
            scales.as_ptr(),
            biases.as_ptr(),
            q.group_size,
            q.bits,
            stream.as_ref().as_ptr(),
        );
        if rc != 0 {
            mlx_sys::mlx_array_free(res);
            let msg = CStr::from_ptr(mlx_sys::thinkwire_last_error())
                .to_string_lossy()
                .into_owned();
            return Err(Exception::custom(msg));
        }
        Ok(Array::from_ptr(res))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx_rs::ops::{dequantize, quantize};

    fn close(a: &Array, b: &Array, tol: f32) -> f32 {
        let diff = a.subtract(b).unwrap().abs().unwrap().max(None).unwrap();
        let scale = b.abs().unwrap().max(None).unwrap();
        let (d, s) = (diff.item_exact::<f32>(), scale.item_exact::<f32>());
        assert!(d <= tol * s.max(1.0), "max |diff| {d} over max |ref| {s}");
        d
    }

    /// The kernel against MLX's dequantize + f32 matmul, for every format
    /// it supports, a decode-sized and a prefill-sized input, and a strided
    /// view as input.
    #[test]
    fn matches_dequantized_matmul() {
        mlx_rs::random::seed(7).unwrap();
        for bits in [4, 8] {
            for group_size in [32, 64, 128] {
                let q = Quant { group_size, bits };
                assert!(supported(q));
                let (n, k) = (99, 256); // odd: row tails
                let wf = mlx_rs::random::normal::<f32>(&[n, k], None, None, None).unwrap();
                let (w, s, b) = quantize(&wf, group_size, bits).unwrap();
                let (s, b) = (
                    s.as_dtype(Dtype::Float32).unwrap(),
                    b.as_dtype(Dtype::Float32).unwrap(),
                );
                let dense = dequantize(&w, &s, &b, group_size, bits).unwrap();
                for m in [1, 3, 17] {
                    let x = mlx_rs::random::normal::<f32>(&[1, m, k], None, None, None).unwrap();
                    let got = matmul(&x, &w, &s, &b, q).unwrap();
                    assert_eq!(got.shape(), &[1, m, n]);
                    let want = x.matmul(dense.transpose().unwrap()).unwrap();
                    close(&got, &want, 1e-5);
                }
                // A transposed (non-contiguous) input.
                let xt = mlx_rs::random::normal::<f32>(&[k, 2], None, None, None)
                    .unwrap()
                    .transpose()
                    .unwrap();
                let got = matmul(&xt, &w, &s, &b, q).unwrap();
                let want = xt.matmul(dense.transpose().unwrap()).unwrap();
                close(&got, &want, 1e-5);
            }
        }
    }

    /// The portable loops (what CPUs without AVX2 run), checked by running
    /// the test above in a child process that asks for them.
    #[test]
    fn portable_kernels_match_too() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "mlx::quantized::tests::matches_dequantized_matmul",
                "--exact",
                "--test-threads=1",
            ])
            .env("THINKWIRE_KERNEL_ISA", "portable")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("1 passed"), "{text}");
    }

    #[test]
    fn refuses_what_it_cannot_compute() {
        let wf = mlx_rs::random::normal::<f32>(&[8, 64], None, None, None).unwrap();
        let (w, s, b) = quantize(&wf, 32, 2).unwrap();
        let (s, b) = (
            s.as_dtype(Dtype::Float32).unwrap(),
            b.as_dtype(Dtype::Float32).unwrap(),
        );
        let x = mlx_rs::random::normal::<f32>(&[1, 64], None, None, None).unwrap();
        let q = Quant {
            group_size: 32,
            bits: 2,
        };
        assert!(!supported(q));
        let err = matmul(&x, &w, &s, &b, q).unwrap_err();
        assert!(err.what().contains("2-bit"), "{}", err.what());
        // Mismatched input width names the shapes.
        let (w4, s4, b4) = quantize(&wf, 32, 4).unwrap();
        let (s4, b4) = (
            s4.as_dtype(Dtype::Float32).unwrap(),
            b4.as_dtype(Dtype::Float32).unwrap(),
        );
        let x32 = mlx_rs::random::normal::<f32>(&[1, 32], None, None, None).unwrap();
        let q4 = Quant {
            group_size: 32,
            bits: 4,
        };
        let err = matmul(&x32, &w4, &s4, &b4, q4).unwrap_err();
        assert!(err.what().contains("shapes do not match"), "{}", err.what());
        // Empty inputs are refused, not divided by.
        let x0 = mlx_rs::ops::zeros::<f32>(&[1, 0]).unwrap();
        let w0 = mlx_rs::ops::zeros_dtype(&[8, 0], Dtype::Uint32).unwrap();
        let s0 = mlx_rs::ops::zeros::<f32>(&[8, 0]).unwrap();
        let err = matmul(&x0, &w0, &s0, &s0, q4).unwrap_err();
        assert!(err.what().contains("must not be empty"), "{}", err.what());
        assert!(kernel_threads() >= 1);
    }
}
