//! The privacy canary on the OpenAI and Anthropic surfaces: chat
//! completions, responses and messages, each a tool turn in full visibility and its
//! answer with the sealed value carried back, a tampered carrier, and
//! broken JSON holding the canary; the conversations counted by
//! `input_tokens` and `count_tokens` too, and a raw completion (legacy
//! `/v1/completions`) of a prompt holding it, tokenized and back. Refusal bodies must echo nothing
//! secret.

use serde_json::{Value, json};

use super::client::tamper;
use super::secrets::{Canaries, Secrets, contains};
use super::support::TestServer;

fn lookup() -> Value {
    json!({"name": "lookup", "description": "Looks a city up",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

async fn post(server: &TestServer, path: &str, body: String) -> (u16, Vec<u8>) {
    let response = reqwest::Client::new()
        .post(server.url(path))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

fn remember(secrets: &Secrets, carrier: &str) {
    let sealed = carrier.rsplit('.').next().unwrap_or_default().to_owned();
    secrets.sealed.lock().unwrap().push(sealed);
}

/// Three conversations on `server`, whose scripts are: tool turn, answer,
/// three times.
pub(super) async fn conversations(server: &TestServer, c: &Canaries, secrets: &Secrets) {
    // Chat completions.
    let mut messages =
        vec![json!({"role": "user", "content": format!("Tell me about {}", c.user)})];
    // Penalties, a bias and token log-probabilities on the way, as a
    // sampling client sends them.
    let chat = |messages: &[Value]| {
        json!({"messages": messages, "tools": [{"type": "function", "function": lookup()}],
               "reasoning": {"visibility": "full"}, "frequency_penalty": 0.5,
               "presence_penalty": 0.25, "logit_bias": {"13": 1},
               "logprobs": true, "top_logprobs": 2})
        .to_string()
    };
    let (status, body) = post(server, "/v1/chat/completions", chat(&messages)).await;
    assert_eq!(status, 200);
    let turn: Value = serde_json::from_slice(&body).unwrap();
    let mut message = turn["choices"][0]["message"].clone();
    assert!(
        message["reasoning"]
            .as_str()
            .unwrap()
            .contains(&c.reasoning)
    );
    let carrier = message["reasoning_details"][0]["data"]
        .as_str()
        .unwrap()
        .to_owned();
    remember(secrets, &carrier);
    let call_id = message["tool_calls"][0]["id"].clone();
    message.as_object_mut().unwrap().remove("reasoning");
    message.as_object_mut().unwrap().remove("reasoning_content");
    messages.push(message);
    messages.push(json!({"role": "tool", "tool_call_id": call_id,
                         "content": format!("Found {}", c.tool_result)}));
    let (status, body) = post(server, "/v1/chat/completions", chat(&messages)).await;
    assert_eq!(status, 200);
    assert!(contains(&body, c.answer.as_bytes()));
    assert!(contains(&body, b"top_logprobs"));
    messages[1]["reasoning_details"][0]["data"] = json!(tamper(&carrier));
    let (status, body) = post(server, "/v1/chat/completions", chat(&messages)).await;
    assert_eq!(status, 400);
    assert!(
        secrets.found_in(&body).is_none(),
        "the refusal echoes nothing secret"
    );
    let (status, body) = post(
        server,
        "/v1/chat/completions",
        format!("{{\"messages\": \"{}\"", c.user),
    )
    .await;
    assert_eq!(status, 400);
    assert!(secrets.found_in(&body).is_none());
    // A bias keyed by text, not a token id, is refused without quoting it.
    let biased = json!({"messages": [{"role": "user", "content": "Hi"}],
                        "logit_bias": {c.user.as_str(): -100}});
    let (status, body) = post(server, "/v1/chat/completions", biased.to_string()).await;
    assert_eq!(status, 400);
    assert!(contains(&body, b"logit_bias"));
    assert!(secrets.found_in(&body).is_none());

    // Responses, streamed, the reasoning item carried back.
    let mut items = vec![json!({"role": "user", "content": format!("Tell me about {}", c.user)})];
    let responses = |items: &[Value], stream: bool| {
        let mut tool = lookup();
        tool["type"] = json!("function");
        json!({"input": items, "tools": [tool], "store": false, "stream": stream,
               "include": ["reasoning.encrypted_content", "message.output_text.logprobs"],
               "reasoning": {"visibility": "full"}})
        .to_string()
    };
    let (status, body) = post(server, "/v1/responses", responses(&items, false)).await;
    assert_eq!(status, 200);
    let turn: Value = serde_json::from_slice(&body).unwrap();
    let output = turn["output"].as_array().unwrap().clone();
    let carrier = output[0]["encrypted_content"].as_str().unwrap().to_owned();
    remember(secrets, &carrier);
    let call = output
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap();
    let result = json!({"type": "function_call_output", "call_id": call["call_id"],
                        "output": format!("Found {}", c.tool_result)});
    items.extend(output.iter().cloned());
    items.push(result);
    let (status, body) = post(server, "/v1/responses", responses(&items, true)).await;
    assert_eq!(status, 200);
    assert!(contains(&body, b"response.completed"));
    counted(
        server,
        "/v1/responses/input_tokens",
        responses(&items, false),
        secrets,
    )
    .await;
    items[1]["encrypted_content"] = json!(tamper(&carrier));
    for path in ["/v1/responses", "/v1/responses/input_tokens"] {
        let (status, body) = post(server, path, responses(&items, false)).await;
        assert_eq!(status, 400, "{path}");
        assert!(
            secrets.found_in(&body).is_none(),
            "the refusal echoes nothing secret"
        );
    }

    // Messages, streamed.
    let mut messages =
        vec![json!({"role": "user", "content": format!("Tell me about {}", c.user)})];
    let anthropic = |messages: &[Value], stream: bool| {
        let tool = lookup();
        json!({"max_tokens": 100, "messages": messages, "stream": stream,
               "tools": [{"name": tool["name"], "description": tool["description"],
                          "input_schema": tool["parameters"]}],
               "thinking": {"type": "enabled", "budget_tokens": 200}})
        .to_string()
    };
    let (status, body) = post(server, "/v1/messages", anthropic(&messages, false)).await;
    assert_eq!(status, 200);
    let turn: Value = serde_json::from_slice(&body).unwrap();
    let content = turn["content"].clone();
    let carrier = content[0]["signature"].as_str().unwrap().to_owned();
    remember(secrets, &carrier);
    let tool_use = content
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    let result = json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": tool_use["id"], "content": format!("Found {}", c.tool_result)}]});
    messages.push(json!({"role": "assistant", "content": content}));
    messages.push(result);
    let (status, body) = post(server, "/v1/messages", anthropic(&messages, true)).await;
    assert_eq!(status, 200);
    assert!(contains(&body, b"message_stop"));
    counted(
        server,
        "/v1/messages/count_tokens",
        anthropic(&messages, false),
        secrets,
    )
    .await;
    messages[1]["content"][0]["signature"] = json!(tamper(&carrier));
    for path in ["/v1/messages", "/v1/messages/count_tokens"] {
        let (status, body) = post(server, path, anthropic(&messages, false)).await;
        assert_eq!(status, 400, "{path}");
        assert!(
            secrets.found_in(&body).is_none(),
            "the refusal echoes nothing secret"
        );
    }
    completion(server, c, secrets).await;
}

/// A raw completion of a prompt holding the user's canary, streamed with
/// its log-probabilities; one refused (a suffix holding it too) names no
/// secret; the prompt tokenized and its ids detokenized.
async fn completion(server: &TestServer, c: &Canaries, secrets: &Secrets) {
    let prompt = format!("Tell me about {}", c.user);
    let body = json!({"prompt": prompt, "max_tokens": 64, "logprobs": 2, "stream": true});
    let (status, body) = post(server, "/v1/completions", body.to_string()).await;
    assert_eq!(status, 200);
    assert!(contains(&body, b"[DONE]"));
    let bad = json!({"prompt": prompt, "suffix": prompt}).to_string();
    let (status, body) = post(server, "/v1/completions", bad).await;
    assert_eq!(status, 400);
    assert!(
        secrets.found_in(&body).is_none(),
        "the refusal echoes nothing secret"
    );
    // Its tokens and back.
    let body = json!({"content": prompt, "with_pieces": true}).to_string();
    let (status, body) = post(server, "/tokenize", body).await;
    assert_eq!(status, 200);
    let pieces: Value = serde_json::from_slice(&body).unwrap();
    let ids: Vec<&Value> = (pieces["tokens"].as_array().unwrap().iter())
        .map(|p| &p["id"])
        .collect();
    let (status, _) = post(server, "/detokenize", json!({ "tokens": ids }).to_string()).await;
    assert_eq!(status, 200);
}

/// A conversation's prompt counted at `path` (its sealed reasoning opened
/// to render it): a count, and nothing secret beside it.
async fn counted(server: &TestServer, path: &str, body: String, secrets: &Secrets) {
    let (status, body) = post(server, path, body).await;
    assert_eq!(status, 200, "{path}");
    let count: Value = serde_json::from_slice(&body).unwrap();
    assert!(count["input_tokens"].as_u64().unwrap() > 0, "{count}");
    assert!(
        secrets.found_in(&body).is_none(),
        "{path} echoes nothing secret"
    );
}
