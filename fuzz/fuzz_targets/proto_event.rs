//! The protobuf binding read back (`protocol::proto_decode`,
//! `ProtoDecoder`), as a client of `application/vnd.ag-ui.event+proto`
//! reads a run. Any bytes give an event, nothing (an unknown arm) or an
//! error, never a panic. A decoded event says the same in both bindings:
//! it encodes again to a message that decodes to it, and its JSON form
//! (the SSE binding's) decodes to it. Read as a stream of frames, the
//! events and the error do not depend on where the bytes were split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkwire_protocol::{ProtoDecoder, decode_event, proto_decode, proto_encode};

/// The stream's events and errors (as text: errors have no equality), and
/// what `finish` said.
fn read_all(chunks: &[&[u8]]) -> (Vec<String>, String) {
    let mut decoder = ProtoDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(decoder.push(chunk).into_iter().map(|r| format!("{r:?}")));
    }
    let end = format!("{:?}", decoder.finish());
    (out, end)
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, bytes)) = data.split_first() else {
        return;
    };
    if let Ok(Some(event)) = proto_decode(bytes) {
        let again = proto_encode(&event).expect("a decoded event encodes again");
        let back = proto_decode(&again).expect("its message decodes");
        assert_eq!(back.as_ref(), Some(&event), "the message round trip");
        let json = event.to_json();
        let from_json = decode_event(&json).expect("its JSON form decodes");
        assert_eq!(from_json.as_ref(), Some(&event), "the JSON form round trip");
    }
    let whole = read_all(&[bytes]);
    let at = usize::from(split) % (bytes.len() + 1);
    let (a, b) = bytes.split_at(at);
    assert_eq!(read_all(&[a, b]), whole, "split at {at}");
    let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(read_all(&pieces), whole, "byte by byte");
});
