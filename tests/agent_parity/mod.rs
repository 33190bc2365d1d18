//! Parity through the path users take: a `RunAgentInput` over a real socket
//! → history (sealed reasoning opened) → template → control-token marking
//! → encode → MLX engine → detokenizer → splitter → AG-UI text, against
//! mlx-lm and transformers on the same weights.
//!
//! The engine-level golden tests feed the engine the reference's own prompt
//! ids, so they cannot see a difference in how the agent builds a prompt
//! or samples (issue 10: a default repetition penalty under
//! `temperature: 0` changed the default model's answers). Here every
//! conversation of `tests/parity/conversations.json` (single questions, and
//! multi-turn ones with a system prompt, tools, a tool result and reasoning
//! on an earlier assistant turn) runs through the server with greedy
//! sampling, and for each:
//! - the prompt ids the engine got equal transformers'
//!   `apply_chat_template(..., add_generation_prompt=True)`;
//! - the generated ids and the streamed text equal mlx-lm's greedy
//!   `generate` up to the reference's first near-tie step (top-1/top-2
//!   logit gap < 0.02, as in the engine's golden tests), and exactly when
//!   there is none.
//!
//! The conversations run [`AT_ONCE`] at a time, so the scheduler decodes
//! them together as it does for concurrent users; `batch_parity` shows that
//! batching changes no token before a near tie.
//!
//! References: `scripts/golden/agent_parity_ref.py` (see
//! `scripts/golden/README.md` to regenerate).
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod compare;
mod input;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire::server::ServerConfig;
use thinkwire_engine::Engine;
use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
use thinkwire_protocol::EventKind;
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

use compare::{Compared, compare_pass, pair_by_prompt, report};
use input::{Reference, agui_input, conversations, read_json};
use support::TestServer;
use support::recording::Recording;

/// Logit gap (top-1 minus top-2) under which a reference step is a
/// near-tie: from there a different order of operations may pick the
/// other token without a bug.
const NEAR_TIE: f64 = 0.02;

/// The test's sealing key: the test seals replayed reasoning with it as the
/// server would have.
const KEY: [u8; 32] = [0x5a; 32];

/// Runs in flight at once: the engine's default batch, so every step
/// decodes a full batch while cases remain.
const AT_ONCE: usize = 8;

// ---------------------------------------------------------------------------
// The check.

/// Loads `path` on the MLX engine behind a recording wrapper.
fn recording_agent(
    path: &Path,
    precision: Precision,
    max_tokens: usize,
) -> (Agent, Arc<Recording>) {
    let options = LoadOptions {
        precision,
        ..LoadOptions::default()
    };
    let engine = MlxEngine::load(path, &options)
        .unwrap_or_else(|e| panic!("loading {} (run scripts/setup): {e}", path.display()));
    let recording = Arc::new(Recording::new(Arc::new(engine)));
    let chat = LocalModel::load_chat(path).expect("tokenizer and template");
    let model = LocalModel::new(
        Arc::clone(&recording) as Arc<dyn Engine>,
        chat,
        &Registry::builtin(),
    )
    .expect("assembling the model");
    // The server's own default sampling: the client asks for greedy with
    // `temperature: 0`, as a user would.
    let config = AgentConfig {
        max_new_tokens: max_tokens,
        ..AgentConfig::default()
    };
    let agent = Agent::new(model, KeyRing::new(Key::from_bytes(&KEY)), config);
    (agent, recording)
}

