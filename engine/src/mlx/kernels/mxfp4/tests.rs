use super::*;
use mlx_rs::Dtype;
use mlx_rs::ops::indexing::TryIndexOp;

/// E2M1 by nibble (bit 3 the sign).
const VALUES: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// A deterministic generator (no dependency for a few thousand bytes).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn float(&mut self) -> f32 {
        (self.next() % 20000) as f32 / 10000.0 - 1.0
    }
}

/// Random MXFP4 weights `[n, k]`: any byte is a valid pair of values; the
/// scales spread over 2^-9 .. 2^4, with the subnormal e = 0 in row 0.
struct Packed {
    w: Vec<u8>,
    scales: Vec<u8>,
    n: usize,
    k: usize,
}

impl Packed {
    fn random(n: usize, k: usize, seed: u64) -> Self {
        let mut rng = Lcg(seed);
        let w = (0..n * k / 2).map(|_| rng.next() as u8).collect();
        let mut scales: Vec<u8> = (0..n * k / 32)
            .map(|_| 118 + (rng.next() % 14) as u8)
            .collect();
        scales[0] = 0;
        Packed { w, scales, n, k }
    }

    fn value(&self, r: usize, j: usize) -> f32 {
        let byte = self.w[r * self.k / 2 + j / 2];
        let nib = if j % 2 == 0 { byte & 15 } else { byte >> 4 };
        let e = self.scales[r * self.k / 32 + j / 32];
        let scale = if e == 0 {
            2f32.powi(-127)
        } else {
            2f32.powi(i32::from(e) - 127)
        };
        VALUES[nib as usize] * scale
    }

    fn arrays(&self) -> (Array, Array) {
        let words: Vec<u32> = self
            .w
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let (n, k) = (self.n as i32, self.k as i32);
        (
            Array::from_slice(&words, &[n, k / 8]),
            Array::from_slice(&self.scales, &[n, k / 32]),
        )
    }

    /// x . W^T in f64.
    fn reference(&self, x: &[f32], m: usize) -> Vec<f64> {
        let mut y = vec![0.0f64; m * self.n];
        for i in 0..m {
            for r in 0..self.n {
                y[i * self.n + r] = (0..self.k)
                    .map(|j| f64::from(x[i * self.k + j]) * f64::from(self.value(r, j)))
                    .sum();
            }
        }
        y
    }
}

fn xs(m: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut rng = Lcg(seed);
    (0..m * k).map(|_| rng.float()).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    let scale = want.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-5 * scale,
            "{what}: element {i}: {g} vs {w}"
        );
    }
}

/// MLX's dequantized MXFP4 values are the format's values bit for bit
/// (the subnormal scale included), and thinkwire's product and MLX's agree
/// with the f64 product at every size: kernels for a decode step or a
/// batch, BLAS tiles for a prompt.
#[test]
fn products_match_the_format_and_mlx() {
    let (n, k) = (40, 96);
    let p = Packed::random(n, k, 1);
    let (w, s) = p.arrays();
    let d = dequantize(&w, &s).unwrap();
    d.eval().unwrap();
    assert_eq!(d.dtype(), Dtype::Float32);
    let want: Vec<f32> = (0..n)
        .flat_map(|r| (0..k).map(move |j| (r, j)))
        .map(|(r, j)| p.value(r, j))
        .collect();
    assert_eq!(bits(d.as_slice::<f32>()), bits(&want));
    for m in [1usize, 2, 3, 5, 8, 9, 16, 17, 40] {
        let x = xs(m, k, m as u64);
        let want = p.reference(&x, m);
        let xa = Array::from_slice(&x, &[m as i32, k as i32]);
        let ours = matmul(&xa, &w, &s).unwrap();
        let mlx = mlx_matmul(&xa, &w, &s).unwrap();
        ours.eval().unwrap();
        mlx.eval().unwrap();
        assert_eq!(ours.shape(), &[m as i32, n as i32]);
        assert_close(
            ours.as_slice::<f32>(),
            &want,
            &format!("thinkwire, {m} rows"),
        );
        assert_close(mlx.as_slice::<f32>(), &want, &format!("MLX, {m} rows"));
    }
}

