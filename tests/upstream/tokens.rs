//! Tokens through an upstream. Log-probabilities, asked of the front on
//! chat completions (whole and streamed) or AG-UI, go up on the
//! upstream's wire and its entries come back ahead of the text they wrote,
//! held with it where the front's splitter holds a possible marker's
//! start. Prompt counts are asked of an upstream whose API counts (the
//! Anthropic and Responses wires), raw completions of one that has them
//! (OpenAI-compatible servers' `/completions`); elsewhere they, and
//! tokenizing, are refused: the upstream renders its own prompts with its
//! own tokenizer.

use support::logprobs::{agui, chat_streamed, spelled};

use super::*;

/// The upstream is sure of each token it replays: each entry's logprob is
/// 0 and its one alternative is itself.
fn assert_replayed(entries: &[Value]) {
    assert!(!entries.is_empty());
    for entry in entries {
        assert_eq!(entry["logprob"], 0.0, "{entry}");
        let top = entry["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 1, "{entry}");
        assert_eq!(top[0]["token"], entry["token"], "{entry}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_logprobs_reach_the_client_on_every_surface() {
    let answer = "It is sunny <b>18</b> today.";
    let scripts: Vec<String> = (0..3).map(|_| qwen3_turn(REASONING, answer)).collect();
    let (upstream, _) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let capabilities: Value = reqwest::get(front.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        capabilities["custom"]["maxTopLogprobs"], 20,
        "{capabilities}"
    );

    let user = json!([{"role": "user", "content": "Weather?"}]);
    let body = json!({"messages": user, "logprobs": true, "top_logprobs": 1});
    let response = reqwest::Client::new()
        .post(front.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let whole: Value = response.json().await.unwrap();
    let choice = &whole["choices"][0];
    assert_eq!(choice["message"]["content"], answer, "{whole}");
    let entries = choice["logprobs"]["content"].as_array().unwrap();
    assert_replayed(entries);
    assert_eq!(String::from_utf8(spelled(entries)).unwrap(), answer);

    let body = json!({"messages": user, "logprobs": true, "top_logprobs": 1, "stream": true});
    let (streamed, bytes) = chat_streamed(&front, &body).await;
    assert_eq!(streamed, answer);
    assert_eq!(String::from_utf8(bytes).unwrap(), answer);

    let forwarded = json!({"logprobs": 1, "reasoning": {"visibility": "full"}});
    let events = post_run(&front, &input("t-lp", "r1", "Weather?", forwarded)).await;
    let (text, entries) = agui(&events);
    assert_eq!(text, answer);
    assert_replayed(&entries);
    assert_eq!(String::from_utf8(spelled(&entries)).unwrap(), answer);
    assert_eq!(reasoning_text(&events).trim(), REASONING);
    front.shutdown().await;
    upstream.shutdown().await;
}

/// An upstream whose API counts prompt tokens (Anthropic's
/// `count_tokens`, OpenAI Responses' `input_tokens`) is asked: the front
/// answers with the upstream's count of the request it would send, and
/// nothing runs there.
#[tokio::test]
async fn prompt_counts_are_asked_of_an_upstream_that_counts() {
    let (upstream, observed) = upstream_thinkwire(&[]).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    for (kind, path, body) in [
        (
            UpstreamKind::Anthropic,
            "/v1/messages/count_tokens",
            json!({"messages": user}),
        ),
        (
            UpstreamKind::OpenAiResponses,
            "/v1/responses/input_tokens",
            json!({"input": "Weather?"}),
        ),
    ] {
        let front = front(UpstreamConfig {
            kind,
            ..upstream_config(upstream.url("/v1"))
        })
        .await;
        let (status, counted) = post_json(&front, path, &body).await;
        assert_eq!(status, 200, "{path}: {counted}");
        let tokens = counted["input_tokens"].as_u64().unwrap();
        // The upstream's own count of the same conversation.
        let (_, own) = post_json(&upstream, path, &body).await;
        assert_eq!(
            Some(tokens),
            own["input_tokens"].as_u64(),
            "{path}: {counted} {own}"
        );
        front.shutdown().await;
    }
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    upstream.shutdown().await;
}

/// What reaches a counting endpoint is the prompt's fields only (the real
/// endpoints refuse `max_tokens`, `stream` and the sampling fields), the
/// system prompt and tools among them; a server without the endpoint
/// (404) is a count the wire cannot give.
#[tokio::test]
async fn a_count_sends_the_prompts_fields_only() {
    use std::sync::Mutex;
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let counted = |path: &'static str, fields: &'static [&'static str], tokens: u64| {
        let seen = Arc::clone(&seen);
        axum::routing::post(
            move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                let seen = Arc::clone(&seen);
                async move {
                    seen.lock().unwrap().push((path.to_owned(), body.clone()));
                    let extra =
                        (body.as_object().unwrap().keys()).find(|k| !fields.contains(&k.as_str()));
                    let versioned =
                        path.contains("messages") == headers.contains_key("anthropic-version");
                    match (extra, versioned) {
                        (None, true) => (
                            axum::http::StatusCode::OK,
                            axum::Json(json!({"input_tokens": tokens})),
                        ),
                        _ => (
                            axum::http::StatusCode::BAD_REQUEST,
                            axum::Json(json!({"error": {"type": "invalid_request_error",
                            "message": "Extra inputs are not permitted"}})),
                        ),
                    }
                }
            },
        )
    };
    let mock = axum::Router::new()
        .route(
            "/v1/messages/count_tokens",
            counted(
                "messages",
                &[
                    "model",
                    "messages",
                    "system",
                    "tools",
                    "tool_choice",
                    "thinking",
                    "output_config",
                ],
                42,
            ),
        )
        .route(
            "/v1/responses/input_tokens",
            counted(
                "responses",
                &[
                    "model",
                    "input",
                    "instructions",
                    "tools",
                    "tool_choice",
                    "parallel_tool_calls",
                    "reasoning",
                    "text",
                    "truncation",
                ],
                43,
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, mock).await;
    });
    let tools = json!([{"name": "weather", "description": "Weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let user = json!([{"role": "user", "content": "Weather?"}]);
    for (kind, path, body, tokens) in [
        (
            UpstreamKind::Anthropic,
            "/v1/messages/count_tokens",
            json!({"system": "Be brief.", "messages": user, "tools": tools}),
            42,
        ),
        (
            UpstreamKind::OpenAiResponses,
            "/v1/responses/input_tokens",
            json!({"instructions": "Be brief.", "input": "Weather?", "tools": [{"type": "function",
                "name": "weather", "parameters": {"type": "object"}}]}),
            43,
        ),
    ] {
        let front = front(UpstreamConfig {
            kind,
            ..upstream_config(url.clone())
        })
        .await;
        let (status, counted) = post_json(&front, path, &body).await;
        assert_eq!(status, 200, "{path}: {counted}");
        assert_eq!(counted["input_tokens"], tokens, "{path}: {counted}");
        front.shutdown().await;
    }
    {
        let seen = seen.lock().unwrap();
        let (_, anthropic) = &seen[0];
        assert_eq!(anthropic["system"], "Be brief.", "{anthropic}");
        assert_eq!(anthropic["tools"][0]["name"], "weather", "{anthropic}");
        let (_, responses) = &seen[1];
        assert_eq!(responses["tools"][0]["name"], "weather", "{responses}");
        let developer = responses["input"][0].to_string();
        assert!(developer.contains("Be brief."), "{responses}");
    }

    // A server that speaks the wire but has no counting endpoint.
    let bare = axum::Router::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bare_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, bare).await;
    });
    let front = front(UpstreamConfig {
        kind: UpstreamKind::Anthropic,
        ..upstream_config(bare_url)
    })
    .await;
    let body = json!({"messages": user});
    let (status, refused) = post_json(&front, "/v1/messages/count_tokens", &body).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused.to_string().contains("counts no prompt tokens"),
        "{refused}"
    );
    front.shutdown().await;
}

/// What the upstream's API cannot do is refused: prompt counts on the
/// chat wire, raw completions on Anthropic's, and tokenizing anywhere
/// (the upstream keeps its tokenizer).
#[tokio::test]
async fn counts_raw_completions_and_tokenizing_are_refused_on_an_upstream() {
    let (upstream, observed) = upstream_thinkwire(&[]).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    for (path, body) in [
        ("/v1/messages/count_tokens", json!({"messages": user})),
        ("/v1/responses/input_tokens", json!({"input": "Weather?"})),
    ] {
        let (status, body) = post_json(&front, path, &body).await;
        assert_eq!(status, 400, "{path}: {body}");
        // Anthropic's error shape has no code: the message says why.
        let error = &body["error"];
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("an upstream"), "{path}: {body}");
        if path.starts_with("/v1/responses") {
            assert_eq!(error["code"], "UNSUPPORTED_COUNT", "{body}");
        }
    }
    // An upstream whose API has no raw completions (Anthropic's), one
    // prompt or several: the backend is refused, named `prompt`.
    let anthropic = super::front(UpstreamConfig {
        kind: UpstreamKind::Anthropic,
        ..upstream_config(upstream.url("/v1"))
    })
    .await;
    for raw in [
        json!({"prompt": "Once upon a time"}),
        json!({"prompt": ["Once", "upon"]}),
    ] {
        let (status, body) = post_json(&anthropic, "/v1/completions", &raw).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["code"], "UNSUPPORTED_COMPLETION", "{body}");
        assert_eq!(body["error"]["param"], "prompt", "{body}");
    }
    anthropic.shutdown().await;
    let (status, body) = post_json(&front, "/tokenize", &json!({"content": "Once"})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "UNSUPPORTED_TOKENIZE", "{body}");
    assert!(
        observed.prompts.lock().unwrap().is_empty(),
        "nothing reached the upstream"
    );
    front.shutdown().await;
    upstream.shutdown().await;
}

