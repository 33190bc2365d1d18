//! The privacy canary in a panic's message and in wrong bearer tokens.

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{Event, EventKind, SseDecoder};
use thinkwire_seal::KeyRing;

use super::client::run_input;
use super::secrets::{Canaries, Secrets, contains};
use super::support::*;

/// A run whose engine panics with a message quoting the conversation ends
/// with `RUN_ERROR`, the server goes on, and the panic is logged without
/// its message; with tokens required, a wrong token holding the canary is
/// refused without being logged, on AG-UI and on `/v1`.
pub async fn conversations(c: &Canaries, secrets: &Secrets) -> Vec<String> {
    thinkwire::server::quiet_panics();
    let token = format!("{}token", secrets.canary);
    let (model, _) = scripted_qwen3_with(&[c.answer_turn()], |engine| {
        engine.with_panic(3, format!("engine bug while saying {}", c.answer))
    });
    let keys = KeyRing::from_key_list(&secrets.key_text).unwrap();
    let server = TestServer::start(
        Agent::new(model, keys, AgentConfig::default()),
        ServerConfig {
            auth: Some(thinkwire::server::AuthTokens::parse("good-token-0123456789").unwrap()),
            ..ServerConfig::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    for (path, body) in [
        ("/agent", run_input("t", "r", &[], json!({})).to_string()),
        ("/v1/chat/completions", json!({"messages": []}).to_string()),
    ] {
        let refused = client
            .post(server.url(path))
            .header("content-type", "application/json")
            .bearer_auth(&token)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{path}");
        let text = refused.text().await.unwrap();
        assert!(!text.contains(&token), "{path} echoes the token");
    }

    let messages =
        vec![json!({ "id": "u1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let visible = json!({"reasoning": {"visibility": "full"}});
    let mut run_ids = Vec::new();
    let mut run = |id: &'static str| {
        run_ids.push(id.to_owned());
        client
            .post(server.url("/agent"))
            .header("content-type", "application/json")
            .bearer_auth("good-token-0123456789")
            .json(&run_input("privacy-panic", id, &messages, visible.clone()))
            .send()
    };
    let panicked = run("privacy-panic-1").await.unwrap().bytes().await.unwrap();
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&panicked)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(matches!(
        events.first().map(|e| &e.kind),
        Some(EventKind::RunStarted(_))
    ));
    match &events.last().unwrap().kind {
        EventKind::RunError(e) => assert_eq!(e.code.as_deref(), Some("INTERNAL_ERROR")),
        other => panic!("the panicked run ended with {other:?}"),
    }
    assert!(
        !contains(&panicked, c.answer.as_bytes()),
        "the panic's message reached the client"
    );
    // The server goes on.
    let next = run("privacy-panic-2").await.unwrap().bytes().await.unwrap();
    let events: Vec<Event> = SseDecoder::new()
        .push_events(&next)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(matches!(
        events.last().map(|e| &e.kind),
        Some(EventKind::RunFinished(_))
    ));
    secrets.remember_sealed(&events);
    server.shutdown().await;
    run_ids
}
