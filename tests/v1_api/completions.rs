//! Legacy completions: a raw prompt (text, with the model's own special
//! tokens, or token ids) reaches the engine as the tokenizer encodes it,
//! with no template; the text comes back as written, whole or streamed,
//! with `echo`, `n`, `stop`, the legacy log-probabilities and `length` at
//! the default 16-token limit; several prompts are each completed; what it
//! cannot do is refused by name.

use super::*;

const PROMPT: &str = "Once upon a time";
const GOES_ON: &str = " there was a fox.";

fn script() -> String {
    format!("{GOES_ON}<|im_end|>")
}

/// The chunks of a streamed completion of `body`, after checking that
/// the stream ends with `[DONE]`.
async fn streamed(server: &TestServer, body: &Value) -> Vec<Value> {
    let (text, chunks) = support::sse::sse_post(server, "/v1/completions", body).await;
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    chunks
}

#[tokio::test]
async fn a_raw_prompt_is_continued_as_written() {
    let scripts: Vec<String> = (0..10).map(|_| script()).collect();
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let chat = support::qwen3_chat();
    let prompts = || observed.prompts.lock().unwrap().clone();

    // Text: the tokenizer's own encoding, no template around it.
    let (status, whole) = post(&server, "/v1/completions", &json!({"prompt": PROMPT})).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["object"], "text_completion");
    let choice = &whole["choices"][0];
    assert_eq!(choice["text"], GOES_ON, "{whole}");
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["logprobs"], Value::Null);
    let ids = chat.tokenizer.encode(PROMPT, true).unwrap();
    assert_eq!(prompts()[0], ids);
    assert_eq!(whole["usage"]["prompt_tokens"], ids.len());

    // The client writes its own template: its special tokens are the model's.
    let templated = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    let (status, _) = post(&server, "/v1/completions", &json!({"prompt": [templated]})).await;
    assert_eq!(status, 200);
    let im_start = chat.tokenizer.token_to_id("<|im_start|>").unwrap();
    assert_eq!(prompts()[1].iter().filter(|&&id| id == im_start).count(), 2);

    // Token ids as given; echo writes the prompt ahead.
    let body = json!({"prompt": [ids.clone()], "echo": true});
    let (status, whole) = post(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["choices"][0]["text"], format!("{PROMPT}{GOES_ON}"));
    assert_eq!(prompts()[2], ids);

    // The default limit is OpenAI's 16 tokens; a stop sequence ends it.
    let long = GOES_ON.repeat(6);
    let (server_long, _) = TestServer::qwen3(&[format!("{long}<|im_end|>")]).await;
    let (_, whole) = post(&server_long, "/v1/completions", &json!({"prompt": PROMPT})).await;
    assert_eq!(whole["choices"][0]["finish_reason"], "length", "{whole}");
    assert_eq!(whole["usage"]["completion_tokens"], 16, "{whole}");
    server_long.shutdown().await;
    let (_, whole) = post(
        &server,
        "/v1/completions",
        &json!({"prompt": PROMPT, "stop": " was"}),
    )
    .await;
    assert_eq!(whole["choices"][0]["text"], " there", "{whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");

    // Legacy log-probabilities: the tokens spell the text, their offsets
    // count characters from the start.
    let (_, whole) = post(
        &server,
        "/v1/completions",
        &json!({"prompt": PROMPT, "logprobs": 1}),
    )
    .await;
    let logprobs = &whole["choices"][0]["logprobs"];
    let tokens: Vec<&str> = (logprobs["tokens"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tokens.concat(), GOES_ON, "{whole}");
    let mut offset = 0;
    for (i, token) in tokens.iter().enumerate() {
        assert_eq!(logprobs["text_offset"][i], offset, "{whole}");
        assert_eq!(logprobs["token_logprobs"][i], 0.0);
        assert_eq!(logprobs["top_logprobs"][i][*token], 0.0, "{whole}");
        offset += token.chars().count();
    }

    // Streamed, two choices and the usage: the same text per choice.
    let body = json!({"prompt": PROMPT, "n": 2, "stream": true, "logprobs": 0,
        "stream_options": {"include_usage": true}});
    let mut texts = [String::new(), String::new()];
    let mut usage = Value::Null;
    for chunk in streamed(&server, &body).await {
        assert_eq!(chunk["object"], "text_completion", "{chunk}");
        match chunk["choices"].as_array().unwrap().first() {
            Some(c) => texts[c["index"].as_u64().unwrap() as usize] += c["text"].as_str().unwrap(),
            None => usage = chunk["usage"].clone(),
        }
    }
    assert_eq!(texts, [GOES_ON, GOES_ON]);
    assert_eq!(usage["prompt_tokens"], ids.len(), "{usage}");
    server.shutdown().await;
}

