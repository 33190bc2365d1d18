//! Chat completions: non-streaming shapes and continuity over HTTP, the
//! official `openai` SDK streaming with tools, and stop sequences.

use super::*;

#[tokio::test]
async fn chat_completion_carries_reasoning_and_sealed_details_back() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let mut messages = vec![json!({"role": "user", "content": "What is the weather in Paris?"})];
    let request = |messages: &[Value]| {
        json!({"model": "x", "messages": messages, "tools": [weather_tool()],
               "reasoning": {"visibility": "full"}})
    };
    let (status, turn1) = post(&server, "/v1/chat/completions", &request(&messages)).await;
    assert_eq!(status, 200, "{turn1}");
    let message = &turn1["choices"][0]["message"];
    assert_eq!(message["reasoning"], REASONING_1);
    assert_eq!(message["reasoning_content"], REASONING_1);
    assert_eq!(turn1["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
    let detail = &message["reasoning_details"][0];
    assert_eq!(detail["type"], "reasoning.encrypted");
    assert!(detail["data"].as_str().unwrap().starts_with("tw1."));
    assert!(
        turn1["usage"]["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    let call_id = message["tool_calls"][0]["id"].clone();
    // The client sends the message back as it got it, minus the plaintext.
    let mut back = message.clone();
    back.as_object_mut().unwrap().remove("reasoning");
    back.as_object_mut().unwrap().remove("reasoning_content");
    messages.push(back);
    messages.push(
        json!({"role": "tool", "tool_call_id": call_id, "content": "{\"temperature_c\": 18}"}),
    );
    let (status, turn2) = post(&server, "/v1/chat/completions", &request(&messages)).await;
    assert_eq!(status, 200, "{turn2}");
    assert_eq!(turn2["choices"][0]["message"]["content"], ANSWER_2);
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));

    // An altered value is refused, naming where it was.
    let data = detail["data"].as_str().unwrap();
    let i = data.len() - 5;
    let flipped = if &data[i..=i] == "A" { "B" } else { "A" };
    let altered = format!("{}{flipped}{}", &data[..i], &data[i + 1..]);
    messages[1]["reasoning_details"][0]["data"] = json!(altered);
    let (status, refused) = post(&server, "/v1/chat/completions", &request(&messages)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"]["param"],
        "messages[1].reasoning_details[0].data"
    );
    assert_eq!(refused["error"]["code"], "SEALED_REASONING_REJECTED");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reasoning-msg-")
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_streams_chat_with_tools_and_keeps_the_reasoning() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let summary = run_sdk("openai_client.py", vec![server.url("/v1")]).await;
    assert_eq!(summary["models"][0], "Qwen3-0.6B-scripted");
    let turn1 = &summary["turn1"];
    assert_eq!(turn1["reasoning"], REASONING_1, "{summary}");
    assert_eq!(turn1["reasoning_content"], REASONING_1);
    assert_eq!(turn1["finish"], "tool_calls");
    assert_eq!(turn1["tool_calls"][0]["name"], "get_weather");
    assert!(
        turn1["usage"]["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(summary["turn2"]["content"], ANSWER_2, "{summary}");
    assert!(prompt_text(&server, &observed, 1).contains(&restored_turn_1()));
    let tampered = &summary["tampered"];
    assert_eq!(tampered["refused"], true, "{summary}");
    assert_eq!(tampered["status"], 400);
    assert_eq!(
        tampered["body"]["param"],
        "messages[1].reasoning_details[0].data"
    );
    assert_eq!(tampered["body"]["code"], "SEALED_REASONING_REJECTED");
    let bad = &summary["bad_penalty"];
    assert_eq!(bad["refused"], true, "{summary}");
    assert_eq!(bad["status"], 400);
    assert_eq!(bad["body"]["param"], "frequency_penalty");
    assert_eq!(bad["body"]["type"], "invalid_request_error");
    // The scripted engine is sure of each token: logprob 0, itself the
    // most likely. The entries' bytes spell the answer, streamed or not.
    for side in ["whole", "stream"] {
        let side = &summary["logprobs"][side];
        assert_eq!(side["content"], ANSWER_2, "{summary}");
        let mut spelled = Vec::new();
        for entry in side["entries"].as_array().unwrap() {
            assert_eq!(entry["logprob"], 0.0, "{entry}");
            assert_eq!(entry["top_logprobs"][0]["token"], entry["token"], "{entry}");
            let bytes: Vec<u8> = serde_json::from_value(entry["bytes"].clone()).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                entry["token"].as_str().unwrap()
            );
            spelled.extend(bytes);
        }
        assert_eq!(String::from_utf8(spelled).unwrap(), ANSWER_2, "{side}");
    }
    server.shutdown().await;
}

/// OpenAI's penalties, `logit_bias` and the vLLM/llama.cpp extras reach
/// the run; a value of the wrong type or out of range (a bias on a token
/// outside the model's vocabulary included, alternatives past 20 or
/// without `logprobs: true`) is a 400 naming the parameter, before the
/// engine sees anything.
#[tokio::test]
async fn sampling_parameters_are_honoured_or_refused_by_name() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn(REASONING_2, ANSWER_2)]).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    let refusals = [
        ("frequency_penalty", json!(5), "INVALID_SAMPLING"),
        ("presence_penalty", json!(-2.5), "INVALID_SAMPLING"),
        ("min_p", json!(1.5), "INVALID_SAMPLING"),
        ("repetition_penalty", json!(0), "INVALID_SAMPLING"),
        ("top_p", json!(0), "INVALID_SAMPLING"),
        ("top_k", json!(1.5), "invalid_request"),
        ("frequency_penalty", json!("high"), "invalid_request"),
        ("logit_bias", json!({"Paris": -100}), "INVALID_SAMPLING"),
        ("logit_bias", json!({"5": 101}), "INVALID_SAMPLING"),
        ("logit_bias", json!({"5": "ban"}), "INVALID_SAMPLING"),
        ("logit_bias", json!({"151936": -100}), "INVALID_SAMPLING"),
        ("logit_bias", json!([[5, -100]]), "invalid_request"),
        ("logprobs", json!("yes"), "invalid_request"),
        ("top_logprobs", json!(2), "invalid_request"),
    ];
    for (param, value, code) in refusals {
        let mut body = json!({"model": "x", "messages": user});
        body[param] = value;
        let (status, refused) = post(&server, "/v1/chat/completions", &body).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(refused["error"]["param"], param, "{refused}");
        assert_eq!(refused["error"]["type"], "invalid_request_error");
        assert_eq!(refused["error"]["code"], code, "{refused}");
        assert!(!refused.to_string().contains("Paris"), "{refused}");
    }
    assert!(observed.prompts.lock().unwrap().is_empty());
    let body = json!({"model": "x", "messages": user, "temperature": 0,
                      "frequency_penalty": 2, "presence_penalty": -2, "top_k": 20,
                      "min_p": 0.05, "repetition_penalty": 1.1, "seed": null,
                      "logit_bias": {"151935": -100, "13": 5}, "logprobs": false});
    let (status, answer) = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], ANSWER_2);
    let sampling = observed.sampling.lock().unwrap()[0].clone();
    assert_eq!(
        (sampling.frequency_penalty, sampling.presence_penalty),
        (2.0, -2.0)
    );
    assert_eq!((sampling.top_k, sampling.min_p), (20, 0.05));
    assert_eq!(sampling.repetition_penalty, 1.1);
    assert_eq!(sampling.seed, None);
    assert_eq!(sampling.logit_bias, vec![(13, 5.0), (151_935, -100.0)]);
    server.shutdown().await;
}

