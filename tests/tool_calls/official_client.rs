//! The official `@ag-ui/client` runs a tool loop, and the protocol crate's
//! client reducer, given the same turns, holds the same messages.

use thinkwire_protocol::client::Conversation;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_runs_a_tool_loop() {
    let arguments = r#"{"city": "Paris"}"#;
    let scripts = [
        thinks_then_calls(
            "Need the weather tool.",
            &tool_call("get_weather", arguments),
        ),
        qwen3_turn("The tool answered.", "Sunny, 18 °C."),
    ];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let url = server.url("/agent");
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
            ],
        )
    })
    .await
    .unwrap();

    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let pending = runs[0]["pendingToolCallIds"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{summary:#}");
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
    // The client's assistant message holds the call as streamed.
    let call = &messages[2]["toolCalls"][0];
    assert_eq!(call["id"], pending[0]);
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], arguments);
    assert_eq!(messages[3]["toolCallId"], pending[0]);
    assert_eq!(messages[5]["content"], "Sunny, 18 °C.");
    // The second prompt carries the call and its result.
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2);
    let second = server.agent.model().unwrap().decode(&prompts[1]).unwrap();
    assert!(
        second.contains(&format!(
            "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call>"
        )),
        "{second}"
    );
    assert!(
        second.contains("<tool_response>\n18 °C, sunny\n</tool_response>"),
        "{second}"
    );
    assert!(
        second.contains("Need the weather tool."),
        "sealed reasoning replayed: {second}"
    );
    server.shutdown().await;

    // The protocol crate's client reducer, given the same turns, holds what
    // the official client holds: the same messages in the same order with
    // the same fields (only ids and sealed values differ between runs).
    let ours = protocol_client_tool_loop(&scripts).await;
    let (ours, theirs) = (canonical(&ours), canonical(&summary["messages"]));
    assert_eq!(ours, theirs, "ours: {ours:#}\nofficial: {theirs:#}");
    assert_eq!(ours[1]["encryptedValue"], "<sealed>");
}

/// The official tool loop above, driven from Rust over SSE with
/// `thinkwire_protocol::client::Conversation` keeping the messages: the
/// same thread, user message, tool and tool result as `agui-client.mjs`.
async fn protocol_client_tool_loop(scripts: &[String]) -> Value {
    let (server, _) = TestServer::qwen3(scripts).await;
    let mut conversation = Conversation::new(vec![
        serde_json::from_value(
            json!({"id": "user-1", "role": "user", "content": "Weather in Paris?"}),
        )
        .unwrap(),
    ]);
    for run in ["run-1", "run-2"] {
        let body = json!({
            "threadId": "node-thread-1", "runId": run, "messages": conversation.messages,
            "tools": [weather_tool()], "context": [], "state": {}, "forwardedProps": {},
        });
        let events = post_run(&server, &body).await;
        conversation.apply_all(&events);
        if let Outcome::Success {
            pending_tool_call_ids: Some(pending),
        } = finished_outcome(&events)
        {
            for call in pending {
                let result = json!({
                    "id": format!("tool-{call}"), "role": "tool",
                    "toolCallId": call, "content": "18 °C, sunny",
                });
                conversation
                    .messages
                    .push(serde_json::from_value(result).unwrap());
            }
        }
    }
    server.shutdown().await;
    serde_json::to_value(&conversation.messages).unwrap()
}

/// `messages` with ids numbered by first appearance and sealed values
/// blanked, the parts that differ between two runs of one script.
fn canonical(messages: &Value) -> Value {
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
                        ("encryptedValue", Value::String(sealed)) if sealed.len() > 40 => {
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
    let mut messages = messages.clone();
    walk(&mut messages, &mut Vec::new());
    messages
}