/// A row's result is the same whatever rows share its pass (batched
/// decoding gives the tokens of decoding alone), and the BLAS path agrees
/// to rounding.
#[test]
fn rows_match_each_row_alone_exactly() {
    let (n, k) = (24, 128);
    let p = Packed::random(n, k, 2);
    for m in [2usize, 3, 4, 7, 8, 11, 16] {
        let x = xs(m, k, 10 + m as u64);
        let all = matmul_raw(&x, m, k, &p.w, &p.scales, n, 1).unwrap();
        let auto = matmul_raw(&x, m, k, &p.w, &p.scales, n, 0).unwrap();
        assert_eq!(bits(&all), bits(&auto), "{m} rows");
        for i in 0..m {
            let alone = matmul_raw(&x[i * k..(i + 1) * k], 1, k, &p.w, &p.scales, n, 1).unwrap();
            assert_eq!(
                bits(&all[i * n..(i + 1) * n]),
                bits(&alone),
                "row {i} of {m}"
            );
        }
        let blas = matmul_raw(&x, m, k, &p.w, &p.scales, n, 3).unwrap();
        assert_close(&blas, &p.reference(&x, m), &format!("BLAS tiles, {m} rows"));
    }
}

/// Experts on the kernels: every (row, pick) is that row's product with
/// the expert alone, bit for bit; an index past the experts gives NaN;
/// MLX's gather agrees to rounding.
#[test]
fn gather_is_each_experts_product() {
    let (experts, n, k) = (5usize, 16usize, 64usize);
    let p = Packed::random(experts * n, k, 3);
    let (w, s) = p.arrays();
    let (e, ni, ki) = (experts as i32, n as i32, k as i32);
    let w = w.reshape(&[e, ni, ki / 8]).unwrap();
    let s = s.reshape(&[e, ni, ki / 32]).unwrap();
    let x = Array::from_slice(&xs(7, k, 4), &[7, ki]);
    let picks: [u32; 14] = [0, 3, 3, 1, 4, 0, 2, 3, 0, 1, 3, 4, 9, 2];
    let idx = Array::from_slice(&picks, &[7, 2]);
    let got = gather_matmul(&x, &idx, &w, &s).unwrap();
    got.eval().unwrap();
    assert_eq!(got.shape(), &[7, 2, ni]);
    let got = got.as_slice::<f32>().to_vec();
    for (slot, &pick) in picks.iter().enumerate() {
        let row = &got[slot * n..(slot + 1) * n];
        if pick as usize >= experts {
            assert!(row.iter().all(|v| v.is_nan()), "slot {slot}");
            continue;
        }
        let r = slot as i32 / 2;
        let ex = pick as i32;
        let xr = x.try_index(r..r + 1).unwrap();
        let alone = matmul(&xr, &w.try_index(ex).unwrap(), &s.try_index(ex).unwrap()).unwrap();
        alone.eval().unwrap();
        assert_eq!(bits(row), bits(alone.as_slice::<f32>()), "slot {slot}");
        let theirs = mlx_gather(
            &xr.reshape(&[1, 1, ki]).unwrap(),
            &w,
            &s,
            &Array::from_slice(&[pick], &[1]),
            false,
        )
        .unwrap();
        theirs.eval().unwrap();
        let want: Vec<f64> = theirs
            .as_slice::<f32>()
            .iter()
            .map(|v| f64::from(*v))
            .collect();
        assert_close(row, &want, &format!("MLX's gather, slot {slot}"));
    }
}

/// Inputs the kernels cannot take are refused with a message, not read
/// out of bounds.
#[test]
fn refuses_what_it_cannot_compute() {
    let p = Packed::random(8, 64, 5);
    let (w, s) = p.arrays();
    let x = Array::from_slice(&xs(1, 32, 6), &[1, 32]);
    let err = matmul(&x, &w, &s).unwrap_err();
    assert!(err.what().contains("shapes do not match"), "{}", err.what());
    let f32_scales = s.as_dtype(Dtype::Float32).unwrap();
    let x64 = Array::from_slice(&xs(1, 64, 7), &[1, 64]);
    let err = matmul(&x64, &w, &f32_scales).unwrap_err();
    assert!(err.what().contains("uint8"), "{}", err.what());
    let err = matmul_raw(&xs(1, 48, 8), 1, 48, &p.w[..8 * 24], &p.scales[..8], 8, 1).unwrap_err();
    assert!(err.contains("multiple of 32"), "{err}");
}

/// The portable loops and the AVX2 kernels (what CPUs without AVX-512 or
/// AVX2 run), checked by running the tests above in child processes that
/// ask for them.
#[test]
fn portable_and_avx2_kernels_match_too() {
    crate::mlx::kernels::quantized::run_under_narrower_isas(&[
        "mlx::kernels::mxfp4::tests::products_match_the_format_and_mlx",
        "mlx::kernels::mxfp4::tests::rows_match_each_row_alone_exactly",
        "mlx::kernels::mxfp4::tests::gather_is_each_experts_product",
    ]);
}
