//! The `anthropic` upstream adapter against recorded Messages API streams
//! (`tests/upstream/*.sse`, written after Anthropic's documented event
//! sequences — fixtures, not live provider tests), served by a local axum
//! server that records every request: thinking streams as reasoning, the
//! thinking block's `signature` and a `redacted_thinking` block's data
//! travel inside thinkwire's sealed value and go back to the provider
//! verbatim with the block, and an `error` event ends the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Value, json};
use support::front::upstream_config;
use support::provider::{fixture, provider};
use support::*;
use thinkwire::upstream::{ApiKey, UpstreamConfig, UpstreamKind};
use thinkwire_protocol::{EventKind, EventType};

const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/dGzQ==";
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";

async fn front(url: String) -> TestServer {
    support::front::front(UpstreamConfig {
        key: Some(ApiKey::new("sk-ant-test-key".into())),
        ..upstream_config(UpstreamKind::Anthropic, url, "claude-sonnet-4-5")
    })
    .await
}

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_signatures_and_redacted_blocks_round_trip_through_the_seal() {
    let (url, seen) = provider(
        "/v1/messages",
        vec![
            fixture("anthropic-thinking-tool-use.sse"),
            fixture("anthropic-redacted-thinking-text.sse"),
            fixture("anthropic-overloaded.sse"),
        ],
    )
    .await;
    let front = front(url).await;
    let full = json!({"reasoning": {"visibility": "full"}});

    // Turn 1: thinking, then a tool call.
    let mut first = input("t-claude", "r1", "Weather in Paris?", full.clone());
    first["tools"] = json!([weather_tool()]);
    let events = post_run(&front, &first).await;
    assert_eq!(
        reasoning_text(&events),
        "The user wants the weather in Paris. I should call get_weather."
    );
    assert!(types(&events).contains(&EventType::ReasoningEncryptedValue));
    let call = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallStart(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.tool_call_id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(call.tool_call_name, "get_weather");
    {
        let seen = seen.lock().unwrap();
        let (headers, body) = &seen[0];
        assert_eq!(headers["anthropic-version"], "2023-06-01");
        assert_eq!(headers["x-api-key"], "sk-ant-test-key");
        assert_eq!(body["thinking"]["type"], "enabled");
        assert!(body["thinking"]["budget_tokens"].as_u64().unwrap() >= 1024);
        assert!(body.get("temperature").is_none(), "fixed while thinking");
        assert_eq!(
            body["tools"][0]["input_schema"]["required"],
            json!(["city"])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}])
        );
    }
    // The signature is nowhere in the client's stream: only sealed.
    let raw: String = events.iter().map(|e| e.to_json()).collect();
    assert!(!raw.contains(SIGNATURE));

    // Turn 2: the client replays its messages with the tool's result.
    let mut messages = first["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    messages.push(json!({"id": "tool-1", "role": "tool", "toolCallId": call.tool_call_id, "content": "18 °C, sunny"}));
    let mut second = first.clone();
    second["runId"] = json!("r2");
    second["messages"] = json!(messages);
    // Application context makes a system turn ahead of the history: the
    // replayed thinking still goes back with its own assistant turn.
    second["context"] = json!([{"description": "Units", "value": "metric"}]);
    let events = post_run(&front, &second).await;
    assert_eq!(answer_text(&events), "It is sunny in Paris, 18 °C.");
    assert!(
        types(&events).contains(&EventType::ReasoningEncryptedValue),
        "the redacted block is sealed though it has no text"
    );
    assert!(
        !events
            .iter()
            .map(|e| e.to_json())
            .collect::<String>()
            .contains(REDACTED)
    );
    {
        let seen = seen.lock().unwrap();
        let body = &seen[1].1;
        assert!(
            body["system"].to_string().contains("metric"),
            "{}",
            body["system"]
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants the weather in Paris. I should call get_weather.", "signature": SIGNATURE},
                {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {"city": "Paris"}},
            ]})
        );
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "content": "18 °C, sunny"},
            ]})
        );
    }

    // Turn 3: the redacted block goes back as it came; the provider then
    // fails mid-stream.
    let mut messages = second["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    messages.push(json!({"id": "u-3", "role": "user", "content": "And tomorrow?"}));
    let mut third = first.clone();
    third["runId"] = json!("r3");
    third["messages"] = json!(messages);
    let events = post_run(&front, &third).await;
    let error = run_error(&events);
    assert_eq!(error.code.as_deref(), Some("UPSTREAM_ERROR"));
    assert!(
        error.message.contains("overloaded_error"),
        "{}",
        error.message
    );
    {
        let seen = seen.lock().unwrap();
        let body = &seen[2].1;
        assert_eq!(
            body["messages"][3],
            json!({"role": "assistant", "content": [
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "text", "text": "It is sunny in Paris, 18 °C."},
            ]})
        );
    }

    // A value tampered with is refused before reaching the provider.
    let mut tampered = third.clone();
    let messages = tampered["messages"].as_array_mut().unwrap();
    let reasoning = messages
        .iter_mut()
        .find(|m| m["role"] == "reasoning")
        .unwrap();
    let sealed = reasoning["encryptedValue"].as_str().unwrap().to_owned();
    let mut bytes = sealed.into_bytes();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    reasoning["encryptedValue"] = json!(String::from_utf8(bytes).unwrap());
    let refused = reqwest::Client::new()
        .post(front.url("/agent"))
        .json(&tampered)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    assert_eq!(seen.lock().unwrap().len(), 3);
    front.shutdown().await;
}

