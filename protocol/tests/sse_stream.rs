//! The SSE decoder yields the same events however the byte stream is split.

mod common;

use thinkwire_protocol::*;

fn stream(events: &[Event], line_end: &str) -> Vec<u8> {
    let mut out = String::from(": connected\n\n");
    for (i, ev) in events.iter().enumerate() {
        let frame = sse_frame(ev);
        out.push_str(&frame.replace('\n', line_end));
        if i % 3 == 0 {
            out.push_str(&SSE_KEEPALIVE.replace('\n', line_end));
        }
    }
    out.into_bytes()
}

fn decode_all(chunks: &[&[u8]]) -> Vec<Event> {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        for ev in d.push_events(chunk) {
            out.push(ev.expect("valid event"));
        }
    }
    assert!(!d.has_partial());
    out
}

#[test]
fn every_split_point_yields_identical_events() {
    // A realistic turn with multi-byte UTF-8 in the deltas.
    let events: Vec<Event> = vec![
        RunStarted::new("t", "r").into(),
        ReasoningStart {
            message_id: "r1".into(),
        }
        .into(),
        ReasoningMessageStart::new("r1").into(),
        ReasoningMessageContent {
            message_id: "r1".into(),
            delta: "Überlegung: 2×3 → 6 😀".into(),
        }
        .into(),
        ReasoningMessageEnd {
            message_id: "r1".into(),
        }
        .into(),
        ReasoningEncryptedValue::message("r1", "c2VhbGVk").into(),
        ReasoningEnd {
            message_id: "r1".into(),
        }
        .into(),
        TextMessageStart::assistant("m1").into(),
        TextMessageContent {
            message_id: "m1".into(),
            delta: "line one\nline two\r\n日本語".into(),
        }
        .into(),
        TextMessageEnd {
            message_id: "m1".into(),
        }
        .into(),
        Event::from(RunFinished::new("t", "r")).with_timestamp(1_700_000_000_000),
    ];
    for line_end in ["\n", "\r\n", "\r"] {
        let bytes = stream(&events, line_end);
        let whole = decode_all(&[&bytes]);
        assert_eq!(whole, events, "line end {line_end:?}");
        for at in 0..=bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(
                decode_all(&[a, b]),
                events,
                "split at {at}, line end {line_end:?}"
            );
        }
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_all(&bytewise), events);
        let threes: Vec<&[u8]> = bytes.chunks(3).collect();
        assert_eq!(decode_all(&threes), events);
    }
}

#[test]
fn all_fixture_events_survive_sse() {
    let events = common::all_events();
    let bytes = stream(&events, "\n");
    let mut expected = events.clone();
    for e in &mut expected {
        if !e.event_type().is_attributable() {
            e.subagent_run_id = None;
        }
    }
    let chunks: Vec<&[u8]> = bytes.chunks(7).collect();
    assert_eq!(decode_all(&chunks), expected);
}
