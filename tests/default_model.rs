//! The product path end to end on the real default model (SmolLM2-135M on
//! the MLX engine, separate-pass reasoning): the `thinkwire chat` binary,
//! the official `@ag-ui/client`, the web demo in headless Chromium, and a
//! raw completion against the engine's own continuation.
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_streams_separate_pass_reasoning_on_the_default_model() {
    let server = server(false).await;
    let url = server.url("/agent");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(root().join("tests/node/agui-client.mjs"))
            .arg(url)
            .args([
                "--prompt",
                "What is the capital of France?",
                "--forwarded",
                r#"{"reasoning":{"visibility":"full"}}"#,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "the official client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let messages = summary["messages"].as_array().unwrap();
    let reasoning = messages
        .iter()
        .find(|m| m["role"] == "reasoning")
        .expect("a reasoning message");
    assert!(
        !reasoning["content"].as_str().unwrap().trim().is_empty(),
        "{reasoning}"
    );
    assert!(
        reasoning["encryptedValue"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let answer = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("an answer");
    assert!(
        !answer["content"].as_str().unwrap().trim().is_empty(),
        "{answer}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_demo_passes_its_browser_tests() {
    assert!(
        root().join("web-demo/dist/index.html").is_file(),
        "the web demo is not built — run scripts/setup"
    );
    let server = server(true).await;
    let base = server.url("/");
    let shots = root().join("target/web-demo-screenshots");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(root().join("web-demo/tests/e2e.mjs"))
            .arg(base)
            .arg(shots)
            .args(["--reasoning", "require", "--run-timeout", "180"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "web demo e2e failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    server.shutdown().await;
}

/// Issue #12: the same conversation through AG-UI, chat completions,
/// responses and messages, greedy, gives the same answer and reasoning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_surface_gives_the_same_answer_on_the_default_model() {
    let server = server(false).await;
    let said = support::v1::every_surface(&server, "What is the capital of France?", 24).await;
    let first = &said[0];
    assert!(!first.answer.trim().is_empty(), "{said:?}");
    assert!(!first.reasoning.trim().is_empty(), "{said:?}");
    for s in &said[1..] {
        assert_eq!(s.answer, first.answer, "{} vs AG-UI", s.surface);
        assert_eq!(s.reasoning, first.reasoning, "{} vs AG-UI", s.surface);
    }
    server.shutdown().await;
}

/// A raw completion on the default model is the engine's own greedy
/// continuation of the tokenizer's encoding of the prompt, no template
/// around it; its log-probabilities are the model's (greedy: each token
/// the most likely of its alternatives).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_completion_is_the_engines_continuation_on_the_default_model() {
    let server = server(false).await;
    let prompt = "The capital of France is";
    let body =
        serde_json::json!({"prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 3});
    let response = reqwest::Client::new()
        .post(server.url("/v1/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let whole: serde_json::Value = response.json().await.unwrap();
    let choice = &whole["choices"][0];

    let model = agent();
    let model = model.model().unwrap();
    let ids = model.encode_raw(prompt).unwrap();
    let request = thinkwire_engine::GenerationRequest {
        prompt: ids.clone(),
        max_tokens: 8,
        sampling: thinkwire_engine::SamplingParams::greedy(),
        stop_token_ids: model.stop_token_ids().to_vec(),
        logprobs: None,
    };
    struct Ids(Vec<u32>);
    impl thinkwire_engine::TokenSink for Ids {
        fn on_token(&mut self, id: u32) -> thinkwire_engine::Directive {
            self.0.push(id);
            thinkwire_engine::Directive::Continue
        }
    }
    let mut sink = Ids(Vec::new());
    model.engine().generate(&request, &mut sink).unwrap();
    assert_eq!(choice["text"], model.decode(&sink.0).unwrap(), "{whole}");
    assert_eq!(whole["usage"]["prompt_tokens"], ids.len(), "{whole}");
    let logprobs = &choice["logprobs"];
    for (i, lp) in logprobs["token_logprobs"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let lp = lp.as_f64().unwrap();
        let top = logprobs["top_logprobs"][i].as_object().unwrap();
        let best = top
            .values()
            .map(|v| v.as_f64().unwrap())
            .fold(f64::MIN, f64::max);
        assert!(
            lp <= 0.0 && (lp - best).abs() < 1e-4,
            "{i}: {lp} vs {top:?}"
        );
    }
    server.shutdown().await;
}

/// `echo` with `logprobs` scores the prompt on the default model: each of
/// its tokens after the first (`null`) has the log-probability the engine
/// gave it when it generated that token, and greedy tokens are the most
/// likely of their alternatives. The prompt is long enough that the
/// continuation is scored in a later pass than its start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_prompt_is_scored_as_the_engine_generated_it() {
    let server = server(false).await;
    let agent = agent();
    let model = agent.model().unwrap();
    let text = "Paris is in France. Rome is in Italy. ".repeat(16) + "Madrid is in";
    let ids = model.encode_raw(&text).unwrap();
    assert!(ids.len() > 130, "{} tokens", ids.len());
    struct Logged(Vec<u32>, Vec<thinkwire_engine::TokenLogprobs>);
    impl thinkwire_engine::TokenSink for Logged {
        fn on_token(&mut self, id: u32) -> thinkwire_engine::Directive {
            self.0.push(id);
            thinkwire_engine::Directive::Continue
        }
        fn on_logprobs(&mut self, logprobs: thinkwire_engine::TokenLogprobs) {
            self.1.push(logprobs);
        }
    }
    let request = thinkwire_engine::GenerationRequest {
        prompt: ids.clone(),
        max_tokens: 6,
        sampling: thinkwire_engine::SamplingParams::greedy(),
        stop_token_ids: model.stop_token_ids().to_vec(),
        logprobs: Some(2),
    };
    let mut sink = Logged(Vec::new(), Vec::new());
    model.engine().generate(&request, &mut sink).unwrap();
    assert!(!sink.0.is_empty() && sink.1.len() == sink.0.len());
    let whole: Vec<u32> = ids.iter().chain(&sink.0).copied().collect();

    let body = serde_json::json!({"prompt": whole, "echo": true, "logprobs": 2,
        "max_tokens": 1, "temperature": 0});
    let response = reqwest::Client::new()
        .post(server.url("/v1/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    let choice = &answer["choices"][0];
    let logprobs = &choice["logprobs"];
    let listed = logprobs["token_logprobs"].as_array().unwrap();
    // The prompt's tokens, then the one generated.
    assert_eq!(listed.len(), whole.len() + 1, "{answer}");
    assert!(
        listed[0].is_null() && logprobs["top_logprobs"][0].is_null(),
        "{answer}"
    );
    assert_eq!(logprobs["text_offset"][0], 0, "{answer}");
    let text = choice["text"].as_str().unwrap();
    assert!(text.starts_with(&model.decode(&whole).unwrap()), "{answer}");
    for (i, generated) in sink.1.iter().enumerate() {
        let at = ids.len() + i;
        let scored = listed[at].as_f64().unwrap();
        assert!(
            (scored - f64::from(generated.logprob)).abs() < 0.02,
            "token {at}: scored {scored}, generated with {}",
            generated.logprob
        );
        let top = logprobs["top_logprobs"][at].as_object().unwrap();
        let best = top
            .values()
            .map(|v| v.as_f64().unwrap())
            .fold(f64::MIN, f64::max);
        assert!(
            (scored - best).abs() < 1e-4,
            "token {at}: {scored} vs {top:?}"
        );
    }
    server.shutdown().await;
}

/// Issue #12: the official Python SDKs stream from the live server on the
/// default model, carry the sealed reasoning into a second turn, whose
/// prompts (kept by a recording engine) hold the first turn's reasoning,
/// and get an altered value refused in their API's error shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdks_keep_sealed_reasoning_on_the_default_model() {
    let (agent, recording) = recording_agent();
    let server = TestServer::start_shared(Arc::clone(&agent), ServerConfig::default()).await;
    let v1 = server.url("/v1");
    let chat = support::run_sdk("openai_client.py", vec![v1.clone()]).await;
    let reasoning = chat["turn1"]["reasoning"].as_str().unwrap();
    assert!(!reasoning.is_empty(), "{chat}");
    assert!(
        !chat["turn2"]["content"].as_str().unwrap().is_empty(),
        "{chat}"
    );
    let tool_called = !chat["turn1"]["tool_calls"].as_array().unwrap().is_empty();
    second_turn_saw(
        &agent,
        &recording,
        tool_called,
        reasoning,
        "chat completions",
    );
    assert_eq!(chat["tampered"]["status"], 400, "{chat}");
    assert_eq!(
        chat["tampered"]["body"]["code"],
        "SEALED_REASONING_REJECTED"
    );

    let responses = support::run_sdk(
        "openai_client.py",
        vec![v1, "--api".into(), "responses".into()],
    )
    .await;
    assert!(
        !responses["turn2"]["content"].as_str().unwrap().is_empty(),
        "{responses}"
    );
    let output = responses["turn1"]["output"].as_array().unwrap();
    let tool_called = output.iter().any(|i| i["type"] == "function_call");
    let reasoning = responses["turn1"]["reasoning"].as_str().unwrap();
    second_turn_saw(&agent, &recording, tool_called, reasoning, "responses");
    assert_eq!(responses["tampered"]["status"], 400, "{responses}");

    let messages = support::run_sdk("anthropic_client.py", vec![server.url("")]).await;
    assert!(
        !messages["turn2"]["content"].as_array().unwrap().is_empty(),
        "{messages}"
    );
    let blocks = messages["turn1"]["content"].as_array().unwrap();
    let thinking = blocks.iter().find(|b| b["type"] == "thinking").unwrap();
    let tool_called = blocks.iter().any(|b| b["type"] == "tool_use");
    let reasoning = thinking["thinking"].as_str().unwrap();
    second_turn_saw(&agent, &recording, tool_called, reasoning, "messages");
    assert_eq!(messages["tampered_signature"]["status"], 400, "{messages}");
    assert_eq!(messages["changed_thinking"]["status"], 400, "{messages}");
    server.shutdown().await;
}

/// Every prompt of the SDK script's second turn (the one holding the tool
/// result, or the follow-up question) carries the first turn's `reasoning`
/// as the model's earlier notes, which it can only have from the sealed
/// value the client sent back. (The notes are looked for as the separate
/// pass words them: a small model's answer may repeat its reasoning, so the
/// bare text alone proves nothing.)
fn second_turn_saw(
    agent: &Agent,
    recording: &Recording,
    tool_called: bool,
    reasoning: &str,
    surface: &str,
) {
    let marker = if tool_called {
        "temperature_c"
    } else {
        "Say it again, briefly."
    };
    let reasoning = reasoning.trim();
    assert!(!reasoning.is_empty(), "{surface}: no reasoning in turn 1");
    let spec = agent.model().unwrap().format().separate_pass().unwrap();
    let notes = spec.with_earlier_notes("", reasoning);
    let prompts: Vec<String> = recording
        .take()
        .iter()
        .map(|call| agent.model().unwrap().decode(&call.prompt).unwrap())
        .filter(|text| text.contains(marker))
        .collect();
    assert!(!prompts.is_empty(), "{surface}: no second-turn prompt");
    for prompt in &prompts {
        assert!(
            prompt.contains(&notes),
            "{surface}: a second-turn prompt lacks the first turn's reasoning"
        );
    }
}
