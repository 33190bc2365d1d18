//! The reader against the real default model, fetched by `scripts/setup`.
//! Absent assets fail these tests with a message saying how to get them.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;

use thinkwire_gguf::{GgmlType, GgufFile};

/// Where `scripts/setup` puts the default model.
fn default_model() -> PathBuf {
    let home = std::env::var_os("THINKWIRE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/thinkwire")))
        .expect("neither THINKWIRE_HOME nor HOME is set");
    let path = home.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        path.is_file(),
        "default model missing at {}: run scripts/setup (or scripts/setup-models)",
        path.display()
    );
    path
}

/// Writes `bytes` to a file `name` in this process's scratch folder.
fn tmp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("thinkwire-gguf-itest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creates the scratch folder");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("writes the scratch file");
    path
}

/// Figures cross-checked with the Python `gguf` package (0.19) reading
/// the same file.
#[test]
fn reads_the_default_model() {
    let f = GgufFile::open(default_model()).unwrap();
    assert_eq!(f.version(), 3);
    assert_eq!(f.metadata().len(), 33);
    assert_eq!(f.architecture().unwrap(), "llama");
    assert_eq!(f.get_arch_u64("block_count").unwrap(), 30);
    assert_eq!(f.get_arch_u64("embedding_length").unwrap(), 576);
    assert_eq!(f.get_arch_u64("feed_forward_length").unwrap(), 1536);
    assert_eq!(f.get_arch_u64("attention.head_count").unwrap(), 9);
    assert_eq!(f.get_arch_u64("attention.head_count_kv").unwrap(), 3);
    assert_eq!(f.get_arch_u64("context_length").unwrap(), 8192);
    assert_eq!(f.opt_arch_f64("rope.freq_base").unwrap(), Some(100_000.0));
    assert_eq!(f.get_str("tokenizer.ggml.model").unwrap(), "gpt2");
    assert_eq!(f.get_str("tokenizer.ggml.pre").unwrap(), "smollm");
    assert_eq!(
        f.get_str_array("tokenizer.ggml.tokens").unwrap().len(),
        49152
    );
    assert_eq!(f.get_array("tokenizer.ggml.merges").unwrap().len(), 48900);
    assert_eq!(f.get_u64("tokenizer.ggml.eos_token_id").unwrap(), 2);
    assert!(!f.get_bool("tokenizer.ggml.add_bos_token").unwrap());
    assert!(
        f.get_str("tokenizer.chat_template")
            .unwrap()
            .contains("<|im_start|>")
    );

    assert_eq!(f.alignment(), 32);
    assert_eq!(f.data_offset(), 1_785_664);
    assert_eq!(f.tensors().len(), 272);
    let count = |t: GgmlType| f.tensors().iter().filter(|i| i.ggml_type == t).count();
    assert_eq!(
        (
            count(GgmlType::Q4_1),
            count(GgmlType::F32),
            count(GgmlType::Q8_0)
        ),
        (210, 61, 1)
    );

    let embd = f.tensor("token_embd.weight").unwrap();
    assert_eq!(embd.dims, vec![576, 49152]);
    assert_eq!(embd.shape(), vec![49152, 576]);
    assert_eq!(embd.byte_len(), Some(30_081_024));
    let bytes = f.read_tensor("token_embd.weight").unwrap();
    assert_eq!(bytes[..8], [0x32, 0x19, 0xd6, 0x0d, 0x13, 0xf7, 0xe5, 0xee]);
    assert_eq!(
        bytes.iter().map(|&b| u64::from(b)).sum::<u64>(),
        3_670_375_898
    );

    let norm = f.read_tensor("output_norm.weight").unwrap();
    assert_eq!(norm.len(), 2304);
    assert_eq!(
        f32::from_le_bytes([norm[0], norm[1], norm[2], norm[3]]),
        1.7578125
    );
    let last = f
        .tensors()
        .iter()
        .map(|t| f.tensor_range(t).unwrap().end)
        .max();
    assert_eq!(last, Some(98_362_432));
    assert_eq!(f.file_len(), 98_362_432);
}

#[test]
fn truncated_default_model_names_the_tensor() {
    // The first 2 MB: the whole directory, but not the data.
    let mut head = vec![0u8; 2 << 20];
    let mut file = File::open(default_model()).unwrap();
    file.read_exact(&mut head).unwrap();
    let f = GgufFile::open(tmp_file("head.gguf", &head));
    let msg = f.unwrap_err().to_string();
    assert!(
        msg.contains("\"token_embd.weight\"") && msg.contains("truncated"),
        "{msg}"
    );
    // Cut inside the token list.
    let e = GgufFile::open(tmp_file("head2.gguf", &head[..200_000])).unwrap_err();
    assert!(e.to_string().contains("tokenizer.ggml.tokens"), "{e}");
}
