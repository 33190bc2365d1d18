//! What an upstream sends in parts. A tool call's name may come in
//! fragments over several deltas: the call starts under its whole name.
//! Usage may come before the stream's end (Anthropic's prompt tokens in
//! `message_start`; a chat server that counts with every chunk): a stream
//! the front cuts short, at a stop sequence or cancelled, still reports
//! what was counted by then. The upstreams are small axum servers that
//! stream on past the cut.

use axum::body::Body;
use axum::routing::post;
use futures_util::StreamExt as _;
use thinkwire_protocol::{EventKind, Outcome};

use super::faults::{delta, fake_upstream, sse_response};
use super::*;

/// The prompt tokens the scripted upstreams count.
const PROMPT_TOKENS: u64 = 25;

/// An Anthropic Messages event as an SSE message, named by its `type`.
fn anthropic_event(data: Value) -> String {
    let kind = data["type"].as_str().unwrap_or("").to_owned();
    format!("event: {kind}\ndata: {data}\n\n")
}

fn anthropic_text(text: &str) -> String {
    anthropic_event(json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": text}}))
}

/// An Anthropic upstream: the prompt's tokens in `message_start`, "It is
/// sunny", then " and warm" every 20 ms, never ending.
async fn endless_anthropic() -> String {
    fake_upstream(axum::Router::new().route(
        "/v1/messages",
        post(|| async {
            let first = [
                anthropic_event(json!({"type": "message_start", "message": {
                    "id": "msg_01", "type": "message", "role": "assistant", "content": [],
                    "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": 1}}})),
                anthropic_event(json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})),
                anthropic_text("It is"),
                anthropic_text(" sunny"),
            ];
            let more = futures_util::stream::repeat_with(|| anthropic_text(" and warm")).then(
                |text| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    text
                },
            );
            let pieces = futures_util::stream::iter(first)
                .chain(more)
                .map(Ok::<_, std::io::Error>);
            sse_response(Body::from_stream(pieces))
        }),
    ))
    .await
}

/// A chat chunk of `content` with the counts so far, as a server that
/// counts with every chunk sends it (vLLM's `continuous_usage_stats`).
fn counted(content: &str, generated: u64) -> String {
    let chunk = json!({
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}],
        "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": generated,
            "total_tokens": PROMPT_TOKENS + generated},
    });
    format!("data: {chunk}\n\n")
}

/// A chat upstream counting with every chunk: "It is sunny" (3 tokens),
/// then " and warm" every 20 ms, never ending.
async fn endless_counting_chat() -> String {
    fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let first = [counted("It is", 2), counted(" sunny", 3)];
            let more = futures_util::stream::unfold(3u64, |generated| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let generated = generated + 2;
                Some((counted(" and warm", generated), generated))
            });
            let pieces = futures_util::stream::iter(first)
                .chain(more)
                .map(Ok::<_, std::io::Error>);
            sse_response(Body::from_stream(pieces))
        }),
    ))
    .await
}

/// The front's stop sequence cuts a stream that would go on forever: the
/// run still reports the usage its upstream had sent by then, never a
/// count of its own. Anthropic sends the prompt's tokens first; a chat
/// server counting with every chunk sends the counts so far.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_at_a_stop_sequence_reports_the_usage_sent_before_the_cut() {
    for (kind, url) in [
        (UpstreamKind::Anthropic, endless_anthropic().await),
        (UpstreamKind::OpenAiChat, endless_counting_chat().await),
    ] {
        let front = front(UpstreamConfig {
            kind,
            ..upstream_config(url)
        })
        .await;
        let user = json!([{"role": "user", "content": "Weather?"}]);
        let body = json!({"messages": user, "stop": ["sunny"]});
        let (status, whole) = tokio::time::timeout(
            Duration::from_secs(10),
            post_json(&front, "/v1/chat/completions", &body),
        )
        .await
        .expect("the stop sequence ends the answer");
        assert_eq!(status, 200, "{kind:?}: {whole}");
        let choice = &whole["choices"][0];
        assert_eq!(choice["message"]["content"], "It is ", "{kind:?}: {whole}");
        assert_eq!(choice["finish_reason"], "stop", "{kind:?}: {whole}");
        let usage = &whole["usage"];
        assert_eq!(usage["prompt_tokens"], PROMPT_TOKENS, "{kind:?}: {whole}");
        // Anthropic's output count comes at the end (`message_delta`),
        // which a cut stream never reaches; the chat server's is the last
        // chunk's read before the cut took hold, "sunny" at least.
        let output = usage["completion_tokens"].as_u64().unwrap();
        if kind == UpstreamKind::OpenAiChat {
            assert!(output >= 3, "{whole}");
        }
        assert_eq!(usage["total_tokens"], PROMPT_TOKENS + output, "{whole}");
        front.shutdown().await;
    }
}

