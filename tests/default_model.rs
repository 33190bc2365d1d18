//! The product path end to end on the real default model (SmolLM2-135M on
//! the MLX engine, separate-pass reasoning): the `thinkwire chat` binary,
//! the official `@ag-ui/client`, and the web demo in headless Chromium.
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use thinkwire::agent::{Agent, AgentConfig, ReasoningPolicy};
use thinkwire::cli::ModelArgs;
use thinkwire::server::ServerConfig;
use thinkwire_seal::{Key, KeyRing};

use support::TestServer;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The default model, loaded once for the whole binary.
fn agent() -> Arc<Agent> {
    static AGENT: OnceLock<Arc<Agent>> = OnceLock::new();
    AGENT
        .get_or_init(|| {
            let args = ModelArgs {
                model: None,
                precision: "auto".into(),
                formats: None,
                prefix_cache: false,
                prefix_cache_mb: 512,
                max_batch: 8,
                kv_cache_mb: None,
            };
            let model = args
                .load()
                .expect("loading the default model (run scripts/setup)");
            // Short passes keep a CPU test quick; the behaviour is the same.
            let config = AgentConfig {
                max_new_tokens: 40,
                policy: ReasoningPolicy {
                    max_reasoning_tokens: 40,
                    ..ReasoningPolicy::default()
                },
                sampling: thinkwire_engine::SamplingParams::greedy(),
                ..AgentConfig::default()
            };
            Arc::new(Agent::new(
                model,
                KeyRing::new(Key::generate().unwrap()),
                config,
            ))
        })
        .clone()
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

/// The venv setup made, with the OpenAI and Anthropic SDKs in it.
fn sdk_python() -> std::path::PathBuf {
    let home = std::env::var_os("THINKWIRE_HOME").map_or_else(
        || std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/thinkwire"),
        std::path::PathBuf::from,
    );
    home.join("venv/bin/python")
}

async fn run_sdk(script: &'static str, args: Vec<String>) -> serde_json::Value {
    let output = tokio::task::spawn_blocking(move || {
        Command::new(sdk_python())
            .arg(root().join("tests/sdk").join(script))
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} failed:\n{stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
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

/// Issue #12: the official Python SDKs stream from the live server on the
/// default model, carry the sealed reasoning into a second turn, and get
/// an altered value refused in their API's error shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdks_keep_sealed_reasoning_on_the_default_model() {
    let server = server(false).await;
    let v1 = server.url("/v1");
    let chat = run_sdk("openai_client.py", vec![v1.clone()]).await;
    assert!(
        !chat["turn1"]["reasoning"].as_str().unwrap().is_empty(),
        "{chat}"
    );
    assert!(
        !chat["turn2"]["content"].as_str().unwrap().is_empty(),
        "{chat}"
    );
    assert_eq!(chat["tampered"]["status"], 400, "{chat}");
    assert_eq!(
        chat["tampered"]["body"]["code"],
        "SEALED_REASONING_REJECTED"
    );
    let responses = run_sdk(
        "openai_client.py",
        vec![v1, "--api".into(), "responses".into()],
    )
    .await;
    assert!(
        !responses["turn2"]["content"].as_str().unwrap().is_empty(),
        "{responses}"
    );
    assert_eq!(responses["tampered"]["status"], 400, "{responses}");
    let messages = run_sdk("anthropic_client.py", vec![server.url("")]).await;
    assert!(
        !messages["turn2"]["content"].as_array().unwrap().is_empty(),
        "{messages}"
    );
    assert_eq!(messages["tampered_signature"]["status"], 400, "{messages}");
    assert_eq!(messages["changed_thinking"]["status"], 400, "{messages}");
    server.shutdown().await;
}
