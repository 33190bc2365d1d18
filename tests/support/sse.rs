//! A streamed `/v1` answer as the SDKs read it: the SSE body, and its
//! `data:` messages parsed as JSON (`[DONE]` left out).

use serde_json::Value;

use super::TestServer;

/// `body` posted to `path`; the whole SSE body and its data messages.
pub async fn sse_post(server: &TestServer, path: &str, body: &Value) -> (String, Vec<Value>) {
    let text = reqwest::Client::new()
        .post(server.url(path))
        .json(body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let messages = data_messages(&text);
    (text, messages)
}

/// The data messages of an SSE body, parsed, `[DONE]` left out.
pub fn data_messages(text: &str) -> Vec<Value> {
    (text.lines())
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}
