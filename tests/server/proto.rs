//! The protobuf binding of `POST /agent`: `Accept` chooses it (q-values
//! honoured, 406 when neither binding is acceptable), its frames decode to
//! the events the JSON stream carries for the same run, and the official
//! `@ag-ui/client` reads it through two turns with reasoning, a tool call
//! and the sealed reasoning replayed (on the scripted engine, and with the
//! `mlx` feature on the default model).

use std::path::Path;

use serde_json::{Value, json};
use thinkwire_protocol::{Event, PROTO_MEDIA_TYPE, ProtoDecoder};

use crate::support::*;

const END: &str = "<|im_end|>";

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    })
}

/// Reasons, says a few words, then calls the weather tool.
fn thinks_then_calls() -> String {
    format!(
        "<think>\nThey want the weather; the tool knows it.\n</think>\n\nLet me check.\
         <tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris\"}}}}\n</tool_call>{END}"
    )
}

/// `POST /agent` with `accept` (none when `None`).
async fn post(server: &TestServer, body: &Value, accept: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .json(body);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    request.send().await.unwrap()
}

/// The events of a protobuf response, checked against AG-UI's rules.
async fn proto_events(response: reqwest::Response) -> Vec<Event> {
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], PROTO_MEDIA_TYPE);
    let bytes = response.bytes().await.unwrap();
    let mut decoder = ProtoDecoder::new();
    let events: Vec<Event> = decoder
        .push(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("every frame decodes");
    decoder
        .finish()
        .expect("the stream ends on a frame boundary");
    verify(&events);
    events
}

/// The events of an SSE response.
async fn sse_events(response: reqwest::Response) -> Vec<Event> {
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let bytes = response.bytes().await.unwrap();
    let events: Vec<Event> = thinkwire_protocol::SseDecoder::new()
        .push_events(&bytes)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("every frame decodes");
    verify(&events);
    events
}

