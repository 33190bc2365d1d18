//! Tool calls over the live server: offered tools reach the prompt, the
//! model's Qwen3/Hermes `<tool_call>` becomes `TOOL_CALL_*` events and a
//! pending call, its result flows back into the next prompt, and calls that
//! must not run (unoffered tools, malformed arguments, syntax inside
//! reasoning) do not. The official `@ag-ui/client` runs a whole tool loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use serde_json::{Value, json};
use thinkwire_protocol::client::Conversation;
use thinkwire_protocol::{Event, EventKind, EventType as T, Outcome};
use thinkwire_seal::{Binding, KeyRing};

use support::*;

const END: &str = "<|im_end|>";

/// What the model writes to call `name` with `arguments` (Qwen3's format).
fn tool_call(name: &str, arguments: &str) -> String {
    format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {arguments}}}\n</tool_call>")
}

/// A Qwen3 turn that thinks, then calls a tool instead of answering.
fn thinks_then_calls(reasoning: &str, call: &str) -> String {
    format!("<think>\n{reasoning}\n</think>\n\n{call}{END}")
}

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    })
}

/// An input with one user message, `tools` offered, visibility `full`.
fn input_with_tools(thread: &str, run: &str, text: &str, tools: Value) -> Value {
    let mut body = input(
        thread,
        run,
        text,
        json!({"reasoning": {"visibility": "full"}}),
    );
    body["tools"] = tools;
    body
}

fn finished_outcome(events: &[Event]) -> Outcome {
    match &events.last().unwrap().kind {
        EventKind::RunFinished(f) => f.outcome.clone().expect("an outcome"),
        other => panic!("expected RUN_FINISHED, got {other:?}"),
    }
}

fn customs(events: &[Event]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Custom(c) => Some((c.name.clone(), c.value.clone())),
            _ => None,
        })
        .collect()
}

fn tool_call_types(events: &[Event]) -> Vec<T> {
    types(events)
        .into_iter()
        .filter(|t| matches!(t, T::ToolCallStart | T::ToolCallArgs | T::ToolCallEnd))
        .collect()
}

/// The one call of `events`: id, name, parent message id, arguments text.
fn the_call(events: &[Event]) -> (String, String, Option<String>, String) {
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStart(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 1, "{:?}", types(events));
    let start = &starts[0];
    let args: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallArgs(a) if a.tool_call_id == start.tool_call_id => {
                Some(a.delta.as_str())
            }
            _ => None,
        })
        .collect();
    (
        start.tool_call_id.clone(),
        start.tool_call_name.clone(),
        start.parent_message_id.clone(),
        args,
    )
}

