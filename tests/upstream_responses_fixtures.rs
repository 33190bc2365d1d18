//! The `openai-responses` adapter against recorded Responses API streams
//! (`tests/upstream/openai-responses-*.sse`, written after OpenAI's
//! documented streaming events — fixtures, not live provider tests),
//! served by a local axum server that records every request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::json;
use support::front::upstream_config;
use support::provider::{fixture, provider};
use support::*;
use thinkwire::upstream::{ApiKey, UpstreamConfig, UpstreamKind};
use thinkwire_protocol::{EventKind, EventType};

const ENCRYPTED: &str = "gAAAAABor1xWq3L1Zx2kM8rT0bYc9vQ==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_stream_and_encrypted_content_goes_back_verbatim() {
    let (url, seen) = provider(
        "/v1/responses",
        vec![
            fixture("openai-responses-reasoning-tool-call.sse"),
            fixture("openai-responses-failed.sse"),
        ],
    )
    .await;
    let front = support::front::front(UpstreamConfig {
        key: Some(ApiKey::new("sk-test-key".into())),
        ..upstream_config(UpstreamKind::OpenAiResponses, url, "o4-mini")
    })
    .await;

    let mut first = input(
        "t-oai",
        "r1",
        "Weather in Oslo?",
        json!({"reasoning": {"visibility": "full", "effort": "high"}}),
    );
    first["tools"] = json!([{
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }]);
    let events = post_run(&front, &first).await;
    assert_eq!(
        reasoning_text(&events),
        "**Checking the weather**\n\nI will call get_weather for Oslo."
    );
    assert!(types(&events).contains(&EventType::ReasoningEncryptedValue));
    let raw: String = events.iter().map(|e| e.to_json()).collect();
    assert!(
        !raw.contains(ENCRYPTED),
        "the provider's item is only sealed"
    );
    let end = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallEnd(end) => Some(end.tool_call_id.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(end, "call_Yq1kYhVZ3m");
    let finished = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunFinished(f) => Some(serde_json::to_value(f).unwrap()),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished["usage"][0]["reasoningTokens"], 128);
    {
        let seen = seen.lock().unwrap();
        let (headers, body) = &seen[0];
        assert_eq!(headers["authorization"], "Bearer sk-test-key");
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(body["tools"][0]["name"], "get_weather");
    }

    // Turn 2: the tool's result; the provider gets its reasoning item back
    // exactly as it sent it, then fails.
    let mut messages = first["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    messages.push(json!({"id": "tool-1", "role": "tool", "toolCallId": "call_Yq1kYhVZ3m", "content": "-3 °C"}));
    let mut second = first.clone();
    second["runId"] = json!("r2");
    second["messages"] = json!(messages);
    let events = post_run(&front, &second).await;
    let error = run_error(&events);
    assert_eq!(error.code.as_deref(), Some("UPSTREAM_ERROR"));
    assert!(error.message.contains("server_error"), "{}", error.message);
    let input = seen.lock().unwrap()[1].1["input"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        input[1],
        json!({"id": "rs_68af01", "type": "reasoning", "summary": [
            {"type": "summary_text", "text": "**Checking the weather**"},
            {"type": "summary_text", "text": "I will call get_weather for Oslo."}],
            "encrypted_content": ENCRYPTED})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_Yq1kYhVZ3m", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_Yq1kYhVZ3m", "output": "-3 °C"})
    );
    front.shutdown().await;
}
