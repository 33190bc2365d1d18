use super::*;
use crate::mlx::load::Weight;

/// llama.cpp's `kvalues_mxfp4` (`ggml-common.h`).
const KVALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// llama.cpp's `ggml_e8m0_to_fp32_half` (`ggml-impl.h`), bit for bit.
fn e8m0_to_fp32_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        (u32::from(e) - 1) << 23
    };
    f32::from_bits(bits)
}

/// llama.cpp's `dequantize_row_mxfp4` of one block.
fn ggml_dequantize(block: &[u8]) -> Vec<f32> {
    let d = e8m0_to_fp32_half(block[0]);
    let mut y = vec![0.0f32; 32];
    for j in 0..16 {
        y[j] = f32::from(KVALUES[usize::from(block[1 + j] & 0x0F)]) * d;
        y[j + 16] = f32::from(KVALUES[usize::from(block[1 + j] >> 4)]) * d;
    }
    y
}

/// MLX's reading of its `mxfp4` packing: E2M1 times 2^(e - 127).
fn mlx_reading(words: &[u32], scales: &[u8], i: usize) -> f32 {
    const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let (block, at) = (i / 32, i % 32);
    let byte = words[block * 4 + at / 8].to_le_bytes()[at % 8 / 2];
    let q = (byte >> (4 * (at % 2))) & 0x0F;
    let v = E2M1[usize::from(q & 7)] * if q & 8 != 0 { -1.0 } else { 1.0 };
    (f64::from(v) * 2f64.powi(i32::from(scales[block]) - 127)) as f32
}

/// Blocks with every nibble value in both halves and exponents across
/// the range (the denormal ones 0 and 1 included).
fn sample_blocks() -> Vec<u8> {
    let exps = [0u8, 1, 2, 100, 126, 127, 128, 129, 200, 254];
    let mut bytes = Vec::new();
    for (n, &e) in exps.iter().enumerate() {
        bytes.push(e);
        for j in 0..16u8 {
            let lo = (j + n as u8) % 16;
            let hi = (j * 7 + 3 + n as u8) % 16;
            bytes.push(lo | (hi << 4));
        }
    }
    bytes
}

#[test]
fn repacked_mxfp4_reads_as_llama_cpp_dequantizes() {
    let bytes = sample_blocks();
    let blocks = bytes.len() / BLOCK_BYTES;
    // Two rows of k = 5 blocks.
    let (words, scales) = mxfp4_to_mlx(&bytes, 2, blocks / 2 * 32).unwrap();
    assert_eq!((words.len(), scales.len()), (blocks * 4, blocks));
    for (b, block) in bytes.chunks_exact(BLOCK_BYTES).enumerate() {
        let want = ggml_dequantize(block);
        for (j, &w) in want.iter().enumerate() {
            let got = mlx_reading(&words, &scales, b * 32 + j);
            // Numerically equal (E2M1's -0 is ggml's 0).
            assert!(got == w, "block {b} element {j}: {got} vs {w}");
        }
    }
}

/// The same check against MLX's own dequantization, the numbers the
/// engine's MXFP4 operations multiply by.
#[test]
fn repacked_mxfp4_equals_llama_cpp_under_mlx_dequantize() {
    let bytes = sample_blocks();
    let blocks = bytes.len() / BLOCK_BYTES;
    let k = blocks / 2 * 32;
    let (words, scales) = mxfp4_to_mlx(&bytes, 2, k).unwrap();
    let k = k as i32;
    let w = Array::from_slice(&words, &[2, k / 8]);
    let s = Array::from_slice(&scales, &[2, k / 32]);
    let deq = crate::mlx::kernels::mxfp4::dequantize(&w, &s)
        .and_then(|a| a.as_dtype(Dtype::Float32))
        .unwrap();
    let got = deq.as_slice::<f32>();
    let want: Vec<f32> = bytes
        .chunks_exact(BLOCK_BYTES)
        .flat_map(ggml_dequantize)
        .collect();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g == w, "element {i}: {g} vs {w}");
    }
}

