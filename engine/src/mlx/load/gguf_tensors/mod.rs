//! GGUF tensors the engine reads itself rather than through MLX's GGUF
//! reader: MXFP4 (ggml type 39, gpt-oss's experts), which MLX's reader
//! refuses, repacked without dequantizing into the layout of MLX's `mxfp4`
//! mode so thinkwire's MXFP4 kernels run them (issue #15), with the Q4_0,
//! Q4_1 and Q8_0 tensors of the same file as MLX's reader gives them
//! ([`gguf_quants`](super::gguf_quants)); and the names
//! llama.cpp gives gpt-oss's tensors (`LLM_ARCH_OPENAI_MOE`, architecture
//! `gpt-oss` in the file).
//!
//! A ggml MXFP4 block (`block_mxfp4` in ggml's `ggml-common.h`) is 17
//! bytes: the e8m0 exponent `e`, then `qs[16]`; element `j < 16` is the low
//! nibble of `qs[j]`, element `j + 16` its high nibble, and its value
//! `kvalues[q] * 2^(e - 128)` with `kvalues` twice the E2M1 values
//! (`dequantize_row_mxfp4`, `GGML_E8M0_TO_FP32_HALF`). MLX reads
//! `E2M1[q] * 2^(e - 127)`, the same number, so the scale byte is copied;
//! only the nibbles move, to MLX's order (element `i` in nibble `i % 2` of
//! byte `i / 2`, bytes in little-endian `u32` words).
//!
//! ```text
//! ggml:  [e][q0|q16][q1|q17]...[q15|q31]      (low|high nibble)
//! MLX:   words [q0|q1][q2|q3]...[q30|q31]      scales [e]
//! ```

use std::collections::HashMap;
use std::path::Path;

use mlx_rs::{Array, Dtype};
use thinkwire_gguf::{GgmlType, GgufFile, TensorInfo};

use super::gguf_quants;
use crate::EngineError;

/// Elements per MXFP4 block and bytes per ggml block.
const BLOCK: usize = 32;
const BLOCK_BYTES: usize = 17;

/// The `model_type` the engine knows for a GGUF `general.architecture`
/// (llama.cpp spells gpt-oss with a hyphen).
pub(crate) fn model_type(arch: &str) -> &str {
    match arch {
        "gpt-oss" => "gpt_oss",
        other => other,
    }
}

/// A gpt-oss GGUF tensor name → the Hugging Face (mlx-lm) name the model
/// builder reads; `None` for anything else. llama.cpp's converter
/// (`GptOssModel`) names the sinks `attn_sinks.weight` (the HF tensor has
/// no `.weight`), the norm before the MLP `post_attention_norm`, the router
/// `ffn_gate_inp`, and the experts `ffn_{gate,up,down}_exps` (or, fused,
/// `ffn_gate_up_exps`: gate rows then up rows, split by [`read_tensors`]).
pub(crate) fn gpt_oss_name(gguf: &str) -> Option<String> {
    let (stem, suffix) = gguf.rsplit_once('.')?;
    if !matches!(suffix, "weight" | "bias") {
        return None;
    }
    let top = match stem {
        "token_embd" => Some("model.embed_tokens"),
        "output_norm" => Some("model.norm"),
        "output" => Some("lm_head"),
        _ => None,
    };
    if let Some(t) = top {
        return Some(format!("{t}.{suffix}"));
    }
    let (layer, part) = stem.strip_prefix("blk.")?.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let part = match part {
        "attn_sinks" if suffix == "weight" => {
            return Some(format!("model.layers.{layer}.self_attn.sinks"));
        }
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_norm" => "input_layernorm",
        "post_attention_norm" => "post_attention_layernorm",
        "ffn_gate_inp" => "mlp.router",
        "ffn_gate_exps" => "mlp.experts.gate_proj",
        "ffn_up_exps" => "mlp.experts.up_proj",
        "ffn_down_exps" => "mlp.experts.down_proj",
        "ffn_gate_up_exps" => "mlp.experts.gate_up_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{part}.{suffix}"))
}