#[tokio::test]
async fn an_offered_tool_call_streams_is_pending_and_its_result_flows_into_the_next_prompt() {
    let arguments = r#"{"city": "Paris"}"#;
    let scripts = [
        thinks_then_calls(
            "The user wants the weather; call the tool.",
            &tool_call("get_weather", arguments),
        ),
        qwen3_turn("The tool says it is sunny.", "It is sunny in Paris, 18 °C."),
    ];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let tools = json!([weather_tool()]);
    let events = post_run(
        &server,
        &input_with_tools("t-tool", "r1", "Weather in Paris?", tools.clone()),
    )
    .await;

    // The tool definition reached the prompt, through the template.
    let first_prompt = server
        .agent
        .model()
        .unwrap()
        .decode(&observed.prompts.lock().unwrap()[0])
        .unwrap();
    assert!(first_prompt.contains("<tools>"), "{first_prompt}");
    assert!(
        first_prompt.contains(r#""name": "get_weather""#)
            && first_prompt.contains("Current weather for a city.")
            && first_prompt.contains(r#""required": ["city"]"#),
        "{first_prompt}"
    );

    // START (with the assistant message as parent), ARGS, END; no text.
    let (id, name, parent, args) = the_call(&events);
    assert_eq!(name, "get_weather");
    assert_eq!(args, arguments, "the deltas concatenate to the arguments");
    assert!(parent.is_some_and(|p| !p.is_empty()));
    let calls = tool_call_types(&events);
    assert_eq!(calls.first(), Some(&T::ToolCallStart));
    assert_eq!(calls.last(), Some(&T::ToolCallEnd));
    assert!(calls.contains(&T::ToolCallArgs));
    assert!(
        !types(&events).contains(&T::TextMessageStart),
        "no answer text"
    );
    assert!(customs(&events).is_empty(), "{:?}", customs(&events));
    assert_eq!(
        finished_outcome(&events),
        Outcome::Success {
            pending_tool_call_ids: Some(vec![id.clone()])
        }
    );

    // The frontend runs the tool and sends the conversation back, with the
    // reasoning message and its sealed value, as the official client does.
    let (reasoning_id, sealed) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningEncryptedValue(v) => {
                Some((v.entity_id.clone(), v.encrypted_value.clone()))
            }
            _ => None,
        })
        .unwrap();
    let mut next = input_with_tools("t-tool", "r2", "Weather in Paris?", tools);
    next["messages"] = json!([
        {"id": "r1-user", "role": "user", "content": "Weather in Paris?"},
        {"id": reasoning_id, "role": "reasoning", "content": "The user wants the weather; call the tool.", "encryptedValue": sealed},
        {"id": "assistant-1", "role": "assistant", "toolCalls": [
            {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
        ]},
        {"id": "tool-1", "role": "tool", "toolCallId": id, "content": "18 °C, sunny"},
    ]);
    let second = post_run(&server, &next).await;
    assert_eq!(answer_text(&second), "It is sunny in Paris, 18 °C.");
    assert_eq!(
        finished_outcome(&second),
        Outcome::Success {
            pending_tool_call_ids: None
        }
    );
    let second_prompt = server
        .agent
        .model()
        .unwrap()
        .decode(&observed.prompts.lock().unwrap()[1])
        .unwrap();
    // The call, its reasoning (replayed from the sealed value: Qwen3 keeps
    // reasoning after the last user turn) and its result, in order.
    let expected_tail = format!(
        "<|im_start|>assistant\n<think>\nThe user wants the weather; call the tool.\n</think>\n\n\
         <tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call><|im_end|>\n\
         <|im_start|>user\n<tool_response>\n18 °C, sunny\n</tool_response><|im_end|>\n\
         <|im_start|>assistant\n"
    );
    assert!(
        second_prompt.ends_with(&expected_tail),
        "{second_prompt:?}\nshould end with\n{expected_tail:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_call_to_a_tool_that_was_not_offered_is_rejected_not_streamed() {
    let script = thinks_then_calls(
        "Maybe a clock tool exists.",
        &tool_call("get_time", r#"{"zone": "UTC"}"#),
    );
    let (server, _) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input_with_tools("t-rej", "r1", "Time?", json!([weather_tool()])),
    )
    .await;
    assert!(tool_call_types(&events).is_empty(), "{:?}", types(&events));
    let customs = customs(&events);
    assert_eq!(customs.len(), 1, "{customs:?}");
    assert_eq!(customs[0].0, "thinkwire.tool_call_rejected");
    assert_eq!(customs[0].1["toolCallName"], "get_time");
    assert!(
        customs[0].1["toolCallId"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert!(
        !serde_json::to_string(&customs[0].1)
            .unwrap()
            .contains("UTC")
    );
    assert_eq!(
        finished_outcome(&events),
        Outcome::Success {
            pending_tool_call_ids: None
        }
    );
    // With no tools offered at all, the same holds.
    server.shutdown().await;
    let script = format!("{}{END}", tool_call("get_weather", r#"{"city": "Oslo"}"#));
    let (server, _) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input(
            "t-rej2",
            "r1",
            "Weather?",
            json!({"reasoning": {"visibility": "off"}}),
        ),
    )
    .await;
    assert!(tool_call_types(&events).is_empty());
    assert_eq!(customs_names(&events), ["thinkwire.tool_call_rejected"]);
    server.shutdown().await;
}

fn customs_names(events: &[Event]) -> Vec<String> {
    customs(events).into_iter().map(|(name, _)| name).collect()
}

#[tokio::test]
async fn malformed_arguments_end_the_call_and_flag_it_invalid_not_pending() {
    // Unquoted string: the call object balances, but is not JSON.
    let arguments = r#"{"city": Paris}"#;
    let script = thinks_then_calls("Call it.", &tool_call("get_weather", arguments));
    let (server, _) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input_with_tools("t-bad", "r1", "Weather?", json!([weather_tool()])),
    )
    .await;
    let (id, name, _, args) = the_call(&events);
    assert_eq!(name, "get_weather");
    assert_eq!(args, arguments, "the client saw what the model wrote");
    let end_at = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::ToolCallEnd(end) if end.tool_call_id == id))
        .expect("the call ends");
    let customs = customs(&events);
    assert_eq!(customs.len(), 1, "{customs:?}");
    assert_eq!(customs[0].0, "thinkwire.tool_call_invalid");
    assert_eq!(customs[0].1["toolCallId"], id.as_str());
    assert!(
        customs[0].1["problem"]
            .as_str()
            .is_some_and(|p| p.contains("JSON"))
    );
    let custom_at = events
        .iter()
        .position(|e| e.event_type() == T::Custom)
        .unwrap();
    assert!(custom_at > end_at, "the notice follows TOOL_CALL_END");
    assert_eq!(
        finished_outcome(&events),
        Outcome::Success {
            pending_tool_call_ids: None
        },
        "an invalid call is not pending"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_valid_call_next_to_an_invalid_one_is_the_only_pending_one() {
    let script = thinks_then_calls(
        "Two cities.",
        &format!(
            "{}\n{}",
            tool_call("get_weather", r#"{"city": "Rome"}"#),
            tool_call("get_weather", r#"["Oslo"]"#)
        ),
    );
    let (server, _) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input_with_tools("t-two", "r1", "Rome and Oslo?", json!([weather_tool()])),
    )
    .await;
    let starts: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStart(s) => Some(s.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 2);
    assert_ne!(starts[0], starts[1], "call ids are unique");
    assert_eq!(customs_names(&events), ["thinkwire.tool_call_invalid"]);
    assert_eq!(
        finished_outcome(&events),
        Outcome::Success {
            pending_tool_call_ids: Some(vec![starts[0].clone()])
        }
    );
    server.shutdown().await;
}

#[tokio::test]
async fn tool_call_syntax_inside_reasoning_is_not_executed() {
    let thought = format!(
        "I could write {} but the answer is known.",
        tool_call("get_weather", r#"{"city": "Paris"}"#)
    );
    let script = qwen3_turn(&thought, "It is usually mild.");
    let (server, _) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input_with_tools("t-in", "r1", "Weather?", json!([weather_tool()])),
    )
    .await;
    assert!(tool_call_types(&events).is_empty(), "{:?}", types(&events));
    assert!(customs(&events).is_empty());
    assert_eq!(reasoning_text(&events), thought, "it stays reasoning text");
    assert_eq!(answer_text(&events), "It is usually mild.");
    assert_eq!(
        finished_outcome(&events),
        Outcome::Success {
            pending_tool_call_ids: None
        }
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_sealed_reasoning_of_a_tool_turn_is_bound_to_its_thread() {
    // A tool loop replays the first turn's reasoning; moved to another
    // thread it must not open (the default replay policy refuses the run).
    let script = thinks_then_calls(
        "Plan: call it.",
        &tool_call("get_weather", r#"{"city": "Lyon"}"#),
    );
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let events = post_run(
        &server,
        &input_with_tools("t-a", "r1", "Lyon?", json!([weather_tool()])),
    )
    .await;
    let (id, _, _, args) = the_call(&events);
    let sealed = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningEncryptedValue(v) => Some(v.clone()),
            _ => None,
        })
        .unwrap();
    let mut moved = input_with_tools("t-b", "r2", "Lyon?", json!([weather_tool()]));
    moved["messages"] = json!([
        {"id": "u", "role": "user", "content": "Lyon?"},
        {"id": sealed.entity_id, "role": "reasoning", "content": "", "encryptedValue": sealed.encrypted_value},
        {"id": "a", "role": "assistant", "toolCalls": [
            {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": args}}
        ]},
        {"id": "t", "role": "tool", "toolCallId": id, "content": "rain"},
    ]);
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .json(&moved)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SEALED_REASONING_REJECTED");
    assert_eq!(body["error"]["path"], "messages[1].encryptedValue");
    assert_eq!(observed.prompts.lock().unwrap().len(), 1);
    // A key ring that is not the server's cannot open it either.
    let stranger = KeyRing::new(thinkwire_seal::Key::generate().unwrap());
    assert!(
        stranger
            .open(
                &sealed.encrypted_value,
                Binding::new("t-a", &sealed.entity_id),
                thinkwire_seal::now_unix_ms()
            )
            .is_err()
    );
    server.shutdown().await;
}

// ---------------------------------------------------------------------------
// The official client

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
