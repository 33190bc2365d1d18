//! The chat stream's tool-call deltas: streamed, told apart, cut off, and
//! started only once a name sent in fragments is whole.

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

fn start(id: &str, name: &str) -> Chunk {
    Chunk::ToolCallStart {
        id: id.into(),
        name: name.into(),
    }
}

fn args(id: &str, delta: &str) -> Chunk {
    Chunk::ToolCallArgs {
        id: id.into(),
        delta: delta.into(),
    }
}

/// Each call's `(id, name, arguments)` at its end.
fn ended(chunks: &[Chunk]) -> Vec<(String, String, String)> {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCallEnd(call) => {
                Some((call.id.clone(), call.name.clone(), call.arguments.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The wire does not promise a call's name whole in its first delta: a
/// name that goes on in the next deltas is held, and the call starts with
/// the whole name once its arguments begin, its arguments after it.
#[test]
fn a_name_in_fragments_starts_its_call_whole_when_the_arguments_begin() {
    let mut p = parser();
    let held = run(
        &mut p,
        &[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                "function": {"name": "get_", "arguments": ""}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"name": "wea"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"name": "ther"}}]})),
        ],
    );
    assert!(
        held.is_empty(),
        "no start before the name is whole: {held:?}"
    );
    let mut chunks = run(
        &mut p,
        &[
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Rome\"}"}}]})),
        ],
    );
    chunks.extend(chunks_of(p.push("[DONE]").unwrap()));
    assert_eq!(
        chunks[..3],
        [
            start("c1", "get_weather"),
            args("c1", "{\"city\":"),
            args("c1", "\"Rome\"}"),
        ],
        "{chunks:?}"
    );
    assert_eq!(
        ended(&chunks),
        [(
            "c1".into(),
            "get_weather".into(),
            "{\"city\":\"Rome\"}".into()
        )]
    );
    let Some(Chunk::ToolCallEnd(call)) = chunks.last() else {
        panic!("no end: {chunks:?}");
    };
    assert_eq!(call.problem, None);
}

/// The name's last fragment may come with the first arguments, and
/// arguments may come before a delta that continues the name: the start
/// waits for the delta whose arguments follow the name, then sends every
/// argument held.
#[test]
fn a_names_last_fragment_beside_the_arguments_starts_the_call_with_both() {
    let mut p = parser();
    let chunks = run(
        &mut p,
        &[
            delta(json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_"}}]})),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"name": "weather", "arguments": "{\"city\":"}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Rome\"}"}}]})),
        ],
    );
    assert_eq!(
        chunks,
        [
            start("c1", "get_weather"),
            args("c1", "{\"city\":"),
            args("c1", "\"Rome\"}"),
        ]
    );

    // Arguments before any name are held with the call until it has one.
    let mut p = parser();
    let chunks = run(
        &mut p,
        &[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c2", "function": {"arguments": "{"}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"name": "f"}}]})),
        ],
    );
    assert!(chunks.is_empty(), "{chunks:?}");
    let chunks = run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}),
        )],
    );
    assert_eq!(chunks, [start("c2", "f"), args("c2", "{}")]);
}

/// Another call opening ends the names of the calls before it, even those
/// that had no arguments yet; the choice's finish ends the rest, before the
/// stream does.
#[test]
fn another_call_or_the_finish_ends_a_held_name() {
    let mut p = parser();
    let chunks = run(
        &mut p,
        &[
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "get_"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"name": "time"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "get_"}}]})),
        ],
    );
    assert_eq!(chunks, [start("a", "get_time")]);
    let chunks = run(
        &mut p,
        &[
            delta(json!({"tool_calls": [{"index": 1, "function": {"name": "weather"}}]})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
                .to_string(),
        ],
    );
    assert_eq!(chunks, [start("b", "get_weather")], "started at the finish");
    let end = chunks_of(p.push("[DONE]").unwrap());
    assert_eq!(
        ended(&end),
        [
            ("a".into(), "get_time".into(), "{}".into()),
            ("b".into(), "get_weather".into(), "{}".into()),
        ]
    );
    assert!(
        !end.iter().any(|c| matches!(c, Chunk::ToolCallStart { .. })),
        "each call started once: {end:?}"
    );

    // A finish that carries the last delta starts its call after reading it.
    let mut p = parser();
    run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "get_"}}]}),
        )],
    );
    let finish = json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "delta": {"tool_calls": [{"index": 0, "function": {"name": "time"}}]}}]});
    let chunks = chunks_of(p.push(&finish.to_string()).unwrap());
    assert_eq!(chunks, [start("c", "get_time")]);
    // A stream that ends without a finish starts what it holds at its end.
    let mut p = parser();
    run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "id": "d", "function": {"name": "get_time"}}]}),
        )],
    );
    let end = chunks_of(p.push("[DONE]").unwrap());
    assert_eq!(end[0], start("d", "get_time"), "{end:?}");
    assert_eq!(ended(&end), [("d".into(), "get_time".into(), "{}".into())]);
}