/// A run its client cancels mid-stream finishes cancelled with the usage
/// known by then: the prompt's tokens Anthropic sent first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_mid_stream_reports_the_usage_sent_before_the_cancel() {
    use futures_util::SinkExt as _;
    use tokio_tungstenite::tungstenite::Message;

    let front = front(UpstreamConfig {
        kind: UpstreamKind::Anthropic,
        ..upstream_config(endless_anthropic().await)
    })
    .await;
    let mut socket = connect(&front).await;
    socket
        .send(Message::text(
            input("t", "r-cut", "Weather?", json!({})).to_string(),
        ))
        .await
        .unwrap();
    // Read until the answer streams, then cancel.
    let mut events = Vec::new();
    loop {
        let event = thinkwire_protocol::decode_event(&next_text(&mut socket).await)
            .unwrap()
            .expect("a known event type");
        let streaming = matches!(event.kind, EventKind::TextMessageContent(_));
        events.push(event);
        if streaming {
            break;
        }
    }
    socket
        .send(Message::text(
            json!({"type": "CANCEL_RUN", "runId": "r-cut"}).to_string(),
        ))
        .await
        .unwrap();
    events.extend(read_run(&mut socket).await);
    verify(&events);
    let Some(EventKind::RunFinished(finished)) = events.last().map(|e| &e.kind) else {
        panic!("no RUN_FINISHED: {events:?}");
    };
    assert_eq!(finished.outcome, Some(Outcome::Cancelled));
    let usage = &finished.usage.as_ref().expect("the run's usage")[0];
    assert_eq!(usage.input_tokens, Some(PROMPT_TOKENS), "{usage:?}");
    front.shutdown().await;
}

/// A tool name sent in fragments over several deltas reaches the client
/// whole: one `TOOL_CALL_START` under the offered tool's name, its
/// arguments after it, the call pending and nothing rejected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_name_in_fragments_starts_its_call_under_the_whole_name() {
    let url = fake_upstream(axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let call = |fields: Value| delta(json!({"tool_calls": [fields]}));
            let finish =
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
            let body = [
                call(json!({"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "get_", "arguments": ""}})),
                call(json!({"index": 0, "function": {"name": "wea"}})),
                call(json!({"index": 0, "function": {"name": "ther", "arguments": "{\"city\":"}})),
                call(json!({"index": 0, "function": {"arguments": "\"Paris\"}"}})),
                format!("data: {finish}\n\n"),
                "data: [DONE]\n\n".to_owned(),
            ]
            .concat();
            sse_response(Body::from(body))
        }),
    ))
    .await;
    let front = front(upstream_config(url)).await;
    let mut run = input("t", "r", "Weather in Paris?", json!({}));
    run["tools"] = json!([weather_tool()]);
    let events = post_run(&front, &run).await;
    let starts: Vec<(String, String)> = (events.iter())
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStart(s) => Some((s.tool_call_id.clone(), s.tool_call_name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [("call_1".to_owned(), "get_weather".to_owned())],
        "{events:?}"
    );
    let arguments: String = (events.iter())
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallArgs(a) => Some(a.delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(arguments, "{\"city\":\"Paris\"}");
    let notices: Vec<&str> = (events.iter())
        .filter_map(|e| match &e.kind {
            EventKind::Custom(c) if c.name.contains("tool_call") => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notices.is_empty(),
        "nothing rejected or invalid: {notices:?}"
    );
    let Some(EventKind::RunFinished(finished)) = events.last().map(|e| &e.kind) else {
        panic!("no RUN_FINISHED: {events:?}");
    };
    assert_eq!(
        finished.outcome,
        Some(Outcome::Success {
            pending_tool_call_ids: Some(vec!["call_1".to_owned()])
        })
    );
    front.shutdown().await;
}
