//! Synthetic files for the unit tests.

use std::path::PathBuf;

use crate::value::{MetadataValue, ValueType};
use crate::write;

/// Writes `bytes` to a file `name` in this process's scratch folder.
pub(crate) fn tmp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("thinkwire-gguf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A version-3 file with values of most kinds (nested and empty arrays
/// too) and two tensors: `w` (2 x 3 f32) and `q` (one Q8_0 block of 7s).
pub(crate) fn sample() -> Vec<u8> {
    let f32_data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    write::file(
        &[
            (
                "general.architecture",
                MetadataValue::String("llama".into()),
            ),
            ("llama.block_count", MetadataValue::U32(2)),
            ("llama.rope.freq_base", MetadataValue::F32(10000.0)),
            ("flag", MetadataValue::Bool(true)),
            ("neg", MetadataValue::I64(-5)),
            ("pi", MetadataValue::F64(3.5)),
            ("small", MetadataValue::I8(-1)),
            ("u16", MetadataValue::U16(7)),
            (
                "tokens",
                MetadataValue::Array(
                    ValueType::String,
                    vec![
                        MetadataValue::String("a".into()),
                        MetadataValue::String("ü".into()),
                    ],
                ),
            ),
            (
                "nested",
                MetadataValue::Array(
                    ValueType::Array,
                    vec![MetadataValue::Array(
                        ValueType::U8,
                        vec![MetadataValue::U8(1)],
                    )],
                ),
            ),
            ("empty", MetadataValue::Array(ValueType::I32, vec![])),
        ],
        &[
            ("w", vec![3, 2], 0, f32_data),
            ("q", vec![32], 8, vec![7u8; 34]),
        ],
    )
}