/// The common case is what it was: the name whole in the first delta, the
/// start out with the first arguments at the latest, and one call per id.
#[test]
fn a_whole_name_in_the_first_delta_starts_with_the_first_arguments() {
    let mut p = parser();
    let first = run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": ""}}]}),
        )],
    );
    assert!(first.is_empty(), "{first:?}");
    let next = run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        )],
    );
    assert_eq!(next, [start("c1", "get_weather"), args("c1", "{}")]);
    // Name and arguments in one delta: both at once.
    let mut p = parser();
    let chunks = run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "id": "c2", "function": {"name": "f", "arguments": "{}"}}]}),
        )],
    );
    assert_eq!(chunks, [start("c2", "f"), args("c2", "{}")]);
}

/// A name that goes on after its call started would end the call under
/// another name than it started with: the stream is malformed.
#[test]
fn a_name_that_goes_on_after_its_call_started_is_a_protocol_error() {
    let mut p = parser();
    run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_", "arguments": "{"}}]}),
        )],
    );
    let err = p
        .push(&delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "weather"}}]}),
        ))
        .unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
    // An empty name fragment is no fragment.
    let mut p = parser();
    run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{"}}]}),
        )],
    );
    let chunks = run(
        &mut p,
        &[delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "", "arguments": "}"}}]}),
        )],
    );
    assert_eq!(chunks, [args("c1", "}")]);
    let long = "n".repeat(5000);
    let err = parser()
        .push(&delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": long}}]}),
        ))
        .unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
}

/// A stream opens at most `MAX_CALLS` calls; the next is the upstream's
/// protocol error, while deltas that go on with open calls stay fine.
#[test]
fn calls_past_the_cap_are_a_protocol_error() {
    use crate::upstream::MAX_TOOL_CALLS as MAX_CALLS;

    let mut p = parser();
    for i in 0..MAX_CALLS {
        p.push(&delta(
            json!({"tool_calls": [{"index": i, "id": format!("c{i}"),
            "function": {"name": "f", "arguments": "{"}}]}),
        ))
        .unwrap();
    }
    // Going on with a call, by index or by id alone, opens none.
    p.push(&delta(
        json!({"tool_calls": [{"index": 3, "function": {"arguments": "}"}}]}),
    ))
    .unwrap();
    p.push(&delta(
        json!({"tool_calls": [{"id": "c7", "function": {"arguments": "}"}}]}),
    ))
    .unwrap();
    let err = p
        .push(&delta(
            json!({"tool_calls": [{"index": MAX_CALLS, "id": "over", "function": {"name": "f"}}]}),
        ))
        .unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
    assert!(err.to_string().contains("tool calls"), "{err}");
}

/// Index-less calls are found by their id, the latest call of an id when
/// one repeats, however many calls opened after it.
#[test]
fn an_id_finds_its_call_among_many() {
    let mut p = parser();
    let open = |id: &str| {
        delta(json!({"tool_calls": [{"id": id, "function": {"name": "f", "arguments": "{"}}]}))
    };
    let more = |id: &str, text: &str| {
        delta(json!({"tool_calls": [{"id": id, "function": {"arguments": text}}]}))
    };
    let mut payloads: Vec<String> = (0..50).map(|i| open(&format!("c{i}"))).collect();
    payloads.push(more("c3", "}"));
    payloads.push(more("c49", "}"));
    payloads.push(more("c0", "}"));
    let mut chunks = run(&mut p, &payloads);
    chunks.extend(chunks_of(p.push("[DONE]").unwrap()));
    let ends = ended(&chunks);
    assert_eq!(ends.len(), 50);
    for (id, _, arguments) in &ends {
        let whole = ["c0", "c3", "c49"].contains(&id.as_str());
        assert_eq!(arguments, if whole { "{}" } else { "{" }, "{id}");
    }
}

/// Calls whose names were held start in the order they opened, whichever
/// was named first.
#[test]
fn held_names_start_in_the_order_their_calls_opened() {
    let mut p = parser();
    let chunks = run(
        &mut p,
        &[
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": ""}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"name": "f"}}]})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
                .to_string(),
        ],
    );
    assert_eq!(chunks, [start("a", "f"), start("b", "g")]);
}

/// Arguments a call gathers without any name are held, not sent: past
/// their bound, the stream is malformed.
#[test]
fn nameless_arguments_past_their_bound_are_a_protocol_error() {
    let mut p = parser();
    let err = p
        .push(&delta(json!({"tool_calls": [{"index": 0, "id": "c",
            "function": {"arguments": "x".repeat((1 << 20) + 1)}}]})))
        .unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
}

/// Servers that send the whole name again with every delta (Fireworks,
/// NIM) say it again, not more of it: the call starts under the name once,
/// before and after its start.
#[test]
fn a_name_sent_again_with_every_delta_is_the_same_name() {
    let mut p = parser();
    let again = |arguments: &str| {
        delta(json!({"tool_calls": [{"index": 0, "id": "c1",
            "function": {"name": "read_file", "arguments": arguments}}]}))
    };
    let mut chunks = run(&mut p, &[again(""), again("{\"path\""), again(": \"a\"}")]);
    chunks.extend(chunks_of(p.push("[DONE]").unwrap()));
    let names: Vec<&str> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCallStart { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["read_file"]);
    let Some(Chunk::ToolCallEnd(call)) = chunks.last() else {
        panic!("no end: {chunks:?}");
    };
    assert_eq!(
        (call.name.as_str(), call.problem.clone()),
        ("read_file", None)
    );
}
