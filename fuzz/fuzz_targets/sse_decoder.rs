//! The SSE decoder a client reads a run with: the messages it yields do not
//! depend on where the byte stream was split into chunks, and every
//! message's data decodes to an event or an error (never a panic).
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkwire_protocol::{SseDecoder, SseMessage, decode_event};

fn decode_all(chunks: &[&[u8]]) -> Vec<SseMessage> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(decoder.push(chunk));
    }
    out.extend(decoder.finish());
    assert!(!decoder.has_partial(), "finish leaves nothing behind");
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let whole = decode_all(&[stream]);
    // Two splits: one chosen by the input, one byte at a time.
    let at = usize::from(split) % (stream.len() + 1);
    let (a, b) = stream.split_at(at);
    assert_eq!(decode_all(&[a, b]), whole, "split at {at}");
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode_all(&bytes), whole, "byte by byte");
    for message in &whole {
        let _ = decode_event(&message.data);
    }
    let _ = SseDecoder::new().push_events(stream);
});
