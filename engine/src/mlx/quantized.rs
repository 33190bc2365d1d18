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

/// Up to this many rows of x (the sequences of a batched decode step), the
/// kernels read the weights once for all rows and every row's result is
/// bit-identical to that row's alone; longer inputs go through BLAS.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn max_kernel_rows() -> usize {
    // SAFETY: returns a constant.
    let n = unsafe { mlx_sys::thinkwire_kernel_max_rows() };
    usize::try_from(n).unwrap_or(1)
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
    /// (`mlx-sys/native/quantized_tiles.h`): x split exactly into three
    /// bf16 parts, exact products, f32 sums (`F32`'s accuracy, its
    /// rounding in another order); a batch of 8 costs ~2x one row, not
    /// ~3.5x, and prompts skip BLAS. Decode steps (up to 8 rows) run on
    /// AVX-512 FMAs over the same panels (`mlx-sys/native/panel_fma.h`),
    /// whose rounding differs from the tiles' in the last bits; 8-bit
    /// weights in panels (a Q8_0 output layer) run on those FMAs always.
    F32Tiles = 3,
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

/// The message of this thread's last failed call into the native code.
pub(super) fn last_error() -> String {
    // SAFETY: a NUL-terminated string owned by this thread, copied at once.
    let msg = unsafe { CStr::from_ptr(mlx_sys::thinkwire_last_error()) };
    msg.to_string_lossy().into_owned()
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
mod bench;

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

    /// Experts on the kernels: every (row, pick) is the product of that row
    /// with the expert alone, bit for bit (rows routed to one expert share
    /// its pass, as a batch does); an index past the experts gives NaN.
    #[test]
    fn gather_matmul_is_each_experts_product() {
        mlx_rs::random::seed(11).unwrap();
        let (experts, n, k) = (5, 24, 64);
        let q = Quant {
            group_size: 32,
            bits: 4,
        };
        let wf = mlx_rs::random::normal::<f32>(&[experts, n, k], None, None, None).unwrap();
        let (w, s, b) = quantize(&wf, 32, 4).unwrap();
        let (s, b) = (
            s.as_dtype(Dtype::Float32).unwrap(),
            b.as_dtype(Dtype::Float32).unwrap(),
        );
        let x = mlx_rs::random::normal::<f32>(&[7, k], None, None, None).unwrap();
        // Repeats across rows, so some experts take several rows.
        let picks: [u32; 14] = [0, 3, 3, 1, 4, 0, 2, 3, 0, 1, 3, 4, 9, 2];
        let idx = Array::from_slice(&picks, &[7, 2]);
        let got = gather_matmul(&x, &idx, &w, &s, &b, q, Activations::F32).unwrap();
        assert_eq!(got.shape(), &[7, 2, n]);
        got.eval().unwrap();
        let got = got.as_slice::<f32>().to_vec();
        use mlx_rs::ops::indexing::TryIndexOp;
        for (slot, &e) in picks.iter().enumerate() {
            let row = &got[slot * n as usize..(slot + 1) * n as usize];
            if e as i32 >= experts {
                assert!(row.iter().all(|v| v.is_nan()), "slot {slot}");
                continue;
            }
            let r = slot as i32 / 2;
            let e = e as i32;
            let alone = matmul(
                &x.try_index(r..r + 1).unwrap(),
                &w.try_index(e).unwrap(),
                &s.try_index(e).unwrap(),
                &b.try_index(e).unwrap(),
                q,
                Activations::F32,
            )
            .unwrap();
            alone.eval().unwrap();
            assert_eq!(
                bits_of(row),
                bits_of(alone.as_slice::<f32>()),
                "slot {slot}"
            );
        }
        let bad = Array::from_slice(&[0u32, 1], &[1, 2]);
        let err = gather_matmul(&x, &bad, &w, &s, &b, q, Activations::F32).unwrap_err();
        assert!(err.what().contains("shapes do not match"), "{}", err.what());
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
                for m in [1, 3, 8, 17] {
                    let x = mlx_rs::random::normal::<f32>(&[1, m, k], None, None, None).unwrap();
                    let got = matmul(&x, &w, &s, &b, q, Activations::F32).unwrap();
                    assert_eq!(got.shape(), &[1, m, n]);
                    let want = x.matmul(dense.transpose().unwrap()).unwrap();
                    close(&got, &want, 1e-5);
                    // 8-bit x: the stated tolerance (17 rows go through
                    // BLAS in f32 either way).
                    let got = matmul(&x, &w, &s, &b, q, Activations::Int8).unwrap();
                    let tol = if m <= 16 { 3e-2 } else { 1e-5 };
                    let d = close(&got, &want, tol);
                    if m <= 16 {
                        assert!(
                            d > 0.0,
                            "8-bit x rounds: a result equal to f32's means f32 ran"
                        );
                    }
                }
                // A transposed (non-contiguous) input.
                let xt = mlx_rs::random::normal::<f32>(&[k, 2], None, None, None)
                    .unwrap()
                    .transpose()
                    .unwrap();
                let got = matmul(&xt, &w, &s, &b, q, Activations::F32).unwrap();
                let want = xt.matmul(dense.transpose().unwrap()).unwrap();
                close(&got, &want, 1e-5);
            }
        }
    }

    fn bits_of(v: &[f32]) -> Vec<u32> {
        v.iter().map(|f| f.to_bits()).collect()
    }

    /// Every row of a multi-row product is bit-identical to that row alone
    /// (a batched decode step must pick the tokens of decoding alone): each
    /// format, 1 to 9 and 16 rows (passes of 4 and every remainder), odd n (row
    /// tails), a matrix small enough for one thread and one split over the
    /// pool; through the kernels directly and through the MLX operation up
    /// to the rows it keeps on the kernels; with x as it is and in 8 bits.
    #[test]
    fn rows_match_each_row_alone_exactly() {
        mlx_rs::random::seed(11).unwrap();
        let max_rows = max_kernel_rows();
        assert!(max_rows >= 8, "a batch of 8 must stay on the kernels");
        for (act, bits) in [Activations::F32, Activations::Int8]
            .into_iter()
            .flat_map(|a| [(a, 4), (a, 8)])
        {
            for group_size in [32, 64, 128] {
                let q = Quant { group_size, bits };
                for (n, k) in [(37, 384), (301, 512)] {
                    let (w, s, b, packed) = random_packed(n, k, q);
                    let ku = k as usize;
                    for m in (1..=9usize).chain([16]) {
                        let x = mlx_rs::random::normal::<f32>(&[m as i32, k], None, None, None)
                            .unwrap();
                        let xs = x.as_slice::<f32>().to_vec();
                        let got = packed.matmul_now_with(&xs, m, Path::Kernel, act).unwrap();
                        let via_mlx = (m <= max_rows).then(|| {
                            let y = matmul(&x, &w, &s, &b, q, act).unwrap();
                            y.as_slice::<f32>().to_vec()
                        });
                        for i in 0..m {
                            let row = &xs[i * ku..(i + 1) * ku];
                            let alone = packed.matmul_now_with(row, 1, Path::Auto, act).unwrap();
                            let nu = n as usize;
                            let what = format!(
                                "{act:?}, {bits}-bit, groups of {group_size}, n {n}, m {m}, row {i}"
                            );
                            assert_eq!(
                                bits_of(&got[i * nu..(i + 1) * nu]),
                                bits_of(&alone),
                                "{what}"
                            );
                            let one = Array::from_slice(row, &[1, k]);
                            let one = matmul(&one, &w, &s, &b, q, act).unwrap();
                            assert_eq!(bits_of(one.as_slice::<f32>()), bits_of(&alone), "{what}");
                            if let Some(y) = &via_mlx {
                                assert_eq!(
                                    bits_of(&y[i * nu..(i + 1) * nu]),
                                    bits_of(&alone),
                                    "{what}"
                                );
                            }
                        }
                        // Row by row is the same computation again.
                        let by_row = packed.matmul_now_with(&xs, m, Path::RowByRow, act).unwrap();
                        assert_eq!(bits_of(&by_row), bits_of(&got));
                    }
                }
            }
        }
    }

    /// The plain-buffer entry refuses sizes that do not match.
    #[test]
    fn matmul_now_checks_sizes() {
        let q = Quant {
            group_size: 32,
            bits: 4,
        };
        let (_, _, _, packed) = random_packed(8, 64, q);
        let err = packed.matmul_now(&[0.0; 63], 1, Path::Auto).unwrap_err();
        assert!(err.contains("do not match"), "{err}");
        let y = packed.matmul_now(&[0.0; 128], 2, Path::Blas).unwrap();
        assert_eq!(y, vec![0.0; 16]);
    }

    /// x rounded as the int8 path rounds it: per block of 32, q =
    /// round(x * 127 / max|x|) (ties to even), x' = q * max|x| / 127.
    fn int8_rounded(x: &[f32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(x.len());
        for block in x.chunks(32) {
            let amax = block.iter().fold(0.0f32, |a, v| a.max(v.abs()));
            let id = if amax == 0.0 { 0.0 } else { 127.0 / amax };
            out.extend(
                block
                    .iter()
                    .map(|v| (v * id).round_ties_even() * (amax / 127.0)),
            );
        }
        out
    }

    /// The int8 path computes exactly the dequantized weights times x
    /// rounded to 8 bits (bias terms included: their sums are of the
    /// rounded x too), so its only error is x's rounding, ~0.5 % of the
    /// product for normal data.
    #[test]
    fn int8_error_is_the_rounding_of_x_alone() {
        mlx_rs::random::seed(5).unwrap();
        for bits in [4, 8] {
            for group_size in [32, 128] {
                let (n, k) = (96, 512);
                let wf = mlx_rs::random::normal::<f32>(&[n, k], None, None, None).unwrap();
                let (w, s, b) = quantize(&wf, group_size, bits).unwrap();
                let q = Quant { group_size, bits };
                let dense = dequantize(&w, &s, &b, group_size, bits).unwrap();
                let x = mlx_rs::random::normal::<f32>(&[3, k], None, None, None).unwrap();
                let rounded = int8_rounded(x.as_slice::<f32>());
                let xr = Array::from_slice(&rounded, &[3, k]);
                let want = xr.matmul(dense.transpose().unwrap()).unwrap();
                let got = matmul(&x, &w, &s, &b, q, Activations::Int8).unwrap();
                close(&got, &want, 1e-5);
                // And that rounding costs about half a percent.
                let exact = x.matmul(dense.transpose().unwrap()).unwrap();
                let err = got
                    .subtract(&exact)
                    .unwrap()
                    .square()
                    .unwrap()
                    .sum(None)
                    .unwrap();
                let norm = exact.square().unwrap().sum(None).unwrap();
                let rel = (err.item_exact::<f32>() / norm.item_exact::<f32>()).sqrt();
                assert!(rel < 0.008, "{bits}-bit, groups of {group_size}: {rel}");
            }
        }
    }

    /// NaN and infinite activations (a diverging model) give garbage, not
    /// undefined behaviour: both paths clamp before converting to int8,
    /// and a finite row beside them is unaffected.
    #[test]
    fn int8_survives_non_finite_inputs() {
        let (n, k) = (16, 64);
        let q = Quant {
            group_size: 32,
            bits: 4,
        };
        let (_, _, _, packed) = random_packed(n, k, q);
        let mut x: Vec<f32> = (0..2 * k).map(|i| (i as f32 * 0.37).sin()).collect();
        x[3] = f32::NAN;
        x[40] = f32::INFINITY;
        let both = packed
            .matmul_now_with(&x, 2, Path::Kernel, Activations::Int8)
            .unwrap();
        let alone = packed
            .matmul_now_with(&x[k as usize..], 1, Path::Kernel, Activations::Int8)
            .unwrap();
        assert_eq!(bits_of(&both[n as usize..]), bits_of(&alone));
        assert!(alone.iter().all(|v| v.is_finite()));
    }

    /// The portable loops (what CPUs without AVX2 run), the AVX2 f32
    /// kernels (what CPUs without AVX-512 run) and the plain AVX2 int8
    /// kernels (what CPUs without VNNI run), checked by running the tests
    /// above in child processes that ask for them.
    #[test]
    fn portable_and_avx2_kernels_match_too() {
        run_under_narrower_isas(&[
            "mlx::quantized::tests::matches_dequantized_matmul",
            "mlx::quantized::tests::rows_match_each_row_alone_exactly",
            "mlx::quantized::tests::reports_the_isa",
            "mlx::quantized::tests::int8_error_is_the_rounding_of_x_alone",
            "mlx::quantized::tests::int8_survives_non_finite_inputs",
            "mlx::quantized::tests::gather_matmul_is_each_experts_product",
        ]);
    }

    /// The int8 kernels name the instruction set they run, and honour the
    /// cap the test above sets.
    #[test]
    fn reports_the_isa() {
        let isa = int8_isa();
        assert!(
            ["avx512-vnni", "avx-vnni", "avx2", "portable"].contains(&isa.as_str()),
            "{isa}"
        );
        match std::env::var("THINKWIRE_KERNEL_ISA").as_deref() {
            Ok("portable") => assert_eq!(isa, "portable"),
            Ok("avx2") if cfg!(target_arch = "x86_64") => assert_eq!(isa, "avx2"),
            _ => {}
        }
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
        let err = matmul(&x, &w, &s, &b, q, Activations::F32).unwrap_err();
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
        let err = matmul(&x32, &w4, &s4, &b4, q4, Activations::F32).unwrap_err();
        assert!(err.what().contains("shapes do not match"), "{}", err.what());
        // Empty inputs are refused, not divided by.
        let x0 = mlx_rs::ops::zeros::<f32>(&[1, 0]).unwrap();
        let w0 = mlx_rs::ops::zeros_dtype(&[8, 0], Dtype::Uint32).unwrap();
        let s0 = mlx_rs::ops::zeros::<f32>(&[8, 0]).unwrap();
        let err = matmul(&x0, &w0, &s0, &s0, q4, Activations::F32).unwrap_err();
        assert!(err.what().contains("must not be empty"), "{}", err.what());
        assert!(kernel_threads() >= 1);
    }
}