/// Sampling the Messages API cannot take, and token log-probabilities, are
/// refused naming them before the provider is asked (no penalties; no
/// `top_k` while thinking); `top_k`
/// goes up when thinking is off, and a neutral penalty asks for nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_the_api_cannot_take_is_refused_by_name() {
    let (url, seen) = provider(
        "/v1/messages",
        vec![fixture("anthropic-redacted-thinking-text.sse")],
    )
    .await;
    let front = front(url).await;
    let off = json!({"visibility": "off"});
    let cases = [
        (
            json!({"sampling": {"frequencyPenalty": 0.5}, "reasoning": off}),
            "sampling.frequencyPenalty",
        ),
        (
            json!({"sampling": {"repetitionPenalty": 1.2}, "reasoning": off}),
            "sampling.repetitionPenalty",
        ),
        (json!({"sampling": {"topK": 5}}), "sampling.topK"),
        // Token log-probabilities come from a local model only.
        (json!({"logprobs": 2}), "logprobs"),
    ];
    for (i, (forwarded, key)) in cases.into_iter().enumerate() {
        let code = match key {
            "logprobs" => "UNSUPPORTED_LOGPROBS",
            _ => "UNSUPPORTED_SAMPLING",
        };
        let body = input("t-sampling", &format!("r{i}"), "Hi", forwarded);
        let refused = reqwest::Client::new()
            .post(front.url("/agent"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 422);
        let refused: Value = refused.json().await.unwrap();
        assert_eq!(refused["error"]["code"], code, "{refused}");
        assert_eq!(refused["error"]["path"], format!("forwardedProps.{key}"));
    }
    assert!(seen.lock().unwrap().is_empty());

    let body = input(
        "t-sampling",
        "r-ok",
        "Hi",
        json!({"sampling": {"topK": 5, "frequencyPenalty": 0}, "reasoning": off}),
    );
    let response = reqwest::Client::new()
        .post(front.url("/agent"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap();
    {
        let seen = seen.lock().unwrap();
        let body = &seen[0].1;
        assert_eq!(body["top_k"], 5);
        assert!(body.get("thinking").is_none(), "{body}");
        assert!(body.get("frequency_penalty").is_none(), "{body}");
    }
    front.shutdown().await;
}
