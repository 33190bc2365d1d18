//! The OpenAI- and Anthropic-compatible surfaces (issue #12) over real
//! sockets, on the real Qwen3 tokenizer and template with a scripted
//! engine: plain HTTP for the shapes and refusals, and the official Python
//! SDKs (`openai`, `anthropic`, installed by setup into the venv) for
//! streaming with tools and two-turn sealed continuity. The engine records
//! every prompt, so each second turn is checked to hold the first turn's
//! reasoning. Split by surface: `chat`, `responses`, `messages`;
//! `constrained` (answers under a schema, tool schemas refused by wire
//! field); shapes, 404s, the Node SDK and the four-surface agreement live
//! here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod chat;
mod completions;
mod constrained;
mod messages;
mod responses;
mod tokenize;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use support::{Observed, TestServer, qwen3_turn, run_sdk};

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
    server.agent.model().unwrap().decode(ids).unwrap()
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }})
}

pub(crate) use support::post_json as post;

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
    // The token counts refuse what their create endpoints refuse, and a
    // count runs nothing.
    let junk = json!({"messages": [{"role": "assistant", "content": [{"type": "redacted_thinking", "data": "junk"}]}]});
    let (status, body) = post(&server, "/v1/messages/count_tokens", &junk).await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("messages[0].content[0].data:"),
        "{body}"
    );
    let (status, body) = post(
        &server,
        "/v1/messages/count_tokens",
        &json!({"messages": user}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["input_tokens"].as_u64().unwrap() > 0, "{body}");
    let stored = json!({"input": "hi", "store": true});
    let (status, body) = post(&server, "/v1/responses/input_tokens", &stored).await;
    assert_eq!(
        (status, &body["error"]["param"]),
        (400, &json!("store")),
        "{body}"
    );
    let (status, body) = post(
        &server,
        "/v1/responses/input_tokens",
        &json!({"model": "m"}),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["param"]),
        (400, &json!("input")),
        "{body}"
    );
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
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

