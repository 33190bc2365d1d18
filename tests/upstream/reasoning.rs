//! Reasoning through an upstream: the official client's tool loop keeps it
//! across turns, summary visibility asks the upstream for a summary, and
//! replicas sharing a key ring continue each other's conversations.

use thinkwire_protocol::{EventKind, EventType};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_keeps_reasoning_through_an_upstream() {
    let arguments = r#"{"city": "Paris"}"#;
    let scripts = [
        format!(
            "<think>\n{REASONING}\n</think>\n\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call>{END}"
        ),
        qwen3_turn("The tool answered.", "Sunny, 18 °C."),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;

    let capabilities: Value = reqwest::get(front.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(capabilities["custom"]["backend"], "openai-chat");
    assert_eq!(capabilities["identity"]["type"], "upstream");

    let url = front.url("/agent");
    let tools = json!([weather_tool()]).to_string();
    let summary = tokio::task::spawn_blocking(move || {
        run_official_client(
            &url,
            &[
                "--turns",
                "2",
                "--prompt",
                "Weather in Paris?",
                "--tools",
                &tools,
                "--tool-result",
                "18 °C, sunny",
                "--forwarded",
                r#"{"reasoning": {"visibility": "full"}}"#,
            ],
        )
    })
    .await
    .unwrap();

    let events: Vec<&str> = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for ty in [
        "REASONING_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_ENCRYPTED_VALUE",
        "TOOL_CALL_START",
        "TEXT_MESSAGE_CONTENT",
    ] {
        assert!(events.contains(&ty), "{ty} missing: {events:?}");
    }
    let messages = summary["messages"].as_array().unwrap();
    assert_eq!(
        support::roles(messages),
        [
            "user",
            "reasoning",
            "assistant",
            "tool",
            "reasoning",
            "assistant"
        ],
        "{messages:#?}"
    );
    assert_eq!(messages[1]["content"].as_str().unwrap().trim(), REASONING);
    assert!(
        messages[1]["encryptedValue"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let call = &messages[2]["toolCalls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], arguments);
    assert_eq!(messages[5]["content"], "Sunny, 18 °C.");

    // The upstream got the first turn's reasoning back on the second turn,
    // opened by the front from the client's sealed value.
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2);
    let second = upstream.agent.model().unwrap().decode(&prompts[1]).unwrap();
    assert!(
        second.contains(&format!("<think>\n{REASONING}\n</think>")),
        "{second}"
    );
    assert!(second.contains("<tool_response>\n18 °C, sunny\n</tool_response>"));
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_visibility_asks_the_upstream_for_a_summary() {
    let scripts = [
        qwen3_turn("Paris is the capital; long chain of thought.", "Paris."),
        // The summary request: thinking off, answer only.
        "The capital question.<|im_end|>".to_owned(),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let events = post_run(
        &front,
        &input(
            "t",
            "r1",
            "Capital of France?",
            json!({"reasoning": {"visibility": "summary"}}),
        ),
    )
    .await;
    assert_eq!(reasoning_text(&events), "The capital question.");
    assert_eq!(answer_text(&events), "Paris.");
    assert!(types(&events).contains(&EventType::ReasoningEncryptedValue));
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2);
    // The summary request counts in the run's usage, as the answer's does.
    let usage = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunFinished(f) => f.usage.as_ref().and_then(|u| u.first().cloned()),
            _ => None,
        })
        .expect("RUN_FINISHED carries usage");
    assert_eq!(
        usage.input_tokens,
        Some((prompts[0].len() + prompts[1].len()) as u64),
        "{usage:?}"
    );
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_replicas_sharing_a_key_ring_continue_each_others_conversations() {
    let arguments = r#"{"city": "Paris"}"#;
    let scripts = [
        format!(
            "<think>\n{REASONING}\n</think>\n\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call>{END}"
        ),
        qwen3_turn("The tool answered.", "Sunny, 18 °C."),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let old = Key::generate().unwrap().to_text().as_str().to_owned();
    let new = Key::generate().unwrap().to_text().as_str().to_owned();
    let url = upstream.url("/v1");
    // A seals with the old key; B has rotated (new key active, old one
    // still opening); C is another deployment.
    let a = front_with_keys(
        upstream_config(url.clone()),
        KeyRing::from_key_list(&old).unwrap(),
    )
    .await;
    let b = front_with_keys(
        upstream_config(url.clone()),
        KeyRing::from_key_list(&format!("{new}\n{old}")).unwrap(),
    )
    .await;
    let c = front(upstream_config(url)).await;

    let full = json!({"reasoning": {"visibility": "full"}});
    let mut first = input("t-replicas", "r1", "Weather in Paris?", full.clone());
    first["tools"] = json!([weather_tool()]);
    let events = post_run(&a, &first).await;
    let mut messages = first["messages"].as_array().unwrap().clone();
    apply_events(&mut messages, &events);
    let call_id = messages
        .iter()
        .find_map(|m| m["toolCalls"][0]["id"].as_str())
        .unwrap()
        .to_owned();
    messages.push(
        json!({"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": "18 °C, sunny"}),
    );
    let mut second = first.clone();
    second["runId"] = json!("r2");
    second["messages"] = json!(messages);

    // C cannot open A's value: refused before RUN_STARTED, naming it.
    let refused = reqwest::Client::new()
        .post(c.url("/agent"))
        .json(&second)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.unwrap();
    let reasoning_id = messages
        .iter()
        .find(|m| m["role"] == "reasoning")
        .and_then(|m| m["id"].as_str())
        .unwrap()
        .to_owned();
    assert_eq!(body["error"]["code"], "SEALED_REASONING_REJECTED", "{body}");
    assert!(body.to_string().contains(&reasoning_id), "{body}");

    // B continues A's conversation: the upstream gets the reasoning back.
    let events = post_run(&b, &second).await;
    assert_eq!(answer_text(&events), "Sunny, 18 °C.");
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2, "the refusal never reached the upstream");
    let prompt = upstream.agent.model().unwrap().decode(&prompts[1]).unwrap();
    assert!(
        prompt.contains(&format!("<think>\n{REASONING}\n</think>")),
        "{prompt}"
    );
    for server in [a, b, c, upstream] {
        server.shutdown().await;
    }
}
