//! Messages: the official `anthropic` SDK streaming with thinking (its
//! second turn's prompt counted first by `count_tokens`), hidden thinking
//! as `redacted_thinking` that still continues (and wins over a summary
//! beside it), `message_start`'s prompt count, and the codecs' bounds.

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

/// A `thinking` block without a signature beside a sealed block (what
/// `summary` visibility writes: the summary, then the reasoning's carrier)
/// is not reasoning, even on a server that trusts client reasoning: the
/// sealed value is.
#[tokio::test]
async fn a_sealed_block_wins_over_the_summary_beside_it() {
    use std::time::Duration;

    use thinkwire::agent::{Agent, AgentConfig};
    use thinkwire::server::ServerConfig;
    use thinkwire_seal::{Key, KeyRing};

    let (model, observed) = support::scripted_qwen3(&scripts(), Duration::ZERO);
    let mut config = AgentConfig::default();
    config.replay.trust_client_reasoning = true;
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
    let tools = json!([{"name": "get_weather", "description": "weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let mut messages = vec![json!({"role": "user", "content": "What is the weather in Paris?"})];
    let request = |messages: &[Value]| {
        json!({"max_tokens": 200, "messages": messages, "tools": tools,
        "thinking": {"type": "enabled", "budget_tokens": 500, "visibility": "hidden"}})
    };
    let (status, turn1) = post(&server, "/v1/messages", &request(&messages)).await;
    assert_eq!(status, 200, "{turn1}");
    let mut content = turn1["content"].as_array().unwrap().clone();
    assert_eq!(content[0]["type"], "redacted_thinking", "{turn1}");
    let tool_use = content.iter().find(|b| b["type"] == "tool_use").unwrap();
    let tool_use_id = tool_use["id"].clone();
    let summary = json!({"type": "thinking", "thinking": "CLIENT-SUMMARY-99", "signature": ""});
    content.insert(0, summary);
    messages.push(json!({"role": "assistant", "content": content}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": tool_use_id, "content": "18 degrees"}]}));
    let (status, turn2) = post(&server, "/v1/messages", &request(&messages)).await;
    assert_eq!(status, 200, "{turn2}");
    let prompt = prompt_text(&server, &observed, 1);
    assert!(prompt.contains(&restored_turn_1()), "{prompt:?}");
    assert!(!prompt.contains("CLIENT-SUMMARY-99"), "{prompt:?}");
    server.shutdown().await;
}

/// `message_start` counts the prompt the run starts from (the scripted
/// engine caches nothing, so `message_delta`'s final count is the same).
#[tokio::test]
async fn message_start_counts_the_prompt() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn(REASONING_2, ANSWER_2)]).await;
    let body = json!({"max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "Weather?"}]});
    let (text, events) = support::sse::sse_post(&server, "/v1/messages", &body).await;
    assert_eq!(events[0]["type"], "message_start", "{text}");
    let prompt = observed.prompts.lock().unwrap()[0].len() as u64;
    assert!(prompt > 0);
    assert_eq!(
        events[0]["message"]["usage"]["input_tokens"], prompt,
        "{text}"
    );
    let delta = events
        .iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    let usage = &delta["usage"];
    let counted = usage["input_tokens"].as_u64().unwrap()
        + usage["cache_read_input_tokens"].as_u64().unwrap();
    assert_eq!(counted, prompt, "{text}");
    server.shutdown().await;
}

/// A thinking budget of 0, more stop sequences than the bound (chat's and
/// legacy completions' `stop` too), a non-boolean `is_error`, and a role
/// too long to quote whole are refused, naming the field, before anything
/// runs.
#[tokio::test]
async fn what_the_codecs_bound_is_refused_by_name() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let many: Vec<String> = (0..65).map(|i| format!("stop-{i}")).collect();
    let failed_tool = json!([{"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": "c1", "content": "r", "is_error": "yes"}]}]);
    let long_role = json!([{"role": "x".repeat(5000), "content": "hi"}]);
    for (body, param) in [
        (
            json!({"max_tokens": 10, "messages": user,
                "thinking": {"type": "enabled", "budget_tokens": 0}}),
            "thinking.budget_tokens",
        ),
        (
            json!({"max_tokens": 10, "messages": user, "stop_sequences": many}),
            "stop_sequences",
        ),
        (
            json!({"max_tokens": 10, "messages": failed_tool}),
            "messages[0].content[0].is_error",
        ),
        (
            json!({"max_tokens": 10, "messages": long_role}),
            "messages[0].role",
        ),
    ] {
        let (status, refused) = post(&server, "/v1/messages", &body).await;
        assert_eq!(status, 400, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{param}:")), "{refused}");
        assert!(message.len() < 200, "{refused}");
    }
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"messages": user, "stop": many}),
        ),
        ("/v1/completions", json!({"prompt": "Once", "stop": many})),
    ] {
        let (status, refused) = post(&server, path, &body).await;
        assert_eq!(status, 400, "{path}: {refused}");
        assert_eq!(refused["error"]["param"], "stop", "{path}: {refused}");
    }
    // Each stop is bounded in length as well (each is matched against
    // every piece of every choice), named by its index.
    let long = "x".repeat(513);
    for (path, body, param) in [
        (
            "/v1/chat/completions",
            json!({"messages": user, "stop": long}),
            "stop",
        ),
        (
            "/v1/completions",
            json!({"prompt": "Once", "stop": ["end", long]}),
            "stop[1]",
        ),
        (
            "/v1/messages",
            json!({"max_tokens": 10, "messages": user, "stop_sequences": [long]}),
            "stop_sequences[0]",
        ),
    ] {
        let (status, refused) = post(&server, path, &body).await;
        assert_eq!(status, 400, "{path}: {refused}");
        let named = refused["error"]["param"] == param
            || refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(&format!("{param}:")));
        assert!(named, "{path}: {refused}");
    }
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}
