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
                    let x =
                        mlx_rs::random::normal::<f32>(&[m as i32, k], None, None, None).unwrap();
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
        "mlx::kernels::quantized::tests::matches_dequantized_matmul",
        "mlx::kernels::quantized::tests::rows_match_each_row_alone_exactly",
        "mlx::kernels::quantized::tests::reports_the_isa",
        "mlx::kernels::quantized::tests::int8_error_is_the_rounding_of_x_alone",
        "mlx::kernels::quantized::tests::int8_survives_non_finite_inputs",
        "mlx::kernels::quantized::tests::gather_matmul_is_each_experts_product",
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
