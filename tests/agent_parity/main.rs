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
//! References: `scripts/golden/agent_parity_ref.py` (see
//! `scripts/golden/README.md` to regenerate).
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire::server::ServerConfig;
use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
use thinkwire_engine::{Engine, Finish};
use thinkwire_protocol::EventKind;
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Binding, Key, KeyRing, SealedReasoning};

use support::TestServer;
use support::recording::{Recorded, Recording};

/// Logit gap (top-1 minus top-2) under which a reference step is a
/// near-tie: from there a different order of operations may pick the
/// other token without a bug.
const NEAR_TIE: f64 = 0.02;

/// The test's sealing key: the test seals replayed reasoning with it as the
/// server would have.
const KEY: [u8; 32] = [0x5a; 32];

// ---------------------------------------------------------------------------
// The set and the references.

#[derive(Deserialize)]
struct Set {
    questions: Vec<String>,
    conversations: Vec<Conversation>,
}

#[derive(Deserialize, Clone)]
struct Conversation {
    name: String,
    #[serde(default)]
    tools: Vec<Value>,
    messages: Vec<Value>,
}

#[derive(Deserialize)]
struct Reference {
    model: String,
    weights_sha256: String,
    max_tokens: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    /// The pass whose text is the answer (the only one, unless separate).
    #[serde(flatten)]
    answer: PassRef,
    /// The separate reasoning pass before it, for models that do not
    /// think natively.
    #[serde(default)]
    reasoning: Option<PassRef>,
}

/// One generation of the reference.
#[derive(Deserialize)]
struct PassRef {
    prompt_ids: Vec<u32>,
    output_ids: Vec<u32>,
    gaps: Vec<f64>,
    pieces: Vec<String>,
    tail: String,
    finish: String,
}

fn parity_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity")
}

fn read_json<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = parity_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The conversations in the order the reference script runs them.
fn conversations() -> Vec<Conversation> {
    let set: Set = read_json("conversations.json");
    let mut all: Vec<Conversation> = set
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| Conversation {
            name: format!("question {i}"),
            tools: Vec::new(),
            messages: vec![json!({"role": "user", "content": q})],
        })
        .collect();
    all.extend(set.conversations);
    all
}

// ---------------------------------------------------------------------------
// From the chat format transformers takes to AG-UI.

/// The AG-UI `RunAgentInput` of `conversation`: reasoning content becomes a
/// reasoning message before its assistant message, sealed with `keys` for
/// this thread and message, as a client replays it.
fn agui_input(
    conversation: &Conversation,
    thread: &str,
    run: &str,
    model: &LocalModel,
    keys: &KeyRing,
    forwarded: Value,
) -> Value {
    let mut messages = Vec::new();
    for (i, m) in conversation.messages.iter().enumerate() {
        let id = format!("{run}-m{i}");
        let role = m["role"].as_str().expect("role");
        let content = m["content"].as_str().unwrap_or_default();
        match role {
            "system" | "user" => {
                messages.push(json!({"id": id, "role": role, "content": content}));
            }
            "tool" => messages.push(json!({
                "id": id,
                "role": "tool",
                "toolCallId": m["tool_call_id"],
                "content": content,
            })),
            "assistant" => {
                if let Some(reasoning) = m["reasoning_content"].as_str() {
                    let reasoning_id = format!("{id}-reasoning");
                    let sealed = SealedReasoning::new(
                        reasoning,
                        model.id(),
                        &model.format().family,
                        thinkwire_seal::now_unix_ms(),
                    );
                    let value = keys
                        .seal(&sealed, Binding::new(thread, &reasoning_id))
                        .expect("sealing");
                    messages.push(json!({
                        "id": reasoning_id,
                        "role": "reasoning",
                        "content": "",
                        "encryptedValue": value,
                    }));
                }
                let mut message = json!({"id": id, "role": "assistant", "content": content});
                if let Some(calls) = m["tool_calls"].as_array() {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c["id"],
                                "type": "function",
                                "function": {
                                    "name": c["function"]["name"],
                                    "arguments": c["function"]["arguments"].to_string(),
                                },
                            })
                        })
                        .collect();
                    message["toolCalls"] = Value::Array(calls);
                }
                messages.push(message);
            }
            other => panic!("{}: unexpected role {other}", conversation.name),
        }
    }
    let tools: Vec<Value> = conversation
        .tools
        .iter()
        .map(|t| {
            let f = &t["function"];
            json!({"name": f["name"], "description": f["description"], "parameters": f["parameters"]})
        })
        .collect();
    json!({
        "threadId": thread,
        "runId": run,
        "messages": messages,
        "tools": tools,
        "context": [],
        "state": {},
        "forwardedProps": forwarded,
    })
}

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

