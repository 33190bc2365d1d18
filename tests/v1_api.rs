//! The OpenAI- and Anthropic-compatible surfaces (issue #12) over real
//! sockets, on the real Qwen3 tokenizer and template with a scripted
//! engine: plain HTTP for the shapes and refusals, and the official Python
//! SDKs (`openai`, `anthropic`, installed by setup into the venv) for
//! streaming with tools and two-turn sealed continuity. The engine records
//! every prompt, so each second turn is checked to hold the first turn's
//! reasoning.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use support::{Observed, TestServer, qwen3_turn};

const REASONING_1: &str = "The user wants the weather in Paris. I should call the weather tool.";
const REASONING_2: &str = "The tool says 18 degrees and sunny, so I can answer now.";
const ANSWER_2: &str = "It is 18 °C and sunny in Paris.";

fn turn_1_script() -> String {
    format!(
        "<think>\n{REASONING_1}\n</think>\n\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris\"}}}}\n</tool_call><|im_end|>"
    )
}

fn scripts() -> Vec<String> {
    vec![turn_1_script(), qwen3_turn(REASONING_2, ANSWER_2)]
}

/// Turn 1's assistant turn as the second prompt must render it: its
/// reasoning restored from the sealed value.
fn restored_turn_1() -> String {
    format!("<|im_start|>assistant\n<think>\n{REASONING_1}\n</think>\n\n<tool_call>\n")
}

fn prompt_text(server: &TestServer, observed: &Observed, n: usize) -> String {
    let prompts = observed.prompts.lock().unwrap();
    let ids = prompts
        .get(n)
        .unwrap_or_else(|| panic!("the engine saw {} prompts, not {}", prompts.len(), n + 1));
    server.agent.model().decode(ids).unwrap()
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }})
}

async fn post(server: &TestServer, path: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The venv setup made (`$THINKWIRE_HOME/venv`), with the SDKs in it.
fn python() -> PathBuf {
    let home = std::env::var_os("THINKWIRE_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/thinkwire"),
        PathBuf::from,
    );
    let python = home.join("venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing — run scripts/setup",
        python.display()
    );
    python
}

async fn run_sdk(script: &str, args: Vec<String>) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(script);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(script)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK script failed:\n{stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bad SDK output ({e}): {stderr}"))
}

