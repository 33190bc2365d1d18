//! The default model behind every client: the official `@ag-ui/client`,
//! the web demo in headless Chromium, the four `/v1` surfaces, and the
//! official Python SDKs carrying sealed reasoning into a second turn.

use std::process::Command;
use std::sync::Arc;

use thinkwire::agent::Agent;
use thinkwire::server::ServerConfig;

use super::support::{self, TestServer, recording::Recording};
use super::{recording_agent, root, server};

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