/// Q4_0/Q4_1/Q8_0 tensors come back as MLX's own GGUF reader gives
/// them: same names, dtypes, shapes and bits.
#[test]
fn affine_tensors_equal_mlx_gguf_reader() {
    use thinkwire_gguf::write;
    let data = |len: usize, seed: usize| -> Vec<u8> {
        (0..len)
            .map(|i| ((i * 131 + seed * 17 + i * i / 7) % 251) as u8)
            .collect()
    };
    // Scales and mins below 512, so that no bias overflows f16.
    let tame = |mut d: Vec<u8>, block: usize, halves: usize| {
        for b in d.chunks_exact_mut(block) {
            for h in 0..halves {
                b[2 * h + 1] &= 0xDB;
            }
        }
        d
    };
    let tensors = vec![
        (
            "blk.0.attn_q.weight",
            vec![64u64, 3],
            8u32,
            tame(data(3 * 2 * 34, 1), 34, 1),
        ),
        (
            "blk.0.attn_k.weight",
            vec![96, 2],
            2,
            tame(data(2 * 3 * 18, 2), 18, 1),
        ),
        (
            "blk.0.ffn_up_exps.weight",
            vec![32, 2, 3],
            3,
            tame(data(6 * 20, 3), 20, 2),
        ),
        (
            "blk.0.ffn_down_exps.weight",
            vec![64, 2, 2],
            8,
            tame(data(4 * 2 * 34, 4), 34, 1),
        ),
    ];
    let path =
        std::env::temp_dir().join(format!("thinkwire-gguf-affine-{}.gguf", std::process::id()));
    std::fs::write(&path, write::file(&[], &tensors)).unwrap();
    let ours = read_tensors(&GgufFile::open(&path).unwrap(), |n| Some(n.to_owned())).unwrap();
    let mlx = mlx_rs::io::GgufFile::load(&path).unwrap().arrays().unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(ours.len(), 12);
    let mut names: Vec<_> = mlx.keys().collect();
    names.sort();
    for name in names {
        let (a, b) = (&mlx[name], &ours[name]);
        assert_eq!((a.shape(), a.dtype()), (b.shape(), b.dtype()), "{name}");
        let bits = |x: &Array| -> Vec<u32> {
            match x.dtype() {
                Dtype::Uint32 => x.as_slice::<u32>().to_vec(),
                _ => x
                    .view_dtype(Dtype::Uint16)
                    .unwrap()
                    .as_slice::<u16>()
                    .iter()
                    .map(|&h| u32::from(h))
                    .collect(),
            }
        };
        assert_eq!(bits(a), bits(b), "{name}");
    }
    // The engine takes them with the bits their packing gives, the
    // stacked experts too (a GGUF carries no quantization config).
    let mut map = crate::mlx::load::WeightMap {
        tensors: ours,
        source: "test".into(),
        quant: None,
        quant_overrides: HashMap::new(),
    };
    for (name, stacked, bits) in [
        ("blk.0.attn_q", false, 8),
        ("blk.0.attn_k", false, 4),
        ("blk.0.ffn_up_exps", true, 4),
        ("blk.0.ffn_down_exps", true, 8),
    ] {
        let w = match stacked {
            true => map.take_stacked(name),
            false => map.take_weight(name),
        };
        match w {
            Ok(Weight::Quantized { q, .. }) => {
                assert_eq!((q.bits, q.group_size), (bits, 32), "{name}");
            }
            _ => panic!("{name}: not taken as an affine-quantized weight"),
        }
    }
}

#[test]
fn malformed_mxfp4_sizes_are_errors() {
    assert!(mxfp4_to_mlx(&[0; 17], 1, 16).is_err());
    assert!(mxfp4_to_mlx(&[0; 16], 1, 32).is_err());
    assert!(mxfp4_to_mlx(&[0; 34], 1, 32).is_err());
    assert!(mxfp4_to_mlx(&[0; 34], 2, 32).is_ok());
}

#[test]
fn maps_gpt_oss_names() {
    for (gguf, hf) in [
        ("blk.3.attn_sinks.weight", "model.layers.3.self_attn.sinks"),
        (
            "blk.0.post_attention_norm.weight",
            "model.layers.0.post_attention_layernorm.weight",
        ),
        ("blk.1.ffn_gate_inp.bias", "model.layers.1.mlp.router.bias"),
        (
            "blk.2.ffn_down_exps.weight",
            "model.layers.2.mlp.experts.down_proj.weight",
        ),
        (
            "blk.2.ffn_up_exps.bias",
            "model.layers.2.mlp.experts.up_proj.bias",
        ),
        ("output.weight", "lm_head.weight"),
    ] {
        assert_eq!(gpt_oss_name(gguf).as_deref(), Some(hf), "{gguf}");
    }
    assert_eq!(gpt_oss_name("blk.0.attn_sinks.bias"), None);
    assert_eq!(gpt_oss_name("rope_freqs.weight"), None);
    assert_eq!(model_type("gpt-oss"), "gpt_oss");
}

#[test]
fn splits_fused_gate_up_experts() {
    let w: Vec<u32> = (0..2 * 4 * 2).collect();
    let mut t = HashMap::from([(
        "model.layers.0.mlp.experts.gate_up_proj.weight".to_string(),
        Array::from_slice(&w, &[2, 4, 2]),
    )]);
    split_fused_gate_up(&mut t).unwrap();
    let gate = &t["model.layers.0.mlp.experts.gate_proj.weight"];
    let up = &t["model.layers.0.mlp.experts.up_proj.weight"];
    assert_eq!(gate.shape(), &[2, 2, 2]);
    let gate = gate.contiguous().unwrap();
    let up = up.contiguous().unwrap();
    assert_eq!(gate.as_slice::<u32>(), &[0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(up.as_slice::<u32>(), &[4, 5, 6, 7, 12, 13, 14, 15]);
}
