//! Reading a Hugging Face / mlx-community folder: `config.json` (and
//! `generation_config.json`) as a [`ModelConfig`],
//! the safetensors as they are, OpenAI's gpt-oss experts split into
//! mlx-lm's layout.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use mlx_rs::Array;

use super::config::{ModelConfig, QuantizationConfig, ids_of};
use super::weights::WeightMap;
use super::{Loaded, load_err};
use crate::EngineError;
use crate::mlx::kernels::Quant;

fn read_json(path: &Path) -> Result<serde_json::Value, EngineError> {
    let text = std::fs::read_to_string(path).map_err(|e| load_err(path, e))?;
    serde_json::from_str(&text).map_err(|e| load_err(path, format!("invalid JSON: {e}")))
}

/// Reads a Hugging Face / mlx-community folder.
pub(crate) fn load_hf_dir(dir: &Path) -> Result<Loaded, EngineError> {
    let config_path = dir.join("config.json");
    if !config_path.is_file() {
        return Err(load_err(
            &config_path,
            "missing (a model folder needs config.json)",
        ));
    }
    let raw = read_json(&config_path)?;
    let mut config: ModelConfig = serde_json::from_value(raw.clone())
        .map_err(|e| load_err(&config_path, format!("invalid model config: {e}")))?;
    // mlx-community writes `quantization`, transformers `quantization_config`.
    if config.quantization.is_none() {
        if let Some(q) = raw.get("quantization_config") {
            // OpenAI's gpt-oss checkpoints: MXFP4 experts, the rest dense.
            let openai_mxfp4 = q.get("quant_method").and_then(|m| m.as_str()) == Some("mxfp4");
            config.quantization = Some(if openai_mxfp4 {
                QuantizationConfig {
                    group_size: 32,
                    bits: 4,
                    mode: "mxfp4".into(),
                    extra: Default::default(),
                }
            } else {
                serde_json::from_value::<QuantizationConfig>(q.clone()).map_err(|e| {
                    load_err(
                        &config_path,
                        format!("unsupported `quantization_config`: {e}"),
                    )
                })?
            });
        }
    }
    // transformers >= 5 nests `rope_theta` and the scaling under
    // `rope_parameters` (as mlx-lm reads it too).
    if let Some(params) = raw.get("rope_parameters").and_then(|v| v.as_object()) {
        if raw.get("rope_theta").is_none() {
            if let Some(theta) = params.get("rope_theta").and_then(|v| v.as_f64()) {
                config.rope_theta = theta as f32;
            }
        }
        if config.rope_scaling.is_none() {
            config.rope_scaling = Some(params.clone());
        }
    }
    config.validate(&config_path.display().to_string())?;

    let index = dir.join("model.safetensors.index.json");
    let files: Vec<PathBuf> = if index.is_file() {
        let idx = read_json(&index)?;
        let map = idx
            .get("weight_map")
            .and_then(serde_json::Value::as_object)
            .ok_or_else(|| load_err(&index, "lacks a `weight_map` object"))?;
        let names: BTreeSet<&str> = map.values().filter_map(serde_json::Value::as_str).collect();
        names.into_iter().map(|n| dir.join(n)).collect()
    } else {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| load_err(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .collect();
        v.sort();
        v
    };
    if files.is_empty() {
        return Err(load_err(dir, "no *.safetensors weights found"));
    }
    let mut tensors = HashMap::new();
    for f in &files {
        if !f.is_file() {
            return Err(load_err(
                f,
                "missing (listed in model.safetensors.index.json)",
            ));
        }
        let part = Array::load_safetensors(f)
            .map_err(|e| load_err(f, format!("not a readable safetensors file: {e}")))?;
        tensors.extend(part);
    }
    split_openai_experts(&mut tensors)
        .map_err(|e| load_err(dir, format!("reading gpt-oss's MXFP4 experts: {e}")))?;

    let mut stop_ids = config.eos_ids();
    let gen_path = dir.join("generation_config.json");
    if gen_path.is_file() {
        let g = read_json(&gen_path)?;
        for id in ids_of(g.get("eos_token_id")) {
            if !stop_ids.contains(&id) {
                stop_ids.push(id);
            }
        }
    }
    let quant = config.quantization.as_ref().map(|q| Quant {
        group_size: q.group_size,
        bits: q.bits,
    });
    let quant_overrides = config
        .quantization
        .iter()
        .flat_map(|q| q.overrides())
        .map(|(module, group_size, bits)| (module.to_string(), Quant { group_size, bits }))
        .collect();
    Ok(Loaded {
        config,
        weights: WeightMap {
            tensors,
            source: dir.display().to_string(),
            quant,
            quant_overrides,
        },
        stop_ids,
    })
}

/// OpenAI's gpt-oss checkpoints hold each layer's experts as MXFP4
/// `*_blocks` (`[experts, out, blocks, 16]` bytes) and `*_scales`, gate
/// and up interleaved by row in `gate_up_proj*`; the builder reads
/// mlx-lm's layout: `gate_proj` / `up_proj` / `down_proj` with `.weight`
/// as uint32 words `[experts, out, in / 8]`, `.scales` and `.bias`.
fn split_openai_experts(tensors: &mut HashMap<String, Array>) -> mlx_rs::error::Result<()> {
    let keys: Vec<String> = tensors
        .keys()
        .filter(|k| {
            k.contains(".mlp.experts.")
                && ["_blocks", "_scales", "gate_up_proj_bias", "down_proj_bias"]
                    .iter()
                    .any(|end| k.ends_with(end))
        })
        .cloned()
        .collect();
    for key in keys {
        let Some(v) = tensors.remove(&key) else {
            continue;
        };
        let (stem, kind) = if let Some(stem) = key.strip_suffix("_blocks") {
            (stem, "weight")
        } else if let Some(stem) = key.strip_suffix("_scales") {
            (stem, "scales")
        } else if let Some(stem) = key.strip_suffix("_bias") {
            (stem, "bias")
        } else {
            continue;
        };
        let v = if kind == "weight" {
            // [E, out, blocks, 16] bytes → [E, out, blocks * 4] words.
            let sh = v.shape().to_vec();
            let rows = &sh[..sh.len().saturating_sub(2)];
            let bytes: i32 = sh[sh.len().saturating_sub(2)..].iter().product();
            let mut flat = rows.to_vec();
            flat.push(bytes);
            v.reshape(&flat)?.view::<u32>()?
        } else {
            v
        };
        match stem.strip_suffix("gate_up_proj") {
            Some(base) => {
                // Rows 0, 2, 4, ... are the gate's, 1, 3, 5, ... the up's.
                let sh = v.shape().to_vec();
                let row_axis = if kind == "bias" {
                    sh.len() - 1
                } else {
                    sh.len() - 2
                };
                let mut pairs = sh[..row_axis].to_vec();
                pairs.extend([sh[row_axis] / 2, 2]);
                pairs.extend(&sh[row_axis + 1..]);
                let paired = v.reshape(&pairs)?;
                let axis = i32::try_from(row_axis + 1).unwrap_or(i32::MAX);
                for (i, name) in ["gate_proj", "up_proj"].into_iter().enumerate() {
                    let idx = Array::from_int(i32::try_from(i).unwrap_or(0));
                    let part = paired.take_axis(&idx, axis)?;
                    tensors.insert(format!("{base}{name}.{kind}"), part);
                }
            }
            None => {
                tensors.insert(format!("{stem}.{kind}"), v);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenAI's interleaved `gate_up_proj` MXFP4 blocks become mlx-lm's
    /// `gate_proj` (even rows) and `up_proj` (odd rows) as uint32 words.
    #[test]
    fn splits_openai_mxfp4_experts() {
        let p = "model.layers.0.mlp.experts";
        // 2 experts, 4 interleaved rows, 2 blocks of 16 bytes: byte value
        // = row * 32 + position, so each row is recognisable.
        let bytes: Vec<u8> = (0..2 * 4 * 32)
            .map(|i| ((i / 32 % 4) * 32 + i % 32) as u8)
            .collect();
        let scales: Vec<u8> = (0..2 * 4 * 2).map(|i| (i / 2 % 4) as u8 + 120).collect();
        let bias: Vec<f32> = (0..8).map(|i| (i % 4) as f32).collect();
        let mut t = HashMap::from([
            (
                format!("{p}.gate_up_proj_blocks"),
                Array::from_slice(&bytes, &[2, 4, 2, 16]),
            ),
            (
                format!("{p}.gate_up_proj_scales"),
                Array::from_slice(&scales, &[2, 4, 2]),
            ),
            (
                format!("{p}.gate_up_proj_bias"),
                Array::from_slice(&bias, &[2, 4]),
            ),
            (
                format!("{p}.down_proj_blocks"),
                Array::from_slice(&bytes, &[2, 4, 2, 16]),
            ),
            (
                format!("{p}.down_proj_bias"),
                Array::from_slice(&bias, &[2, 4]),
            ),
        ]);
        split_openai_experts(&mut t).unwrap();
        let mut names: Vec<&str> = t.keys().map(String::as_str).collect();
        names.sort_unstable();
        let want: Vec<String> = [
            "down_proj.bias",
            "down_proj.weight",
            "gate_proj.bias",
            "gate_proj.scales",
            "gate_proj.weight",
            "up_proj.bias",
            "up_proj.scales",
            "up_proj.weight",
        ]
        .iter()
        .map(|n| format!("{p}.{n}"))
        .collect();
        assert_eq!(names, want.iter().map(String::as_str).collect::<Vec<_>>());
        for (proj, first_row) in [("gate_proj", 0u32), ("up_proj", 1)] {
            let w = &t[&format!("{p}.{proj}.weight")];
            assert_eq!(w.shape(), &[2, 2, 8]);
            assert_eq!(w.dtype(), mlx_rs::Dtype::Uint32);
            let w = w.contiguous().unwrap();
            // First word of each expert's first row: bytes row*32 + 0..4.
            let b0 = first_row * 32;
            let word = u32::from_le_bytes([b0 as u8, b0 as u8 + 1, b0 as u8 + 2, b0 as u8 + 3]);
            assert_eq!(w.as_slice::<u32>()[0], word, "{proj}");
            let s = t[&format!("{p}.{proj}.scales")].contiguous().unwrap();
            let (r0, r1) = (120 + first_row as u8, 122 + first_row as u8);
            assert_eq!(s.as_slice::<u8>()[..4], [r0, r0, r1, r1], "{proj}");
            let b = t[&format!("{p}.{proj}.bias")].contiguous().unwrap();
            assert_eq!(
                b.as_slice::<f32>(),
                &[first_row as f32, 2.0 + first_row as f32].repeat(2)[..],
                "{proj}"
            );
        }
        assert_eq!(t[&format!("{p}.down_proj.weight")].shape(), &[2, 4, 8]);
    }
}
