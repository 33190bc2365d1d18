//! The privacy canary through an upstream backend: a front thinkwire in
//! front of a thinkwire on the scripted model, full visibility, a tool
//! loop with sealed reasoning replayed; then an upstream whose error
//! message and whose provider key carry the canary.

use std::time::Duration;

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire::upstream::{ApiKey, UpstreamConfig, UpstreamKind};
use thinkwire_seal::{Key, KeyRing};

use super::client::{run_error_code, run_input, sse_run, tool_result};
use super::secrets::{Canaries, Secrets, contains};
use super::support::front::{front_serving, upstream_config};
use super::support::{
    Observed, TestServer, answer_text, apply_events, reasoning_text, scripted_qwen3,
};

async fn front(url: String, key: &str, sealing_key: &str) -> TestServer {
    front_of(UpstreamKind::OpenAiChat, url, key, sealing_key).await
}

async fn front_of(kind: UpstreamKind, url: String, key: &str, sealing_key: &str) -> TestServer {
    let config = UpstreamConfig {
        key: Some(ApiKey::new(key.to_owned())),
        ..upstream_config(kind, url, "Qwen3-0.6B")
    };
    let keys = KeyRing::from_key_list(sealing_key).unwrap();
    front_serving(config, keys, ServerConfig::default()).await
}

async fn upstream(scripts: &[String]) -> (TestServer, std::sync::Arc<Observed>) {
    let (model, observed) = scripted_qwen3(scripts, Duration::ZERO);
    let mut config = AgentConfig::default();
    config.policy.default_visibility = Visibility::Full;
    config.replay.trust_client_reasoning = true;
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
    (server, observed)
}

/// Runs the upstream conversations; returns their run ids.
pub async fn conversations(c: &Canaries, secrets: &Secrets) -> Vec<String> {
    let (up, observed) = upstream(&[c.tool_turn(), c.answer_turn(), c.answer_turn()]).await;
    let provider_key = format!("sk-{}key", secrets.canary);
    let front_server = front(up.url("/v1"), &provider_key, &secrets.key_text).await;
    let thread = "privacy-thread-upstream";
    let full = json!({ "reasoning": { "visibility": "full" } });
    let mut messages =
        vec![json!({ "id": "p1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let (events, _) = sse_run(
        &front_server,
        &run_input(thread, "privacy-upstream-1", &messages, full.clone()),
    )
    .await;
    assert!(reasoning_text(&events).contains(&c.reasoning));
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages.push(tool_result(&messages, &format!("Found {}", c.tool_result)));
    let (events, _) = sse_run(
        &front_server,
        &run_input(thread, "privacy-upstream-2", &messages, full),
    )
    .await;
    assert_eq!(answer_text(&events), format!("Here it is: {}.", c.answer));
    secrets.remember_sealed(&events);
    let second = up
        .agent
        .model()
        .unwrap()
        .decode(&observed.prompts.lock().unwrap()[1])
        .unwrap();
    assert!(
        second.contains(&c.reasoning),
        "the replayed reasoning reached the upstream"
    );
    // A raw completion through it (the upstream's `/completions`).
    let response = reqwest::Client::new()
        .post(front_server.url("/v1/completions"))
        .json(&json!({"prompt": format!("Tell me about {}", c.user), "max_tokens": 1024}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let raw = response.bytes().await.unwrap();
    assert!(contains(&raw, c.answer.as_bytes()));
    front_server.shutdown().await;
    up.shutdown().await;

    // An upstream that refuses, quoting the conversation in its message.
    let quoted = format!("{} is not allowed", c.user);
    let refuse = move || {
        let quoted = quoted.clone();
        async move {
            (
                axum::http::StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {"message": quoted, "type": "invalid_request_error"}})),
            )
        }
    };
    let refusing = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(refuse.clone()))
        .route("/v1/completions", axum::routing::post(refuse.clone()))
        .route("/v1/messages/count_tokens", axum::routing::post(refuse));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, refusing).await;
    });
    let front_server = front(
        format!("http://{addr}/v1"),
        &provider_key,
        &secrets.key_text,
    )
    .await;
    let messages =
        vec![json!({ "id": "p2", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let (events, raw) = sse_run(
        &front_server,
        &run_input(thread, "privacy-upstream-refused", &messages, json!({})),
    )
    .await;
    assert_eq!(run_error_code(&events), "UPSTREAM_ERROR");
    assert!(!contains(&raw, secrets.canary.as_bytes()));
    // A raw completion of a prompt holding it, refused the same way.
    let response = reqwest::Client::new()
        .post(front_server.url("/v1/completions"))
        .json(&json!({"prompt": format!("Tell me about {}", c.user)}))
        .send()
        .await
        .unwrap();
    assert!(!response.status().is_success());
    let raw = response.bytes().await.unwrap();
    assert!(contains(&raw, b"UPSTREAM_ERROR"), "{raw:?}");
    assert!(!contains(&raw, secrets.canary.as_bytes()));
    front_server.shutdown().await;

    // A token count asked of that upstream (Anthropic's wire): refused
    // with its status and type, never its message.
    let front_server = front_of(
        UpstreamKind::Anthropic,
        format!("http://{addr}/v1"),
        &provider_key,
        &secrets.key_text,
    )
    .await;
    let body =
        json!({"messages": [{"role": "user", "content": format!("Tell me about {}", c.user)}]});
    let response = reqwest::Client::new()
        .post(front_server.url("/v1/messages/count_tokens"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let raw = response.bytes().await.unwrap();
    assert!(contains(&raw, b"HTTP 400: invalid_request_error"));
    assert!(!contains(&raw, secrets.canary.as_bytes()));
    front_server.shutdown().await;
    vec![
        "privacy-upstream-1".into(),
        "privacy-upstream-2".into(),
        "privacy-upstream-refused".into(),
    ]
}
