//! The product path end to end on the real default model (SmolLM2-135M on
//! the MLX engine, separate-pass reasoning): the `thinkwire` binary's
//! `chat`, `bench`, `inspect` and `serve`'s warm-up here; the official `@ag-ui/client`, the
//! web demo in headless Chromium, every `/v1` surface and the Python SDKs
//! (`surfaces`); raw completions and prompt scoring against the engine's
//! own continuation (`completions`).
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod completions;
mod surfaces;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use thinkwire::agent::{Agent, AgentConfig, ReasoningPolicy};
use thinkwire::server::ServerConfig;
use thinkwire_seal::{Key, KeyRing};

use support::TestServer;
use support::recording::Recording;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Short passes keep a CPU test quick; the behaviour is the same.
fn test_config() -> AgentConfig {
    AgentConfig {
        max_new_tokens: 40,
        policy: ReasoningPolicy {
            max_reasoning_tokens: 40,
            ..ReasoningPolicy::default()
        },
        sampling: thinkwire_engine::SamplingParams::greedy(),
        ..AgentConfig::default()
    }
}

/// The default model, loaded once for the whole binary.
fn agent() -> Arc<Agent> {
    static AGENT: OnceLock<Arc<Agent>> = OnceLock::new();
    AGENT
        .get_or_init(|| {
            let model = support::default_model_args()
                .load()
                .expect("loading the default model (run scripts/setup)");
            let keys = KeyRing::new(Key::generate().unwrap());
            Arc::new(Agent::new(model, keys, test_config()))
        })
        .clone()
}

/// Another copy of the default model whose engine keeps every prompt, so a
/// test can show what reached the model (the shared one serves the other
/// tests at the same time).
fn recording_agent() -> (Arc<Agent>, Arc<Recording>) {
    use thinkwire_engine::mlx::{LoadOptions, MlxEngine};
    let path = support::default_model_args().path().unwrap();
    let engine = MlxEngine::load(&path, &LoadOptions::default()).expect("the default model");
    let recording = Arc::new(Recording::new(Arc::new(engine)));
    let model = thinkwire::agent::LocalModel::new(
        Arc::clone(&recording) as Arc<dyn thinkwire_engine::Engine>,
        thinkwire::agent::LocalModel::load_chat(&path).unwrap(),
        &thinkwire_reasoning::Registry::builtin(),
    )
    .unwrap();
    let keys = KeyRing::new(Key::generate().unwrap());
    (Arc::new(Agent::new(model, keys, test_config())), recording)
}

async fn server(web: bool) -> TestServer {
    let config = ServerConfig {
        web_dir: web.then(|| root().join("web-demo/dist")),
        ..ServerConfig::default()
    };
    TestServer::start_shared(agent(), config).await
}

#[test]
fn chat_answers_the_capital_of_france() {
    let output = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args([
            "chat",
            "What is the capital of France?",
            "--max-tokens",
            "24",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "thinkwire chat failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("Paris"),
        "the answer does not mention Paris: {stdout:?}"
    );
}

/// `thinkwire serve` with `flags`: whether it logged its warm-up before it
/// said it was listening (and that it said so within two minutes).
fn warmed_before_listening(flags: &[&str]) -> bool {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args(["serve", "--listen", "127.0.0.1:0", "--ephemeral-key"])
        .args(flags)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .env_remove("THINKWIRE_NO_WARMUP")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read on a thread of its own, so that a server that hangs without a
    // word fails the test at the deadline instead of holding it.
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut warmed, mut listening) = (false, false);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        warmed |= line.contains("warmed up") && line.contains("elapsed_ms=");
        if line.contains("serving AG-UI on http://") {
            listening = true;
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(listening, "serve {flags:?} did not start listening");
    warmed
}

#[test]
fn a_gpus_warm_up_runs_anywhere_and_forgets_its_pace() {
    let agent = agent();
    let model = agent.model().unwrap();
    let engine = model.engine();
    let before = engine.load().steps;
    model.warm_up(thinkwire::agent::WarmUp::Gpu).unwrap();
    // A prompt pass and a step alone, a pass of two prompts and three
    // steps, then the three prompts of a GPU's row tiles (more where the
    // two prompts of the pair arrived apart).
    let steps = engine.load().steps - before;
    assert!(steps >= 9, "{steps} steps");
    assert_eq!(engine.expected_wait(64, &[]), None, "the pace is forgotten");
    assert_eq!(engine.expected_wait(2, &[]), None, "the pace is forgotten");
}

#[test]
fn serve_warms_the_model_up_before_it_listens_unless_told_not_to() {
    assert!(warmed_before_listening(&[]), "no warm-up before listening");
    assert!(!warmed_before_listening(&["--no-warmup"]));
}

/// `thinkwire bench --json` with `args`: its report, or its error output.
fn bench_json(args: &[&str]) -> Result<serde_json::Value, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args(["bench", "--json", "--runs", "1", "--max-tokens", "2"])
        .args(args)
        .output()
        .unwrap();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(line).map_err(|e| format!("{e}: {stdout}"))
}

