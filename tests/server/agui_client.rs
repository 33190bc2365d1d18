//! The official `@ag-ui/client` `HttpAgent` (installed by setup under
//! tests/node) against a live server: it verifies every event and applies
//! them to its message list; any violation makes it fail.

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_completes_two_turns_and_keeps_the_sealed_reasoning() {
    let scripts = [
        qwen3_turn("They ask about Paris.", "Paris is the capital of France."),
        qwen3_turn("A follow-up about Paris.", "About two million people."),
    ];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let url = server.url("/agent");
    let summary = tokio::task::spawn_blocking(move || {
        run_official_client(
            &url,
            &[
                "--turns",
                "2",
                "--prompt",
                "What is the capital of France?",
                "--prompt",
                "How many people live there?",
                "--forwarded",
                r#"{"reasoning":{"visibility":"full"}}"#,
            ],
        )
    })
    .await
    .unwrap();
    let messages = summary["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "reasoning",
            "assistant",
            "user",
            "reasoning",
            "assistant"
        ],
        "{messages:#?}"
    );
    assert_eq!(messages[1]["content"], "They ask about Paris.");
    assert!(
        messages[1]["encryptedValue"]
            .as_str()
            .is_some_and(|v| v.len() > 40)
    );
    assert_eq!(messages[2]["content"], "Paris is the capital of France.");
    assert_eq!(messages[5]["content"], "About two million people.");
    // Turn 2's prompt carries turn 1's reasoning, which came back sealed.
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2);
    let second = server.agent.model().decode(&prompts[1]).unwrap();
    assert!(
        second.contains("What is the capital of France?"),
        "{second}"
    );
    server.shutdown().await;
}

/// The protocol crate's client reducer holds, after the same two runs, what
/// `@ag-ui/client` holds: same messages in the same order with the same
/// fields, the sealed reasoning and the tool call included. Only ids and
/// sealed values differ between two runs of one script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_client_holds_what_the_official_client_holds() {
    use serde_json::{Value, json};
    use thinkwire_protocol::client::Conversation;
    use thinkwire_protocol::{EventKind, Outcome};

    let scripts = [
        "<think>\nNeed the weather tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>".to_owned(),
        qwen3_turn("The tool answered.", "Sunny, 18 °C."),
    ];
    let tool = json!({
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    });
    let thread = "parity-thread";

    let (official_server, _) = TestServer::qwen3(&scripts).await;
    let url = official_server.url("/agent");
    let tools = json!([tool]).to_string();
    let summary = tokio::task::spawn_blocking(move || {
        run_official_client(
            &url,
            &[
                "--turns",
                "2",
                "--thread",
                thread,
                "--prompt",
                "Weather in Paris?",
                "--tools",
                &tools,
                "--tool-result",
                "18 °C, sunny",
            ],
        )
    })
    .await
    .unwrap();
    official_server.shutdown().await;

    // The same turns from Rust: the agui-client.mjs ids, the same tool result.
    let (server, _) = TestServer::qwen3(&scripts).await;
    let mut conversation: Conversation = serde_json::from_value::<Vec<_>>(json!([
        {"id": "user-1", "role": "user", "content": "Weather in Paris?"}
    ]))
    .unwrap()
    .into();
    for run in ["run-1", "run-2"] {
        let input = json!({
            "threadId": thread, "runId": run, "messages": conversation.messages,
            "tools": [tool], "context": [], "state": {}, "forwardedProps": {},
        });
        let events = post_run(&server, &input).await;
        conversation.apply_all(&events);
        let pending = events.iter().find_map(|e| match &e.kind {
            EventKind::RunFinished(f) => match &f.outcome {
                Some(Outcome::Success {
                    pending_tool_call_ids,
                }) => pending_tool_call_ids.clone(),
                _ => None,
            },
            _ => None,
        });
        for call in pending.into_iter().flatten() {
            let result = json!({
                "id": format!("tool-{call}"), "role": "tool",
                "toolCallId": call, "content": "18 °C, sunny",
            });
            conversation
                .messages
                .push(serde_json::from_value(result).unwrap());
        }
    }
    server.shutdown().await;

    /// Numbers ids by first appearance and blanks sealed values, which
    /// differ between runs.
    fn canonical(value: &Value) -> Value {
        fn walk(value: &mut Value, ids: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    for (key, child) in map.iter_mut() {
                        match (key.as_str(), &*child) {
                            ("id" | "toolCallId", Value::String(id)) => {
                                let n = ids.iter().position(|x| x == id).unwrap_or_else(|| {
                                    ids.push(id.clone());
                                    ids.len() - 1
                                });
                                *child = json!(format!("#{n}"));
                            }
                            ("encryptedValue", Value::String(v)) if v.len() > 40 => {
                                *child = json!("<sealed>");
                            }
                            _ => walk(child, ids),
                        }
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(|v| walk(v, ids)),
                _ => {}
            }
        }
        let mut value = value.clone();
        walk(&mut value, &mut Vec::new());
        value
    }
    let ours = canonical(&serde_json::to_value(&conversation.messages).unwrap());
    let theirs = canonical(&summary["messages"]);
    assert_eq!(ours, theirs, "ours: {ours:#}\nofficial: {theirs:#}");
    let roles: Vec<&str> = conversation
        .messages
        .iter()
        .map(|m| m.role().as_str())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "reasoning",
            "assistant",
            "tool",
            "reasoning",
            "assistant"
        ]
    );
}
