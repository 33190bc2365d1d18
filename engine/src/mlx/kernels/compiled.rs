//! Functions MLX compiles (`mlx-sys/native/compiled/`): on a GPU, MLX
//! fuses a compiled function's element-wise operations into one kernel,
//! where the same operations built one by one launch a kernel each. They
//! serve the path MLX's own operations run on a GPU (the CPU's `auto`
//! path has its own fused operations).
//!
//! On the CPU they stay operations one by one: MLX compiles for the CPU
//! by running the system's C++ compiler when a function first runs, which
//! a CPU box serving a model need not have, into a folder under the temp
//! directory that processes share without a lock.

use std::sync::OnceLock;

use mlx_rs::Array;
use mlx_rs::error::Result;

use super::default_device_is_cpu;
use super::fused::call;

/// Whether MLX runs on a GPU, where compiling pays (decided once).
fn on_gpu() -> bool {
    static ON_GPU: OnceLock<bool> = OnceLock::new();
    *ON_GPU.get_or_init(|| !default_device_is_cpu())
}

/// `silu(gate) * up` (SwiGLU): `gate * sigmoid(gate) * up`, one compiled
/// function on a GPU, the operations one by one on the CPU; `gate` and
/// `up` of one shape and type.
pub(crate) fn swiglu(gate: &Array, up: &Array) -> Result<Array> {
    match on_gpu() {
        true => compiled_swiglu(gate, up),
        false => plain_swiglu(gate, up),
    }
}

fn plain_swiglu(gate: &Array, up: &Array) -> Result<Array> {
    gate.multiply(mlx_rs::ops::sigmoid(gate)?)?.multiply(up)
}

/// gpt-oss's `(clip(up, ±limit) + 1) * g * sigmoid(alpha * g)` with
/// `g = min(gate, limit)`: one compiled function on a GPU, the operations
/// one by one on the CPU; constants in the step's own type (f32 ones would
/// widen a bf16 step from here on).
pub(crate) fn clamped_swiglu(gate: &Array, up: &Array, limit: f32, alpha: f32) -> Result<Array> {
    match on_gpu() {
        true => compiled_clamped_swiglu(gate, up, limit, alpha),
        false => plain_clamped_swiglu(gate, up, limit, alpha),
    }
}

fn plain_clamped_swiglu(gate: &Array, up: &Array, limit: f32, alpha: f32) -> Result<Array> {
    let c = |v: f32| Array::from_f32(v).as_dtype(gate.dtype());
    let g = mlx_rs::ops::minimum(gate, c(limit)?)?;
    let u = mlx_rs::ops::clip(up, (&c(-limit)?, &c(limit)?))?;
    let s = mlx_rs::ops::sigmoid(&g.multiply(c(alpha)?)?)?;
    u.add(c(1.0)?)?.multiply(g.multiply(s)?)
}

fn compiled_clamped_swiglu(gate: &Array, up: &Array, limit: f32, alpha: f32) -> Result<Array> {
    // SAFETY: live input handles; see `call`.
    let [out] = unsafe {
        call(|o, _| {
            mlx_sys::thinkwire_compiled_clamped_swiglu(
                &mut o[0],
                gate.as_ptr(),
                up.as_ptr(),
                limit,
                alpha,
            )
        })?
    };
    Ok(out)
}

/// [`swiglu`] as one compiled function, the same operations in the same
/// order, wherever MLX runs.
fn compiled_swiglu(gate: &Array, up: &Array) -> Result<Array> {
    // SAFETY: live input handles; see `call`.
    let [out] = unsafe {
        call(|o, _| mlx_sys::thinkwire_compiled_swiglu(&mut o[0], gate.as_ptr(), up.as_ptr()))?
    };
    Ok(out)
}

/// Gumbel noise `[rows, vocab]` (f32) for drawing tokens: at `(r, t)`,
/// `-log(-log(u))` with `u` in (0, 1) a hash of `keys[r]` (`[rows, 1]`
/// uint32) and `t`, so a row's noise depends on its key alone. One
/// compiled function on a GPU.
pub(crate) fn gumbel_noise(keys: &Array, vocab: i32) -> Result<Array> {
    noise(keys, vocab, on_gpu())
}

