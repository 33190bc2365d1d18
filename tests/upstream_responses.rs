//! The `openai-responses` upstream adapter in front of a real Responses
//! server: a second thinkwire (its `/v1/responses`, `store: false`) on the
//! scripted Qwen3 model. The upstream's own `encrypted_content` travels
//! inside the front's sealed value and goes back verbatim, so the upstream
//! opens its own reasoning with its own key — no trust in plaintext needed.
//! The front asks for reasoning summaries (`summary: "auto"`, as OpenAI
//! needs), so its client sees the upstream's summary, never the raw
//! reasoning, which still reaches the upstream again next turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::front::{front, upstream_config};
use support::*;
use thinkwire::agent::{Agent, AgentConfig, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire::upstream::UpstreamKind;
use thinkwire_protocol::{EventKind, EventType};
use thinkwire_seal::{Key, KeyRing};

const REASONING: &str = "Need the weather tool for Rome.";

/// A thinkwire whose backend is the Responses API at `url`.
async fn responses_front(url: String) -> TestServer {
    front(upstream_config(
        UpstreamKind::OpenAiResponses,
        url,
        "Qwen3-0.6B",
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_encrypted_reasoning_goes_back_to_it_verbatim() {
    let arguments = r#"{"city": "Rome"}"#;
    let call = format!(
        "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call><|im_end|>"
    );
    // The upstream runs with summary visibility (the front asks for
    // summaries): each generation stops where its reasoning ends, a summary
    // pass runs, and generation resumes after `</think>`.
    let scripts = [
        format!("<think>\n{REASONING}\n</think>\n\n{call}"),
        "Looked up the weather.<|im_end|>".to_owned(),
        format!("\n\n{call}"),
        qwen3_turn("The tool answered.", "Rome: 24 °C."),
        "Read the tool's answer.<|im_end|>".to_owned(),
        "\n\nRome: 24 °C.<|im_end|>".to_owned(),
    ];
    // The upstream streams its reasoning but trusts no plaintext back.
    let (model, observed) = scripted_qwen3(&scripts, Duration::ZERO);
    let mut config = AgentConfig::default();
    config.policy.default_visibility = Visibility::Full;
    let upstream = TestServer::start(
        Agent::new(model, KeyRing::new(Key::generate().unwrap()), config),
        ServerConfig::default(),
    )
    .await;

    let front = responses_front(upstream.url("/v1")).await;

    let mut first = input(
        "t-responses",
        "r1",
        "Weather in Rome?",
        json!({"reasoning": {"visibility": "full"}}),
    );
    first["tools"] = json!([{
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }]);
    let events = post_run(&front, &first).await;
    assert_eq!(reasoning_text(&events), "Looked up the weather.");
    assert!(types(&events).contains(&EventType::ReasoningEncryptedValue));
    let raw: String = events.iter().map(|e| e.to_json()).collect();
    assert!(
        !raw.contains("tw1.") && !raw.contains(REASONING),
        "the upstream's carrier and raw reasoning are only inside the front's seal"
    );
    let call_id = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallEnd(end) => Some(end.tool_call_id.clone()),
            _ => None,
        })
        .unwrap();

    let mut messages = first["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    messages
        .push(json!({"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": "24 °C"}));
    let mut second = first.clone();
    second["runId"] = json!("r2");
    second["messages"] = json!(messages);
    let events = post_run(&front, &second).await;
    assert_eq!(answer_text(&events), "Rome: 24 °C.");
    assert_eq!(reasoning_text(&events), "Read the tool's answer.");

    // The upstream opened its own value: the reasoning is in its prompt.
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(
        prompts.len(),
        6,
        "per turn: answer, summary, resumed answer"
    );
    let prompt = upstream.agent.model().unwrap().decode(&prompts[3]).unwrap();
    assert!(
        prompt.contains(&format!("<think>\n{REASONING}\n</think>")),
        "{prompt}"
    );
    assert!(
        prompt.contains("<tool_response>\n24 °C\n</tool_response>"),
        "{prompt}"
    );
    front.shutdown().await;
    upstream.shutdown().await;
}

/// Log-probabilities asked of the front go up as Responses'
/// `message.output_text.logprobs`, and the upstream's entries come back
/// ahead of the answer text they wrote, on AG-UI and chat completions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_logprobs_come_back_with_its_answer() {
    let answer = "Rome: 24 °C.";
    // Per run, as above: reasoning to its end, the summary, the answer.
    let run = [
        qwen3_turn(REASONING, answer),
        "Looked it up.<|im_end|>".to_owned(),
        format!("\n\n{answer}<|im_end|>"),
    ];
    let scripts: Vec<String> = run.iter().chain(&run).cloned().collect();
    let (model, _) = scripted_qwen3(&scripts, Duration::ZERO);
    let mut config = AgentConfig::default();
    config.policy.default_visibility = Visibility::Full;
    let upstream = TestServer::start(
        Agent::new(model, KeyRing::new(Key::generate().unwrap()), config),
        ServerConfig::default(),
    )
    .await;
    let front = responses_front(upstream.url("/v1")).await;
    let replayed = |entries: &[serde_json::Value]| {
        assert!(!entries.is_empty());
        for entry in entries {
            assert_eq!(entry["logprob"], 0.0, "{entry}");
            assert_eq!(entry["top_logprobs"][0]["token"], entry["token"], "{entry}");
        }
        String::from_utf8(support::logprobs::spelled(entries)).unwrap()
    };

    let forwarded = json!({"logprobs": 1, "reasoning": {"visibility": "full"}});
    let events = post_run(&front, &input("t-lp", "r1", "Weather in Rome?", forwarded)).await;
    let (text, entries) = support::logprobs::agui(&events);
    assert_eq!(text, answer);
    assert_eq!(replayed(&entries), answer);

    let body = json!({"messages": [{"role": "user", "content": "Weather in Rome?"}],
        "logprobs": true, "top_logprobs": 1});
    let response = reqwest::Client::new()
        .post(front.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let whole: serde_json::Value = response.json().await.unwrap();
    let choice = &whole["choices"][0];
    assert_eq!(choice["message"]["content"], answer, "{whole}");
    assert_eq!(
        replayed(choice["logprobs"]["content"].as_array().unwrap()),
        answer
    );
    front.shutdown().await;
    upstream.shutdown().await;
}
