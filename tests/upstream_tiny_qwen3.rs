//! thinkwire in front of thinkwire's own OpenAI-compatible endpoint on a
//! real (tiny) reasoning model: the tiny Qwen3 with the real Qwen3
//! tokenizer and template (random weights, made by setup) on the MLX
//! engine. With greedy decoding, what an AG-UI client gets through the
//! upstream backend — reasoning and answer — is what the upstream answers
//! a chat completions client directly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::front::upstream_config;
use support::*;
use thinkwire::agent::{Agent, AgentConfig, LocalModel, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire::upstream::UpstreamKind;
use thinkwire_engine::mlx::{LoadOptions, MlxEngine};
use thinkwire_protocol::EventType;
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

const MAX_TOKENS: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_reasoning_model_upstream_answers_the_same_through_thinkwire() {
    let path = thinkwire_chat::assets::home().join("models/tiny-qwen3-chat");
    let engine = MlxEngine::load(&path, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("loading {} (run scripts/setup): {e}", path.display()));
    let model = LocalModel::new(
        Arc::new(engine),
        LocalModel::load_chat(&path).unwrap(),
        &Registry::builtin(),
    )
    .unwrap();
    let mut config = AgentConfig::default();
    config.policy.default_visibility = Visibility::Full;
    let upstream = TestServer::start(
        Agent::new(model, KeyRing::new(Key::generate().unwrap()), config),
        ServerConfig::default(),
    )
    .await;

    // Directly: a chat completions client, greedy.
    let direct: Value = reqwest::Client::new()
        .post(upstream.url("/v1/chat/completions"))
        .json(&json!({
            "model": "tiny", "max_tokens": MAX_TOKENS, "temperature": 0,
            "messages": [{"role": "user", "content": "What is 2 + 2?"}],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let message = &direct["choices"][0]["message"];
    let direct_reasoning = message["reasoning"]
        .as_str()
        .unwrap_or("")
        .trim()
        .to_owned();
    let direct_answer = message["content"].as_str().unwrap_or("").trim().to_owned();
    assert!(
        !(direct_reasoning.is_empty() && direct_answer.is_empty()),
        "{direct}"
    );

    // Through a front thinkwire whose backend is that endpoint.
    let mut front_config = upstream_config(UpstreamKind::OpenAiChat, upstream.url("/v1"), "tiny");
    front_config.idle_timeout = Duration::from_secs(30);
    let front = support::front::front(front_config).await;
    let events = post_run(
        &front,
        &input(
            "t-tiny",
            "r1",
            "What is 2 + 2?",
            json!({"reasoning": {"visibility": "full"},
                   "sampling": {"temperature": 0, "maxTokens": MAX_TOKENS}}),
        ),
    )
    .await;
    assert_eq!(reasoning_text(&events).trim(), direct_reasoning);
    assert_eq!(answer_text(&events).trim(), direct_answer);
    if !direct_reasoning.is_empty() {
        assert!(types(&events).contains(&EventType::ReasoningEncryptedValue));
    }
    front.shutdown().await;
    upstream.shutdown().await;
}