#[tokio::test]
async fn models_and_unknown_v1_paths_answer_json() {
    let (server, _) = TestServer::qwen3(&scripts()).await;
    let models: Value = reqwest::get(server.url("/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "Qwen3-0.6B-scripted");
    for (path, anthropic) in [
        ("/v1/nope", false),
        ("/v1", false),
        ("/v1/messages/count", true),
    ] {
        let response = reqwest::get(server.url(path)).await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.unwrap();
        if anthropic {
            assert_eq!(body["type"], "error", "{path}: {body}");
            assert_eq!(body["error"]["type"], "not_found_error");
        } else {
            assert_eq!(
                body["error"]["type"], "invalid_request_error",
                "{path}: {body}"
            );
        }
    }
    server.shutdown().await;
}

#[tokio::test]
async fn chat_completion_carries_reasoning_and_sealed_details_back() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let mut messages = vec![json!({"role": "user", "content": "What is the weather in Paris?"})];
    let request = |messages: &[Value]| {
        json!({"model": "x", "messages": messages, "tools": [weather_tool()],
               "reasoning": {"visibility": "full"}})
    };
    let (status, turn1) = post(&server, "/v1/chat/completions", &request(&messages)).await;
    assert_eq!(status, 200, "{turn1}");
    let message = &turn1["choices"][0]["message"];
    assert_eq!(message["reasoning"], REASONING_1);
    assert_eq!(message["reasoning_content"], REASONING_1);
    assert_eq!(turn1["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
    let detail = &message["reasoning_details"][0];
    assert_eq!(detail["type"], "reasoning.encrypted");
    assert!(detail["data"].as_str().unwrap().starts_with("tw1."));
    assert!(
        turn1["usage"]["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    let call_id = message["tool_calls"][0]["id"].clone();
    // The client sends the message back as it got it, minus the plaintext.
    let mut back = message.clone();
    back.as_object_mut().unwrap().remove("reasoning");
    back.as_object_mut().unwrap().remove("reasoning_content");
    messages.push(back);
    messages.push(
        json!({"role": "tool", "tool_call_id": call_id, "content": "{\"temperature_c\": 18}"}),
    );
    let (status, turn2) = post(&server, "/v1/chat/completions", &request(&messages)).await;
    assert_eq!(status, 200, "{turn2}");
    assert_eq!(turn2["choices"][0]["message"]["content"], ANSWER_2);
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));

    // An altered value is refused, naming where it was.
    let data = detail["data"].as_str().unwrap();
    let i = data.len() - 5;
    let flipped = if &data[i..=i] == "A" { "B" } else { "A" };
    let altered = format!("{}{flipped}{}", &data[..i], &data[i + 1..]);
    messages[1]["reasoning_details"][0]["data"] = json!(altered);
    let (status, refused) = post(&server, "/v1/chat/completions", &request(&messages)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"]["param"],
        "messages[1].reasoning_details[0].data"
    );
    assert_eq!(refused["error"]["code"], "SEALED_REASONING_REJECTED");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reasoning-msg-")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn refusals_name_the_parameter_in_each_apis_shape() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "stream": true, "temperature": "hot"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "temperature");
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "reasoning": {"visibility": "loud"}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "reasoning.visibility");
    let (status, body) = post(&server, "/v1/messages", &json!({"messages": user})).await;
    assert_eq!(status, 400);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("max_tokens:"),
        "{body}"
    );
    let (status, body) = post(&server, "/v1/messages", &json!({"max_tokens": 10,
        "messages": [{"role": "assistant", "content": [{"type": "redacted_thinking", "data": "junk"}]}]})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("messages[0].content[0].data:"),
        "{body}"
    );
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_streams_chat_with_tools_and_keeps_the_reasoning() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let summary = run_sdk("openai_client.py", vec![server.url("/v1")]).await;
    assert_eq!(summary["models"][0], "Qwen3-0.6B-scripted");
    let turn1 = &summary["turn1"];
    assert_eq!(turn1["reasoning"], REASONING_1, "{summary}");
    assert_eq!(turn1["reasoning_content"], REASONING_1);
    assert_eq!(turn1["finish"], "tool_calls");
    assert_eq!(turn1["tool_calls"][0]["name"], "get_weather");
    assert!(
        turn1["usage"]["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(summary["turn2"]["content"], ANSWER_2, "{summary}");
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));
    let tampered = &summary["tampered"];
    assert_eq!(tampered["refused"], true, "{summary}");
    assert_eq!(tampered["status"], 400);
    assert_eq!(
        tampered["body"]["param"],
        "messages[1].reasoning_details[0].data"
    );
    assert_eq!(tampered["body"]["code"], "SEALED_REASONING_REJECTED");
    server.shutdown().await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_streams_responses_and_carries_encrypted_content_back() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let args = vec![server.url("/v1"), "--api".into(), "responses".into()];
    let summary = run_sdk("openai_client.py", args).await;
    let turn1 = &summary["turn1"];
    assert_eq!(turn1["reasoning"], REASONING_1, "{summary}");
    let events: Vec<&str> = turn1["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        events[..3],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added"
        ]
    );
    assert_eq!(events.last(), Some(&"response.completed"));
    assert!(
        events.contains(&"response.function_call_arguments.delta"),
        "{events:?}"
    );
    let output = turn1["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "reasoning");
    assert!(
        output[0]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("tw1.")
    );
    assert_eq!(output[1]["type"], "function_call");
    assert_eq!(summary["turn2"]["content"], ANSWER_2, "{summary}");
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));
    let tampered = &summary["tampered"];
    assert_eq!(tampered["refused"], true, "{summary}");
    assert_eq!(tampered["status"], 400);
    assert_eq!(tampered["body"]["param"], "input[1].encrypted_content");
    assert_eq!(tampered["body"]["code"], "SEALED_REASONING_REJECTED");
    server.shutdown().await;
}

