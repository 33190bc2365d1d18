//! Messages: the official `anthropic` SDK streaming with thinking (its
//! second turn's prompt counted first by `count_tokens`), and hidden
//! thinking as `redacted_thinking` that still continues.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_sdk_streams_thinking_and_keeps_the_reasoning() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let summary = run_sdk("anthropic_client.py", vec![server.url("")]).await;
    let turn1 = &summary["turn1"];
    let content = turn1["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "thinking", "{summary}");
    assert_eq!(content[0]["thinking"], REASONING_1);
    assert!(
        content[0]["signature"]
            .as_str()
            .unwrap()
            .starts_with("tw1.")
    );
    assert_eq!(content[1]["type"], "tool_use");
    assert_eq!(content[1]["input"]["city"], "Paris");
    assert_eq!(turn1["stop_reason"], "tool_use");
    let events: Vec<&str> = turn1["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for kind in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "message_stop",
    ] {
        assert!(events.contains(&kind), "{events:?}");
    }
    let turn2 = &summary["turn2"]["content"];
    let text = turn2
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "text")
        .unwrap();
    assert_eq!(text["text"], ANSWER_2);
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));
    // `count_tokens` counted the prompt turn 2 then started from.
    let prompts = observed.prompts.lock().unwrap().clone();
    let counted = &summary["turn2_counted"]["input_tokens"];
    assert_eq!(counted, prompts[1].len(), "{summary}");
    assert_eq!(
        counted, &summary["turn2"]["usage"]["input_tokens"],
        "{summary}"
    );
    for case in ["tampered_signature", "changed_thinking"] {
        let refused = &summary[case];
        assert_eq!(refused["refused"], true, "{case}: {summary}");
        assert_eq!(refused["status"], 400);
        assert_eq!(refused["body"]["type"], "error");
        assert_eq!(refused["body"]["error"]["type"], "invalid_request_error");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn hidden_thinking_is_redacted_and_still_continues() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let tools = json!([{"name": "get_weather", "description": "weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let mut messages = vec![json!({"role": "user", "content": "What is the weather in Paris?"})];
    let request = |messages: &[Value]| {
        json!({"max_tokens": 200, "messages": messages, "tools": tools,
        "thinking": {"type": "enabled", "budget_tokens": 500, "visibility": "hidden"}})
    };
    let (status, turn1) = post(&server, "/v1/messages", &request(&messages)).await;
    assert_eq!(status, 200, "{turn1}");
    let content = turn1["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "redacted_thinking", "{turn1}");
    assert!(
        !turn1.to_string().contains(REASONING_1),
        "hidden reasoning leaked"
    );
    let tool_use = content.iter().find(|b| b["type"] == "tool_use").unwrap();
    messages.push(json!({"role": "assistant", "content": content}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": tool_use["id"], "content": "18 degrees"}]}));
    let (status, turn2) = post(&server, "/v1/messages", &request(&messages)).await;
    assert_eq!(status, 200, "{turn2}");
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));
    server.shutdown().await;
}
