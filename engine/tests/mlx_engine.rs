//! Behaviour of the MLX engine on the tiny random models of
//! `tests/golden/` (no download needed): chunked prefill, directives,
//! stop tokens, limits, seeded sampling, and load errors.
#![cfg(feature = "mlx")]
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
use thinkwire_engine::{
    Directive, Engine, EngineError, Finish, GenerationRequest, SamplingParams, TokenSink,
};

fn tiny(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn load(name: &str, chunk: usize) -> MlxEngine {
    MlxEngine::load(
        &tiny(name),
        &LoadOptions {
            prefill_chunk: chunk,
            ..LoadOptions::default()
        },
    )
    .unwrap()
}

fn request(prompt: Vec<u32>, max_tokens: usize) -> GenerationRequest {
    GenerationRequest {
        prompt,
        max_tokens,
        sampling: SamplingParams::greedy(),
        stop_token_ids: vec![],
    }
}

/// Records tokens and prefill progress; scripted directives by position.
#[derive(Default)]
struct Script {
    tokens: Vec<u32>,
    prefill: Vec<(usize, usize)>,
    force_at: Option<(usize, Vec<u32>)>,
    stop_at: Option<usize>,
    cancel_prefill_after: Option<usize>,
}

impl TokenSink for Script {
    fn on_token(&mut self, id: u32) -> Directive {
        self.tokens.push(id);
        let n = self.tokens.len();
        if self.stop_at == Some(n) {
            return Directive::Stop;
        }
        match &self.force_at {
            Some((at, forced)) if *at == n => Directive::Force(forced.clone()),
            _ => Directive::Continue,
        }
    }

    fn on_prefill(&mut self, done: usize, total: usize) -> ControlFlow<()> {
        self.prefill.push((done, total));
        match self.cancel_prefill_after {
            Some(n) if self.prefill.len() >= n => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    }
}

fn run(
    engine: &MlxEngine,
    req: &GenerationRequest,
    sink: &mut Script,
) -> thinkwire_engine::GenerationStats {
    engine.generate(req, sink).unwrap()
}

const PROMPT: [u32; 23] = [
    5, 17, 99, 3, 250, 7, 31, 64, 128, 200, 11, 42, 77, 90, 13, 8, 150, 19, 23, 180, 66, 2, 9,
];

#[test]
fn chunked_prefill_matches_one_shot_and_reports_progress() {
    let whole = load("tiny-qwen3", 512);
    let chunked = load("tiny-qwen3", 5);
    let mut a = Script::default();
    let mut b = Script::default();
    run(&whole, &request(PROMPT.to_vec(), 24), &mut a);
    let stats = run(&chunked, &request(PROMPT.to_vec(), 24), &mut b);
    assert_eq!(a.tokens, b.tokens);
    assert_eq!(stats.prompt_tokens, PROMPT.len());
    assert_eq!(
        b.prefill,
        vec![(5, 23), (10, 23), (15, 23), (20, 23), (23, 23)]
    );
}

#[test]
fn max_tokens_stop_and_cancellation() {
    let e = load("tiny-qwen2", 512);
    let mut s = Script::default();
    let stats = run(&e, &request(PROMPT.to_vec(), 10), &mut s);
    assert_eq!(stats.finish, Finish::Length);
    assert_eq!((s.tokens.len(), stats.generated_tokens), (10, 10));

    // A stop token ends generation and is not handed to the sink.
    let stop = s.tokens[4];
    let first = s.tokens.iter().position(|&t| t == stop).unwrap();
    let mut s2 = Script::default();
    let stats = run(
        &e,
        &GenerationRequest {
            stop_token_ids: vec![stop],
            ..request(PROMPT.to_vec(), 10)
        },
        &mut s2,
    );
    assert_eq!(stats.finish, Finish::StopToken(stop));
    assert_eq!(s2.tokens, s.tokens[..first]);

    let mut s3 = Script {
        stop_at: Some(3),
        ..Script::default()
    };
    let stats = run(&e, &request(PROMPT.to_vec(), 10), &mut s3);
    assert_eq!(stats.finish, Finish::Cancelled);
    assert_eq!(s3.tokens, s.tokens[..3]);

    let mut s4 = Script {
        cancel_prefill_after: Some(1),
        ..Script::default()
    };
    let stats = run(
        &load("tiny-qwen2", 8),
        &request(PROMPT.to_vec(), 10),
        &mut s4,
    );
    assert_eq!(stats.finish, Finish::Cancelled);
    assert!(s4.tokens.is_empty());
}

#[test]
fn forced_tokens_continue_as_if_generated() {
    // On the CPU's fused path, and on MLX's attention (`keep`, a GPU's
    // path), where the forced rows are written into the sequence's batch
    // slot in a pass of their own.
    for precision in [Precision::Auto, Precision::Keep] {
        let e = MlxEngine::load(
            &tiny("tiny-llama3-untied"),
            &LoadOptions {
                precision,
                ..LoadOptions::default()
            },
        )
        .unwrap();
        let forced = vec![40u32, 41, 42];
        let mut s = Script {
            force_at: Some((2, forced.clone())),
            ..Script::default()
        };
        let stats = run(&e, &request(PROMPT.to_vec(), 12), &mut s);
        assert_eq!(stats.finish, Finish::Length);
        // 2 generated + 3 forced count towards max_tokens: 7 more generated.
        assert_eq!(s.tokens.len(), 9);

        // Same as a prompt that already contains those tokens.
        let mut prompt = PROMPT.to_vec();
        prompt.extend_from_slice(&s.tokens[..2]);
        prompt.extend_from_slice(&forced);
        let mut plain = Script::default();
        run(&e, &request(prompt, 7), &mut plain);
        assert_eq!(&s.tokens[2..], &plain.tokens[..], "{precision:?}");
    }
}

#[test]
fn seeded_sampling_is_reproducible() {
    let e = load("tiny-qwen3", 512);
    let sampled = |seed| {
        let mut s = Script::default();
        run(
            &e,
            &GenerationRequest {
                sampling: SamplingParams {
                    temperature: 1.5,
                    top_k: 50,
                    top_p: 0.95,
                    min_p: 0.01,
                    repetition_penalty: 1.1,
                    seed: Some(seed),
                    ..SamplingParams::greedy()
                },
                ..request(PROMPT.to_vec(), 16)
            },
            &mut s,
        );
        s.tokens
    };
    assert_eq!(sampled(1), sampled(1));
    assert_ne!(sampled(1), sampled(2));
}

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

#[test]
fn prefix_cache_reuses_a_common_prefix_and_changes_no_token() {
    let cached = MlxEngine::load(
        &tiny("tiny-qwen3"),
        &LoadOptions {
            prefill_chunk: 4,
            prefix_cache: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let fresh = load("tiny-qwen3", 4);
    let mut first = Script::default();
    run(&cached, &request(PROMPT.to_vec(), 6), &mut first);
    // A follow-up turn: the first prompt, its answer, then something new.
    let mut follow = PROMPT.to_vec();
    follow.extend(&first.tokens);
    follow.extend([44, 45, 46, 47, 48, 49]);
    let (mut a, mut b) = (Script::default(), Script::default());
    run(&cached, &request(follow.clone(), 8), &mut a);
    run(&fresh, &request(follow.clone(), 8), &mut b);
    assert_eq!(a.tokens, b.tokens);
    // Only the new part was prefilled: progress starts past the old prompt.
    assert!(a.prefill[0].0 > PROMPT.len(), "{:?}", a.prefill);
    assert_eq!(b.prefill[0].0, 4);
    // A prompt that parts early from the kept one, and the same prompt
    // again (all but its last token reused): still the fresh tokens.
    let mut other = PROMPT[..3].to_vec();
    other.extend([1, 2, 3, 4, 5, 6, 7]);
    for prompt in [other.clone(), other] {
        let (mut c, mut d) = (Script::default(), Script::default());
        run(&cached, &request(prompt.clone(), 8), &mut c);
        run(&fresh, &request(prompt, 8), &mut d);
        assert_eq!(c.tokens, d.tokens);
    }
}

#[test]
fn a_kept_prefix_serves_every_prompt_that_starts_alike_at_once() {
    // A system prompt or document in the pool: prompts arriving together
    // that start with it each start from it (the entry is lent as views,
    // not handed to the first), under `keep` in one padded pass, and pick
    // the tokens they pick from scratch.
    let options = LoadOptions {
        precision: thinkwire_engine::mlx::Precision::Keep,
        batch_window: std::time::Duration::from_millis(400),
        // Progress then tells what was reused: 4 tokens a pass.
        prefill_chunk: 4,
        ..LoadOptions::default()
    };
    let cached = MlxEngine::load(
        &tiny("tiny-qwen3"),
        &LoadOptions {
            prefix_cache: true,
            ..options.clone()
        },
    )
    .unwrap();
    let fresh = MlxEngine::load(&tiny("tiny-qwen3"), &options).unwrap();
    run(
        &cached,
        &request(PROMPT.to_vec(), 2),
        &mut Script::default(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while cached.load().prefix_cache_bytes == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing kept");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let prompts: Vec<Vec<u32>> = (0..4u32)
        .map(|i| {
            let mut p = PROMPT[..20].to_vec();
            p.extend((0..5 + i).map(|j| 30 + 17 * i + 3 * j));
            p
        })
        .collect();
    let runs: Vec<Script> = std::thread::scope(|s| {
        let handles: Vec<_> = prompts
            .iter()
            .map(|p| {
                let (engine, req) = (&cached, request(p.clone(), 8));
                s.spawn(move || {
                    let mut sink = Script::default();
                    run(engine, &req, &mut sink);
                    sink
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (p, got) in prompts.iter().zip(&runs) {
        // Only the part after the kept 20 tokens was prefilled.
        assert_eq!(got.prefill[0].0, 24, "{:?}", got.prefill);
        let mut want = Script::default();
        run(&fresh, &request(p.clone(), 8), &mut want);
        assert_eq!(got.tokens, want.tokens);
    }
}

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

#[test]
fn generates_from_other_threads_than_the_loading_one() {
    // Servers call `generate` from whichever blocking thread is free.
    let e = std::sync::Arc::new(load("tiny-qwen3", 512));
    let mut here = Script::default();
    run(&e, &request(PROMPT.to_vec(), 8), &mut here);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut s = Script::default();
                run(&e, &request(PROMPT.to_vec(), 8), &mut s);
                s.tokens
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), here.tokens);
    }
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
