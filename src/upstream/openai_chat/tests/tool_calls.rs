//! The chat stream's tool-call deltas: streamed, told apart, cut off.

use super::*;

#[test]
fn tool_call_deltas_stream_and_end_with_the_stream() {
    let mut p = parser();
    let mut chunks = run(
        &mut p,
        &[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                "function": {"name": "get_weather", "arguments": ""}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Rome\"}"}}]})),
        ],
    );
    chunks.extend(chunks_of(p.push("[DONE]").unwrap()));
    assert_eq!(
        chunks[0],
        Chunk::ToolCallStart {
            id: "c1".into(),
            name: "get_weather".into()
        }
    );
    let Some(Chunk::ToolCallEnd(call)) = chunks.last() else {
        panic!("no end: {chunks:?}");
    };
    assert_eq!(call.arguments, "{\"city\":\"Rome\"}");
    assert_eq!(call.problem, None);
}

/// Servers that give every call index 0, or no index at all (Gemini's
/// OpenAI-compatible endpoint has done both), still make one call per id.
#[test]
fn parallel_calls_are_told_apart_by_id_without_distinct_indices() {
    let weather = |id: &str| {
        json!({"id": id, "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}})
    };
    let time = |id: &str| {
        json!({"id": id, "type": "function",
            "function": {"name": "get_time", "arguments": "{}"}})
    };
    let with_index = |mut call: Value| {
        call["index"] = json!(0);
        call
    };
    for (first, second) in [
        (weather("a"), time("b")),
        (with_index(weather("a")), with_index(time("b"))),
    ] {
        let mut p = parser();
        let mut chunks = run(
            &mut p,
            &[
                delta(json!({"tool_calls": [first]})),
                delta(json!({"tool_calls": [second]})),
            ],
        );
        chunks.extend(chunks_of(p.push("[DONE]").unwrap()));
        let ended: Vec<(String, String, String)> = chunks
            .iter()
            .filter_map(|c| match c {
                Chunk::ToolCallEnd(call) => {
                    Some((call.id.clone(), call.name.clone(), call.arguments.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            ended,
            [
                (
                    "a".into(),
                    "get_weather".into(),
                    "{\"city\":\"Rome\"}".into()
                ),
                ("b".into(), "get_time".into(), "{}".into()),
            ],
            "{chunks:?}"
        );
    }
    // An index-less delta without an id goes on with the latest call.
    let mut p = parser();
    let mut chunks = run(
        &mut p,
        &[
            delta(
                json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{\"x\":"}}]}),
            ),
            delta(json!({"tool_calls": [{"function": {"arguments": "1}"}}]})),
        ],
    );
    chunks.extend(chunks_of(p.push("[DONE]").unwrap()));
    let Some(Chunk::ToolCallEnd(call)) = chunks.last() else {
        panic!("no end: {chunks:?}");
    };
    assert_eq!(
        (call.id.as_str(), call.arguments.as_str()),
        ("a", "{\"x\":1}")
    );
}

#[test]
fn cut_off_arguments_are_truncated_and_errors_name_no_text() {
    let mut p = parser();
    run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{\"a\": \"secr"}}]}),
        )],
    );
    p.push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}).to_string())
        .unwrap();
    let end = chunks_of(p.finish());
    assert!(matches!(
        end.last(),
        Some(Chunk::ToolCallEnd(ToolCall {
            problem: Some(ToolCallProblem::Truncated),
            ..
        }))
    ));
    let err = parser()
        .push(r#"{"error": {"message": "secret prompt text", "type": "invalid_request_error", "code": 400}}"#)
        .unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_ERROR");
    assert!(!err.to_string().contains("secret"), "{err}");
    assert!(err.to_string().contains("invalid_request_error"), "{err}");
    let err = parser().push("{not json").unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
}
