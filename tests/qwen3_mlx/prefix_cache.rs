//! Prompt tokens the prefix cache served, in every API's usage.

use thinkwire_protocol::EventKind;

use super::*;

/// With the prefix cache on, a prompt asked again is served from the
/// cache, and each API's usage says how much of it: chat's
/// `prompt_tokens_details.cached_tokens`, Responses'
/// `input_tokens_details.cached_tokens`, Anthropic's
/// `cache_read_input_tokens` (left out of its `input_tokens`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_tokens_served_from_the_prefix_cache_are_counted_in_usage() {
    let server = tiny_server_with(ModelArgs {
        prefix_cache: true,
        ..support::default_model_args()
    })
    .await;
    let user = "Think about the weather in Paris, then answer in one short sentence.";
    let chat = json!({"messages": [{"role": "user", "content": user}],
                      "max_tokens": 6, "temperature": 0});
    let kept = || {
        server
            .agent
            .model()
            .unwrap()
            .engine()
            .load()
            .prefix_cache_bytes
    };
    let first = completion(&server, &chat).await["usage"].clone();
    assert_eq!(
        first["prompt_tokens_details"]["cached_tokens"], 0,
        "{first}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while kept() == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing kept");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let again = completion(&server, &chat).await["usage"].clone();
    let prompt = again["prompt_tokens"].as_u64().unwrap();
    let cached = again["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    // All of it but the last token, whose logits start the answer.
    assert_eq!(cached, prompt - 1, "{again}");

    let post = |path: &'static str, body: serde_json::Value| {
        let request = reqwest::Client::new().post(server.url(path)).json(&body);
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    let responses = post(
        "/v1/responses",
        json!({"input": user, "max_output_tokens": 6,
        "temperature": 0, "store": false}),
    )
    .await;
    let usage = &responses["usage"];
    let cached = usage["input_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached > 0 && cached < usage["input_tokens"].as_u64().unwrap(),
        "{usage}"
    );
    let messages = post(
        "/v1/messages",
        json!({"max_tokens": 6, "temperature": 0,
        "messages": [{"role": "user", "content": user}]}),
    )
    .await;
    let usage = &messages["usage"];
    // Its prompt renders the turn its own way (thinking off), so only the
    // start is the cached one's; the rest is in `input_tokens`.
    let read = usage["cache_read_input_tokens"].as_u64().unwrap();
    assert!(
        read > 0 && usage["input_tokens"].as_u64().unwrap() > 0,
        "{usage}"
    );

    // AG-UI: `RUN_FINISHED.usage` counts them as `cachedInputTokens`.
    let forwarded = json!({"sampling": {"temperature": 0, "maxTokens": 6}});
    let events = support::post_run(&server, &support::input("t", "c", user, forwarded)).await;
    let usage = events.iter().find_map(|e| match &e.kind {
        EventKind::RunFinished(f) => f.usage.as_ref().and_then(|u| u.first()).cloned(),
        _ => None,
    });
    let usage = usage.expect("RUN_FINISHED carries usage");
    assert!(usage.cached_input_tokens.unwrap_or(0) > 0, "{usage:?}");
    server.shutdown().await;
}
