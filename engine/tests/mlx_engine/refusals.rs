//! What the engine refuses, and how it names the fault: a prompt past
//! the context, and broken model folders.

use super::*;

#[test]
fn prompt_longer_than_context_is_refused_before_generation() {
    let e = load("tiny-qwen2", 512);
    let ctx = e.info().context_length;
    let mut s = Script::default();
    let err = e
        .generate(&request(vec![1; ctx + 1], 4), &mut s)
        .unwrap_err();
    assert!(matches!(err, EngineError::ContextOverflow { .. }), "{err}");
    assert!(err.to_string().contains(&ctx.to_string()));
    assert!(s.prefill.is_empty() && s.tokens.is_empty());
}

fn load_err(path: &Path) -> String {
    MlxEngine::load(path, &LoadOptions::default())
        .unwrap_err()
        .to_string()
}

fn copy_model(name: &str, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for entry in std::fs::read_dir(tiny(name)).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dest.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn load_errors_name_the_file_tensor_or_field() {
    let tmp = std::env::temp_dir().join(format!("thinkwire-engine-errors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);

    let missing = tmp.join("nope.gguf");
    assert!(load_err(&missing).contains("nope.gguf"));

    // A corrupt GGUF.
    std::fs::create_dir_all(&tmp).unwrap();
    let bad = tmp.join("bad.gguf");
    std::fs::write(&bad, b"GGUF\x03\x00\x00\x00garbage").unwrap();
    assert!(load_err(&bad).contains("bad.gguf"));

    // Unknown architecture: the config field is named.
    let arch = tmp.join("arch");
    copy_model("tiny-qwen3", &arch);
    let cfg = arch.join("config.json");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("\"qwen3\"", "\"gpt_neox\"")).unwrap();
    let e = load_err(&arch);
    assert!(e.contains("model_type") && e.contains("gpt_neox"), "{e}");

    // Unknown RoPE type.
    let rope = tmp.join("rope");
    copy_model("tiny-llama3-untied", &rope);
    let cfg = rope.join("config.json");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("\"llama3\"", "\"dynamic\"")).unwrap();
    let e = load_err(&rope);
    assert!(e.contains("rope_scaling") && e.contains("dynamic"), "{e}");

    // Unsupported quantization.
    let quant = tmp.join("quant");
    copy_model("tiny-qwen3-4bit", &quant);
    let cfg = quant.join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["quantization"]["bits"] = 7.into();
    v["quantization_config"]["bits"] = 7.into();
    std::fs::write(&cfg, v.to_string()).unwrap();
    let e = load_err(&quant);
    assert!(e.contains("quantization") && e.contains('7'), "{e}");

    // A missing shard and a truncated one.
    let shard = tmp.join("shard");
    copy_model("tiny-qwen2", &shard);
    std::fs::remove_file(shard.join("model-00002-of-00002.safetensors")).unwrap();
    assert!(load_err(&shard).contains("model-00002-of-00002.safetensors"));
    let trunc = tmp.join("trunc");
    copy_model("tiny-qwen2", &trunc);
    let f = trunc.join("model-00001-of-00002.safetensors");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() / 2]).unwrap();
    assert!(load_err(&trunc).contains("model-00001-of-00002.safetensors"));

    // A missing tensor is named.
    let gone = tmp.join("gone");
    copy_model("tiny-qwen3", &gone);
    let st = gone.join("model.safetensors");
    let arrays = mlx_rs::Array::load_safetensors(&st).unwrap();
    let kept: Vec<(String, mlx_rs::Array)> = arrays
        .into_iter()
        .filter(|(k, _)| k != "model.layers.1.mlp.down_proj.weight")
        .collect();
    mlx_rs::Array::save_safetensors(kept.iter().map(|(k, v)| (k.as_str(), v)), None, &st).unwrap();
    std::fs::remove_file(gone.join("model.safetensors.index.json")).unwrap();
    let e = load_err(&gone);
    assert!(e.contains("model.layers.1.mlp.down_proj.weight"), "{e}");

    let _ = std::fs::remove_dir_all(&tmp);
}