#[tokio::test]
async fn stop_sequences_end_the_answer_on_both_apis() {
    let script = qwen3_turn(REASONING_2, ANSWER_2);
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    let (status, chat) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "stop": ["sunny"]}),
    )
    .await;
    assert_eq!(status, 200, "{chat}");
    assert_eq!(chat["choices"][0]["message"]["content"], "It is 18 °C and ");
    assert_eq!(chat["choices"][0]["finish_reason"], "stop");
    let (body, chunks) = support::sse::sse_post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "stop": "°C", "stream": true}),
    )
    .await;
    let streamed: String = (chunks.iter())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, "It is 18 ");
    assert!(body.ends_with("data: [DONE]\n\n"));
    // With log-probabilities, the stop sequence spanning two tokens (" °",
    // "C") still ends the answer; the entries list the tokens that wrote it.
    let body = json!({"messages": user, "stop": "°C", "stream": true, "logprobs": true});
    let (streamed, spelled) = support::logprobs::chat_streamed(&server, &body).await;
    assert_eq!(streamed, "It is 18 ");
    assert_eq!(String::from_utf8(spelled).unwrap(), "It is 18 °C");
    let (status, message) = post(
        &server,
        "/v1/messages",
        &json!({"messages": user, "max_tokens": 100, "stop_sequences": ["sunny"]}),
    )
    .await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["content"][0]["text"], "It is 18 °C and ");
    assert_eq!(message["stop_reason"], "stop_sequence");
    assert_eq!(message["stop_sequence"], "sunny");
    let (status, refused) = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": user, "stop": [1]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["param"], "stop[0]");
    assert_eq!(observed.prompts.lock().unwrap().len(), 4);
    server.shutdown().await;
}

