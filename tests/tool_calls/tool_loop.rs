//! The tool loop: an offered call streams as `TOOL_CALL_*` events, is
//! pending, and its result and replayed reasoning flow into the next
//! prompt; the sealed reasoning of that turn opens only in its own thread.

use thinkwire_seal::{Binding, KeyRing};

use super::*;

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

/// `parallelToolCalls: false`: the answer ends when its first call does,
/// so a model that would call twice makes one call, and the engine stops
/// there; a required call stopped there is whole (no
/// `thinkwire.output_incomplete`). By default both calls are pending.
#[tokio::test]
async fn one_call_at_most_stops_the_answer_at_its_first_call() {
    let script = || {
        thinks_then_calls(
            "Two cities.",
            &format!(
                "{}\n{}",
                tool_call("get_weather", r#"{"city": "Rome"}"#),
                tool_call("get_weather", r#"{"city": "Oslo"}"#)
            ),
        )
    };
    let (server, observed) = TestServer::qwen3(&[script(), script(), script()]).await;
    let run = |id: &str, forwarded: Value| {
        let mut body = input("t-one", id, "Rome and Oslo?", forwarded);
        body["tools"] = json!([weather_tool()]);
        body
    };
    let pending = |events: &[Event]| match finished_outcome(events) {
        Outcome::Success {
            pending_tool_call_ids,
        } => pending_tool_call_ids.unwrap_or_default().len(),
        other => panic!("{other:?}"),
    };
    let events = post_run(&server, &run("both", json!({}))).await;
    assert_eq!(pending(&events), 2);
    let cancelled = || observed.cancelled.load(std::sync::atomic::Ordering::SeqCst);
    let before = cancelled();
    for (id, forwarded) in [
        ("one", json!({"parallelToolCalls": false})),
        (
            "required",
            json!({"parallelToolCalls": false, "toolChoice": "required"}),
        ),
    ] {
        let events = post_run(&server, &run(id, forwarded)).await;
        let (_, name, _, args) = the_call(&events);
        assert_eq!(
            (name.as_str(), args.as_str()),
            ("get_weather", r#"{"city": "Rome"}"#)
        );
        assert_eq!(pending(&events), 1, "{id}");
        assert!(
            customs_names(&events).is_empty(),
            "{id}: {:?}",
            customs(&events)
        );
    }
    assert_eq!(
        cancelled() - before,
        2,
        "the engine was stopped at the call"
    );
    server.shutdown().await;
}

/// A required call (`toolChoice: "required"`) may be followed by another,
/// so its grammar is never "stopped" after one; the stop token is not
/// committed to it either. A model that stops after one call has answered
/// whole: no `thinkwire.output_incomplete`.
#[tokio::test]
async fn a_required_call_that_stops_after_one_call_is_whole() {
    let call = tool_call("get_weather", r#"{"city": "Rome"}"#);
    let (server, observed) = TestServer::qwen3(&[thinks_then_calls("One city.", &call)]).await;
    let mut body = input("t-req", "r1", "Rome?", json!({"toolChoice": "required"}));
    body["tools"] = json!([weather_tool()]);
    let events = post_run(&server, &body).await;
    let (_, name, _, args) = the_call(&events);
    assert_eq!(
        (name.as_str(), args.as_str()),
        ("get_weather", r#"{"city": "Rome"}"#)
    );
    assert!(observed.refused.lock().unwrap().is_empty(), "it fits");
    assert!(customs_names(&events).is_empty(), "{:?}", customs(&events));
    server.shutdown().await;
}

/// A response format beside tools the model may call (`toolChoice`
/// auto, as OpenAI's API has it): the answer is the format or calls, so
/// the format does not take the tools away, and a call is not an answer
/// off the format.
#[tokio::test]
async fn a_response_format_beside_tools_lets_the_model_call_or_answer_in_it() {
    let call = tool_call("get_weather", r#"{"city": "Rome"}"#);
    let scripts = [
        thinks_then_calls("Ask the tool first.", &call),
        qwen3_turn("Now answer.", r#"{"summary": "sunny"}"#),
    ];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let format = json!({"responseFormat": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"summary": {"type": "string"}},
        "required": ["summary"], "additionalProperties": false}}});
    let mut body = input("t-fmt", "r1", "Rome?", format.clone());
    body["tools"] = json!([weather_tool()]);
    let events = post_run(&server, &body).await;
    let (_, name, _, args) = the_call(&events);
    assert_eq!(
        (name.as_str(), args.as_str()),
        ("get_weather", r#"{"city": "Rome"}"#)
    );
    assert!(customs_names(&events).is_empty(), "{:?}", customs(&events));

    let mut body = input("t-fmt", "r2", "Rome?", format);
    body["tools"] = json!([weather_tool()]);
    let events = post_run(&server, &body).await;
    assert_eq!(answer_text(&events).trim(), r#"{"summary": "sunny"}"#);
    assert!(customs_names(&events).is_empty(), "{:?}", customs(&events));
    assert!(
        observed.refused.lock().unwrap().is_empty(),
        "the grammar let both through"
    );
    server.shutdown().await;
}