/// `--prompt-tokens N` benches prompts of exactly N ids (what
/// `scripts/gpu-bench` compares with `mlx_lm.benchmark -p N`), alone and
/// at each concurrency, and 0 is refused naming the flag.
#[test]
fn bench_runs_random_prompts_of_the_length_asked() {
    let one = bench_json(&["--prompt-tokens", "12"]).unwrap();
    assert_eq!(one["thinkwire"]["prompt_tokens"], 12, "{one}");
    assert_eq!(one["thinkwire"]["generated_tokens"], 2, "{one}");
    let many = bench_json(&["--prompt-tokens", "12", "--concurrency", "1,3"]).unwrap();
    assert_eq!(many["prompt_tokens"], 12, "{many}");
    let rows = many["thinkwire"].as_array().unwrap();
    let levels: Vec<_> = rows.iter().map(|r| r["concurrency"].clone()).collect();
    assert_eq!(levels, [1, 3], "{many}");
    assert!(rows.iter().all(|r| r["ttft_p50_s"].as_f64() > Some(0.0)));
    assert_eq!(rows[1]["generated_tokens"], 6, "{many}");
    let refused = bench_json(&["--prompt-tokens", "0"]).unwrap_err();
    assert!(refused.contains("--prompt-tokens"), "{refused}");
}

/// `--pairs 2` times thinkwire and mlx-lm (the real one, from the venv)
/// in turn twice, one stream and at each concurrency, and reports a ratio
/// per pair; without `--compare-mlx-lm` it is refused naming the flag. On
/// the tiny Qwen3 folder, so mlx-lm's four processes start quickly.
#[test]
fn bench_pairs_time_both_engines_in_turn() {
    let tiny = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    let tiny = tiny.to_str().unwrap();
    let common = ["-m", tiny, "--prompt-tokens", "4", "--pairs", "2"];
    let one = bench_json(&[&common[..], &["--compare-mlx-lm"]].concat()).unwrap();
    assert_eq!(one["pairs"], 2, "{one}");
    let reference = &one["mlx_lm"][0];
    assert_eq!(reference["weights"], "same folder", "{one}");
    for figure in ["decode", "prefill"] {
        let ratios = reference["paired_ratios"][figure].as_array().unwrap();
        assert_eq!(ratios.len(), 2, "{one}");
        assert!(ratios.iter().all(|r| r.as_f64() > Some(0.0)), "{one}");
    }
    let many =
        bench_json(&[&common[..], &["--compare-mlx-lm", "--concurrency", "1,2"]].concat()).unwrap();
    for engine in ["thinkwire", "mlx_lm"] {
        let pairs = many["pairs"][engine].as_array().unwrap();
        assert_eq!(pairs.len(), 2, "{many}");
        for rows in pairs {
            let levels: Vec<_> = rows
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["concurrency"].clone())
                .collect();
            assert_eq!(levels, [1, 2], "{many}");
        }
    }
    let refused = bench_json(&common).unwrap_err();
    assert!(refused.contains("--pairs"), "{refused}");
}

#[test]
fn inspect_names_architecture_weights_and_reasoning_format() {
    let output = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args(["inspect"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "thinkwire inspect failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for line in [
        "architecture:   llama",
        "chat templates: default",
        "reasoning:      separate-pass",
    ] {
        assert!(stdout.contains(line), "no {line:?} in {stdout}");
    }
    // The 4-bit layers run on AMX tiles where the CPU (and Linux) give them,
    // the 8-bit output layer on FMAs over the same panels.
    let tiles = thinkwire_engine::mlx::tiles_available();
    let (four, eight) = if tiles {
        (", 16-row panels on AMX tiles", ", 16-row panels on FMAs")
    } else {
        ("", "")
    };
    let weights = format!(
        "weights:        120 × 4-bit/32 on thinkwire's kernels{four}, 1 × 8-bit/32 on thinkwire's kernels{eight} (output layer)"
    );
    assert!(stdout.contains(&weights), "no {weights:?} in {stdout}");
}
