//! One conversation through every surface: AG-UI (`POST /agent`), chat
//! completions, responses and messages, each non-streaming where it can be,
//! with the reasoning shown in full. Returns each surface's answer text
//! and reasoning text, for tests that they agree.

use serde_json::{Value, json};

use super::{TestServer, answer_text, input, post_run, reasoning_text};

/// A surface's answer and reasoning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub surface: &'static str,
    pub answer: String,
    pub reasoning: String,
}

async fn post(server: &TestServer, path: &str, body: Value) -> Value {
    let response = reqwest::Client::new()
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

/// `prompt` through the four surfaces, greedy, with `max_tokens` for
/// the answer.
pub async fn every_surface(server: &TestServer, prompt: &str, max_tokens: u64) -> Vec<Said> {
    let mut said = Vec::new();
    let forwarded = json!({"reasoning": {"visibility": "full"},
                           "sampling": {"temperature": 0, "maxTokens": max_tokens}});
    let events = post_run(server, &input("same-thread", "same-run", prompt, forwarded)).await;
    said.push(Said {
        surface: "ag-ui",
        answer: answer_text(&events),
        reasoning: reasoning_text(&events),
    });

    let chat = post(
        server,
        "/v1/chat/completions",
        json!({
        "messages": [{"role": "user", "content": prompt}], "temperature": 0,
        "max_tokens": max_tokens, "reasoning": {"visibility": "full"}}),
    )
    .await;
    let message = &chat["choices"][0]["message"];
    said.push(Said {
        surface: "chat completions",
        answer: message["content"].as_str().unwrap_or_default().to_owned(),
        reasoning: message["reasoning_content"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    });

    let response = post(
        server,
        "/v1/responses",
        json!({
        "input": prompt, "temperature": 0, "max_output_tokens": max_tokens,
        "reasoning": {"visibility": "full"}}),
    )
    .await;
    let output = response["output"].as_array().unwrap();
    said.push(Said {
        surface: "responses",
        answer: response["output_text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        reasoning: output
            .iter()
            .filter(|item| item["type"] == "reasoning")
            .filter_map(|item| item["content"][0]["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
    });

    let message = post(
        server,
        "/v1/messages",
        json!({
        "messages": [{"role": "user", "content": prompt}], "temperature": 0,
        "max_tokens": max_tokens, "thinking": {"type": "enabled"}}),
    )
    .await;
    let blocks = message["content"].as_array().unwrap();
    let text = |kind: &str, field: &str| {
        blocks
            .iter()
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[field].as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    said.push(Said {
        surface: "messages",
        answer: text("text", "text"),
        reasoning: text("thinking", "thinking"),
    });
    said
}