/// Tensor types [`read_tensors`] reads.
pub(crate) fn reads(t: GgmlType) -> bool {
    matches!(
        t,
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 | GgmlType::MXFP4
    ) || gguf_quants::reads(t)
}

/// ggml MXFP4 blocks of `rows` rows of `k` elements → MLX's `mxfp4`
/// packing: `u32` words (`k / 8` a row) and e8m0 scale bytes (`k / 32` a
/// row), the scale bytes unchanged (see the module docs).
pub(crate) fn mxfp4_to_mlx(
    bytes: &[u8],
    rows: usize,
    k: usize,
) -> Result<(Vec<u32>, Vec<u8>), String> {
    let blocks = rows
        .checked_mul(k / BLOCK)
        .filter(|_| k % BLOCK == 0)
        .ok_or_else(|| format!("a row of {k} elements is not whole blocks of {BLOCK}"))?;
    if Some(bytes.len()) != blocks.checked_mul(BLOCK_BYTES) {
        return Err(format!(
            "{} bytes for {rows} rows of {k} MXFP4 elements (want {blocks} blocks of {BLOCK_BYTES})",
            bytes.len()
        ));
    }
    let mut words = Vec::with_capacity(blocks * 4);
    let mut scales = Vec::with_capacity(blocks);
    for block in bytes.chunks_exact(BLOCK_BYTES) {
        scales.push(block[0]);
        let qs = &block[1..];
        let nibble = |i: usize| -> u8 {
            if i < 16 {
                qs[i] & 0x0F
            } else {
                qs[i - 16] >> 4
            }
        };
        let mut packed = [0u8; 16];
        for (b, out) in packed.iter_mut().enumerate() {
            *out = nibble(2 * b) | (nibble(2 * b + 1) << 4);
        }
        for w in packed.chunks_exact(4) {
            words.push(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    }
    Ok((words, scales))
}

/// The types [`reads`] accepts, for messages.
pub(crate) const SUPPORTED: &str = "F32, F16, BF16, Q4_0, Q4_1, Q8_0, MXFP4";

const ONLY_WEIGHTS: &str = "quantized tensors are only read for `.weight` names";

/// A block-quantized tensor's outer dimensions, row length and row count.
fn blocked_rows(shape: &[i32]) -> Result<(&[i32], usize, usize), &'static str> {
    let (&k, outer) = shape
        .split_last()
        .ok_or("a quantized tensor needs a dimension")?;
    let rows = outer
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d.unsigned_abs() as usize))
        .ok_or("too many rows")?;
    Ok((outer, k.unsigned_abs() as usize, rows))
}

/// `outer` with a last dimension of `n` (`n` is at most the row length,
/// which came from an `i32`).
fn last_dim(outer: &[i32], n: usize) -> Vec<i32> {
    let mut shape = outer.to_vec();
    shape.push(i32::try_from(n).unwrap_or(i32::MAX));
    shape
}

fn weight_stem(hf: &str) -> Option<&str> {
    hf.strip_suffix(".weight")
}

fn tensor_err(path: &Path, t: &TensorInfo, what: impl std::fmt::Display) -> EngineError {
    EngineError::Load(format!("{}: tensor `{}`: {what}", path.display(), t.name))
}