/// Runs every conversation through a live server and compares; returns
/// per-pass failures (all of them, not just the first) and counts.
async fn check(
    path: &Path,
    precision: Precision,
    reference: &str,
    visibility: &str,
) -> (Vec<String>, Vec<Compared>) {
    let reference: Reference = read_json(reference);
    let conversations = conversations();
    assert_eq!(
        conversations.len(),
        reference.cases.len(),
        "{}: the reference is not of this conversation set; regenerate it",
        reference.model
    );
    for (conversation, case) in conversations.iter().zip(&reference.cases) {
        assert_eq!(conversation.name, case.name, "reference order");
    }
    let (agent, recording) = recording_agent(path, precision, reference.max_tokens);
    let keys = KeyRing::new(Key::from_bytes(&KEY));
    let server = TestServer::start(agent, ServerConfig::default()).await;
    let vocab = server.agent.model().unwrap().chat().tokenizer.vocab_size();
    let mut reasoning = json!({"visibility": visibility});
    if let Some(budget) = reference.reasoning_budget {
        reasoning["budgetTokens"] = json!(budget);
    }
    let forwarded = json!({
        "reasoning": reasoning,
        "sampling": {"temperature": 0, "maxTokens": reference.max_tokens},
    });
    let inputs: Vec<_> = conversations
        .iter()
        .enumerate()
        .map(|(i, conversation)| {
            agui_input(
                conversation,
                &format!("parity-{i}"),
                &format!("run-{i}"),
                server.agent.model().unwrap(),
                &keys,
                forwarded.clone(),
            )
        })
        .collect();
    let runs: Vec<_> = futures_util::stream::iter(&inputs)
        .map(|input| support::post_run(&server, input))
        .buffered(AT_ONCE)
        .collect()
        .await;

    // Each case's first pass (the reasoning pass where there is one), then
    // the answer passes of two-pass cases.
    let cases = &reference.cases;
    let mut calls = recording.take();
    let mut wanted: Vec<Option<&[u32]>> = cases
        .iter()
        .map(|c| {
            Some(
                c.reasoning
                    .as_ref()
                    .unwrap_or(&c.answer)
                    .prompt_ids
                    .as_slice(),
            )
        })
        .collect();
    wanted.extend(
        cases
            .iter()
            .map(|c| c.reasoning.as_ref().map(|_| c.answer.prompt_ids.as_slice())),
    );
    let mut paired = pair_by_prompt(&mut calls, &wanted);
    let answers = paired.split_off(cases.len());

    let mut failures = Vec::new();
    let mut compared = Vec::new();
    let mut skipped_answers = 0;
    for (((case, events), first), answer) in cases.iter().zip(&runs).zip(paired).zip(answers) {
        let name = &case.name;
        if let Some(EventKind::RunError(e)) = events.last().map(|e| &e.kind) {
            failures.push(format!("{name}: RUN_ERROR {}", e.message));
            continue;
        }
        let (mut reasoning, mut text) = (String::new(), String::new());
        for event in events {
            match &event.kind {
                EventKind::ReasoningMessageContent(c) => reasoning.push_str(&c.delta),
                EventKind::TextMessageContent(c) => text.push_str(&c.delta),
                _ => {}
            }
        }
        let outcome = match (&case.reasoning, first, answer) {
            (_, None, _) => Err("no generation reached the engine".to_string()),
            // One generation: a model that thinks in its output (or not at
            // all); its text is what the client sees, in order.
            (None, Some(call), _) => compare_pass(
                &call,
                &case.answer,
                &format!("{reasoning}{text}"),
                vocab,
                false,
            )
            .map(|c| vec![c]),
            (Some(first), Some(reasoning_call), answer_call) => {
                compare_pass(&reasoning_call, first, &reasoning, vocab, true).and_then(|r| {
                    // The answer pass's prompt carries the reasoning: only
                    // comparable when the reasoning matched to its end.
                    if !r.exact {
                        skipped_answers += 1;
                        return Ok(vec![r]);
                    }
                    let answer_call =
                        answer_call.ok_or("no answer generation reached the engine")?;
                    let a = compare_pass(&answer_call, &case.answer, &text, vocab, false)?;
                    Ok(vec![r, a])
                })
            }
        };
        match outcome {
            Ok(c) => compared.extend(c),
            Err(why) => failures.push(format!("{name}: {why}")),
        }
    }
    // Every generation belongs to a case's pass: a run that generated more
    // than its passes would be left over here.
    let expected = cases.len() + cases.iter().filter(|c| c.reasoning.is_some()).count();
    if !calls.is_empty() {
        failures.push(format!(
            "{} generations reached the engine, {expected} expected",
            expected + calls.len()
        ));
    }
    if skipped_answers > 0 {
        eprintln!(
            "{}: {skipped_answers} answer passes not compared (their reasoning pass met a near-tie)",
            reference.model
        );
    }
    server.shutdown().await;
    (failures, compared)
}

/// The default model as users run it (the Q4_1 GGUF on thinkwire's
/// quantized kernels) against mlx-lm on the f32 copy
/// `thinkwire convert --precision f32` writes of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_model_answers_as_mlx_lm_through_the_agent() {
    let gguf = thinkwire_chat::assets::default_model();
    let (failures, compared) = check(&gguf, Precision::Auto, "smollm2-135m.json", "off").await;
    report(
        "SmolLM2-135M (auto: packed Q4_1)",
        &failures,
        &compared,
        600,
    );
}

/// The default model with thinking on: thinkwire's separate reasoning
/// pass, then the answer pass whose system prompt carries the reasoning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_model_reasoning_pass_and_answer_match_mlx_lm_through_the_agent() {
    let gguf = thinkwire_chat::assets::default_model();
    let (failures, compared) = check(
        &gguf,
        Precision::Auto,
        "smollm2-135m-separate-pass.json",
        "full",
    )
    .await;
    report(
        "SmolLM2-135M (auto), separate reasoning pass",
        &failures,
        &compared,
        1000,
    );
}

/// The same weights dequantized to f32, as mlx-lm ran them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_model_in_f32_answers_as_mlx_lm_through_the_agent() {
    let gguf = thinkwire_chat::assets::default_model();
    let (failures, compared) = check(&gguf, Precision::F32, "smollm2-135m.json", "off").await;
    report("SmolLM2-135M (f32)", &failures, &compared, 600);
}

fn tiny_qwen3_chat() -> PathBuf {
    let dir = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    assert!(
        dir.join("model.safetensors").is_file(),
        "{} is missing — run scripts/setup",
        dir.display()
    );
    // Its weights are regenerated by setup: a different file means a stale
    // model or reference, not a parity bug.
    let sha = std::fs::read_to_string(dir.join("weights.sha256")).unwrap_or_default();
    for name in [
        "tiny-qwen3-chat-thinking-on.json",
        "tiny-qwen3-chat-thinking-off.json",
    ] {
        let reference: Reference = read_json(name);
        assert_eq!(
            sha.trim(),
            reference.weights_sha256,
            "{} holds other weights than {name} was made on: rerun scripts/setup, or regenerate the reference",
            dir.display()
        );
    }
    dir
}

/// The tiny Qwen3 (real tokenizer and template) with thinking on: the
/// template's `enable_thinking`, replayed reasoning in the tool loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_qwen3_thinking_on_matches_mlx_lm_through_the_agent() {
    let dir = tiny_qwen3_chat();
    let (failures, compared) = check(
        &dir,
        Precision::F32,
        "tiny-qwen3-chat-thinking-on.json",
        "full",
    )
    .await;
    report("tiny Qwen3, thinking on", &failures, &compared, 400);
}

/// The same with thinking off (`enable_thinking=false`: the template writes
/// an empty think block).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_qwen3_thinking_off_matches_mlx_lm_through_the_agent() {
    let dir = tiny_qwen3_chat();
    let (failures, compared) = check(
        &dir,
        Precision::F32,
        "tiny-qwen3-chat-thinking-off.json",
        "off",
    )
    .await;
    report("tiny Qwen3, thinking off", &failures, &compared, 400);
}
