//! ggml's Q4_0, Q4_1 and Q8_0 blocks repacked into MLX's affine
//! quantization, the arrays MLX's own GGUF reader makes of them
//! (`mlx/io/gguf_quants.cpp`), for files MLX cannot read whole: most
//! third-party gpt-oss GGUFs mix these types with MXFP4 experts, which
//! MLX's reader refuses (issue #15).
//!
//! Every block holds 32 values and an f16 scale `d`; MLX reads element
//! `i` as `scale * q + bias` with unsigned `q` in groups of 32:
//!
//! | ggml  | block (`ggml-common.h`)   | llama.cpp's value  | MLX `q`, `bias`         |
//! |-------|---------------------------|--------------------|-------------------------|
//! | Q4_0  | `d`, 16 nibble bytes      | `(x - 8) * d`      | `x`, `-8 * d` (f16)     |
//! | Q4_1  | `d`, `m`, 16 nibble bytes | `x * d + m`        | `x`, `m`                |
//! | Q8_0  | `d`, 32 `i8`              | `x * d`            | `x ^ 0x80`, `-128 * d`  |
//!
//! Both biases are exact in f16 (a power-of-two multiple), and in f32 so
//! is `scale * q + bias`, so MLX's dequantization equals llama.cpp's bit
//! for bit, but for the sign of a zero (`8d - 8d` is +0 where llama.cpp's
//! `0 * d` is -0 for a negative `d`), which no product or sum can see. The nibbles move as for MXFP4 (`gguf_tensors`): ggml keeps
//! element `j` in the low nibble of byte `j` and `j + 16` in its high
//! nibble; MLX packs element `i` in nibble `i % 8` of `u32` word `i / 8`.

use thinkwire_gguf::GgmlType;

/// Values per block (ggml's `QK4_0`, `QK4_1`, `QK8_0`; MLX's group size).
pub(crate) const GROUP: usize = 32;

/// One tensor in MLX's affine packing: `u32` words (`k * bits / 32` a
/// row) and f16 scales and biases (as bits, `k / 32` a row).
pub(crate) struct Affine {
    pub words: Vec<u32>,
    pub scales: Vec<u16>,
    pub biases: Vec<u16>,
    pub bits: usize,
}

/// Bytes of a ggml block, bits of a value, and where its values start.
fn layout(t: GgmlType) -> Option<(usize, usize, usize)> {
    match t {
        GgmlType::Q4_0 => Some((18, 4, 2)),
        GgmlType::Q4_1 => Some((20, 4, 4)),
        GgmlType::Q8_0 => Some((34, 8, 2)),
        _ => None,
    }
}

/// Whether [`to_mlx_affine`] reads the type.
pub(crate) fn reads(t: GgmlType) -> bool {
    layout(t).is_some()
}

/// `f16` bits times `-2^n` (`n` ≤ 10), exactly as an f16 product:
/// subnormals become normal when they can, overflow gives infinity.
pub(crate) fn f16_times_neg_pow2(bits: u16, n: u32) -> u16 {
    let sign = (bits & 0x8000) ^ 0x8000;
    let exp = u32::from((bits >> 10) & 0x1F);
    let mant = u32::from(bits & 0x3FF);
    let magnitude = match exp {
        0x1F => u32::from(bits & 0x7FFF),
        0 if mant == 0 => 0,
        0 => {
            // mant * 2^-24, i.e. the significand of exponent field 1 less
            // its implicit bit; shifting it up may make it normal.
            let mut v = mant << n;
            let mut e = 1;
            if v < 0x400 {
                e = 0;
            }
            while v >= 0x800 {
                v >>= 1;
                e += 1;
            }
            (e << 10) | (v & 0x3FF)
        }
        _ if exp + n >= 0x1F => 0x7C00,
        _ => ((exp + n) << 10) | mant,
    };
    // `magnitude` fits 15 bits in every arm.
    sign | (magnitude & 0x7FFF) as u16
}