/// Reads every tensor `hf_name` maps (any of [`SUPPORTED`]) from the file,
/// under its Hugging Face name. MXFP4 weights `X.weight` come back as
/// `X.weight` (uint32) and `X.scales` (uint8), as an mlx-community folder
/// holds them; Q4_0/Q4_1/Q8_0 ones as `X.weight` (uint32), `X.scales` and
/// `X.biases` (f16), as MLX's GGUF reader gives them; a fused
/// `gate_up_proj` is split into `gate_proj` and `up_proj` (its first and
/// second half of rows).
pub(crate) fn read_tensors(
    file: &GgufFile,
    hf_name: impl Fn(&str) -> Option<String>,
) -> Result<HashMap<String, Array>, EngineError> {
    let path = file.path();
    let mut out = HashMap::new();
    for t in file.tensors() {
        let Some(hf) = hf_name(&t.name) else { continue };
        let shape: Vec<i32> = t
            .shape()
            .iter()
            .map(|&d| i32::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| tensor_err(path, t, "a dimension is too large"))?;
        let bytes = file
            .read_tensor(&t.name)
            .map_err(|e| EngineError::Load(e.to_string()))?;
        let half = |dtype: Dtype| -> Result<Array, EngineError> {
            let v: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            Array::from_slice(&v, &shape)
                .view_dtype(dtype)
                .map_err(|e| tensor_err(path, t, e))
        };
        match t.ggml_type {
            GgmlType::F32 => {
                let v: Vec<f32> = bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                out.insert(hf, Array::from_slice(&v, &shape));
            }
            GgmlType::F16 => {
                out.insert(hf, half(Dtype::Float16)?);
            }
            GgmlType::BF16 => {
                out.insert(hf, half(Dtype::Bfloat16)?);
            }
            GgmlType::MXFP4 => {
                let (outer, k, rows) = blocked_rows(&shape).map_err(|e| tensor_err(path, t, e))?;
                let (words, scales) =
                    mxfp4_to_mlx(&bytes, rows, k).map_err(|e| tensor_err(path, t, e))?;
                let stem = weight_stem(&hf).ok_or_else(|| tensor_err(path, t, ONLY_WEIGHTS))?;
                out.insert(
                    format!("{stem}.scales"),
                    Array::from_slice(&scales, &last_dim(outer, k / BLOCK)),
                );
                out.insert(hf, Array::from_slice(&words, &last_dim(outer, k / 8)));
            }
            q if gguf_quants::reads(q) => {
                let (outer, k, rows) = blocked_rows(&shape).map_err(|e| tensor_err(path, t, e))?;
                let a = gguf_quants::to_mlx_affine(q, &bytes, rows, k)
                    .map_err(|e| tensor_err(path, t, e))?;
                let stem = weight_stem(&hf).ok_or_else(|| tensor_err(path, t, ONLY_WEIGHTS))?;
                let groups = last_dim(outer, k / gguf_quants::GROUP);
                let f16 = |v: &[u16]| {
                    Array::from_slice(v, &groups)
                        .view_dtype(Dtype::Float16)
                        .map_err(|e| tensor_err(path, t, e))
                };
                out.insert(format!("{stem}.scales"), f16(&a.scales)?);
                out.insert(format!("{stem}.biases"), f16(&a.biases)?);
                let words = last_dim(outer, k / 32 * a.bits);
                out.insert(hf, Array::from_slice(&a.words, &words));
            }
            other => {
                return Err(tensor_err(
                    path,
                    t,
                    format!("type {other} is not read here ({SUPPORTED})"),
                ));
            }
        }
    }
    split_fused_gate_up(&mut out).map_err(|e| {
        EngineError::Load(format!(
            "{}: splitting `ffn_gate_up_exps`: {e}",
            path.display()
        ))
    })?;
    Ok(out)
}

/// llama.cpp's fused `ffn_gate_up_exps` (`--fuse-gate-up-exps`) holds the
/// gate's rows, then the up's: halves of the row axis (the last for a bias).
fn split_fused_gate_up(tensors: &mut HashMap<String, Array>) -> mlx_rs::error::Result<()> {
    let keys: Vec<String> = tensors
        .keys()
        .filter(|k| k.contains(".mlp.experts.gate_up_proj."))
        .cloned()
        .collect();
    for key in keys {
        let Some(v) = tensors.remove(&key) else {
            continue;
        };
        let Some((base, kind)) = key.rsplit_once(".gate_up_proj.") else {
            continue;
        };
        let ndim = v.ndim() as i32;
        let axis = if kind == "bias" { ndim - 1 } else { ndim - 2 };
        let parts = v.split_equal(2, axis)?;
        for (name, part) in ["gate_proj", "up_proj"].into_iter().zip(parts) {
            tensors.insert(format!("{base}.{name}.{kind}"), part);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
