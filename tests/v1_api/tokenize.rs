//! `/tokenize` and `/detokenize` in llama.cpp's and vLLM's terms, on the
//! real Qwen3 tokenizer: ids as the tokenizer gives them, specials added
//! as each server's default says, pieces, and back to the text.

use super::*;

#[tokio::test]
async fn text_goes_to_the_models_ids_and_back_in_either_servers_terms() {
    let (server, observed) = TestServer::qwen3(&[]).await;
    let chat = support::qwen3_chat();
    let text = "Hello <|im_start|>wörld";
    let ids = chat.tokenizer.encode(text, false).unwrap();

    // llama.cpp: `content`, nothing added by default, pieces on asking.
    let (status, body) = post(&server, "/tokenize", &json!({"content": text})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tokens"], json!(ids));
    assert_eq!(body["count"], ids.len());
    assert_eq!(body["max_model_len"], 4096);
    let im_start = chat.tokenizer.token_to_id("<|im_start|>").unwrap();
    assert!(
        ids.contains(&im_start),
        "special tokens in the text are read as tokens"
    );
    let (_, body) = post(
        &server,
        "/tokenize",
        &json!({"content": text, "with_pieces": true}),
    )
    .await;
    let pieces = body["tokens"].as_array().unwrap();
    assert_eq!(pieces.len(), ids.len());
    let mut spelled = Vec::new();
    for (piece, id) in pieces.iter().zip(&ids) {
        assert_eq!(piece["id"], *id);
        match &piece["piece"] {
            Value::String(s) => spelled.extend(s.as_bytes()),
            bytes => spelled.extend(
                bytes
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap() as u8),
            ),
        }
    }
    assert_eq!(String::from_utf8(spelled).unwrap(), text);

    // vLLM: `prompt`, the tokenizer's specials added unless told not to.
    let (_, body) = post(&server, "/tokenize", &json!({"prompt": text})).await;
    assert_eq!(
        body["tokens"],
        json!(chat.tokenizer.encode(text, true).unwrap())
    );
    let (_, body) = post(
        &server,
        "/tokenize",
        &json!({"prompt": text, "add_special_tokens": false}),
    )
    .await;
    assert_eq!(body["tokens"], json!(ids));

    // Back: both servers' field, special tokens written out.
    let (status, body) = post(&server, "/detokenize", &json!({"tokens": ids})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"], text);
    assert_eq!(body["prompt"], text);

    for (path, body, param) in [
        ("/tokenize", json!({}), "content"),
        ("/tokenize", json!({"content": 7}), "content"),
        (
            "/tokenize",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            "messages",
        ),
        ("/detokenize", json!({}), "tokens"),
        ("/detokenize", json!({"tokens": [1, 151_936]}), "tokens[1]"),
        ("/detokenize", json!({"tokens": [1, "a"]}), "tokens[1]"),
    ] {
        let (status, refused) = post(&server, path, &body).await;
        assert_eq!(status, 400, "{path} {body}: {refused}");
        assert_eq!(refused["error"]["param"], param, "{path} {body}: {refused}");
    }
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}

/// One request holds at most four of the model's context lengths: text
/// that encodes to more is refused naming its field and the limit, before
/// any piece is built; ids past it are refused before they are read. Up
/// to the limit both still answer.
#[tokio::test]
async fn more_than_thirty_two_contexts_of_tokens_are_refused_by_field() {
    let (server, observed) = TestServer::qwen3(&[]).await;
    let chat = support::qwen3_chat();
    let (status, body) = post(&server, "/tokenize", &json!({"content": "hi"})).await;
    assert_eq!(status, 200, "{body}");
    let limit = 32 * body["max_model_len"].as_u64().unwrap() as usize;

    // " a" is a token of its own wherever it stands.
    let at_limit = " a".repeat(limit);
    let ids = chat.tokenizer.encode(&at_limit, false).unwrap();
    assert_eq!(ids.len(), limit);
    let (status, body) = post(
        &server,
        "/tokenize",
        &json!({"content": at_limit, "with_pieces": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], limit);
    assert_eq!(body["tokens"].as_array().unwrap().len(), limit);
    assert_eq!(body["tokens"][0]["id"], ids[0]);
    assert_eq!(body["tokens"][0]["piece"], " a");
    let (status, body) = post(&server, "/detokenize", &json!({"tokens": ids})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"], at_limit);

    let past = " a".repeat(limit + 1);
    assert!(chat.tokenizer.encode(&past, false).unwrap().len() > limit);
    for (body, param) in [
        (json!({"content": past}), "content"),
        (json!({"content": past, "with_pieces": true}), "content"),
        (json!({"prompt": past}), "prompt"),
    ] {
        let (status, refused) = post(&server, "/tokenize", &body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], param, "{refused}");
        assert_eq!(refused["error"]["type"], "invalid_request_error");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("the {limit} one request")),
            "{message}"
        );
    }
    let too_many = vec![ids[0]; limit + 1];
    let (status, refused) = post(&server, "/detokenize", &json!({"tokens": too_many})).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "tokens", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the {limit} one request")),
        "{message}"
    );
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}

/// The tokenizer endpoints and the counts, many at once (more than the
/// slots of a small machine): each is answered, waiting its turn for a
/// slot rather than refused, and none of them runs anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenizing_and_counting_at_once_all_answer() {
    let (server, observed) = TestServer::qwen3(&[]).await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let asks = [
        (
            "/tokenize",
            json!({"content": "Hello there", "with_pieces": true}),
        ),
        ("/detokenize", json!({"tokens": [9707, 1052]})),
        ("/v1/messages/count_tokens", json!({"messages": user})),
        ("/v1/responses/input_tokens", json!({"input": "hi"})),
    ];
    // One of each first: what the tokenizer builds on first use is built.
    for (path, body) in &asks {
        let (status, body) = post(&server, path, body).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let all = (0..16).map(|i| {
        let (path, body) = &asks[i % asks.len()];
        let server = &server;
        async move { (*path, post(server, path, body).await) }
    });
    for (path, (status, body)) in futures_util::future::join_all(all).await {
        assert_eq!(status, 200, "{path}: {body}");
    }
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}
