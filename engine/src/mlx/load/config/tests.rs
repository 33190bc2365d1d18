use super::*;

fn base() -> serde_json::Value {
    serde_json::json!({
        "model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
        "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 32, "rms_norm_eps": 1e-6, "vocab_size": 100,
        "eos_token_id": [7, 9]
    })
}

#[test]
fn reads_hf_fields_and_defaults() {
    let c: ModelConfig = serde_json::from_value(base()).unwrap();
    c.validate("t").unwrap();
    assert_eq!(c.architecture().unwrap(), Architecture::Qwen3);
    assert_eq!(c.kv_heads(), 2);
    assert_eq!(c.head_dim(), 32);
    assert!(!c.qkv_bias());
    assert_eq!(c.eos_ids(), vec![7, 9]);
    assert_eq!(c.rope_theta, 10_000.0);
}

#[test]
fn per_module_quantization_is_read_and_checked() {
    let mut v = base();
    v["quantization"] = serde_json::json!({
        "group_size": 32, "bits": 4,
        "model.embed_tokens": {"group_size": 32, "bits": 8},
        "lm_head": false,
    });
    let c: ModelConfig = serde_json::from_value(v.clone()).unwrap();
    c.validate("t").unwrap();
    let q = c.quantization.as_ref().unwrap();
    assert_eq!(q.module("model.embed_tokens"), (32, 8));
    assert_eq!(q.module("model.layers.0.mlp.up_proj"), (32, 4));
    assert_eq!(q.overrides().count(), 1);
    // Written back the way mlx-lm reads it.
    let back = serde_json::to_value(q).unwrap();
    assert_eq!(back["model.embed_tokens"]["bits"], 8);

    v["quantization"]["model.embed_tokens"]["bits"] = 7.into();
    let c: ModelConfig = serde_json::from_value(v).unwrap();
    let e = c.validate("t").unwrap_err().to_string();
    assert!(
        e.contains("quantization.model.embed_tokens") && e.contains("bits=7"),
        "{e}"
    );
}

#[test]
fn unknown_architecture_names_the_field() {
    let mut v = base();
    v["model_type"] = "gpt2".into();
    let c: ModelConfig = serde_json::from_value(v).unwrap();
    let e = c.validate("config.json").unwrap_err().to_string();
    assert!(e.contains("model_type") && e.contains("gpt2"), "{e}");
}

#[test]
fn bad_head_counts_are_refused() {
    let mut v = base();
    v["num_key_value_heads"] = 3.into();
    let c: ModelConfig = serde_json::from_value(v).unwrap();
    assert!(
        c.validate("c")
            .unwrap_err()
            .to_string()
            .contains("multiple")
    );
}

#[test]
fn smollm3_nope_layers_come_from_the_list_or_the_interval() {
    let mut v: serde_json::Value = serde_json::json!({
        "model_type": "smollm3", "hidden_size": 64, "num_hidden_layers": 8,
        "intermediate_size": 128, "num_attention_heads": 4, "rms_norm_eps": 1e-6,
        "vocab_size": 100
    });
    let c: ModelConfig = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(c.architecture().unwrap(), Architecture::SmolLm3);
    let every_fourth: Vec<bool> = (0..8).map(|i| (i + 1) % 4 != 0).collect();
    assert_eq!(c.rope_layers().unwrap(), every_fourth);
    v["no_rope_layers"] = serde_json::json!([1, 0, 1, 1, 1, 1, 1, 0]);
    let c: ModelConfig = serde_json::from_value(v.clone()).unwrap();
    let rope = c.rope_layers().unwrap();
    assert!(!rope[1] && !rope[7] && rope[0] && rope[6]);
    v["no_rope_layers"] = serde_json::json!([1, 0]);
    let c: ModelConfig = serde_json::from_value(v.clone()).unwrap();
    let e = c.rope_layers().unwrap_err().to_string();
    assert!(
        e.contains("no_rope_layers") && e.contains("8 layers"),
        "{e}"
    );
    // Other architectures rotate every layer, whatever the config says.
    v["model_type"] = "llama".into();
    let c: ModelConfig = serde_json::from_value(v).unwrap();
    assert!(c.rope_layers().unwrap().iter().all(|&r| r));
}