/// `summary` visibility: responses show a `summary_text` part (streamed as
/// `response.reasoning_summary_*` events), messages a `thinking` block
/// holding the summary followed by the `redacted_thinking` block that
/// carries the reasoning; the raw reasoning shows on neither.
#[tokio::test]
async fn summaries_show_on_responses_and_messages_without_the_raw_reasoning() {
    let raw = "RAW-THOUGHT-77: compare both options, the second is cheaper.";
    let summary = "Compared the options; picked the cheaper one.";
    let answer = "Take the second option.";
    let one = [
        qwen3_turn(raw, answer),
        format!("{summary}<|im_end|>"),
        format!("\n\n{answer}<|im_end|>"),
    ];
    let scripts: Vec<String> = one.iter().chain(one.iter()).cloned().collect();
    let (server, _) = TestServer::qwen3(&scripts).await;

    let body = json!({"input": "Which option?", "stream": true, "store": false,
        "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}});
    let (text, events) = support::sse::sse_post(&server, "/v1/responses", &body).await;
    assert!(!text.contains("RAW-THOUGHT-77"), "raw reasoning leaked");
    let names: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    for name in [
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.output_text.delta",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    let done = events.last().unwrap();
    assert_eq!(done["type"], "response.completed");
    let reasoning = &done["response"]["output"][0];
    assert_eq!(reasoning["summary"][0]["text"], summary);
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("tw1.")
    );
    assert_eq!(done["response"]["output_text"], answer);

    let body = json!({"max_tokens": 100, "messages": [{"role": "user", "content": "Which option?"}],
        "thinking": {"type": "enabled", "budget_tokens": 500, "visibility": "summary"}});
    let (status, message) = post(&server, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{message}");
    assert!(
        !message.to_string().contains("RAW-THOUGHT-77"),
        "raw reasoning leaked"
    );
    let content = &message["content"];
    assert_eq!(content[0]["type"], "thinking", "{message}");
    assert_eq!(content[0]["thinking"], summary);
    assert_eq!(content[0]["signature"], "");
    assert_eq!(content[1]["type"], "redacted_thinking");
    assert_eq!(content[2]["text"], answer);
    server.shutdown().await;
}

/// At most one tool call, as each API asks for it (chat and responses
/// `parallel_tool_calls: false`, messages `tool_choice.
/// disable_parallel_tool_use`): a model that would call twice calls once.
#[tokio::test]
async fn each_api_can_ask_for_one_tool_call_at_most() {
    let call = |city: &str| {
        format!(
            "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>"
        )
    };
    let script = format!(
        "<think>\nTwo cities.\n</think>\n\n{}\n{}<|im_end|>",
        call("Rome"),
        call("Oslo")
    );
    let (server, _) = TestServer::qwen3(&vec![script; 4]).await;
    let ask = "Weather in Rome and Oslo?";
    let function = &weather_tool()["function"];
    let flat = json!({"type": "function", "name": "get_weather",
        "parameters": function["parameters"]});
    let anthropic = json!({"name": "get_weather", "input_schema": function["parameters"]});
    let chat = |parallel: bool| {
        json!({"messages": [{"role": "user", "content": ask}], "tools": [weather_tool()],
            "parallel_tool_calls": parallel})
    };
    let count = |body: &Value, pointer: &str, kind: Option<&str>| {
        let items = body.pointer(pointer).and_then(Value::as_array).cloned();
        let items = items.unwrap_or_default();
        items
            .iter()
            .filter(|i| kind.is_none_or(|k| i["type"] == k))
            .count()
    };
    let (_, both) = post(&server, "/v1/chat/completions", &chat(true)).await;
    assert_eq!(
        count(&both, "/choices/0/message/tool_calls", None),
        2,
        "{both}"
    );
    let (_, one) = post(&server, "/v1/chat/completions", &chat(false)).await;
    assert_eq!(
        count(&one, "/choices/0/message/tool_calls", None),
        1,
        "{one}"
    );
    let body = json!({"input": ask, "tools": [flat], "parallel_tool_calls": false});
    let (_, one) = post(&server, "/v1/responses", &body).await;
    assert_eq!(count(&one, "/output", Some("function_call")), 1, "{one}");
    let body = json!({"max_tokens": 200, "messages": [{"role": "user", "content": ask}],
        "tools": [anthropic],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": true}});
    let (_, one) = post(&server, "/v1/messages", &body).await;
    assert_eq!(count(&one, "/content", Some("tool_use")), 1, "{one}");
    server.shutdown().await;
}

/// An answer the token limit cuts off says so on every surface, whole and
/// streamed: chat's `finish_reason: length`, Messages' `stop_reason:
/// max_tokens`, Responses' `incomplete` status (`max_output_tokens`),
/// AG-UI's `thinkwire.output_incomplete`; one that ends on its own does
/// not.
#[tokio::test]
async fn an_answer_the_token_limit_cuts_off_says_so_on_every_surface() {
    let scripts: Vec<String> = (0..8).map(|_| qwen3_turn(REASONING_2, ANSWER_2)).collect();
    let (server, _) = TestServer::qwen3(&scripts).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    let streamed = |path: &str, body: Value| {
        let request = reqwest::Client::new().post(server.url(path)).json(&body);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };

    let (status, whole) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "max_tokens": 20}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "length", "{whole}");
    let stream = streamed(
        "/v1/chat/completions",
        json!({"messages": user, "max_tokens": 20, "stream": true}),
    )
    .await;
    assert!(stream.contains(r#""finish_reason":"length""#), "{stream}");

    let (status, whole) = post(
        &server,
        "/v1/messages",
        &json!({"messages": user, "max_tokens": 20}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["stop_reason"], "max_tokens", "{whole}");

    let (status, whole) = post(
        &server,
        "/v1/responses",
        &json!({"input": "Weather?", "max_output_tokens": 20}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["status"], "incomplete", "{whole}");
    assert_eq!(
        whole["incomplete_details"]["reason"], "max_output_tokens",
        "{whole}"
    );
    // With room for some of the answer: the message the limit struck is
    // the item left incomplete.
    let stream = streamed(
        "/v1/responses",
        json!({"input": "Weather?", "max_output_tokens": 24, "stream": true}),
    )
    .await;
    assert!(stream.contains("event: response.incomplete"), "{stream}");
    assert!(!stream.contains("response.completed"), "{stream}");
    // Each item is done once: the reasoning, closed before the limit
    // struck, `completed`; the message `incomplete`.
    let done: Vec<Value> = (support::sse::data_messages(&stream).into_iter())
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| e["item"]["status"].clone())
        .collect();
    assert_eq!(done, [json!("completed"), json!("incomplete")], "{stream}");
    assert!(stream.contains(r#""type":"message""#), "{stream}");

    let forwarded = json!({"sampling": {"maxTokens": 20}});
    let events =
        support::post_run(&server, &support::input("t", "cut", "Weather?", forwarded)).await;
    assert!(support::incomplete_reason(&events).is_some(), "{events:?}");

    // With room to end on its own: none of it.
    let (_, whole) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "max_tokens": 200}),
    )
    .await;
    assert_eq!(whole["choices"][0]["finish_reason"], "stop", "{whole}");
    assert_eq!(
        whole["choices"][0]["message"]["content"], ANSWER_2,
        "{whole}"
    );
    // A constrained answer that left its grammar (the scripted answer is
    // no JSON) is incomplete for its constraint, not for the token limit.
    let format = json!({"type": "json_schema", "json_schema": {"name": "n",
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
    let (status, whole) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "max_tokens": 200, "response_format": format}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "stop", "{whole}");
    server.shutdown().await;
}
