//! What every adapter shares, tried on each: the answer's constraint in
//! its API's terms, a stop at the token limit, a stream cut at its
//! length; and the Anthropic parser's own bounds.

use serde_json::json;
use thinkwire_chat::TemplateMessage;
use thinkwire_engine::SamplingParams;
use thinkwire_reasoning::{Chunk, ToolCall, ToolCallProblem};

use super::*;

/// A response format, a required call and at most one call, in each
/// adapter's API's terms (every adapter builds its body from the same
/// request).
#[test]
fn every_adapter_asks_for_the_answers_constraint_in_its_apis_terms() {
    let turns = [TemplateMessage::new("user", "Hi")];
    let sampling = SamplingParams::greedy();
    let tools: Vec<Tool> =
        serde_json::from_value(json!([{"name": "get_weather", "description": "",
            "parameters": {"type": "object"}}]))
        .unwrap();
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let format = AnswerConstraint::Schema {
        name: "person".into(),
        schema: schema.clone(),
        strict: Some(true),
    };
    let named = AnswerConstraint::Call("get_weather".into());
    let request = |answer, one_call, with_tools: bool| UpstreamRequest {
        tools: if with_tools { &tools } else { &[] },
        answer,
        one_call,
        ..UpstreamRequest::plain(&turns, &sampling, 9)
    };
    let chat = request_body("m", &request(Some(&format), false, false));
    assert_eq!(
        chat["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": true}})
    );
    let chat = request_body(
        "m",
        &request(Some(&AnswerConstraint::AnyObject), false, false),
    );
    assert_eq!(chat["response_format"], json!({"type": "json_object"}));
    let chat = request_body("m", &request(Some(&named), true, true));
    assert_eq!(
        chat["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(chat["parallel_tool_calls"], false);
    // Alone, without tools, OpenAI refuses parallel_tool_calls.
    let chat = request_body("m", &request(None, true, false));
    assert!(chat.get("parallel_tool_calls").is_none(), "{chat}");

    let responses = crate::upstream::openai_responses::request_body;
    let body = responses("m", &request(Some(&format), false, false));
    assert_eq!(
        body["text"]["format"],
        json!({"type": "json_schema", "name": "person", "schema": schema, "strict": true})
    );
    let body = responses("m", &request(Some(&AnswerConstraint::AnyCall), true, true));
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["parallel_tool_calls"], false);

    let anthropic = crate::upstream::anthropic::request_body;
    let body = anthropic("m", &request(Some(&format), false, false));
    assert_eq!(
        body["output_config"],
        json!({"format": {"type": "json_schema", "schema": schema}})
    );
    assert!(body.get("tool_choice").is_none(), "{body}");
    let body = anthropic("m", &request(Some(&named), true, true));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true})
    );
    let body = anthropic("m", &request(None, true, true));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

/// A tool that failed goes to Anthropic as a `tool_result` with
/// `is_error: true`, its error in the text as every wire has it; a tool
/// that did not fail carries no flag.
#[test]
fn a_failed_tool_is_an_anthropic_error_result() {
    let mut failed = TemplateMessage::tool("c1", "no such city");
    failed.is_error = true;
    let turns = [
        TemplateMessage::new("user", "Weather?"),
        TemplateMessage::assistant(""),
        failed,
        TemplateMessage::tool("c2", "19"),
    ];
    let sampling = SamplingParams::greedy();
    let body = crate::upstream::anthropic::request_body(
        "m",
        &UpstreamRequest::plain(&turns, &sampling, 9),
    );
    let results: Vec<_> = (body["messages"].as_array().unwrap().iter())
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{body}");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[0]["content"], "no such city");
    assert!(results[1].get("is_error").is_none(), "{body}");
}

/// Each wire's way of saying its token limit stopped it.
#[test]
fn every_adapter_tells_a_stop_at_the_token_limit() {
    let mut chat = parser();
    chat.push(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}).to_string(),
    )
    .unwrap();
    assert!(chat.cut_off());
    let mut chat = parser();
    chat.push(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
    )
    .unwrap();
    assert!(!chat.cut_off());

    for (reason, cut) in [
        (json!("max_output_tokens"), true),
        (json!("content_filter"), false),
    ] {
        let mut responses = crate::upstream::openai_responses::StreamParser::new();
        let event = json!({"type": "response.incomplete",
            "response": {"incomplete_details": {"reason": reason}, "usage": null}});
        responses.push(&event.to_string()).unwrap();
        assert_eq!(responses.cut_off(), cut, "{reason}");
    }

    for (reason, cut) in [("max_tokens", true), ("end_turn", false)] {
        let mut anthropic = crate::upstream::anthropic::StreamParser::new();
        let event = json!({"type": "message_delta", "delta": {"stop_reason": reason},
            "usage": {"output_tokens": 3}});
        anthropic.push(&event.to_string()).unwrap();
        assert_eq!(anthropic.cut_off(), cut, "{reason}");
    }
}

/// A stream the front cuts off past what its request's limits allow ends
/// on every wire as one stopped at its token limit: what is open closes,
/// a call whose arguments were still coming truncated.
#[test]
fn every_adapter_ends_a_stream_cut_at_its_length() {
    let truncated = |chunks: &[Chunk]| {
        matches!(
            chunks.last(),
            Some(Chunk::ToolCallEnd(ToolCall {
                problem: Some(ToolCallProblem::Truncated),
                ..
            }))
        )
    };
    let mut chat = parser();
    chat.push(&delta(
        json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\":"}}]}),
    ))
    .unwrap();
    let end = chunks_of(chat.cut_at_length());
    assert!(chat.cut_off() && truncated(&end), "{end:?}");

    let mut responses = crate::upstream::openai_responses::StreamParser::new();
    for event in [
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "function_call", "call_id": "c", "name": "f"}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
            "delta": "{\"a\":"}),
    ] {
        responses.push(&event.to_string()).unwrap();
    }
    let end = chunks_of(responses.cut_at_length());
    assert!(responses.cut_off() && truncated(&end), "{end:?}");

    let mut anthropic = crate::upstream::anthropic::StreamParser::new();
    for event in [
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "c", "name": "f"}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
    ] {
        anthropic.push(&event.to_string()).unwrap();
    }
    let end = chunks_of(anthropic.cut_at_length());
    assert!(anthropic.cut_off() && truncated(&end), "{end:?}");

    let mut raw = crate::upstream::completions::CompletionParser::new(None);
    assert!(raw.cut_at_length().is_empty());
    assert!(raw.cut_off());
}

/// Token counts are the upstream's to choose: sums of them saturate.
#[test]
fn anthropic_prompt_counts_saturate() {
    let mut anthropic = crate::upstream::anthropic::StreamParser::new();
    let start = json!({"type": "message_start", "message": {"usage": {
        "input_tokens": u64::MAX, "cache_read_input_tokens": 5,
        "cache_creation_input_tokens": u64::MAX}}});
    anthropic.push(&start.to_string()).unwrap();
    assert_eq!(anthropic.usage().input, u64::MAX);
    assert_eq!(anthropic.usage().cached, 5);
}

/// A block opened again at an index already open would leave the first
/// one (a tool call's start) with no end: the upstream's protocol error.
#[test]
fn anthropic_refuses_a_block_opened_twice_at_one_index() {
    let mut anthropic = crate::upstream::anthropic::StreamParser::new();
    let start = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "c", "name": "f"}});
    anthropic.push(&start.to_string()).unwrap();
    let err = anthropic.push(&start.to_string()).unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL", "{err}");
}
