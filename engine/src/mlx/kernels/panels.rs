//! Int8 panels (`--precision int8` on CPUs with AVX-512 VNNI): a quantized
//! weight repacked at load so that the lanes of a vector run over 16 weight
//! rows (`mlx-sys/native/panels/int8_panels.h`). The int8 kernels on MLX's
//! layout give each (weight row, x row) pair its own dot product and float
//! steps, so a batch of 8 costs about what the f32 kernels cost; in panels
//! one `vpdpbusd` makes 64 products for 16 rows and the float steps serve
//! 16 rows at once: a batched step's products take 3-5x less time (the
//! arithmetic is `Int8`'s, the sums in another fixed order).

use mlx_rs::error::Exception;
use mlx_rs::{Array, Dtype};

use super::choice::Quant;

/// Weight rows per panel.
const ROWS: usize = 16;

/// Whether this CPU runs the panel kernels.
pub(crate) fn available() -> bool {
    // SAFETY: reads a CPU feature check.
    unsafe { mlx_sys::thinkwire_int8_panels_available() }
}

/// Whether a weight of `n` rows in format `q` can be held in panels.
pub(crate) fn fits(n: usize, q: Quant) -> bool {
    n > 0 && n % ROWS == 0 && matches!(q.bits, 4 | 8) && q.group_size % 32 == 0
}

/// A weight's buffers in panels.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct PanelBuffers {
    pub w: Vec<u8>,
    pub scales: Vec<f32>,
    pub biases: Vec<f32>,
}

/// Panel buffers of MLX's layout (`w` `[n, k * bits / 8]` bytes, `scales`
/// and `biases` `[n, k / group_size]`), the same sizes.
#[cfg(test)]
pub(crate) fn repack_raw(
    w: &[u8],
    scales: &[f32],
    biases: &[f32],
    n: usize,
    k: usize,
    q: Quant,
) -> Result<PanelBuffers, String> {
    let mut out = PanelBuffers {
        w: vec![0u8; w.len()],
        scales: vec![0f32; scales.len()],
        biases: vec![0f32; biases.len()],
    };
    let (pw, ps, pb) = (&mut out.w, &mut out.scales, &mut out.biases);
    repack_into(w, scales, biases, n, k, q, pw, ps, pb)?;
    Ok(out)
}

