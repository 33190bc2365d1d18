//! Token log-probabilities from the MLX engine, over chat completions and
//! AG-UI.

use thinkwire_protocol::EventKind;

use super::*;

/// A chat completion asking for `logprobs` with three alternatives per
/// token: its content and entries.
async fn with_logprobs(server: &TestServer, sampling: serde_json::Value) -> (String, Vec<Entry>) {
    let mut body = json!({
        "messages": [{"role": "user", "content": "Think, then answer."}],
        "max_tokens": 24, "reasoning": {"visibility": "full", "max_tokens": 8},
        "logprobs": true, "top_logprobs": 3,
    });
    for (key, value) in sampling.as_object().unwrap() {
        body[key] = value.clone();
    }
    let answer = completion(server, &body).await;
    let choice = &answer["choices"][0];
    let content = choice["message"]["content"].as_str().unwrap().to_owned();
    let entries = serde_json::from_value(choice["logprobs"]["content"].clone()).unwrap();
    (content, entries)
}

#[derive(Debug, serde::Deserialize)]
struct Entry {
    token: String,
    logprob: f32,
    bytes: Vec<u8>,
    #[serde(default)]
    top_logprobs: Vec<Entry>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logprobs_on_mlx_are_the_models_view_of_each_answer_token() {
    let server = tiny_server().await;
    for sampling in [
        json!({"temperature": 0}),
        json!({"temperature": 1.0, "seed": 5}),
    ] {
        let (content, entries) = with_logprobs(&server, sampling.clone()).await;
        assert!(!content.is_empty(), "{sampling}");
        let spelled: Vec<u8> = entries.iter().flat_map(|e| e.bytes.clone()).collect();
        assert_eq!(String::from_utf8_lossy(&spelled), content, "{sampling}");
        for entry in &entries {
            let top = &entry.top_logprobs;
            assert_eq!(top.len(), 3, "{entry:?}");
            assert!(
                top.windows(2).all(|w| w[0].logprob >= w[1].logprob),
                "{entry:?}"
            );
            let mass: f32 = top.iter().map(|t| t.logprob.exp()).sum();
            assert!(entry.logprob <= 0.0 && mass <= 1.0 + 1e-4, "{entry:?}");
            assert!(entry.logprob <= top[0].logprob, "{entry:?}");
            assert_eq!(String::from_utf8_lossy(&entry.bytes), entry.token);
            if sampling["temperature"] == 0 {
                // Greedy: the token is the most likely one.
                assert_eq!(top[0].token, entry.token, "{entry:?}");
                assert_eq!(top[0].logprob, entry.logprob, "{entry:?}");
            }
        }
    }
    server.shutdown().await;
}

/// On AG-UI, `forwardedProps.logprobs` brings `CUSTOM` events
/// `thinkwire.logprobs` for the assistant message, whose tokens spell its
/// text; a count past 20 is refused before the run, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agui_runs_carry_logprobs_in_custom_events_for_their_message() {
    let server = tiny_server().await;
    let forwarded = json!({"logprobs": 2, "sampling": {"temperature": 0, "maxTokens": 24},
        "reasoning": {"budgetTokens": 8}});
    let events = support::post_run(&server, &support::input("t", "lp", "Hi", forwarded)).await;
    let mut text = (String::new(), String::new());
    let mut spelled = Vec::new();
    for event in &events {
        match &event.kind {
            EventKind::TextMessageStart(e) => text.0 = e.message_id.clone(),
            EventKind::TextMessageContent(e) => text.1.push_str(&e.delta),
            EventKind::Custom(e) if e.name == "thinkwire.logprobs" => {
                let entries: Vec<Entry> =
                    serde_json::from_value(e.value["content"].clone()).unwrap();
                assert!(
                    entries.iter().all(|e| e.top_logprobs.len() == 2),
                    "{entries:?}"
                );
                spelled.extend(entries.into_iter().flat_map(|e| e.bytes));
                // Sent ahead of the text they make, for its message.
                assert_eq!(e.value["messageId"], text.0.as_str(), "{:?}", e.value);
            }
            _ => {}
        }
    }
    assert!(!text.1.is_empty());
    assert_eq!(String::from_utf8_lossy(&spelled), text.1);

    let bad = support::input("t", "bad", "Hi", json!({"logprobs": 21}));
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .json(&bad)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INVALID_LOGPROBS", "{body}");
    assert_eq!(body["error"]["path"], "forwardedProps.logprobs", "{body}");
    server.shutdown().await;
}