fn noise(keys: &Array, vocab: i32, compiled: bool) -> Result<Array> {
    // SAFETY: a live input handle; see `call`.
    let [out] = unsafe {
        call(|o, _| mlx_sys::thinkwire_gumbel_noise(&mut o[0], keys.as_ptr(), vocab, compiled))?
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use mlx_rs::{Array, Dtype};

    /// `ours` is within rounding of `theirs`: the same operations in f32,
    /// at most one rounding apart in bf16.
    fn assert_close(ours: &Array, theirs: &Array) {
        let dtype = theirs.dtype();
        let f32 = |a: &Array| a.as_dtype(Dtype::Float32).unwrap();
        let (ours, theirs) = (f32(ours), f32(theirs));
        let worst = ours
            .subtract(&theirs)
            .unwrap()
            .abs()
            .unwrap()
            .max(None)
            .unwrap();
        let scale = theirs.abs().unwrap().max(None).unwrap();
        let (worst, scale) = (worst.item_exact::<f32>(), scale.item_exact::<f32>());
        let allowed = if dtype == Dtype::Float32 { 1e-6 } else { 1e-2 };
        assert!(worst <= allowed * scale, "{dtype:?}: {worst} of {scale}");
    }

    /// The kinds of operation that evaluating `a` runs.
    fn kinds(a: &Array) -> std::collections::BTreeMap<String, usize> {
        crate::mlx::kernels::graph::operation_kinds(&[a]).unwrap()
    }

    #[test]
    fn compiles_where_mlx_runs_on_a_gpu() {
        let g = Array::from_slice(&[0.5f32, -1.0], &[1, 1, 2]);
        let compiled = kinds(&super::swiglu(&g, &g).unwrap())
            .keys()
            .any(|k| k.starts_with("Compiled"));
        assert_eq!(compiled, !super::default_device_is_cpu());
    }

    #[test]
    fn computes_what_the_operations_one_by_one_do() {
        let values: Vec<f32> = (0..96).map(|i| (i as f32 - 40.0) * 0.173).collect();
        let gu = Array::from_slice(&values, &[1, 2, 48]);
        // Views of one product, as the MLP splits it; then a bf16 pair.
        let parts = gu.split_at_indices(&[24], -1).unwrap();
        let (g, u) = (&parts[0], &parts[1]);
        let (gb, ub) = (
            g.as_dtype(Dtype::Bfloat16).unwrap(),
            u.as_dtype(Dtype::Bfloat16).unwrap(),
        );
        for (g, u) in [(g, u), (&gb, &ub)] {
            let ours = super::compiled_swiglu(g, u).unwrap();
            // One operation where the plain ones are three.
            let kinds = kinds(&ours);
            let fused: Vec<_> = kinds
                .iter()
                .filter(|(k, _)| k.starts_with("Compiled"))
                .collect();
            assert_eq!(fused.len(), 1, "{kinds:?}");
            assert_eq!(*fused[0].1, 1, "{kinds:?}");
            assert!(!kinds.contains_key("Sigmoid"), "{kinds:?}");
            assert_eq!(ours.dtype(), g.dtype());
            assert_eq!(ours.shape(), &[1, 2, 24]);
            assert_close(&ours, &super::plain_swiglu(g, u).unwrap());
        }
    }

    #[test]
    fn refuses_halves_of_different_shapes() {
        let g = Array::from_slice(&[1.0f32, 2.0], &[1, 1, 2]);
        let u = Array::from_slice(&[1.0f32, 2.0, 3.0], &[1, 1, 3]);
        let err = super::compiled_swiglu(&g, &u).unwrap_err().to_string();
        assert!(err.contains("one shape and type"), "{err}");
    }

    /// The noise of one row, evaluated.
    fn row_noise(key: u32, vocab: i32, compiled: bool) -> Vec<f32> {
        let keys = Array::from_slice(&[key], &[1, 1]);
        let g = super::noise(&keys, vocab, compiled).unwrap();
        g.eval().unwrap();
        g.as_slice::<f32>().to_vec()
    }

    #[test]
    fn gumbel_noise_follows_its_key_and_its_law() {
        let vocab = 20_000;
        let a = row_noise(7, vocab, false);
        // A key's noise is the same alone or in a batch, compiled or not.
        let keys = Array::from_slice(&[3u32, 7], &[2, 1]);
        let both = super::noise(&keys, vocab, true).unwrap();
        both.eval().unwrap();
        assert_eq!(&both.as_slice::<f32>()[vocab as usize..], a.as_slice());
        let b = row_noise(8, vocab, false);
        assert!(a.iter().zip(&b).filter(|(x, y)| x == y).count() < 10);
        // Gumbel(0, 1): mean = Euler's gamma, variance = pi^2 / 6, and
        // P(g <= 0) = exp(-1).
        let n = a.len() as f64;
        let mean = a.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        let below = a.iter().filter(|&&x| x <= 0.0).count() as f64 / n;
        assert!(a.iter().all(|x| x.is_finite()));
        assert!((mean - 0.577_2).abs() < 0.03, "mean {mean}");
        assert!((var - 1.644_9).abs() < 0.08, "variance {var}");
        assert!((below - (-1.0f64).exp()).abs() < 0.015, "P(g <= 0) {below}");
    }

    /// compiled/gumbel.cpp's mixer, to find a key by its hash.
    fn mix(mut x: u32) -> u32 {
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^ (x >> 16)
    }

    /// The hash's extremes give finite noise within [-2.82, 16.64]: with
    /// 24 bits of u, the top value's u rounded to 1 and its noise to +inf.
    #[test]
    fn gumbel_noise_stays_finite_at_the_hashs_extremes() {
        for (want, top) in [(u32::MAX >> 9, 16.64f32), (0, -2.82)] {
            // The first key whose token 0 hashes to the extreme.
            let key = (0..=u32::MAX).find(|&k| mix(mix(k)) >> 9 == want).unwrap();
            for compiled in [false, true] {
                let keys = Array::from_slice(&[key], &[1, 1]);
                let noise = super::noise(&keys, 1, compiled).unwrap();
                let g = noise.item_exact::<f32>();
                assert!(g.is_finite() && (g - top).abs() < 0.01, "{key}: {g}");
            }
        }
    }

    #[test]
    fn the_clamped_swiglu_compiled_computes_what_its_operations_do() {
        let values: Vec<f32> = (0..96).map(|i| (i as f32 - 48.0) * 0.31).collect();
        let gu = Array::from_slice(&values, &[1, 2, 48]);
        let parts = gu.split_at_indices(&[24], -1).unwrap();
        let (g, u) = (&parts[0], &parts[1]);
        for dtype in [Dtype::Float32, Dtype::Bfloat16] {
            let (g, u) = (g.as_dtype(dtype).unwrap(), u.as_dtype(dtype).unwrap());
            let ours = super::compiled_clamped_swiglu(&g, &u, 7.0, 1.702).unwrap();
            let k = kinds(&ours);
            assert!(k.keys().any(|k| k.starts_with("Compiled")), "{k:?}");
            assert!(!k.contains_key("Sigmoid"), "{k:?}");
            assert_eq!(ours.dtype(), dtype);
            assert_close(
                &ours,
                &super::plain_clamped_swiglu(&g, &u, 7.0, 1.702).unwrap(),
            );
        }
    }
}