/// Plaintext `reasoning_content` / `reasoning` sent back (mlxcel #394's
/// behaviour) follows the AG-UI policy for client reasoning: it reaches
/// the template only on a server that trusts client reasoning.
#[tokio::test]
async fn plaintext_reasoning_sent_back_follows_the_trust_policy() {
    use std::time::Duration;

    use thinkwire::agent::{Agent, AgentConfig};
    use thinkwire::server::ServerConfig;
    use thinkwire_seal::{Key, KeyRing};

    let conversation = |field: &str| {
        json!({"messages": [
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": null, field: REASONING_1, "tool_calls": [
                {"id": "call-1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call-1", "content": "18 degrees"},
        ], "tools": [weather_tool()]})
    };
    for trust in [true, false] {
        let (model, observed) =
            support::scripted_qwen3(&[qwen3_turn(REASONING_2, ANSWER_2)], Duration::ZERO);
        let mut config = AgentConfig::default();
        config.replay.trust_client_reasoning = trust;
        let keys = KeyRing::new(Key::generate().unwrap());
        let server =
            TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
        for (n, field) in ["reasoning_content", "reasoning"].into_iter().enumerate() {
            let (status, body) = post(&server, "/v1/chat/completions", &conversation(field)).await;
            assert_eq!(status, 200, "{body}");
            let prompt = prompt_text(&server, &observed, n);
            assert_eq!(
                prompt.contains(&restored_turn_1()),
                trust,
                "{field}, trust {trust}"
            );
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_choices_are_runs_of_their_own_with_seeds_counted_up() {
    let answers = ["North.", "South.", "East.", "West."];
    let scripts: Vec<String> = answers
        .iter()
        .map(|a| qwen3_turn(&format!("Thinking of {a}"), a))
        .collect();
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let summary = run_sdk(
        "openai_client.py",
        vec![
            server.url("/v1"),
            "--choices".into(),
            "2".into(),
            "--seed".into(),
            "40".into(),
        ],
    )
    .await;
    // The scripts go to the runs in the order they ask, so each pair of
    // answers is checked as a set, with each choice's reasoning its own.
    let texts = |key: &str| -> Vec<String> {
        let choices = summary[key].as_array().unwrap();
        assert_eq!(choices.len(), 2, "{summary}");
        for (index, choice) in choices.iter().enumerate() {
            assert_eq!(choice["index"], index);
            assert_eq!(choice["finish"], "stop");
            let content = choice["content"].as_str().unwrap();
            assert_eq!(choice["reasoning"], format!("Thinking of {content}"));
        }
        let mut texts: Vec<String> = choices
            .iter()
            .map(|c| c["content"].as_str().unwrap().to_owned())
            .collect();
        texts.sort();
        texts
    };
    assert_eq!(texts("streamed"), ["North.", "South."]);
    assert_eq!(texts("whole"), ["East.", "West."]);
    let mut seeds: Vec<Option<u64>> = observed
        .sampling
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.seed)
        .collect();
    seeds.sort();
    assert_eq!(seeds, [Some(40), Some(40), Some(41), Some(41)]);

    // Without a seed the choices still draw apart: from one picked for the
    // request, counted up.
    let body = json!({"messages": [{"role": "user", "content": "Which way?"}], "n": 3});
    let (status, answer) = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"].as_array().unwrap().len(), 3);
    let seeds: Vec<u64> = observed.sampling.lock().unwrap()[4..]
        .iter()
        .map(|p| p.seed.unwrap())
        .collect();
    let base = *seeds.iter().min().unwrap();
    let mut offsets: Vec<u64> = seeds.iter().map(|s| s.wrapping_sub(base)).collect();
    offsets.sort();
    assert_eq!(offsets, [0, 1, 2]);

    // Usage counts the prompt once and the tokens of both answers: each
    // script is as long as the one a single answer gets now (the last,
    // repeated).
    let body = json!({"messages": [{"role": "user", "content": "Which way?"}]});
    let (_, single) = post(&server, "/v1/chat/completions", &body).await;
    let tokens = |usage: &Value| {
        let reasoning = &usage["completion_tokens_details"]["reasoning_tokens"];
        (
            usage["completion_tokens"].as_u64().unwrap(),
            reasoning.as_u64().unwrap(),
        )
    };
    let (output, reasoning) = tokens(&single["usage"]);
    assert!(reasoning > 0 && output > reasoning, "{single}");
    let one_prompt = observed.prompts.lock().unwrap()[0].len() as u64;
    for key in ["stream_usage", "whole_usage"] {
        let usage = &summary[key];
        assert_eq!(usage["prompt_tokens"], one_prompt, "{key}: {usage}");
        assert_eq!(tokens(usage), (2 * output, 2 * reasoning), "{key}: {usage}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn n_past_what_one_request_may_start_is_refused_by_name() {
    let (model, _) = support::scripted_qwen3(&[qwen3_turn("r", "a")], std::time::Duration::ZERO);
    let keys = thinkwire_seal::KeyRing::new(thinkwire_seal::Key::generate().unwrap());
    let config = thinkwire::server::ServerConfig {
        max_runs_per_client: 2,
        ..thinkwire::server::ServerConfig::default()
    };
    let agent = thinkwire::agent::Agent::new(model, keys, Default::default());
    let server = TestServer::start(agent, config).await;
    for (n, status) in [(json!(3), 400), (json!(0), 400), (json!(2), 200)] {
        let body = json!({"messages": [{"role": "user", "content": "x"}], "n": n});
        let (got, answer) = post(&server, "/v1/chat/completions", &body).await;
        assert_eq!(got, status, "n = {n}: {answer}");
        if status == 400 {
            assert_eq!(answer["error"]["param"], "n", "{answer}");
        }
    }
    server.shutdown().await;
}

/// Answers whose end the splitter holds to the last token (a possible
/// marker's start, trailing whitespace) still list every token of their
/// text, once: the entries' bytes spell the content, streamed or not.
#[tokio::test]
async fn logprobs_cover_an_answer_to_its_held_end() {
    let answers = ["It is sunny <", "It is sunny.\n", "It is sunny. "];
    let scripts: Vec<String> = (answers.iter())
        .flat_map(|a| [qwen3_turn(REASONING_2, a), qwen3_turn(REASONING_2, a)])
        .collect();
    let (server, _) = TestServer::qwen3(&scripts).await;
    let user = json!([{"role": "user", "content": "Weather?"}]);
    for _ in answers {
        let body = json!({"messages": user, "logprobs": true});
        let (status, whole) = post(&server, "/v1/chat/completions", &body).await;
        assert_eq!(status, 200, "{whole}");
        let choice = &whole["choices"][0];
        let spelled = support::logprobs::spelled(choice["logprobs"]["content"].as_array().unwrap());
        let content = choice["message"]["content"].as_str().unwrap();
        assert_eq!(String::from_utf8(spelled).unwrap(), content, "{whole}");
        let body = json!({"messages": user, "logprobs": true, "stream": true});
        let (streamed, spelled) = support::logprobs::chat_streamed(&server, &body).await;
        assert_eq!(streamed, content);
        assert_eq!(String::from_utf8(spelled).unwrap(), streamed);
    }
    server.shutdown().await;
}
