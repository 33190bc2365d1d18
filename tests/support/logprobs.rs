//! Token log-probabilities read off the surfaces that carry them: a
//! streamed chat completion's chunks and an AG-UI run's `CUSTOM`
//! `thinkwire.logprobs` events.

use serde_json::Value;
use thinkwire_protocol::{Event, EventKind};

use super::TestServer;

/// The bytes of `entries`' tokens, in order.
pub fn spelled(entries: &[Value]) -> Vec<u8> {
    (entries.iter())
        .flat_map(|e| e["bytes"].as_array().unwrap().clone())
        .map(|b| b.as_u64().unwrap() as u8)
        .collect()
}

/// A streamed chat completion of `body`: its text, and the bytes of the
/// log-probability entries its chunks carried, in order.
pub async fn chat_streamed(server: &TestServer, body: &Value) -> (String, Vec<u8>) {
    let (_, chunks) = super::sse::sse_post(server, "/v1/chat/completions", body).await;
    let (mut streamed, mut bytes) = (String::new(), Vec::new());
    for chunk in &chunks {
        let choice = &chunk["choices"][0];
        streamed.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
        if let Some(entries) = choice["logprobs"]["content"].as_array() {
            bytes.extend(spelled(entries));
        }
    }
    (streamed, bytes)
}

/// An AG-UI run's answer text and the log-probability entries sent for
/// it, each event checked to name the text message it comes before.
pub fn agui(events: &[Event]) -> (String, Vec<Value>) {
    let (mut message, mut text, mut entries) = (String::new(), String::new(), Vec::new());
    for event in events {
        match &event.kind {
            EventKind::TextMessageStart(e) => message = e.message_id.clone(),
            EventKind::TextMessageContent(e) => text.push_str(&e.delta),
            EventKind::Custom(e) if e.name == "thinkwire.logprobs" => {
                assert_eq!(e.value["messageId"], message.as_str(), "{:?}", e.value);
                entries.extend(e.value["content"].as_array().unwrap().iter().cloned());
            }
            _ => {}
        }
    }
    (text, entries)
}
