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