#[tokio::test]
async fn what_a_raw_completion_cannot_do_is_refused_by_name() {
    let (server, observed) = TestServer::qwen3(&[script()]).await;
    for (body, param) in [
        (json!({"prompt": PROMPT, "suffix": " the end."}), "suffix"),
        (json!({"prompt": PROMPT, "n": 2, "best_of": 3}), "best_of"),
        (json!({"prompt": vec!["a"; 129]}), "prompt"),
        (json!({"max_tokens": 4}), "prompt"),
        (json!({"prompt": ""}), "prompt"),
        (json!({"prompt": [1, 151_936]}), "prompt[1]"),
        // Of several prompts, the one at fault, by its place.
        (json!({"prompt": ["Once", [1, 151_936]]}), "prompt[1][1]"),
        (json!({"prompt": ["Once", ""]}), "prompt[1]"),
        (json!({"prompt": PROMPT, "logprobs": 21}), "logprobs"),
        (
            json!({"prompt": PROMPT, "echo": true, "logprobs": 6}),
            "logprobs",
        ),
        (json!({"prompt": PROMPT, "max_tokens": 0}), "max_tokens"),
        (
            json!({"prompt": PROMPT, "temperature": "hot"}),
            "temperature",
        ),
    ] {
        let (status, refused) = post(&server, "/v1/completions", &body).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(refused["error"]["param"], param, "{body}: {refused}");
    }
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}

