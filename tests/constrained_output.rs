//! Constrained decoding on the real default model (SmolLM2-135M): 20 fixed
//! prompts asking for objects under 5 schemas (strings bounded, as a
//! schema for a 135M model should be: greedy decoding can loop inside a
//! string, and a bound is what closes it). With
//! `forwardedProps.responseFormat` every answer is JSON that validates
//! (checked by a JSON Schema validator, not by the grammar engine); the
//! same prompts without it fail on some, so the constraint is what makes
//! them pass. A bad schema is refused before `RUN_STARTED`, naming its
//! path, and a token limit inside the object is reported.
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::EventType;
use thinkwire_seal::{Key, KeyRing};

use support::{TestServer, answer_text, incomplete_reason, input, post_run, verify};

fn schemas() -> Vec<Value> {
    vec![
        // Nested objects, required fields, integer bounds.
        json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 40},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "address": {"type": "object", "properties": {
                "city": {"type": "string", "maxLength": 40}, "country": {"type": "string", "maxLength": 40}},
                "required": ["city", "country"], "additionalProperties": false}},
            "required": ["name", "age", "address"], "additionalProperties": false}),
        // An array of objects with bounds on both.
        json!({"type": "object", "properties": {
            "items": {"type": "array", "minItems": 1, "maxItems": 5, "items": {
                "type": "object", "properties": {
                    "item": {"type": "string", "maxLength": 40},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 100}},
                "required": ["item", "quantity"], "additionalProperties": false}}},
            "required": ["items"], "additionalProperties": false}),
        // An enum and a bounded number.
        json!({"type": "object", "properties": {
            "sentiment": {"enum": ["positive", "negative", "neutral"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
            "required": ["sentiment", "confidence"], "additionalProperties": false}),
        // Enum, array of strings, boolean, all required.
        json!({"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 40},
            "day": {"enum": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]},
            "attendees": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 6},
            "all_day": {"type": "boolean"}},
            "required": ["title", "day", "attendees", "all_day"], "additionalProperties": false}),
        // An exclusive bound, an optional array, a boolean.
        json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 40},
            "price": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 3},
            "in_stock": {"type": "boolean"}},
            "required": ["name", "price", "in_stock"], "additionalProperties": false}),
    ]
}

/// Four prompts per schema, in the order of [`schemas`].
const PROMPTS: [&str; 20] = [
    "Describe a person named Maria who is 34 and lives in Lisbon, Portugal, as JSON.",
    "Give me a JSON record for a fictional detective: name, age and home address.",
    "Create a JSON profile for my grandfather, who is 81 and lives in Osaka, Japan.",
    "Return JSON describing a famous scientist with name, age and address.",
    "Make a shopping list in JSON for a pancake breakfast.",
    "I need groceries for a week of salads. Answer with a JSON list of items and quantities.",
    "List what to buy for a birthday party as JSON with quantities.",
    "JSON please: the ingredients to buy for tomato soup, with quantities.",
    "Classify the sentiment of this review as JSON: 'The battery died after two days. Terrible.'",
    "What is the sentiment of 'I love this little cafe, the coffee is wonderful!'? Reply in JSON.",
    "Give the sentiment and your confidence for: 'The package arrived on Tuesday.'",
    "Rate the sentiment of 'Not bad, but the screen scratches easily.' as JSON.",
    "Turn this into a JSON calendar event: team standup on Monday with Ana and Raj.",
    "Create a JSON event for a Saturday picnic with my family that lasts all day.",
    "Schedule a dentist appointment on Thursday as a JSON event.",
    "Make a JSON event: book club meeting on Wednesday evening with Tom, Lee and Sara.",
    "Describe a product for an online shop as JSON: a blue ceramic mug.",
    "Return a JSON product listing for noise-cancelling headphones.",
    "I sell handmade candles. Give me one as a JSON product with tags.",
    "JSON product entry for a used mountain bike, please.",
];

