//! Responses: the official `openai` SDK streaming with `store=False` and
//! encrypted content carried back (the second turn's prompt counted first
//! by `input_tokens`); stored mode refused; hidden reasoning.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_streams_responses_and_carries_encrypted_content_back() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let args = vec![server.url("/v1"), "--api".into(), "responses".into()];
    let summary = run_sdk("openai_client.py", args).await;
    let turn1 = &summary["turn1"];
    assert_eq!(turn1["reasoning"], REASONING_1, "{summary}");
    let events: Vec<&str> = turn1["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        events[..3],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added"
        ]
    );
    assert_eq!(events.last(), Some(&"response.completed"));
    assert!(
        events.contains(&"response.function_call_arguments.delta"),
        "{events:?}"
    );
    let output = turn1["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "reasoning");
    assert!(
        output[0]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("tw1.")
    );
    assert_eq!(output[1]["type"], "function_call");
    assert_eq!(summary["turn2"]["content"], ANSWER_2, "{summary}");
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));
    // `input_tokens` counted the prompt turn 2 then started from.
    let prompts = observed.prompts.lock().unwrap().clone();
    let counted = &summary["turn2_counted"];
    assert_eq!(counted["object"], "response.input_tokens", "{summary}");
    assert_eq!(counted["input_tokens"], prompts[1].len(), "{summary}");
    assert_eq!(
        counted["input_tokens"], summary["turn2"]["usage"]["input_tokens"],
        "{summary}"
    );
    let tampered = &summary["tampered"];
    assert_eq!(tampered["refused"], true, "{summary}");
    assert_eq!(tampered["status"], 400);
    assert_eq!(tampered["body"]["param"], "input[1].encrypted_content");
    assert_eq!(tampered["body"]["code"], "SEALED_REASONING_REJECTED");
    // The answer's tokens, sent with the deltas and gathered on the part.
    let logprobs = &summary["logprobs"];
    assert_eq!(logprobs["content"], ANSWER_2, "{summary}");
    assert_eq!(logprobs["deltas"], logprobs["final"]);
    let spelled: String = (logprobs["final"].as_array().unwrap().iter())
        .map(|e| e["token"].as_str().unwrap())
        .collect();
    assert_eq!(spelled, ANSWER_2, "{logprobs}");
    assert_eq!(logprobs["final"][0]["top_logprobs"][0]["logprob"], 0.0);
    server.shutdown().await;
}

#[tokio::test]
async fn responses_refuse_stored_mode_and_show_reasoning_per_visibility() {
    let (server, _) = TestServer::qwen3(&scripts()).await;
    for (body, param) in [
        (json!({"input": "hi", "store": true}), "store"),
        (
            json!({"input": "hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
        ),
        (
            json!({"input": [{"type": "item_reference", "id": "x"}]}),
            "input[0]",
        ),
        (json!({"input": "hi", "top_logprobs": 21}), "top_logprobs"),
    ] {
        let (status, refused) = post(&server, "/v1/responses", &body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], param);
        assert_eq!(refused["error"]["type"], "invalid_request_error");
    }
    // Hidden (the server's default): the reasoning item holds only the
    // sealed value, and only when asked for.
    let body = json!({"input": "What is the weather in Paris?", "tools": [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "include": ["reasoning.encrypted_content"]});
    let (status, response) = post(&server, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{response}");
    let reasoning = &response["output"][0];
    assert_eq!(reasoning["type"], "reasoning");
    assert_eq!(reasoning["summary"], json!([]));
    assert!(reasoning.get("content").is_none(), "{reasoning}");
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("tw1.")
    );
    assert!(!response.to_string().contains(REASONING_1));
    assert!(
        response["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    server.shutdown().await;
}

/// `effort: "none"` keeps thinking off beside what would show reasoning
/// (Responses' `summary` and `visibility`, chat's `reasoning.exclude`):
/// the template renders Qwen3's empty think block, no reasoning comes
/// back, and no summary pass runs. A `text` that is not an object is
/// refused; a `null` format is none.
#[tokio::test]
async fn effort_none_keeps_thinking_off_and_text_must_be_an_object() {
    let answer = "Just the answer.";
    let scripts = vec![format!("{answer}<|im_end|>"); 2];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    for text in [json!("json"), json!(["format"])] {
        let body = json!({"input": "Quick!", "text": text});
        let (status, refused) = post(&server, "/v1/responses", &body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], "text");
    }
    let body = json!({"input": "Quick!", "text": {"format": null},
        "reasoning": {"effort": "none", "summary": "detailed", "visibility": "full"}});
    let (status, response) = post(&server, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{response}");
    let output = response["output"].as_array().unwrap();
    assert!(
        output.iter().all(|i| i["type"] != "reasoning"),
        "{response}"
    );
    assert_eq!(response["output_text"], answer, "{response}");
    let body = json!({"messages": [{"role": "user", "content": "Quick!"}],
        "reasoning_effort": "none", "reasoning": {"exclude": true}});
    let (status, chat) = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{chat}");
    assert_eq!(chat["choices"][0]["message"]["content"], answer, "{chat}");
    assert_eq!(observed.prompts.lock().unwrap().len(), 2, "one pass each");
    for n in 0..2 {
        let prompt = prompt_text(&server, &observed, n);
        assert!(
            prompt.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
            "{prompt:?}"
        );
    }
    server.shutdown().await;
}