/// Legacy `logprobs` goes to 5 with `echo`, as OpenAI's legacy completions
/// (every prompt token of every choice is scored): 6 is refused by name
/// before any run; 5 is answered. Without echo it goes to 20, as vLLM's.
#[tokio::test]
async fn legacy_logprobs_go_to_five_with_echo() {
    let (server, observed) = TestServer::qwen3(&[script()]).await;
    for stream in [false, true] {
        let body = json!({"prompt": PROMPT, "echo": true, "n": 4, "logprobs": 6,
                          "max_tokens": 1, "stream": stream});
        let (status, refused) = post(&server, "/v1/completions", &body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], "logprobs", "{refused}");
        assert_eq!(
            refused["error"]["type"], "invalid_request_error",
            "{refused}"
        );
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("0 to 5 with echo"), "{refused}");
    }
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");

    let (status, whole) = post(
        &server,
        "/v1/completions",
        &json!({"prompt": PROMPT, "logprobs": 5}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    let logprobs = &whole["choices"][0]["logprobs"];
    let tokens: Vec<&str> = (logprobs["tokens"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tokens.concat(), GOES_ON, "{whole}");
    for top in logprobs["top_logprobs"].as_array().unwrap() {
        let alternatives = top.as_object().unwrap().len();
        assert!((1..=5).contains(&alternatives), "{whole}");
    }
    server.shutdown().await;
}

/// The official `openai` SDK reads both: the whole completion with its
/// log-probabilities, and the stream with its usage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_reads_raw_completions() {
    let (server, _) = TestServer::qwen3(&[script(), script()]).await;
    let args = vec![
        server.url("/v1"),
        "--api".into(),
        "completions".into(),
        "--prompt".into(),
        PROMPT.into(),
    ];
    let summary = run_sdk("openai_client.py", args).await;
    let choice = &summary["whole"]["choices"][0];
    assert_eq!(choice["text"], GOES_ON, "{summary}");
    assert_eq!(choice["finish_reason"], "stop", "{summary}");
    let tokens = choice["logprobs"]["tokens"].as_array().unwrap();
    let spelled: String = tokens.iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(spelled, GOES_ON, "{summary}");
    assert_eq!(summary["streamed"], GOES_ON, "{summary}");
    assert!(
        summary["stream_usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
            > 0,
        "{summary}"
    );
    server.shutdown().await;
}

/// Several prompts in one request are each completed `n` times: choice
/// `i * n + j` is the answer `j` to prompt `i`, each after its own echo,
/// and the usage counts each prompt once.
#[tokio::test]
async fn several_prompts_are_each_completed() {
    let scripts: Vec<String> = (0..4).map(|_| script()).collect();
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let chat = support::qwen3_chat();
    let hello = chat.tokenizer.encode("Hello", true).unwrap();
    let body = json!({"prompt": [PROMPT, hello], "n": 2, "echo": true, "max_tokens": 30});
    let (status, whole) = post(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{whole}");
    let choices = whole["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 4, "{whole}");
    for (i, choice) in choices.iter().enumerate() {
        assert_eq!(choice["index"], i);
        let echo = if i < 2 { PROMPT } else { "Hello" };
        assert_eq!(choice["text"], format!("{echo}{GOES_ON}"), "{whole}");
    }
    let ids = chat.tokenizer.encode(PROMPT, true).unwrap();
    assert_eq!(
        whole["usage"]["prompt_tokens"],
        ids.len() + hello.len(),
        "{whole}"
    );
    let mut prompts = observed.prompts.lock().unwrap().clone();
    prompts.sort();
    let mut want = vec![ids.clone(), ids, hello.clone(), hello];
    want.sort();
    assert_eq!(prompts, want);
    server.shutdown().await;
}

/// `max_tokens: 0` with `echo` is the prompt alone, as evaluation
/// scripts ask for it: its text, cut off at its limit before any token,
/// the prompt counted and nothing generated (the engine is never asked).
#[tokio::test]
async fn no_tokens_with_echo_is_the_prompt_alone() {
    let (server, observed) = TestServer::qwen3(&[script()]).await;
    let body = json!({"prompt": PROMPT, "max_tokens": 0, "echo": true});
    let (status, whole) = post(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(choice["text"], PROMPT, "{whole}");
    assert_eq!(choice["finish_reason"], "length", "{whole}");
    let ids = support::qwen3_chat()
        .tokenizer
        .encode(PROMPT, true)
        .unwrap();
    assert_eq!(whole["usage"]["prompt_tokens"], ids.len(), "{whole}");
    assert_eq!(whole["usage"]["completion_tokens"], 0, "{whole}");

    // Streamed: the echo, then the end.
    let body = json!({"prompt": PROMPT, "max_tokens": 0, "echo": true, "stream": true});
    let (mut text, mut finish) = (String::new(), Value::Null);
    for chunk in streamed(&server, &body).await {
        let choice = &chunk["choices"][0];
        text += choice["text"].as_str().unwrap_or_default();
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    assert_eq!(text, PROMPT);
    assert_eq!(finish, "length");
    assert!(observed.prompts.lock().unwrap().is_empty());
    server.shutdown().await;
}

/// A prompt that fills the model's whole context has no room for a token
/// but can be echoed with none asked: only a request for tokens is refused
/// for its length, naming the prompt.
#[tokio::test]
async fn a_prompt_of_the_whole_context_is_echoed_with_no_tokens_asked() {
    let (server, observed) = TestServer::qwen3(&[script()]).await;
    let ids: Vec<u32> = (0..4096).map(|i| 100 + i % 1000).collect();
    let body = json!({"prompt": ids, "max_tokens": 0, "echo": true});
    let (status, whole) = post(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "length", "{whole}");
    assert_eq!(whole["usage"]["prompt_tokens"], 4096, "{whole}");

    let body = json!({"prompt": ids, "max_tokens": 1});
    let (status, refused) = post(&server, "/v1/completions", &body).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "prompt", "{refused}");
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}