/// `rows` rows of `k` elements of a Q4_0, Q4_1 or Q8_0 tensor → MLX's
/// affine packing (see the module docs).
pub(crate) fn to_mlx_affine(
    t: GgmlType,
    bytes: &[u8],
    rows: usize,
    k: usize,
) -> Result<Affine, String> {
    let (block_bytes, bits, values_at) =
        layout(t).ok_or_else(|| format!("type {t} is not an affine ggml type"))?;
    let blocks = rows
        .checked_mul(k / GROUP)
        .filter(|_| k % GROUP == 0)
        .ok_or_else(|| format!("a row of {k} elements is not whole blocks of {GROUP}"))?;
    if Some(bytes.len()) != blocks.checked_mul(block_bytes) {
        return Err(format!(
            "{} bytes for {rows} rows of {k} {t} elements (want {blocks} blocks of {block_bytes})",
            bytes.len()
        ));
    }
    let mut out = Affine {
        words: Vec::with_capacity(blocks * bits),
        scales: Vec::with_capacity(blocks),
        biases: Vec::with_capacity(blocks),
        bits,
    };
    let mut packed = [0u8; GROUP];
    for block in bytes.chunks_exact(block_bytes) {
        let half = |at: usize| u16::from_le_bytes([block[at], block[at + 1]]);
        let d = half(0);
        out.scales.push(d);
        let bias = match t {
            GgmlType::Q4_1 => half(2),
            GgmlType::Q8_0 => f16_times_neg_pow2(d, 7),
            _ => f16_times_neg_pow2(d, 3),
        };
        // An f16 bias of -8d or -128d overflows only past weights of
        // ±65504, which no trained model has; MLX's reader would give inf.
        if bias & 0x7C00 == 0x7C00 && d & 0x7C00 != 0x7C00 {
            return Err(format!(
                "block {} has scale {d:#06x}, whose bias overflows f16",
                out.scales.len()
            ));
        }
        out.biases.push(bias);
        let qs = &block[values_at..];
        let packed = match bits {
            8 => {
                for (out, &q) in packed.iter_mut().zip(qs) {
                    *out = q ^ 0x80;
                }
                &packed[..]
            }
            _ => {
                let nibble = |i: usize| match i < 16 {
                    true => qs[i] & 0x0F,
                    false => qs[i - 16] >> 4,
                };
                for (b, out) in packed[..16].iter_mut().enumerate() {
                    *out = nibble(2 * b) | (nibble(2 * b + 1) << 4);
                }
                &packed[..16]
            }
        };
        for w in packed.chunks_exact(4) {
            out.words.push(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx_rs::{Array, Dtype};

    /// ggml's `GGML_FP16_TO_FP32` (exact: every f16 is an f32).
    fn f16_to_f32(h: u16) -> f32 {
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exp = i32::from((h >> 10) & 0x1F);
        let mant = f64::from(h & 0x3FF);
        let v = match exp {
            0 => mant * 2f64.powi(-24),
            0x1F if mant == 0.0 => f64::INFINITY,
            0x1F => f64::NAN,
            _ => (1024.0 + mant) * 2f64.powi(exp - 25),
        };
        (sign * v) as f32
    }

    /// llama.cpp's `dequantize_row_q4_0`, `_q4_1` and `_q8_0`
    /// (`ggml-quants.c`) of one block.
    fn ggml_dequantize(t: GgmlType, b: &[u8]) -> Vec<f32> {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let mut y = vec![0.0f32; 32];
        match t {
            GgmlType::Q4_0 => {
                for j in 0..16 {
                    let x0 = i32::from(b[2 + j] & 0x0F) - 8;
                    let x1 = i32::from(b[2 + j] >> 4) - 8;
                    y[j] = x0 as f32 * d;
                    y[j + 16] = x1 as f32 * d;
                }
            }
            GgmlType::Q4_1 => {
                let m = f16_to_f32(u16::from_le_bytes([b[2], b[3]]));
                for j in 0..16 {
                    y[j] = f32::from(b[4 + j] & 0x0F) * d + m;
                    y[j + 16] = f32::from(b[4 + j] >> 4) * d + m;
                }
            }
            _ => {
                for (j, out) in y.iter_mut().enumerate() {
                    *out = f32::from(b[2 + j] as i8) * d;
                }
            }
        }
        y
    }

    /// Bit for bit, but +0 for -0 (see the module docs).
    fn same(got: f32, want: f32) -> bool {
        got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0)
    }

    /// MLX's affine reading of its packing: `scale * q + bias` in f32.
    fn mlx_reading(a: &Affine, i: usize) -> f32 {
        let per_word = 32 / a.bits;
        let word = a.words[i / per_word];
        let q = (word >> (a.bits * (i % per_word))) & ((1 << a.bits) - 1);
        let g = i / GROUP;
        f16_to_f32(a.scales[g]) * q as f32 + f16_to_f32(a.biases[g])
    }

    /// Blocks of type `t` with every value of each byte and scales across
    /// f16's range: subnormal, tiny, ordinary, negative, large.
    fn sample_blocks(t: GgmlType) -> Vec<u8> {
        let (block_bytes, _, values_at) = layout(t).unwrap();
        let scales: [u16; 8] = [
            0x0001, 0x03FF, 0x0400, 0x1C00, 0x3555, 0xB800, 0x5A12, 0x5FFF,
        ];
        let mins: [u16; 8] = [
            0x0000, 0x8001, 0xC400, 0x3C00, 0xB2AB, 0x0200, 0xD800, 0x4000,
        ];
        let mut bytes = Vec::new();
        for n in 0..16usize {
            let mut block = vec![0u8; block_bytes];
            block[..2].copy_from_slice(&scales[n % 8].to_le_bytes());
            if t == GgmlType::Q4_1 {
                block[2..4].copy_from_slice(&mins[(n + 3) % 8].to_le_bytes());
            }
            for (j, q) in block[values_at..].iter_mut().enumerate() {
                *q = (j * 37 + n * 11 + j * j) as u8;
            }
            bytes.extend(block);
        }
        bytes
    }

    const TYPES: [GgmlType; 3] = [GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0];

    #[test]
    fn repacked_blocks_read_as_llama_cpp_dequantizes() {
        for t in TYPES {
            let bytes = sample_blocks(t);
            let (block_bytes, ..) = layout(t).unwrap();
            // Two rows of 8 blocks.
            let a = to_mlx_affine(t, &bytes, 2, 8 * GROUP).unwrap();
            for (b, block) in bytes.chunks_exact(block_bytes).enumerate() {
                for (j, want) in ggml_dequantize(t, block).into_iter().enumerate() {
                    let got = mlx_reading(&a, b * GROUP + j);
                    assert!(same(got, want), "{t} block {b} [{j}]: {got} vs {want}");
                }
            }
        }
    }

    /// The same numbers through MLX's own `dequantize` (f32 scales, as the
    /// engine's `dense` path and kernels take them).
    #[test]
    fn repacked_blocks_equal_llama_cpp_under_mlx_dequantize() {
        for t in TYPES {
            let bytes = sample_blocks(t);
            let (block_bytes, ..) = layout(t).unwrap();
            let a = to_mlx_affine(t, &bytes, 2, 8 * GROUP).unwrap();
            let k = (8 * GROUP) as i32;
            let w = Array::from_slice(&a.words, &[2, k * a.bits as i32 / 32]);
            let half = |v: &[u16]| {
                Array::from_slice(v, &[2, 8])
                    .view_dtype(Dtype::Float16)
                    .and_then(|x| x.as_dtype(Dtype::Float32))
                    .unwrap()
            };
            let deq = mlx_rs::ops::dequantize(
                &w,
                half(&a.scales),
                &half(&a.biases),
                GROUP as i32,
                a.bits as i32,
            )
            .unwrap();
            let got = deq.as_slice::<f32>();
            let want: Vec<f32> = bytes
                .chunks_exact(block_bytes)
                .flat_map(|b| ggml_dequantize(t, b))
                .collect();
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(same(*g, *w), "{t} element {i}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn f16_power_of_two_products_are_exact() {
        // Every finite f16, times -8 and -128, against f64 arithmetic.
        for h in 0..=u16::MAX {
            let v = f64::from(f16_to_f32(h));
            if v.is_nan() {
                continue;
            }
            for n in [3, 7] {
                let got = f64::from(f16_to_f32(f16_times_neg_pow2(h, n)));
                let want = -v * f64::from(1u32 << n);
                let want = if want.abs() > 65504.0 {
                    want.signum() * f64::INFINITY
                } else {
                    want
                };
                assert!(
                    got == want && (got.is_sign_negative() == want.is_sign_negative()),
                    "{h:#06x} * -2^{n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn malformed_sizes_are_errors() {
        assert!(to_mlx_affine(GgmlType::Q8_0, &[0; 34], 1, 16).is_err());
        assert!(to_mlx_affine(GgmlType::Q8_0, &[0; 33], 1, 32).is_err());
        assert!(to_mlx_affine(GgmlType::Q4_0, &[0; 36], 1, 32).is_err());
        assert!(to_mlx_affine(GgmlType::Q4_1, &[0; 40], 2, 32).is_ok());
        assert!(to_mlx_affine(GgmlType::F16, &[0; 64], 1, 32).is_err());
        // Scale 8192: -8 * 8192 is past f16's range.
        let mut block = [0u8; 18];
        block[..2].copy_from_slice(&0x7000u16.to_le_bytes());
        let e = to_mlx_affine(GgmlType::Q4_0, &block, 1, 32).err().unwrap();
        assert!(e.contains("overflows"), "{e}");
        assert!(
            to_mlx_affine(
                GgmlType::Q4_1,
                &[
                    0x00, 0x70, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
                ],
                1,
                32
            )
            .is_ok()
        );
    }
}
