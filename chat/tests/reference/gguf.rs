//! Tokenizers rebuilt from GGUF metadata: the default model's synthesized
//! `tokenizer.json` round-trips, and a GGUF carrying the Qwen3 tokenizer as
//! llama.cpp writes it encodes like the official one.

use super::*;

#[test]
fn synthesized_tokenizer_json_round_trips() {
    let gguf = GgufFile::open(require(assets::default_model())).expect("opens");
    let json = tokenizer_json_from_gguf(&gguf).expect("synthesizes");
    assert_eq!(
        json["model"]["vocab"].as_object().map(|v| v.len()),
        Some(49152)
    );
    assert_eq!(
        json["model"]["merges"].as_array().map(Vec::len),
        Some(48900)
    );
    assert_eq!(json["added_tokens"][2]["content"], "<|im_end|>");

    // What `thinkwire convert` writes loads back to the same tokenizer.
    let text = smollm2()
        .tokenizer
        .to_json_string(false)
        .expect("serializes");
    let again = Tokenizer::from_json_str(&text).expect("reloads");
    for entry in expected()["encodings"]["smollm2"]
        .as_array()
        .expect("encodings")
    {
        let t = entry["text"].as_str().expect("text");
        assert_eq!(
            again.encode(t, false).expect("encodes"),
            smollm2().tokenizer.encode(t, false).expect("encodes")
        );
    }
    let cfg = smollm2().tokenizer_config_json();
    assert_eq!(cfg["eos_token"], "<|im_end|>");
    assert_eq!(cfg["added_tokens_decoder"]["2"]["content"], "<|im_end|>");
    assert!(
        cfg["chat_template"]
            .as_str()
            .is_some_and(|s| s.contains("<|im_start|>"))
    );
}

/// A GGUF carrying the Qwen3 tokenizer the way llama.cpp's converter
/// writes it (pre-tokenizer `qwen2`, added tokens as control or
/// user-defined) rebuilds a tokenizer that encodes like the official one.
#[test]
fn qwen2_family_from_gguf_matches_the_official_tokenizer() {
    use thinkwire_gguf::{MetadataValue as V, ValueType, write};

    let official = &qwen3().tokenizer;
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(require(
            assets::qwen3_tokenizer_dir().join("tokenizer.json"),
        ))
        .expect("reads"),
    )
    .expect("parses");
    let size = official.vocab_size();
    let mut tokens = vec![String::new(); size];
    let mut types = vec![V::I32(1); size];
    for (token, id) in json["model"]["vocab"].as_object().expect("vocab") {
        tokens[id.as_u64().expect("id") as usize] = token.clone();
    }
    for added in json["added_tokens"].as_array().expect("added") {
        let id = added["id"].as_u64().expect("id") as usize;
        tokens[id] = added["content"].as_str().expect("content").to_owned();
        types[id] = V::I32(if added["special"].as_bool().expect("flag") {
            3
        } else {
            4
        });
    }
    let merges: Vec<V> = json["model"]["merges"]
        .as_array()
        .expect("merges")
        .iter()
        .map(|m| {
            V::String(format!(
                "{} {}",
                m[0].as_str().expect("a"),
                m[1].as_str().expect("b")
            ))
        })
        .collect();
    let bytes = write::file(
        &[
            ("general.architecture", V::String("qwen3".into())),
            ("tokenizer.ggml.model", V::String("gpt2".into())),
            ("tokenizer.ggml.pre", V::String("qwen2".into())),
            (
                "tokenizer.ggml.tokens",
                V::Array(
                    ValueType::String,
                    tokens.into_iter().map(V::String).collect(),
                ),
            ),
            ("tokenizer.ggml.token_type", V::Array(ValueType::I32, types)),
            ("tokenizer.ggml.merges", V::Array(ValueType::String, merges)),
            ("tokenizer.ggml.eos_token_id", V::U32(151645)),
            ("tokenizer.ggml.padding_token_id", V::U32(151643)),
            ("tokenizer.ggml.add_bos_token", V::Bool(false)),
            (
                "tokenizer.chat_template",
                V::String(qwen3().template_source().expect("template").to_owned()),
            ),
        ],
        &[],
    );
    let path =
        std::env::temp_dir().join(format!("thinkwire-qwen3-tok-{}.gguf", std::process::id()));
    std::fs::write(&path, bytes).expect("writes");
    let from_gguf = ChatModel::load(&path).expect("loads");
    let _ = std::fs::remove_file(&path);

    let mut n = 0;
    for entry in expected()["encodings"]["qwen3"]
        .as_array()
        .expect("encodings")
    {
        let text = entry["text"].as_str().expect("text");
        assert_eq!(
            from_gguf.tokenizer.encode(text, false).expect("encodes"),
            official.encode(text, false).expect("encodes"),
            "{text:?}"
        );
        n += 1;
    }
    assert!(n > 20);
    assert_eq!(from_gguf.special.stop_ids, vec![151643, 151645]);
    assert!(!from_gguf.tokenizer.is_special(151667));
    assert!(from_gguf.tokenizer.is_special(151645));
}