/// What one pass compared.
struct Compared {
    steps: usize,
    exact: bool,
}

/// Compares one generation with its reference: prompt ids exactly, output
/// ids and `streamed` text up to the first near-tie (exactly without one).
/// `trimmed`: the text is a reasoning block, streamed without its
/// surrounding whitespace (layout, see the splitter).
fn compare_pass(
    call: &Recorded,
    pass: &PassRef,
    streamed: &str,
    vocab: usize,
    trimmed: bool,
) -> Result<Compared, String> {
    if call.prompt != pass.prompt_ids {
        let at = first_difference(&call.prompt, &pass.prompt_ids);
        return Err(format!(
            "prompt ids differ from transformers at index {at} \
             (thinkwire {} ids, transformers {}): thinkwire {:?}…, transformers {:?}…",
            call.prompt.len(),
            pass.prompt_ids.len(),
            window(&call.prompt, at),
            window(&pass.prompt_ids, at),
        ));
    }
    let mut produced = call.generated.clone();
    if let Finish::StopToken(id) = call.finish {
        produced.push(id);
    }
    let tie = pass.gaps.iter().position(|&g| g < NEAR_TIE);
    let limit = tie.unwrap_or(pass.output_ids.len());
    let ids_ok = match tie {
        None => produced == pass.output_ids,
        Some(_) => produced.len() >= limit && produced[..limit] == pass.output_ids[..limit],
    };
    if !ids_ok {
        let at = first_difference(&produced, &pass.output_ids);
        return Err(format!(
            "generated ids differ from mlx-lm at step {at} (compared up to {limit}, \
             reference gap there {:?}): thinkwire {:?}, mlx-lm {:?}",
            pass.gaps.get(at),
            window(&produced, at),
            window(&pass.output_ids, at),
        ));
    }
    // A random-weight model may pick an id of the embedding's padding that
    // the tokenizer does not have (a trained one never does): the ids still
    // match, but its text is undefined (mlx-lm's detokenizer prints a byte
    // for it, transformers nothing), so the text is compared up to there.
    let unknown = pass.output_ids[..limit]
        .iter()
        .position(|&id| id as usize >= vocab);
    let exact = tie.is_none() && unknown.is_none();
    let text_limit = unknown.unwrap_or(limit).min(pass.pieces.len());
    let prefix: String = pass.pieces[..text_limit].concat();
    let expected = if exact {
        format!("{prefix}{}", pass.tail)
    } else {
        prefix
    };
    let expected = if trimmed { expected.trim() } else { &expected };
    let text_ok = if exact {
        streamed == expected
    } else {
        streamed.starts_with(expected)
    };
    if !text_ok {
        let at = streamed
            .char_indices()
            .zip(expected.chars())
            .find(|((_, a), b)| a != b)
            .map_or(streamed.len().min(expected.len()), |((i, _), _)| i);
        let around = |s: &str| -> String {
            s.get(at.saturating_sub(12)..)
                .unwrap_or(s)
                .chars()
                .take(24)
                .collect()
        };
        return Err(format!(
            "streamed text differs from mlx-lm's at byte {at} \
             ({} bytes streamed, {} expected{}, finish {}): thinkwire {:?}, mlx-lm {:?}",
            streamed.len(),
            expected.len(),
            if exact { ", exactly" } else { " as a prefix" },
            pass.finish,
            around(streamed),
            around(expected),
        ));
    }
    Ok(Compared {
        steps: limit,
        exact,
    })
}