/// `value` with every id (a key `id` or ending in `Id`/`Ids`) numbered by
/// first appearance and sealed values blanked: what differs between two
/// runs of one script (ids are random, seals carry a random nonce).
fn canonical(value: &Value) -> Value {
    fn number(id: &mut Value, ids: &mut Vec<String>) {
        if let Value::String(s) = id {
            let n = ids.iter().position(|x| x == s).unwrap_or_else(|| {
                ids.push(s.clone());
                ids.len() - 1
            });
            *s = format!("<id {n}>");
        }
    }
    fn walk(value: &mut Value, ids: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    if key == "encryptedValue" {
                        *child = json!("<sealed>");
                    } else if key == "id" || key.ends_with("Id") {
                        number(child, ids);
                    } else if key.ends_with("Ids") {
                        for id in child.as_array_mut().into_iter().flatten() {
                            number(id, ids);
                        }
                    } else {
                        walk(child, ids);
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

fn as_json(events: &[Event]) -> Value {
    Value::Array(events.iter().map(Event::to_value).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protobuf_answer_carries_the_same_events_as_the_json_one() {
    let scripts = [thinks_then_calls(), thinks_then_calls()];
    let (server, _) = TestServer::qwen3(&scripts).await;
    let mut body = input(
        "t-proto",
        "r-1",
        "Weather in Paris?",
        json!({"reasoning": {"visibility": "full"}}),
    );
    body["tools"] = json!([weather_tool()]);

    let json_run = sse_events(post(&server, &body, Some("text/event-stream")).await).await;
    let response = post(&server, &body, Some(PROTO_MEDIA_TYPE)).await;
    assert_eq!(response.headers()["vary"], "accept");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let proto_run = proto_events(response).await;

    // Every kind of event this run makes, reasoning and tool call included.
    let kinds = types(&proto_run);
    for kind in [
        thinkwire_protocol::EventType::ReasoningMessageContent,
        thinkwire_protocol::EventType::ReasoningEncryptedValue,
        thinkwire_protocol::EventType::TextMessageContent,
        thinkwire_protocol::EventType::ToolCallArgs,
        thinkwire_protocol::EventType::RunFinished,
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    assert_eq!(
        canonical(&as_json(&proto_run)),
        canonical(&as_json(&json_run))
    );
    assert_eq!(
        reasoning_text(&proto_run),
        "They want the weather; the tool knows it."
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_neither_binding_serves_is_refused_with_406() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn("r", "a")]).await;
    let body = input("t", "r", "Hi", json!({}));
    for accept in [
        "application/json",
        "text/html, application/xml;q=0.9",
        "text/event-stream;q=0, application/vnd.ag-ui.event+proto;q=0",
        "*/*;q=0",
        // A wildcard stands for the default only: protobuf must be named.
        "application/*",
    ] {
        let response = post(&server, &body, Some(accept)).await;
        assert_eq!(response.status(), 406, "{accept}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "NOT_ACCEPTABLE", "{accept}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("text/event-stream") && message.contains(PROTO_MEDIA_TYPE),
            "{message}"
        );
    }
    // Nothing reached the model.
    assert!(observed.prompts.lock().unwrap().is_empty());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q_values_choose_the_binding() {
    let cases = [
        (None, "text/event-stream"),
        (Some("*/*"), "text/event-stream"),
        (Some("text/event-stream"), "text/event-stream"),
        (Some(PROTO_MEDIA_TYPE), PROTO_MEDIA_TYPE),
        (
            Some("application/vnd.ag-ui.event+proto;q=0.5, text/event-stream"),
            "text/event-stream",
        ),
        (
            Some("text/event-stream;q=0.5, application/vnd.ag-ui.event+proto"),
            PROTO_MEDIA_TYPE,
        ),
        (
            Some("application/vnd.ag-ui.event+proto, text/event-stream"),
            PROTO_MEDIA_TYPE,
        ),
        (
            Some("text/event-stream, application/vnd.ag-ui.event+proto"),
            "text/event-stream",
        ),
        (
            Some("*/*;q=0.8, application/vnd.ag-ui.event+proto;q=0.8"),
            PROTO_MEDIA_TYPE,
        ),
        (
            Some("application/vnd.ag-ui.event+proto;q=0, */*"),
            "text/event-stream",
        ),
    ];
    let scripts: Vec<String> = cases.iter().map(|_| qwen3_turn("r", "Hello.")).collect();
    let (server, _) = TestServer::qwen3(&scripts).await;
    for (i, (accept, want)) in cases.into_iter().enumerate() {
        let body = input("t-q", &format!("r-{i}"), "Hi", json!({}));
        let response = post(&server, &body, accept).await;
        assert_eq!(response.headers()["content-type"], want, "{accept:?}");
        let events = if want == PROTO_MEDIA_TYPE {
            proto_events(response).await
        } else {
            sse_events(response).await
        };
        assert_eq!(answer_text(&events), "Hello.", "{accept:?}");
    }
    server.shutdown().await;
}

/// Runs `tests/node/agui-proto-client.mjs` (the official `HttpAgent`, over
/// `transport`) against `url`; its JSON summary.
fn run_proto_client(url: &str, transport: &str, args: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("tests/node/node_modules/@ag-ui/proto").is_dir(),
        "@ag-ui/proto is not installed in tests/node — run scripts/setup"
    );
    let output = std::process::Command::new("node")
        .arg(root.join("tests/node/agui-proto-client.mjs"))
        .arg(url)
        .args(["--transport", transport])
        .args(args)
        .output()
        .expect("running node");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the official client failed over {transport}:\n{stderr}"
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bad client output ({e}): {stderr}"))
}

/// The two-turn conversation both client tests hold: a question with a
/// tool offered, the model reasons and calls it; the tool's result, the
/// model reasons and answers. Turn two sends turn one's sealed reasoning.
fn two_turns(forwarded: &[Value]) -> Vec<String> {
    let mut args = vec![
        "--turns".to_owned(),
        "2".to_owned(),
        "--prompt".to_owned(),
        "What is the weather in Paris?".to_owned(),
        "--tools".to_owned(),
        json!([weather_tool()]).to_string(),
        "--tool-result".to_owned(),
        "18 °C and sunny".to_owned(),
    ];
    for f in forwarded {
        args.extend(["--forwarded".to_owned(), f.to_string()]);
    }
    args
}

/// Checks one client summary: each response in the binding asked for, the
/// conversation's shape, and the sealed value sent back on turn two.
fn check_conversation(summary: &Value, content_type: &str) {
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["contentType"], content_type, "{run:#}");
    }
    let messages = summary["messages"].as_array().unwrap();
    assert_eq!(
        crate::support::roles(messages),
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
    assert_eq!(
        messages[2]["toolCalls"][0]["function"]["name"],
        "get_weather"
    );
    let sealed = messages[1]["encryptedValue"].as_str().unwrap();
    assert!(sealed.len() > 40, "{sealed}");
    // Turn two sent turn one's reasoning back, sealed value and all.
    let sent = runs[1]["input"]["messages"].as_array().unwrap();
    assert!(
        sent.iter()
            .any(|m| m["role"] == "reasoning" && m["encryptedValue"] == sealed),
        "{sent:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_reads_protobuf_through_two_turns_with_a_tool_call() {
    let scripts = [
        thinks_then_calls(),
        qwen3_turn(
            "The tool says it is mild.",
            "It is 18 °C and sunny in Paris.",
        ),
    ];
    let forwarded = [json!({"reasoning": {"visibility": "full"}})];
    let mut summaries = Vec::new();
    for transport in ["proto", "sse"] {
        let (server, observed) = TestServer::qwen3(&scripts).await;
        let url = server.url("/agent");
        let args = two_turns(&forwarded);
        let summary = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_proto_client(&url, transport, &args)
        })
        .await
        .unwrap();
        // Turn two's prompt holds the tool's result: the loop went round.
        let prompts = observed.prompts.lock().unwrap().clone();
        assert_eq!(prompts.len(), 2);
        let second = server.agent.model().unwrap().decode(&prompts[1]).unwrap();
        assert!(second.contains("18 °C and sunny"), "{second}");
        server.shutdown().await;
        summaries.push(summary);
    }
    let (proto, sse) = (&summaries[0], &summaries[1]);
    check_conversation(proto, PROTO_MEDIA_TYPE);
    check_conversation(sse, "text/event-stream");
    assert_eq!(proto["runs"][0]["accept"], PROTO_MEDIA_TYPE);
    assert_eq!(proto["messages"][4]["content"], "The tool says it is mild.");
    // What the client decoded from protobuf is what it decoded from JSON.
    for run in 0..2 {
        assert_eq!(
            canonical(&proto["runs"][run]["events"]),
            canonical(&sse["runs"][run]["events"]),
            "run {run}"
        );
    }
    assert_eq!(canonical(&proto["messages"]), canonical(&sse["messages"]));
}

/// The same conversation on the real default model (separate-pass
/// reasoning), greedy with a fixed seed, so the two bindings carry the
/// same deltas. Turn one requires the call (a 135M model answers in prose
/// otherwise); turn two lets it answer.
#[cfg(feature = "mlx")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_reads_protobuf_on_the_default_model() {
    use std::sync::Arc;
    use thinkwire::agent::{Agent, AgentConfig, ReasoningPolicy};
    use thinkwire::server::ServerConfig;
    use thinkwire_seal::{Key, KeyRing};

    let model = default_model_args()
        .load()
        .expect("loading the default model (run scripts/setup)");
    // 40 reasoning tokens and room after them for the whole tool call.
    let config = AgentConfig {
        max_new_tokens: 80,
        policy: ReasoningPolicy {
            max_reasoning_tokens: 40,
            ..ReasoningPolicy::default()
        },
        sampling: thinkwire_engine::SamplingParams::greedy(),
        ..AgentConfig::default()
    };
    let agent = Arc::new(Agent::new(
        model,
        KeyRing::new(Key::generate().unwrap()),
        config,
    ));
    let server = TestServer::start_shared(agent, ServerConfig::default()).await;
    let sampling = json!({"temperature": 0, "seed": 7});
    let forwarded = [
        json!({"reasoning": {"visibility": "full"}, "sampling": sampling,
               "toolChoice": {"name": "get_weather"}}),
        json!({"reasoning": {"visibility": "full"}, "sampling": sampling}),
    ];
    let mut summaries = Vec::new();
    for transport in ["proto", "sse"] {
        let url = server.url("/agent");
        let args = two_turns(&forwarded);
        summaries.push(
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                run_proto_client(&url, transport, &args)
            })
            .await
            .unwrap(),
        );
    }
    server.shutdown().await;
    let (proto, sse) = (&summaries[0], &summaries[1]);
    check_conversation(proto, PROTO_MEDIA_TYPE);
    check_conversation(sse, "text/event-stream");
    let reasoning = proto["messages"][1]["content"].as_str().unwrap();
    assert!(!reasoning.trim().is_empty(), "{proto:#}");
    for run in 0..2 {
        assert_eq!(
            canonical(&proto["runs"][run]["events"]),
            canonical(&sse["runs"][run]["events"]),
            "run {run}"
        );
    }
}
