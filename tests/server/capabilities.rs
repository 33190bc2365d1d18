//! `GET /capabilities` says what this server does: both HTTP bindings,
//! resumable streams (unless the operator turned resuming off), several
//! tool calls a turn, structured output.

use std::time::Duration;

use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::{ResumeConfig, ServerConfig};
use thinkwire_seal::{Key, KeyRing};

use crate::support::*;

async fn capabilities(server: &TestServer) -> Value {
    reqwest::get(server.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_declare_the_bindings_resuming_tools_and_output() {
    let (server, _) = TestServer::qwen3(&[]).await;
    let caps = capabilities(&server).await;
    assert_eq!(caps["transport"]["httpBinary"], true, "{caps}");
    assert_eq!(caps["transport"]["streaming"], true, "{caps}");
    assert_eq!(caps["transport"]["resumable"], true, "{caps}");
    let transports = caps["custom"]["transports"].as_array().unwrap();
    assert!(transports.contains(&json!("protobuf")), "{caps}");
    assert_eq!(caps["tools"]["parallelCalls"], true, "{caps}");
    assert_eq!(caps["output"]["structuredOutput"], true, "{caps}");
    assert_eq!(caps["custom"]["maxTopLogprobs"], 20, "{caps}");
    server.shutdown().await;

    // Resuming off: a stream that drops is not resumable.
    let (model, _) = scripted_qwen3(&[], Duration::ZERO);
    let agent = Agent::new(
        model,
        KeyRing::new(Key::generate().unwrap()),
        AgentConfig::default(),
    );
    let config = ServerConfig {
        resume: ResumeConfig {
            window: Duration::ZERO,
            ..ResumeConfig::default()
        },
        ..ServerConfig::default()
    };
    let server = TestServer::start(agent, config).await;
    let caps = capabilities(&server).await;
    assert_eq!(caps["transport"]["resumable"], false, "{caps}");
    server.shutdown().await;
}