fn first_difference(a: &[u32], b: &[u32]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

fn window(ids: &[u32], at: usize) -> &[u32] {
    &ids[at.min(ids.len())..ids.len().min(at + 6)]
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
    let (agent, recording) = recording_agent(path, precision, reference.max_tokens);
    let keys = KeyRing::new(Key::from_bytes(&KEY));
    let server = TestServer::start(agent, ServerConfig::default()).await;
    let vocab = server.agent.model().unwrap().chat().tokenizer.vocab_size();
    let mut failures = Vec::new();
    let mut compared = Vec::new();
    let mut skipped_answers = 0;
    for (i, (conversation, case)) in conversations.iter().zip(&reference.cases).enumerate() {
        assert_eq!(conversation.name, case.name, "reference order");
        let forwarded = json!({
            "reasoning": {"visibility": visibility},
            "sampling": {"temperature": 0, "maxTokens": reference.max_tokens},
        });
        let thread = format!("parity-{i}");
        let input = agui_input(
            conversation,
            &thread,
            &format!("run-{i}"),
            server.agent.model().unwrap(),
            &keys,
            forwarded,
        );
        let events = support::post_run(&server, &input).await;
        let name = &case.name;
        if let Some(EventKind::RunError(e)) = events.last().map(|e| &e.kind) {
            failures.push(format!("{name}: RUN_ERROR {}", e.message));
            continue;
        }
        let (mut reasoning, mut text) = (String::new(), String::new());
        for event in &events {
            match &event.kind {
                EventKind::ReasoningMessageContent(c) => reasoning.push_str(&c.delta),
                EventKind::TextMessageContent(c) => text.push_str(&c.delta),
                _ => {}
            }
        }
        let calls: Vec<Recorded> = recording.take();
        let outcome = match (&case.reasoning, calls.as_slice()) {
            // One generation: a model that thinks in its output (or not at
            // all); its text is what the client sees, in order.
            (None, [call]) => compare_pass(
                call,
                &case.answer,
                &format!("{reasoning}{text}"),
                vocab,
                false,
            )
            .map(|c| vec![c]),
            (Some(first), [reasoning_call, answer_call]) => {
                compare_pass(reasoning_call, first, &reasoning, vocab, true).and_then(|r| {
                    // The answer pass's prompt carries the reasoning: only
                    // comparable when the reasoning matched to its end.
                    if !r.exact {
                        skipped_answers += 1;
                        return Ok(vec![r]);
                    }
                    let a = compare_pass(answer_call, &case.answer, &text, vocab, false)?;
                    Ok(vec![r, a])
                })
            }
            (_, calls) => Err(format!(
                "{} generations, expected {}",
                calls.len(),
                if case.reasoning.is_some() { 2 } else { 1 }
            )),
        };
        match outcome {
            Ok(c) => compared.extend(c),
            Err(why) => failures.push(format!("{name}: {why}")),
        }
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

fn report(label: &str, failures: &[String], compared: &[Compared], min_steps: usize) {
    let steps: usize = compared.iter().map(|c| c.steps).sum();
    let exact = compared.iter().filter(|c| c.exact).count();
    eprintln!(
        "{label}: {} passes matched, {steps} generated tokens compared, {exact} passes without a near-tie compared exactly",
        compared.len()
    );
    assert!(
        failures.is_empty(),
        "{label}: {} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        steps >= min_steps,
        "{label}: only {steps} tokens compared before near-ties"
    );
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
