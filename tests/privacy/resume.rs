//! The privacy canary through resumable runs: a tool turn in full
//! visibility cut mid-run and resumed over SSE and over a WebSocket, and
//! one left to expire, so the replay buffer has held canary-bearing
//! reasoning, arguments and answers. Their resume tokens join the secrets:
//! nothing of a buffered run, and no token, may reach a log or a file.

use std::time::Duration;

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::{ResumeConfig, ServerConfig};
use thinkwire_protocol::Event;
use thinkwire_seal::KeyRing;

use super::client::{lookup_tool, run_input};
use super::resume_client::*;
use super::secrets::{Canaries, Secrets};
use super::support::*;

async fn server(c: &Canaries, key_text: &str, window: Duration, step: Duration) -> TestServer {
    let (model, _) = scripted_qwen3(&[c.tool_turn()], step);
    let keys = KeyRing::from_key_list(key_text).unwrap();
    let config = ServerConfig {
        resume: ResumeConfig {
            window,
            ..ResumeConfig::default()
        },
        ..ServerConfig::default()
    };
    TestServer::start(Agent::new(model, keys, AgentConfig::default()), config).await
}

fn remember(secrets: &Secrets, events: &[Event], token: &str) {
    secrets.remember_sealed(events);
    secrets.tokens.lock().unwrap().push(token.to_owned());
}

/// Returns the ids of the runs.
pub(super) async fn conversations(c: &Canaries, secrets: &Secrets) -> Vec<String> {
    let server = server(
        c,
        &secrets.key_text,
        Duration::from_secs(30),
        Duration::from_millis(3),
    )
    .await;
    let messages =
        vec![json!({ "id": "u1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let full = json!({ "reasoning": { "visibility": "full" } });
    let mut body = run_input(
        "privacy-resume",
        "privacy-resume-sse",
        &messages,
        full.clone(),
    );
    body["tools"] = json!([lookup_tool()]);

    let first = http_start(&server, Http::Sse, &body, None, Some(6)).await;
    let grant = first.grant.clone().unwrap();
    let rest = http_resume(
        &server,
        Http::Sse,
        &grant.url,
        Some(&grant.token),
        Some("6"),
        None,
    )
    .await
    .unwrap();
    let events = joined(&[&first, &rest]);
    verify(&events);
    assert!(reasoning_text(&events).contains(&c.reasoning));
    remember(secrets, &events, &grant.token);

    body["runId"] = json!("privacy-resume-ws");
    let first = ws_start(&server, &body, Some(9)).await;
    let grant = first.grant.clone().unwrap();
    let mut socket = connect(&server).await;
    ws_send_resume(&mut socket, &grant, &grant.token, 9).await;
    let rest = ws_read(&mut socket, None).await;
    let events = joined(&[&first, &rest]);
    verify(&events);
    remember(secrets, &events, &grant.token);
    server.shutdown().await;

    // Cut and never resumed: held for the window, then dropped. Its tokens
    // come slowly enough that the run is still going when the window ends
    // (a run that ends first is dropped without being stopped).
    let server = self::server(
        c,
        &secrets.key_text,
        Duration::from_secs(1),
        Duration::from_millis(250),
    )
    .await;
    body["runId"] = json!("privacy-resume-expired");
    let first = http_start(&server, Http::Sse, &body, None, Some(4)).await;
    secrets
        .tokens
        .lock()
        .unwrap()
        .push(first.grant.unwrap().token);
    wait_for_nothing_held(&server).await;
    server.shutdown().await;
    [
        "privacy-resume-sse",
        "privacy-resume-ws",
        "privacy-resume-expired",
    ]
    .map(String::from)
    .to_vec()
}