/// A raw completion on an OpenAI-compatible upstream goes up to its
/// `/completions` as written (text or ids) and comes back as the
/// upstream wrote it: the same text, its legacy log-probabilities, its
/// usage and `length` at the limit, whole and streamed; echo of ids, which
/// needs the tokenizer, is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_completions_go_up_to_an_openai_compatible_upstream() {
    let goes_on = " there was a fox.";
    let scripts: Vec<String> = (0..8).map(|_| format!("{goes_on}<|im_end|>")).collect();
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let at = &front;
    let post = |body: Value| async move { post_json(at, "/v1/completions", &body).await };
    let (status, whole) = post(json!({"prompt": "Once upon a time", "logprobs": 1})).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(choice["text"], goes_on, "{whole}");
    assert_eq!(choice["finish_reason"], "stop", "{whole}");
    let tokens: String = (choice["logprobs"]["tokens"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tokens, goes_on, "{whole}");
    assert_eq!(choice["logprobs"]["text_offset"][0], 0, "{whole}");
    let prompt_ids = observed.prompts.lock().unwrap()[0].clone();
    assert_eq!(whole["usage"]["prompt_tokens"], prompt_ids.len(), "{whole}");

    // Ids go up as ids: the upstream's engine is given them.
    let (status, whole) = post(json!({"prompt": prompt_ids, "max_tokens": 2})).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(observed.prompts.lock().unwrap()[1], prompt_ids);
    assert_eq!(whole["choices"][0]["finish_reason"], "length", "{whole}");

    // Streamed, with echo of the text and the usage.
    let body = json!({"prompt": "Once upon a time", "stream": true, "echo": true,
        "stream_options": {"include_usage": true}});
    let (text, chunks) = support::sse::sse_post(&front, "/v1/completions", &body).await;
    let streamed: String = (chunks.iter())
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(streamed, format!("Once upon a time{goes_on}"), "{text}");
    assert!(chunks.last().unwrap()["usage"]["completion_tokens"].as_u64() > Some(0));

    // Echo of ids needs the tokenizer, the prompt's log-probabilities a
    // local model: both refused, named `echo`.
    for body in [
        json!({"prompt": [1, 2], "echo": true}),
        json!({"prompt": "Once", "echo": true, "logprobs": 1}),
    ] {
        let (status, refused) = post(body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], "echo", "{refused}");
    }
    front.shutdown().await;
    upstream.shutdown().await;
}

/// An upstream stopped by its token limit (its `finish_reason: length`)
/// is cut off for the front's client too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_cut_off_by_its_token_limit_is_cut_off_for_the_client() {
    let scripts: Vec<String> = (0..2).map(|_| qwen3_turn(REASONING, "Sunny.")).collect();
    let (upstream, _) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    for (max_tokens, finish) in [(6, "length"), (200, "stop")] {
        let body = json!({"messages": user, "max_tokens": max_tokens});
        let response = reqwest::Client::new()
            .post(front.url("/v1/chat/completions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let whole: Value = response.json().await.unwrap();
        assert_eq!(whole["choices"][0]["finish_reason"], finish, "{whole}");
    }
    front.shutdown().await;
    upstream.shutdown().await;
}
