//! Greedy parity with mlx-lm on the same weights.
//!
//! The references in `tests/golden/*.json` come from
//! `scripts/golden/mlx_lm_ref.py golden` (see `scripts/golden/README.md`):
//! prompt ids (chat template applied by mlx-lm's tokenizer), 64 greedy
//! output ids and, per step, the gap between mlx-lm's two largest logits.
//!
//! Near-ties: at a step whose reference gap is below [`NEAR_TIE`], a change
//! of operation order or fusion may legitimately pick the other token, and
//! the texts diverge from there without a bug. So each case compares ids up
//! to (not including) its first near-tie step, and the number of steps
//! compared is asserted to be substantial.
#![cfg(feature = "mlx")]

use std::path::{Path, PathBuf};

use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
use thinkwire_engine::{Directive, Engine, GenerationRequest, SamplingParams, TokenSink};

/// Logit gap (top-1 minus top-2) under which a reference step is a near-tie.
const NEAR_TIE: f64 = 0.02;

struct Collect(Vec<u32>);
impl TokenSink for Collect {
    fn on_token(&mut self, id: u32) -> Directive {
        self.0.push(id);
        Directive::Continue
    }
}

#[derive(serde::Deserialize)]
struct Golden {
    max_tokens: usize,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    prompt_ids: Vec<u32>,
    output_ids: Vec<u32>,
    gaps: Vec<f64>,
}

/// `tests/golden/<name>`: a reference file or a tiny model.
fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

impl Case {
    /// Steps before the reference's first gap under `near_tie`.
    fn tie_free(&self, near_tie: f64) -> usize {
        self.gaps
            .iter()
            .position(|&g| g < near_tie)
            .unwrap_or(self.output_ids.len())
    }
}

fn golden(name: &str) -> Golden {
    let path = golden_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("golden JSON")
}

fn thinkwire_home() -> PathBuf {
    match std::env::var_os("THINKWIRE_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/thinkwire"),
    }
}

/// Runs every case and returns how many steps were compared per case.
fn check(engine: &MlxEngine, golden: &Golden, min_compared: usize) -> Vec<usize> {
    check_up_to(engine, golden, min_compared, NEAR_TIE)
}

/// [`check`] with another near-tie gap.
fn check_up_to(
    engine: &MlxEngine,
    golden: &Golden,
    min_compared: usize,
    near_tie: f64,
) -> Vec<usize> {
    let mut compared = Vec::new();
    for (i, case) in golden.cases.iter().enumerate() {
        let mut sink = Collect(Vec::new());
        engine
            .generate(
                &GenerationRequest {
                    prompt: case.prompt_ids.clone(),
                    max_tokens: golden.max_tokens,
                    sampling: SamplingParams::greedy(),
                    stop_token_ids: vec![],
                    logprobs: None,
                },
                &mut sink,
            )
            .expect("generation");
        let limit = case.tie_free(near_tie);
        assert!(
            limit >= min_compared.min(case.output_ids.len()),
            "case {i}: near-tie at step {limit} leaves too little to compare"
        );
        assert_eq!(
            &sink.0[..limit],
            &case.output_ids[..limit],
            "case {i}: ids differ before the first near-tie (step {limit})"
        );
        compared.push(limit);
    }
    compared
}

#[test]
fn default_model_matches_mlx_lm_greedy() {
    let model = thinkwire_home().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.is_file(),
        "the default model is missing at {}: run `scripts/setup` (it fetches it)",
        model.display()
    );
    let golden = golden("smollm2-135m.json");
    assert!(golden.cases.len() >= 3 && golden.max_tokens >= 64);
    let engine = MlxEngine::load(&model, &LoadOptions::default()).unwrap();
    let compared = check(&engine, &golden, 7);
    eprintln!("default model: steps compared per prompt (near-tie < {NEAR_TIE}): {compared:?}");
    // At least three prompts agree on all 64 tokens.
    assert!(
        compared.iter().filter(|&&n| n >= 64).count() >= 3,
        "{compared:?}"
    );
}

