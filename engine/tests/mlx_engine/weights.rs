//! Weights held in different precisions and formats give the same
//! decisive tokens, and the engine says how it holds them.

use super::*;

#[test]
fn precision_policies_agree_on_a_dense_model() {
    // bf16 rounds the weights; the first tokens of a decisive prompt stay.
    let f32e = load("tiny-qwen2", 512);
    let keep = MlxEngine::load(
        &tiny("tiny-qwen2"),
        &LoadOptions {
            precision: Precision::Keep,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let (mut a, mut b) = (Script::default(), Script::default());
    run(&f32e, &request(PROMPT.to_vec(), 8), &mut a);
    run(&keep, &request(PROMPT.to_vec(), 8), &mut b);
    assert_eq!(a.tokens, b.tokens);
}

#[test]
fn mlx_quantized_weights_dequantize_to_the_same_model() {
    // An mlx-community style 4-bit folder run by MLX's quantized kernels,
    // by thinkwire's (the default) and dequantized to f32: different
    // kernels, same weights, same decisive tokens.
    let with = |precision| {
        let engine = MlxEngine::load(
            &tiny("tiny-qwen3-4bit"),
            &LoadOptions {
                precision,
                ..LoadOptions::default()
            },
        )
        .unwrap();
        let mut s = Script::default();
        run(&engine, &request(PROMPT.to_vec(), 6), &mut s);
        s.tokens
    };
    let keep = with(Precision::Keep);
    assert_eq!(with(Precision::Auto), keep);
    assert_eq!(with(Precision::F32), keep);
}

/// The installed default model (a Q4_1 GGUF with a Q8_0 embedding).
fn default_model() -> PathBuf {
    let home = std::env::var_os("THINKWIRE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/thinkwire"));
    home.join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

#[test]
fn converted_quantized_folder_is_the_same_model() {
    // `convert` (default: keep the packed bits) writes mixed widths as
    // mlx-lm reads them; loading the folder gives the GGUF's tokens.
    let gguf = default_model();
    let out = std::env::temp_dir().join(format!("thinkwire-convert-{}", std::process::id()));
    let report = thinkwire_engine::mlx::convert_gguf(
        &gguf,
        &out,
        &thinkwire_engine::mlx::ConvertOptions::default(),
    )
    .unwrap();
    assert!(report.tensors > 0);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    let q = &config["quantization"];
    assert_eq!(
        (q["group_size"].as_i64(), q["bits"].as_i64()),
        (Some(32), Some(4))
    );
    assert_eq!(q["model.embed_tokens"]["bits"].as_i64(), Some(8), "{q}");
    let prompt = vec![1, 9690, 198, 2683, 314, 253, 5356, 30, 2, 198, 1, 4093, 198];
    let tokens = |path: &Path| {
        let engine = MlxEngine::load(path, &LoadOptions::default()).unwrap();
        let mut s = Script::default();
        run(&engine, &request(prompt.clone(), 12), &mut s);
        s.tokens
    };
    let from_gguf = tokens(&gguf);
    let from_folder = tokens(&out);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(from_folder, from_gguf);
}

/// The engine says how it holds each kind of weight (`thinkwire inspect`).
#[test]
fn info_describes_how_the_weights_are_held() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-qwen3-moe-4bit");
    let describe = |precision| {
        let engine = MlxEngine::load(
            &dir,
            &LoadOptions {
                precision,
                ..LoadOptions::default()
            },
        )
        .unwrap();
        engine.info().quantization.clone().unwrap()
    };
    // Two layers: one MoE (router 8-bit/64, experts), one dense MLP.
    let auto = describe(Precision::Auto);
    assert!(
        auto.contains("3 × 4-bit/32 experts on thinkwire's kernels"),
        "{auto}"
    );
    let keep = describe(Precision::Keep);
    assert!(
        keep.contains("3 × 4-bit/32 experts on MLX's gather_qmm"),
        "{keep}"
    );
    assert!(
        auto.contains("1 × 8-bit/64 on thinkwire's kernels"),
        "{auto}"
    );
    assert!(auto.contains("(output layer)"), "{auto}");
    let dense = describe(Precision::F32);
    assert!(
        dense.contains("float32 dense experts, gather_mm"),
        "{dense}"
    );
    assert!(!dense.contains("bit/"), "{dense}");
}
