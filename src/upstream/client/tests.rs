//! Unit tests of the HTTP side's bounds: an error or count body read only
//! to its cap, comment keepalives that hold a stream open, and an answer's output cut
//! off at what its request's limits allow. Streams are built from
//! in-memory bodies, paced by the runtime's timers.

use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use serde_json::json;
use thinkwire_reasoning::{Chunk, Registry, ToolCallProblem};
use tokio::runtime::Runtime;

use super::stream::{OUTPUT_BYTES_PER_TOKEN, OUTPUT_SLACK_TOKENS, output_bytes};
use super::*;
use crate::upstream::UpstreamOutput;

fn runtime() -> Runtime {
    // Multi-threaded: `Handle::block_on` drives no timers on a
    // current-thread runtime.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A 200 response whose body is `pieces`, each sent after its pause.
fn response(pieces: Vec<(Duration, String)>) -> reqwest::Response {
    let body = futures_util::stream::iter(pieces).then(|(pause, text)| async move {
        tokio::time::sleep(pause).await;
        Ok::<_, std::io::Error>(bytes::Bytes::from(text))
    });
    reqwest::Response::from(axum::http::Response::new(reqwest::Body::wrap_stream(body)))
}

fn chat_parser() -> Parser {
    let registry = Registry::builtin();
    let spec = registry
        .family("qwen3")
        .cloned()
        .unwrap_or_else(|| registry.default_spec().clone());
    Parser::OpenAiChat(Box::new(openai_chat::StreamParser::new(
        &spec,
        "call-".into(),
    )))
}

fn delta(delta: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

/// A chat stream of `pieces`, read as `timing` says, carrying at most
/// `output_limit` bytes of output.
fn chat_stream(
    rt: &Runtime,
    pieces: Vec<(Duration, String)>,
    timing: Timing,
    output_limit: usize,
) -> UpstreamStream {
    UpstreamStream::new(
        response(pieces),
        chat_parser(),
        timing,
        rt.handle().clone(),
        output_limit,
    )
}

/// A stream's timing that waits `quiet` for output from now.
fn quiet_after(idle: Duration, quiet: Duration) -> Timing {
    Timing {
        idle,
        quiet: Some(quiet),
        deadline: deadline(Some(quiet)),
    }
}

/// A stream's timing with no deadline.
fn idle(idle: Duration) -> Timing {
    Timing {
        idle,
        quiet: None,
        deadline: None,
    }
}

/// Everything `stream` yields to its end or its first error.
fn drain(stream: &mut UpstreamStream) -> (Vec<UpstreamOutput>, Option<UpstreamError>) {
    let mut out = Vec::new();
    loop {
        match stream.next(&|| false) {
            Ok(Some(pieces)) => out.extend(pieces),
            Ok(None) => return (out, None),
            Err(err) => return (out, Some(err)),
        }
    }
}

fn text_of(out: &[UpstreamOutput]) -> String {
    (out.iter())
        .filter_map(|o| match o {
            UpstreamOutput::Chunk(Chunk::Text(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_capped_body_keeps_its_bound_and_says_more_followed() {
    let mut body = CappedBody::new();
    assert!(body.push(b"abc", 5));
    assert!(!body.push(b"defg", 5));
    assert_eq!((body.bytes.as_slice(), body.over), (&b"abcde"[..], true));
    let mut exact = CappedBody::new();
    assert!(exact.push(b"abcde", 5));
    assert!(!exact.over);
}

/// An error body that never ends is read to its cap, not to the idle
/// timeout; the error object at its start still names the error.
#[test]
fn an_endless_error_body_is_read_only_to_its_cap() {
    let rt = runtime();
    let head = json!({"error": {"type": "server_error", "message": "secret prompt"}}).to_string();
    let padding = futures_util::stream::repeat_with(|| " ".repeat(16 << 10));
    let body = futures_util::stream::once(async move { head })
        .chain(padding)
        .map(|text| Ok::<_, std::io::Error>(bytes::Bytes::from(text)));
    let endless =
        reqwest::Response::from(axum::http::Response::new(reqwest::Body::wrap_stream(body)));
    let started = Instant::now();
    let read = rt
        .block_on(async {
            tokio::time::timeout(
                Duration::from_secs(10),
                read_capped(endless, MAX_ERROR_BODY_BYTES),
            )
            .await
        })
        .expect("the read stops at its cap")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(read.over);
    assert_eq!(read.bytes.len(), MAX_ERROR_BODY_BYTES);
    assert_eq!(error_body_kind(&read.bytes), ": server_error");
    // A body cut inside its object names nothing; neither does garbage.
    assert_eq!(error_body_kind(br#"{"error": {"type": "server_"#), "");
    assert_eq!(error_body_kind(b"<html>"), "");
}

#[test]
fn the_output_bound_is_generous_and_saturates() {
    assert_eq!(
        output_limit(100, 50),
        (100 + 50 + OUTPUT_SLACK_TOKENS) * OUTPUT_BYTES_PER_TOKEN
    );
    assert_eq!(output_limit(usize::MAX, 1), usize::MAX);
    let text = UpstreamOutput::Chunk(Chunk::Text("four".into()));
    let args = UpstreamOutput::Chunk(Chunk::ToolCallArgs {
        id: "c".into(),
        delta: "{}".into(),
    });
    let start = UpstreamOutput::Chunk(Chunk::ReasoningStart);
    // A block's start costs a token's worth.
    assert_eq!(
        [text, args, start].iter().map(output_bytes).sum::<usize>(),
        6 + OUTPUT_BYTES_PER_TOKEN
    );
}

/// Comment lines (`: ping`) are activity: proxies keep a long prefill's
/// stream open with them, and the answer that follows is read.
#[test]
fn comment_keepalives_hold_a_stream_open() {
    let rt = runtime();
    let mut pieces: Vec<(Duration, String)> = (0..8)
        .map(|_| (Duration::from_millis(100), ": ping\n\n".to_owned()))
        .collect();
    pieces.push((Duration::ZERO, delta(json!({"content": "Hi"}))));
    pieces.push((Duration::ZERO, "data: [DONE]\n\n".into()));
    let mut stream = chat_stream(&rt, pieces, idle(Duration::from_millis(300)), usize::MAX);
    let (out, err) = drain(&mut stream);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&out), "Hi");
}

/// Data keeps a stream alive however long it takes in all.
#[test]
fn data_messages_keep_a_stream_alive() {
    let rt = runtime();
    let mut pieces: Vec<(Duration, String)> = (0..8)
        .map(|_| (Duration::from_millis(100), delta(json!({"content": "a"}))))
        .collect();
    pieces.push((Duration::ZERO, "data: [DONE]\n\n".into()));
    let mut stream = chat_stream(&rt, pieces, idle(Duration::from_millis(300)), usize::MAX);
    let (out, err) = drain(&mut stream);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&out), "aaaaaaaa");
    assert!(stream.complete() && !stream.cut_off());
}

/// A timeout no `Instant` can hold is no deadline, not a panic; one
/// that fits is one.
#[test]
fn a_timeout_past_any_instant_is_no_deadline() {
    assert_eq!(deadline(Some(Duration::MAX)), None);
    assert_eq!(deadline(Some(Duration::from_secs(u64::MAX))), None);
    assert_eq!(deadline(None), None);
    assert!(deadline(Some(Duration::from_secs(600))).is_some());
    assert_eq!(until(Duration::from_secs(3), None), Duration::from_secs(3));
    let soon = until(
        Duration::from_secs(3),
        deadline(Some(Duration::from_millis(50))),
    );
    assert!(soon <= Duration::from_millis(50), "{soon:?}");
}

/// A stream kept busy with empty deltas, never answering, is given up
/// once it has gone its quiet time without output, though it is never
/// silent for its idle wait.
#[test]
fn a_stream_kept_busy_without_output_ends_when_its_quiet_time_runs_out() {
    let rt = runtime();
    let pieces: Vec<(Duration, String)> = (0..100)
        .map(|_| (Duration::from_millis(50), delta(json!({"content": ""}))))
        .collect();
    // Without the bound it would end after the hundred pieces, before
    // `[DONE]`: another error.
    let quiet = Duration::from_millis(400);
    let mut stream = chat_stream(
        &rt,
        pieces,
        quiet_after(Duration::from_millis(300), quiet),
        usize::MAX,
    );
    let (out, err) = drain(&mut stream);
    assert!(text_of(&out).is_empty());
    assert!(
        matches!(err, Some(UpstreamError::Unavailable(m)) if m.contains("no output")),
        "{err:?}"
    );
}

/// Output moves the wait on: a stream that writes a token every 100 ms
/// for longer in all than its quiet time runs to its end.
#[test]
fn output_keeps_a_stream_going_past_its_quiet_time() {
    let rt = runtime();
    let mut pieces: Vec<(Duration, String)> = (0..8)
        .map(|_| (Duration::from_millis(100), delta(json!({"content": "a"}))))
        .collect();
    pieces.push((Duration::ZERO, "data: [DONE]\n\n".into()));
    let quiet = Duration::from_millis(300);
    let mut stream = chat_stream(
        &rt,
        pieces,
        quiet_after(Duration::from_secs(5), quiet),
        usize::MAX,
    );
    let (out, err) = drain(&mut stream);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&out), "aaaaaaaa");
}

/// An upstream that streams past what its request's limits allow is cut
/// off as if it had stopped at them: the message that passed the bound is
/// the last read, and a call open then ends truncated.
#[test]
fn output_past_the_bound_is_cut_off_at_length() {
    let rt = runtime();
    let mut pieces: Vec<(Duration, String)> = (0..100)
        .map(|_| (Duration::ZERO, delta(json!({"content": "abcdef"}))))
        .collect();
    pieces.push((Duration::ZERO, "data: [DONE]\n\n".into()));
    let mut stream = chat_stream(&rt, pieces, idle(Duration::from_secs(5)), 10);
    let (out, err) = drain(&mut stream);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&out), "abcdefabcdef");
    assert!(stream.cut_off() && !stream.complete());

    let call = |arguments: &str| {
        delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
            "function": {"name": "f", "arguments": arguments}}]}),
        )
    };
    let pieces = vec![
        (Duration::ZERO, call("{\"a\": \"")),
        (
            Duration::ZERO,
            delta(json!({"tool_calls": [{"index": 0,
            "function": {"arguments": "x".repeat(64)}}]})),
        ),
        (
            Duration::ZERO,
            delta(json!({"tool_calls": [{"index": 0,
            "function": {"arguments": "\"}"}}]})),
        ),
        (Duration::ZERO, "data: [DONE]\n\n".into()),
    ];
    let mut stream = chat_stream(
        &rt,
        pieces,
        idle(Duration::from_secs(5)),
        // The start's token and the first arguments fit; the next do not.
        OUTPUT_BYTES_PER_TOKEN + 20,
    );
    let (out, err) = drain(&mut stream);
    assert!(err.is_none(), "{err:?}");
    assert!(stream.cut_off());
    let ends: Vec<_> = (out.iter())
        .filter_map(|o| match o {
            UpstreamOutput::Chunk(Chunk::ToolCallEnd(call)) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 1, "{out:?}");
    assert_eq!(ends[0].problem, Some(ToolCallProblem::Truncated));
    assert_eq!(ends[0].arguments, format!("{{\"a\": \"{}", "x".repeat(64)));
}