async fn server() -> TestServer {
    let model = support::default_model_args()
        .load()
        .expect("loading the default model (run scripts/setup)");
    let keys = KeyRing::new(Key::generate().unwrap());
    let config = AgentConfig {
        max_new_tokens: 160,
        sampling: thinkwire_engine::SamplingParams::greedy(),
        ..AgentConfig::default()
    };
    TestServer::start_shared(
        Arc::new(Agent::new(model, keys, config)),
        ServerConfig::default(),
    )
    .await
}

/// The answers to every prompt, constrained and free: 8 runs in flight at
/// once (the engine's batch), a new one starting as soon as one ends.
/// Each answer's text and the reason it was reported incomplete, if it was.
type Answers = Vec<(String, Option<String>)>;
async fn answers(server: &TestServer) -> (Answers, Answers) {
    let schemas = schemas();
    let bodies: Vec<Value> = [true, false]
        .into_iter()
        .flat_map(|constrained| {
            PROMPTS
                .iter()
                .enumerate()
                .map(move |(n, prompt)| (constrained, n, prompt))
        })
        .map(|(constrained, n, prompt)| {
            let mut forwarded = json!({"reasoning": {"visibility": "off"}});
            if constrained {
                forwarded["responseFormat"] =
                    json!({"type": "json_schema", "name": "answer", "schema": schemas[n / 4]});
            }
            input("t", &format!("r{n}-{constrained}"), prompt, forwarded)
        })
        .collect();
    let mut all: Answers = futures_util::stream::iter(&bodies)
        .map(|body| post_run(server, body))
        .buffered(8)
        .map(|events| (answer_text(&events), incomplete_reason(&events)))
        .collect()
        .await;
    let free = all.split_off(PROMPTS.len());
    (all, free)
}

/// Posts `body` to `/agent`, expecting a refusal before the run: the
/// error object (`code`, `message`, `path`).
async fn refused(server: &TestServer, body: &Value) -> Value {
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    body["error"].clone()
}