/// [`repack_raw`] into buffers of the same sizes as the inputs.
#[allow(clippy::too_many_arguments)]
fn repack_into(
    w: &[u8],
    scales: &[f32],
    biases: &[f32],
    n: usize,
    k: usize,
    q: Quant,
    pw: &mut [u8],
    ps: &mut [f32],
    pb: &mut [f32],
) -> Result<(), String> {
    let bits = usize::try_from(q.bits).map_err(|e| e.to_string())?;
    let group = usize::try_from(q.group_size).map_err(|e| e.to_string())?;
    if group == 0
        || w.len() != n * k * bits / 8
        || scales.len() != n * (k / group)
        || biases.len() != scales.len()
        || (pw.len(), ps.len(), pb.len()) != (w.len(), scales.len(), biases.len())
    {
        return Err(format!(
            "buffer sizes do not match n={n}, k={k}: w {}, scales {}, biases {}",
            w.len(),
            scales.len(),
            biases.len()
        ));
    }
    let int = |v: usize| i32::try_from(v).map_err(|_| format!("{v} is too large"));
    // SAFETY: the sizes were checked above against n, k and the format; the
    // call reads w, scales and biases and writes the three outputs.
    let rc = unsafe {
        mlx_sys::thinkwire_int8_panels_repack(
            w.as_ptr(),
            scales.as_ptr(),
            biases.as_ptr(),
            int(n)?,
            int(k)?,
            q.group_size,
            q.bits,
            pw.as_mut_ptr(),
            ps.as_mut_ptr(),
            pb.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(super::error::last_error());
    }
    Ok(())
}

/// `w` (uint32 `[n, k * bits / 32]`), `scales` and `biases` (f32 `[n, k /
/// group_size]`) repacked into panels, shaped as before; evaluated now
/// (load time). The inputs are read in place and the output written once
/// before MLX copies it, so a weight is held at most three times over.
pub(crate) fn repack(
    w: &Array,
    scales: &Array,
    biases: &Array,
    q: Quant,
) -> Result<(Array, Array, Array), Exception> {
    let (scales, biases) = (
        scales.as_dtype(Dtype::Float32)?,
        biases.as_dtype(Dtype::Float32)?,
    );
    mlx_rs::transforms::eval([w, &scales, &biases])?;
    let shape = w.shape().to_vec();
    let (n, words) = match shape.as_slice() {
        [n, words] => (*n as usize, *words as usize),
        _ => {
            return Err(Exception::custom(format!(
                "a weight of shape {shape:?} is not a matrix"
            )));
        }
    };
    let k = words * 32 / q.bits.max(1) as usize;
    let err = |e: mlx_rs::error::AsSliceError| Exception::custom(e.to_string());
    let words_in = w.try_as_slice::<u32>().map_err(err)?;
    let mut words_out = vec![0u32; words_in.len()];
    let mut ps = vec![0f32; scales.size()];
    let mut pb = vec![0f32; biases.size()];
    // SAFETY: u32 buffers viewed as their bytes, lengths times 4; MLX packs
    // the words little-endian and so do the kernels (x86-64, AArch64).
    let (bytes_in, bytes_out) = unsafe {
        (
            std::slice::from_raw_parts(words_in.as_ptr().cast::<u8>(), words_in.len() * 4),
            std::slice::from_raw_parts_mut(
                words_out.as_mut_ptr().cast::<u8>(),
                words_out.len() * 4,
            ),
        )
    };
    repack_into(
        bytes_in,
        scales.try_as_slice::<f32>().map_err(err)?,
        biases.try_as_slice::<f32>().map_err(err)?,
        n,
        k,
        q,
        bytes_out,
        &mut ps,
        &mut pb,
    )
    .map_err(Exception::custom)?;
    Ok((
        Array::from_slice(&words_out, &shape),
        Array::from_slice(&ps, scales.shape()),
        Array::from_slice(&pb, biases.shape()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx::kernels::Activations;
    use crate::mlx::kernels::quantized::{Packed, Path, random_packed, run_under_narrower_isas};

    fn bits_of(v: &[f32]) -> Vec<u32> {
        v.iter().map(|f| f.to_bits()).collect()
    }

    /// `packed` repacked, as plain buffers for the kernels' raw entry.
    fn in_panels(packed: &Packed) -> Packed {
        let (n, k, q) = (packed.n, packed.k, packed.q);
        let p = repack_raw(&packed.w, &packed.scales, &packed.biases, n, k, q).unwrap();
        Packed {
            w: p.w,
            scales: p.scales,
            biases: p.biases,
            n,
            k,
            q,
        }
    }

    /// Panels compute `Int8`'s arithmetic: within float rounding of the
    /// int8 kernels on MLX's layout for every format, 1 to 17 rows of x,
    /// and every row of a batch bit-identical to that row alone; BLAS over
    /// tiles dequantized from panels equals BLAS from MLX's layout bit for
    /// bit, though a prompt's rows take the panels themselves.
    #[test]
    fn panels_compute_the_int8_product_and_rows_stay_their_own() {
        for (bits, group_size) in [(4, 32), (4, 64), (8, 32), (8, 128)] {
            let q = Quant { group_size, bits };
            let (n, k) = (48usize, 256usize);
            let (_, _, _, packed) = random_packed(n as i32, k as i32, q);
            let panels = in_panels(&packed);
            for m in [1usize, 2, 3, 5, 8, 9, 16, 17] {
                let x: Vec<f32> = (0..m * k)
                    .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                    .collect();
                let int8 = packed
                    .matmul_now_with(&x, m, Path::Kernel, Activations::Int8)
                    .unwrap();
                let ours = panels
                    .matmul_now_with(&x, m, Path::Kernel, Activations::Int8Panels)
                    .unwrap();
                let top = int8.iter().fold(1.0f32, |a, v| a.max(v.abs()));
                for (a, b) in ours.iter().zip(&int8) {
                    assert!(
                        (a - b).abs() <= 1e-5 * top,
                        "{bits}-bit/{group_size}, m={m}: {a} vs {b}"
                    );
                }
                let alone = panels
                    .matmul_now_with(&x, m, Path::RowByRow, Activations::Int8Panels)
                    .unwrap();
                assert_eq!(
                    bits_of(&ours),
                    bits_of(&alone),
                    "{bits}-bit/{group_size}, m={m}"
                );
            }
            let m = 20;
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 13 % 97) as f32 - 48.0) / 30.0)
                .collect();
            let dense = packed
                .matmul_now_with(&x, m, Path::Blas, Activations::F32)
                .unwrap();
            let from_panels = panels
                .matmul_now_with(&x, m, Path::Blas, Activations::Int8Panels)
                .unwrap();
            assert_eq!(
                bits_of(&from_panels),
                bits_of(&dense),
                "{bits}-bit/{group_size} prefill"
            );
            // A prompt's rows past the kernels' usual limit stay on panels
            // (no BLAS), each row still its own.
            let auto = panels
                .matmul_now_with(&x, m, Path::Auto, Activations::Int8Panels)
                .unwrap();
            let alone = panels
                .matmul_now_with(&x, m, Path::RowByRow, Activations::Int8Panels)
                .unwrap();
            assert_eq!(
                bits_of(&auto),
                bits_of(&alone),
                "{bits}-bit/{group_size} prompt"
            );
            assert_ne!(
                bits_of(&auto),
                bits_of(&dense),
                "{bits}-bit/{group_size} prompt"
            );
        }
    }

    /// On AMX tiles, f32 activations against 4-bit panels give the f32
    /// kernels' product to float rounding (exact products, f32 sums), for
    /// 1 to 20 rows (up to 8 on FMAs over the panels; from 9, stacked parts
    /// in several tiles, a prompt past the kernels' usual limit), every row
    /// bit-identical to that row alone (up to 8 rows) or in another batch of
    /// 9 or more; 8-bit panels run on the FMAs at every m, each row
    /// bit-identical to itself alone. Without tiles (a CPU or cap below AMX)
    /// the call is refused by name, and weights stay off them at load.
    #[test]
    fn tiles_compute_the_f32_product_and_rows_stay_their_own() {
        use crate::mlx::kernels::quantized::tiles_available;
        mlx_rs::random::seed(11).unwrap();
        for (group_size, bits) in [(32, 4), (64, 4), (128, 4), (32, 8), (64, 8)] {
            let q = Quant { group_size, bits };
            let (n, k) = (48usize, 256usize);
            let (_, _, _, packed) = random_packed(n as i32, k as i32, q);
            let panels = in_panels(&packed);
            for m in [1usize, 2, 3, 5, 8, 9, 11, 16, 20] {
                // Values whose last 8 of 24 bits (x's low bf16 part) are
                // all alike, so losing them would add up across a row.
                let x: Vec<f32> = (0..m * k)
                    .map(|i| 1.0 + (i * 37 % 101) as f32 / 256.0 + 3.0 / (1 << 21) as f32)
                    .collect();
                let got = panels.matmul_now_with(&x, m, Path::Auto, Activations::F32Tiles);
                if !tiles_available() {
                    let err = got.unwrap_err();
                    assert!(err.contains("AMX-BF16"), "{err}");
                    continue;
                }
                let got = got.unwrap();
                let want = packed
                    .matmul_now_with(&x, m, Path::Kernel, Activations::F32)
                    .unwrap();
                // Each output within f32 rounding of the size of its terms
                // (both are f32 sums of k products): measured 3.3e-8 of
                // it; dropping x's low part (8 of its 24 bits) gives 2e-7.
                let groups = k / group_size as usize;
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    let (row, col) = (i / n, i % n);
                    let largest_weight = (0..groups)
                        .map(|g| {
                            let at = col * groups + g;
                            ((1 << bits) - 1) as f32 * packed.scales[at].abs()
                                + packed.biases[at].abs()
                        })
                        .fold(0.0f32, f32::max);
                    let terms: f32 =
                        (0..k).map(|c| x[row * k + c].abs()).sum::<f32>() * largest_weight;
                    assert!(
                        (a - b).abs() <= 1e-7 * terms,
                        "{bits}-bit groups of {group_size}, m={m}, [{row}, {col}]: {a} vs {b}"
                    );
                }
                // Up to 8 rows (decode steps) run on FMAs over the panels,
                // more (prompts) on the tiles, 8-bit weights on FMAs at any
                // m: within each, a row's bits are its own (the tile side:
                // the same row first in the batch rotated to start at it).
                let alone: Vec<f32> = if m <= 8 || bits == 8 {
                    panels
                        .matmul_now_with(&x, m, Path::RowByRow, Activations::F32Tiles)
                        .unwrap()
                } else {
                    (0..m)
                        .flat_map(|i| {
                            let rotated: Vec<f32> =
                                x[i * k..].iter().chain(&x[..i * k]).copied().collect();
                            let y = panels
                                .matmul_now_with(&rotated, m, Path::Auto, Activations::F32Tiles)
                                .unwrap();
                            y[..n].to_vec()
                        })
                        .collect()
                };
                assert_eq!(
                    bits_of(&got),
                    bits_of(&alone),
                    "{bits}-bit groups of {group_size}, m={m}"
                );
            }
        }
    }

    /// The MLX operation on repacked arrays gives the raw kernels' numbers.
    #[test]
    fn the_repacked_arrays_run_as_an_mlx_operation() {
        let q = Quant {
            group_size: 32,
            bits: 4,
        };
        let (w, s, b, packed) = random_packed(32, 128, q);
        let (pw, ps, pb) = repack(&w, &s, &b, q).unwrap();
        let x = mlx_rs::random::normal::<f32>(&[3, 128], None, None, None).unwrap();
        let y =
            crate::mlx::kernels::quantized::matmul(&x, &pw, &ps, &pb, q, Activations::Int8Panels)
                .unwrap();
        y.eval().unwrap();
        let want = in_panels(&packed)
            .matmul_now_with(
                x.as_slice::<f32>(),
                3,
                Path::Kernel,
                Activations::Int8Panels,
            )
            .unwrap();
        assert_eq!(bits_of(y.as_slice::<f32>()), bits_of(&want));
    }

    /// Rows that are not whole panels, or a format without panels, are
    /// refused by name.
    #[test]
    fn refuses_what_panels_cannot_hold() {
        let q = Quant {
            group_size: 32,
            bits: 4,
        };
        assert!(
            !fits(40, q)
                && fits(48, q)
                && !fits(
                    48,
                    Quant {
                        group_size: 32,
                        bits: 3
                    }
                )
        );
        let err = repack_raw(&[0; 40 * 16], &[0.0; 40], &[0.0; 40], 40, 32, q).unwrap_err();
        assert!(err.contains("sixteens"), "{err}");
    }

    /// The portable loops (what a process capped below AVX-512 runs on
    /// panels) pass the same checks, in child processes.
    #[test]
    fn portable_panels_match_too() {
        run_under_narrower_isas(&[
            "mlx::kernels::panels::tests::panels_compute_the_int8_product_and_rows_stay_their_own",
            "mlx::kernels::panels::tests::the_repacked_arrays_run_as_an_mlx_operation",
            "mlx::kernels::panels::tests::tiles_compute_the_f32_product_and_rows_stay_their_own",
        ]);
    }
}