#[tokio::test]
async fn responses_refuse_stored_mode_and_show_reasoning_per_visibility() {
    let (server, _) = TestServer::qwen3(&scripts()).await;
    for (body, param) in [
        (json!({"input": "hi", "store": true}), "store"),
        (
            json!({"input": "hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
        ),
        (
            json!({"input": [{"type": "item_reference", "id": "x"}]}),
            "input[0]",
        ),
    ] {
        let (status, refused) = post(&server, "/v1/responses", &body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], param);
        assert_eq!(refused["error"]["type"], "invalid_request_error");
    }
    // Hidden (the server's default): the reasoning item holds only the
    // sealed value, and only when asked for.
    let body = json!({"input": "What is the weather in Paris?", "tools": [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "include": ["reasoning.encrypted_content"]});
    let (status, response) = post(&server, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{response}");
    let reasoning = &response["output"][0];
    assert_eq!(reasoning["type"], "reasoning");
    assert_eq!(reasoning["summary"], json!([]));
    assert!(reasoning.get("content").is_none(), "{reasoning}");
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("tw1.")
    );
    assert!(!response.to_string().contains(REASONING_1));
    assert!(
        response["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    server.shutdown().await;
}

#[tokio::test]
async fn every_surface_runs_the_same_prompt_and_says_the_same() {
    let script = qwen3_turn(REASONING_2, ANSWER_2);
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let said = support::v1::every_surface(&server, "What is the weather in Paris?", 100).await;
    for s in &said {
        assert_eq!(s.answer, ANSWER_2, "{}", s.surface);
        assert_eq!(s.reasoning, REASONING_2, "{}", s.surface);
    }
    {
        let prompts = observed.prompts.lock().unwrap();
        assert_eq!(prompts.len(), 4);
        assert!(
            prompts.iter().all(|p| *p == prompts[0]),
            "every surface renders the same prompt"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_node_sdk_parses_both_streams() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("tests/node/node_modules/openai").is_dir(),
        "openai is not installed in tests/node — run scripts/setup"
    );
    let script = qwen3_turn(REASONING_2, ANSWER_2);
    let (server, _) = TestServer::qwen3(&[script]).await;
    let url = server.url("/v1");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(root.join("tests/node/openai-client.mjs"))
            .arg(url)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Node SDK failed:\n{stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["chat"]["content"], ANSWER_2, "{summary}");
    assert_eq!(summary["chat"]["reasoning"], REASONING_2);
    assert_eq!(summary["chat"]["details"], 1);
    assert_eq!(summary["chat"]["finish"], "stop");
    assert_eq!(summary["responses"]["content"], ANSWER_2);
    assert_eq!(summary["responses"]["reasoning"], REASONING_2);
    assert_eq!(summary["helper"]["output_text"], ANSWER_2);
    server.shutdown().await;
}

#[tokio::test]
async fn stop_sequences_end_the_answer_on_both_apis() {
    let script = qwen3_turn(REASONING_2, ANSWER_2);
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    let (status, chat) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "stop": ["sunny"]}),
    )
    .await;
    assert_eq!(status, 200, "{chat}");
    assert_eq!(chat["choices"][0]["message"]["content"], "It is 18 °C and ");
    assert_eq!(chat["choices"][0]["finish_reason"], "stop");
    let response = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"messages": user, "stop": "°C", "stream": true}))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    let streamed: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(streamed, "It is 18 ");
    assert!(body.ends_with("data: [DONE]\n\n"));
    let (status, message) = post(
        &server,
        "/v1/messages",
        &json!({"messages": user, "max_tokens": 100, "stop_sequences": ["sunny"]}),
    )
    .await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["content"][0]["text"], "It is 18 °C and ");
    assert_eq!(message["stop_reason"], "stop_sequence");
    assert_eq!(message["stop_sequence"], "sunny");
    let (status, refused) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "stop": [1]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["param"], "stop[0]");
    assert_eq!(observed.prompts.lock().unwrap().len(), 3);
    server.shutdown().await;
}