fn validates(schema: &Value, text: &str) -> bool {
    serde_json::from_str::<Value>(text.trim()).is_ok_and(|v| jsonschema::is_valid(schema, &v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_constrained_answer_validates_and_free_ones_do_not() {
    let server = server().await;
    let schemas = schemas();
    let (constrained, free) = answers(&server).await;
    for (n, (text, incomplete)) in constrained.iter().enumerate() {
        assert!(
            validates(&schemas[n / 4], text),
            "prompt {n}: the constrained answer does not validate: {text}"
        );
        assert_eq!(incomplete, &None, "prompt {n}: reported incomplete");
    }
    let failing: Vec<usize> = (0..PROMPTS.len())
        .filter(|&n| !validates(&schemas[n / 4], &free[n].0))
        .collect();
    eprintln!(
        "without the constraint {} of {} answers do not validate: {failing:?}",
        failing.len(),
        PROMPTS.len()
    );
    assert!(
        !failing.is_empty(),
        "every free answer validated: the test would pass without the constraint"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_schemas_are_refused_before_the_run_at_their_path() {
    let server = server().await;
    // A schema the grammar cannot satisfy, or not a schema, is refused
    // before the run starts, naming the path inside it.
    let bad = json!({"responseFormat": {"type": "json_schema",
        "schema": {"type": "object", "properties": {"n": {"type": "integr"}}}}});
    let error = refused(&server, &input("t", "bad", "hi", bad)).await;
    assert_eq!(error["code"], "INVALID_RESPONSE_FORMAT", "{error}");
    let path = "forwardedProps.responseFormat.schema/properties/n/type";
    assert_eq!(error["path"], path, "{error}");

    // A chain of references, each definition an array of the next: 300
    // links overflowed the compiling thread and aborted the server. It is
    // refused at the reference where it goes too deep, and the server
    // goes on.
    let mut defs = serde_json::Map::new();
    for i in 0..299 {
        let next = format!("#/$defs/a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"type": "array", "items": {"$ref": next}}),
        );
    }
    defs.insert("a299".into(), json!({"type": "integer"}));
    let chain = json!({"responseFormat": {"type": "json_schema",
        "schema": {"$defs": defs, "$ref": "#/$defs/a0"}}});
    let error = refused(&server, &input("t", "chain", "hi", chain)).await;
    assert_eq!(error["code"], "INVALID_RESPONSE_FORMAT", "{error}");
    let path = error["path"].as_str().unwrap_or_default();
    assert!(
        path.starts_with("forwardedProps.responseFormat.schema/$defs/a")
            && path.ends_with("/items/$ref"),
        "{error}"
    );

    // What the engine refuses is named where it is; a tool no arguments
    // satisfy is refused at its own index, not left out of the calls.
    let unique = json!({"responseFormat": {"type": "json_schema", "schema": {"type": "object",
        "properties": {"tags": {"type": "array", "uniqueItems": true}}}}});
    let error = refused(&server, &input("t", "unique", "hi", unique)).await;
    let path = "forwardedProps.responseFormat.schema/properties/tags/uniqueItems";
    assert_eq!(error["path"], path, "{error}");
    let mut body = input("t", "never", "hi", json!({}));
    body["tools"] = json!([
        {"name": "fine", "description": "", "parameters": {"type": "object"}},
        {"name": "never", "description": "", "parameters": {"type": "object",
            "properties": {"a": false}, "required": ["a"]}},
    ]);
    let error = refused(&server, &body).await;
    assert_eq!(error["code"], "INVALID_TOOL_SCHEMA", "{error}");
    assert!(
        error["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("tools[1].parameters")),
        "{error}"
    );

    // The server is still there.
    let events = post_run(
        &server,
        &input(
            "t",
            "after",
            "hi",
            json!({"reasoning": {"visibility": "off"}}),
        ),
    )
    .await;
    verify(&events);

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_openai_and_anthropic_sdks_get_constrained_answers() {
    let server = server().await;
    let schemas = schemas();
    // The official openai SDK: `response_format` on chat completions and
    // `text.format` on responses constrain the same way; a bad schema is a
    // 400 naming the wire parameter.
    let schema = serde_json::to_string(&schemas[2]).unwrap();
    let said = support::run_sdk(
        "openai_client.py",
        vec![
            server.url("/v1"),
            "--schema".into(),
            schema,
            "--prompt".into(),
            PROMPTS[9].into(),
        ],
    )
    .await;
    for api in ["chat", "responses"] {
        let text = said[api].as_str().unwrap();
        assert!(validates(&schemas[2], text), "{api}: {said}");
    }
    assert_eq!(said["bad"]["status"], 400, "{said}");
    assert_eq!(
        said["bad"]["body"]["param"], "response_format.json_schema.schema/type",
        "{said}"
    );
    // The official anthropic SDK: `output_config.format`, created and
    // streamed; a bad schema is a 400 in Anthropic's shape.
    let said = support::run_sdk(
        "anthropic_client.py",
        vec![
            server.url(""),
            "--schema".into(),
            serde_json::to_string(&schemas[2]).unwrap(),
            "--prompt".into(),
            PROMPTS[9].into(),
        ],
    )
    .await;
    for way in ["created", "streamed"] {
        let text = said[way].as_str().unwrap();
        assert!(validates(&schemas[2], text), "{way}: {said}");
    }
    assert_eq!(said["bad"]["status"], 400, "{said}");
    let message = said["bad"]["body"]["error"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        message.starts_with("output_config.format.schema/type"),
        "{said}"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_required_tool_call_meets_the_tools_schema_over_the_official_client() {
    let server = server().await;
    // A frontend tool with a schema, over the official @ag-ui/client: the
    // run requires a call (`toolChoice`), and the call's arguments meet the
    // tool's schema. Without the requirement this model answers in prose.
    let weather = json!({"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 30},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "unit"], "additionalProperties": false});
    let tools = json!([{"name": "get_weather", "description": "Weather forecast for a city",
        "parameters": weather}])
    .to_string();
    let url = server.url("/agent");
    for (choice, calls) in [(json!("required"), true), (json!("auto"), false)] {
        let forwarded =
            json!({"reasoning": {"visibility": "off"}, "toolChoice": choice}).to_string();
        let (url, tools) = (url.clone(), tools.clone());
        let out = tokio::task::spawn_blocking(move || {
            support::run_official_client(
                &url,
                &[
                    "--prompt",
                    "What will the weather be in Paris this week?",
                    "--tools",
                    &tools,
                    "--forwarded",
                    &forwarded,
                ],
            )
        })
        .await
        .unwrap();
        let messages = out["messages"].as_array().unwrap();
        let made: Vec<&Value> = messages
            .iter()
            .filter_map(|m| m["toolCalls"].as_array())
            .flatten()
            .collect();
        assert_eq!(!made.is_empty(), calls, "toolChoice {choice}: {out}");
        for call in made {
            assert_eq!(call["function"]["name"], "get_weather", "{out}");
            let args = call["function"]["arguments"].as_str().unwrap();
            assert!(validates(&weather, args), "arguments {args}");
        }
    }

    // A tool whose parameters are not a schema is refused before the run
    // starts, at the path inside them (the tools' schemas constrain the
    // calls' arguments).
    let mut body = input("t", "tool", "hi", json!({}));
    body["tools"] = json!([{"name": "get_weather", "description": "",
        "parameters": {"type": "object", "properties": {"city": {"type": 7}}}}]);
    let error = refused(&server, &body).await;
    assert_eq!(error["code"], "INVALID_TOOL_SCHEMA", "{error}");
    assert_eq!(
        error["path"], "tools[0].parameters/properties/city/type",
        "{error}"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn structured_reasoning_streams_reasoning_then_answer_and_replays() {
    let server = server().await;
    // The structured reasoning strategy: one pass under a {reasoning,
    // answer} schema, whose strings stream as reasoning and answer events;
    // the reasoning is sealed like any other, and the next turn replays it.
    let structured = json!({"reasoning": {"visibility": "full", "strategy": "structured"}});
    let body = input(
        "s",
        "s1",
        "Write a two-line poem about the sea.",
        structured.clone(),
    );
    let events = post_run(&server, &body).await;
    let reasoning = support::reasoning_text(&events);
    let answer = answer_text(&events);
    assert!(
        !reasoning.trim().is_empty() && !answer.trim().is_empty(),
        "{reasoning:?} / {answer:?}"
    );
    assert!(
        !answer.contains("\"answer\"") && !reasoning.contains('{'),
        "{reasoning:?} / {answer:?}"
    );
    let kinds = support::types(&events);
    let end = kinds
        .iter()
        .position(|k| *k == EventType::ReasoningEnd)
        .unwrap();
    let text = kinds
        .iter()
        .position(|k| *k == EventType::TextMessageStart)
        .unwrap();
    assert!(end < text, "{kinds:?}");
    assert!(
        kinds.contains(&EventType::ReasoningEncryptedValue),
        "{kinds:?}"
    );
    let mut messages = body["messages"].as_array().unwrap().clone();
    support::apply_events(&mut messages, &events);
    messages.push(json!({"id": "u2", "role": "user", "content": "Another one, please."}));
    let mut next = input("s", "s2", "", structured);
    next["messages"] = Value::Array(messages);
    let events = post_run(&server, &next).await;
    assert!(!answer_text(&events).trim().is_empty());
    // With tools it cannot answer in a JSON string: refused, not ignored.
    let mut body = input(
        "s",
        "s3",
        "hi",
        json!({"reasoning": {"strategy": "structured"}}),
    );
    body["tools"] = json!([{"name": "t", "description": ""}]);
    let error = refused(&server, &body).await;
    assert_eq!(error["code"], "INVALID_REASONING_CONTROL", "{error}");
    assert_eq!(
        error["path"], "forwardedProps.reasoning.strategy",
        "{error}"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_answer_cut_off_inside_its_object_is_reported() {
    let server = server().await;
    let schemas = schemas();
    // Cut off inside the object: the client is told.
    let short = json!({"reasoning": {"visibility": "off"}, "sampling": {"maxTokens": 6},
        "responseFormat": {"type": "json_schema", "schema": schemas[0]}});
    let events = post_run(&server, &input("t", "short", PROMPTS[0], short)).await;
    assert_eq!(
        incomplete_reason(&events).as_deref(),
        Some("length"),
        "{events:?}"
    );
    server.shutdown().await;
}
