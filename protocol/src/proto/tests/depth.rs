//! Values nested deep: what the encoder accepts decodes back, wherever in
//! an event the value sits; past what prost decodes (its recursion limit)
//! a value is refused when encoded, with its path, never sent as a frame
//! no decoder reads.

use serde_json::{Value as Json, json};

use super::super::*;
use crate::event::decode_event_value;

fn objects(n: usize) -> Json {
    (0..n).fold(json!(1), |v, _| json!({"a": v}))
}

fn arrays(n: usize) -> Json {
    (0..n).fold(json!(1), |v, _| json!([v]))
}

/// The deepest places a JSON value sits: a custom event's value, a state
/// snapshot, an activity message's content inside a messages snapshot.
fn events(value: Json) -> [Json; 3] {
    [
        json!({"type": "CUSTOM", "name": "n", "value": value}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": value}),
        json!({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "act", "role": "activity", "activityType": "plan", "content": {"v": value}}]}),
    ]
}

#[test]
fn a_value_nested_past_what_decodes_is_refused_when_encoded() {
    for nest in [objects, arrays] {
        let mut refused = [None; 3];
        for n in 0..70 {
            for (place, json) in events(nest(n)).into_iter().enumerate() {
                if refused[place].is_some() {
                    continue;
                }
                let event = decode_event_value(&json).unwrap().unwrap();
                match proto_frame(&event) {
                    Ok(frame) => {
                        let mut decoder = ProtoDecoder::new();
                        let back: Vec<_> = decoder.push(&frame);
                        assert_eq!(back.len(), 1, "{n} at {place}");
                        let back = back.into_iter().next().unwrap();
                        assert_eq!(back.as_ref().ok(), Some(&event), "{n} at {place}: {back:?}");
                    }
                    Err(ProtoError::Unrepresentable { reason, .. }) => {
                        assert!(reason.contains("nested"), "{reason}");
                        refused[place] = Some(n);
                    }
                    Err(other) => panic!("{n} at {place}: {other}"),
                }
            }
        }
        // Refused somewhere, and not before a depth any real value has.
        for (place, at) in refused.iter().enumerate() {
            assert!(at.is_some_and(|n| n >= 20), "{place}: {at:?}");
        }
    }
}
