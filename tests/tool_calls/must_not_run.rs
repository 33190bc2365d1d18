//! Calls that must not run: a tool that was not offered, malformed
//! arguments (next to a valid call or alone), and call syntax the model
//! writes inside its reasoning.

use super::*;

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