/// `--precision int8` rounds activations to 8 bits, so it promises less:
/// logits within a tolerance of the exact ones (`mlx/bench/precision_parity.rs` in
/// the crate), hence the same ids as mlx-lm up to the first step whose
/// reference gap is under [`INT8_NEAR_TIE`].
#[test]
fn default_model_int8_matches_mlx_lm_up_to_its_near_ties() {
    /// `thinkwire_engine::mlx`'s int8 near-tie gap (kept in step with it).
    const INT8_NEAR_TIE: f64 = 0.25;
    let model = thinkwire_home().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(model.is_file(), "run `scripts/setup`");
    let golden = golden("smollm2-135m.json");
    let options = LoadOptions {
        precision: Precision::Int8,
        ..LoadOptions::default()
    };
    let engine = MlxEngine::load(&model, &options).unwrap();
    // These prompts meet such gaps early (the teacher-forced test in the
    // crate compares every step clear of them instead).
    let compared = check_up_to(&engine, &golden, 0, INT8_NEAR_TIE);
    eprintln!("default model, int8: steps compared (near-tie < {INT8_NEAR_TIE}): {compared:?}");
    assert!(compared.iter().sum::<usize>() >= 8, "{compared:?}");
}

#[test]
fn tiny_random_models_match_mlx_lm_greedy() {
    for (name, precision) in [
        ("tiny-qwen2", Precision::F32),
        ("tiny-qwen3", Precision::F32),
        ("tiny-qwen3-4bit", Precision::Keep),
        ("tiny-qwen3-4bit", Precision::Auto),
        ("tiny-llama3-untied", Precision::F32),
        ("tiny-mistral", Precision::F32),
        ("tiny-phi3", Precision::F32),
        ("tiny-qwen3-moe", Precision::F32),
        ("tiny-qwen3-moe-4bit", Precision::Keep),
        ("tiny-qwen3-moe-4bit", Precision::Auto),
        ("tiny-qwen3-moe-4bit", Precision::F32),
        ("tiny-smollm3", Precision::F32),
        ("tiny-gemma3", Precision::F32),
        ("tiny-qwen3-yarn", Precision::F32),
        ("tiny-gpt-oss", Precision::F32),
        ("tiny-gpt-oss-4bit", Precision::Keep),
        ("tiny-gpt-oss-4bit", Precision::Auto),
        ("tiny-gpt-oss-4bit", Precision::F32),
        ("tiny-gpt-oss-mxfp4", Precision::Keep),
        ("tiny-gpt-oss-mxfp4", Precision::Auto),
        ("tiny-gpt-oss-mxfp4", Precision::F32),
    ] {
        let dir = golden_path(name);
        let engine = MlxEngine::load(
            &dir,
            &LoadOptions {
                precision,
                ..LoadOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let golden = golden(&format!("{name}.json"));
        let compared = check(&engine, &golden, 16);
        eprintln!("{name}: steps compared (near-tie < {NEAR_TIE}): {compared:?}");
    }
}

/// transformers >= 5 writes `rope_theta` and the scaling inside
/// `rope_parameters`: the same model in that layout gives the same ids.
#[test]
fn nested_rope_parameters_read_as_flat_ones() {
    let src = golden_path("tiny-qwen3-yarn");
    let dir = std::env::temp_dir().join(format!("thinkwire-rope-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let config_path = dir.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    let obj = config.as_object_mut().unwrap();
    let mut params = obj.remove("rope_scaling").unwrap();
    params["rope_theta"] = obj.remove("rope_theta").unwrap();
    obj.insert("rope_parameters".into(), params);
    std::fs::write(&config_path, config.to_string()).unwrap();
    let engine = MlxEngine::load(
        &dir,
        &LoadOptions {
            precision: Precision::F32,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let compared = check(&engine, &golden("tiny-qwen3-yarn.json"), 16);
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("tiny-qwen3-yarn with rope_parameters: steps compared {compared:?}");
}

/// The MXFP4 tiny gpt-oss as a GGUF in llama.cpp's layout
/// (`scripts/golden/make_gguf_gpt_oss.py`, run by `scripts/setup`): its
/// MXFP4 tensors repacked exactly, the 8-bit router written as its f32
/// dequantization (GGUF has no type for MLX's affine 8-bit), so it runs
/// densely where the folder ran it on the 8-bit kernels: the same ids up to
/// the first near-tie.
#[test]
fn tiny_gpt_oss_mxfp4_gguf_matches_mlx_lm_greedy() {
    let model = golden_path("tiny-gpt-oss-mxfp4.gguf");
    assert!(
        model.is_file(),
        "{} is missing: run `scripts/setup` (setup-models writes it)",
        model.display()
    );
    let golden = golden("tiny-gpt-oss-mxfp4.json");
    for precision in [Precision::Auto, Precision::Keep, Precision::F32] {
        let engine = MlxEngine::load(
            &model,
            &LoadOptions {
                precision,
                ..LoadOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{precision:?}: {e}"));
        let compared = check(&engine, &golden, 16);
        eprintln!(
            "tiny-gpt-oss-mxfp4.gguf, {}: steps compared (near-tie < {NEAR_TIE}): {compared:?}",
            precision.name()
        );
    }
}

/// On MLX's own attention (`keep` on a CPU, a GPU's path) sequences decode
/// in slots of one batch cache: prompts arriving together enter it with
/// their prefill, later ones join a running batch. Batched either way,
/// each case still gives mlx-lm's ids up to its first near-tie.
#[test]
fn tiny_models_on_mlx_attention_match_mlx_lm_batched() {
    for name in [
        "tiny-qwen3-4bit",
        "tiny-qwen3-moe-4bit",
        "tiny-gpt-oss-4bit",
    ] {
        let dir = golden_path(name);
        let engine = MlxEngine::load(
            &dir,
            &LoadOptions {
                precision: Precision::Keep,
                // Generous, so a slow machine's thread starts fall inside.
                batch_window: std::time::Duration::from_millis(400),
                ..LoadOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let golden = golden(&format!("{name}.json"));
        for staggered in [false, true] {
            let outputs = together(&engine, &golden, staggered);
            for (i, (case, got)) in golden.cases.iter().zip(&outputs).enumerate() {
                let limit = case.tie_free(NEAR_TIE);
                assert!(limit >= 16.min(case.output_ids.len()), "{name} case {i}");
                assert_eq!(
                    &got[..limit],
                    &case.output_ids[..limit],
                    "{name} case {i} (staggered: {staggered}): ids differ before the first near-tie (step {limit})"
                );
            }
        }
        let load = engine.load();
        assert!(load.batched_tokens > load.steps, "{name}: nothing batched");
        assert_eq!(load.active_sequences, 0);
    }
}

/// Every case of `golden` at once, each on its own thread; `staggered`:
/// the others start once the first has its first token.
fn together(engine: &MlxEngine, golden: &Golden, staggered: bool) -> Vec<Vec<u32>> {
    struct First(Collect, Option<std::sync::mpsc::Sender<()>>);
    impl TokenSink for First {
        fn on_token(&mut self, id: u32) -> Directive {
            if let Some(tx) = self.1.take() {
                let _ = tx.send(());
            }
            self.0.on_token(id)
        }
    }
    let (tx, started) = std::sync::mpsc::channel();
    let mut tx = staggered.then_some(tx);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (i, case) in golden.cases.iter().enumerate() {
            if i == 1 && staggered {
                started.recv().expect("the first case started");
            }
            let request = GenerationRequest {
                prompt: case.prompt_ids.clone(),
                max_tokens: golden.max_tokens,
                sampling: SamplingParams::greedy(),
                stop_token_ids: vec![],
                logprobs: None,
            };
            let mut sink = First(Collect(Vec::new()), tx.take());
            handles.push(s.spawn(move || {
                engine.generate(&request, &mut sink).expect("generation");
                sink.0.0
            }));
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("a generation thread"))
            .collect()
    })
}
