//! A Qwen3-architecture model on the MLX engine, with the real Qwen3
//! tokenizer and chat template, streams reasoning then text through the
//! official `@ag-ui/client`.
//!
//! No reasoning-model weights can be had here, so the test writes a tiny
//! Qwen3 model with seeded random weights. Its name marks it as a
//! thinking-only release (`*qwen3*thinking*` in the registry), so its output
//! starts inside reasoning; the reasoning budget then force-feeds
//! `</think>` and the answer follows. Every token comes from MLX.
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::cli::ModelArgs;
use thinkwire::server::ServerConfig;
use thinkwire_protocol::EventKind;
use thinkwire_seal::{Key, KeyRing};

use support::TestServer;

const HIDDEN: usize = 64;
const LAYERS: usize = 2;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HEAD_DIM: usize = 16;
const FFN: usize = 128;
const VOCAB: usize = 151_936;

/// A tiny xorshift generator: seeded, so the model is the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        // Uniform in [-1, 1).
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Writes `tensors` (name, shape, f32 data) as a safetensors file.
fn write_safetensors(path: &Path, tensors: &[(String, Vec<usize>, Vec<f32>)]) {
    let mut header = serde_json::Map::new();
    let mut offset = 0usize;
    for (name, shape, data) in tensors {
        let len = data.len() * 4;
        header.insert(
            name.clone(),
            json!({"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len]}),
        );
        offset += len;
    }
    let mut header = serde_json::Value::Object(header).to_string();
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(&(header.len() as u64).to_le_bytes())
        .unwrap();
    file.write_all(header.as_bytes()).unwrap();
    for (_, _, data) in tensors {
        for v in data {
            file.write_all(&v.to_le_bytes()).unwrap();
        }
    }
    file.flush().unwrap();
}

/// The model folder, written once per target directory. Tests in other
/// processes may write it at the same time: each writes a folder of its
/// own and the first to rename it into place wins.
fn tiny_qwen3() -> PathBuf {
    let done =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-models/Qwen3-Tiny-Thinking-Random");
    if done.join("model.safetensors").is_file() {
        return done;
    }
    let dir = done.with_extension(format!("part-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokenizer = thinkwire_chat::assets::qwen3_tokenizer_dir();
    for file in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(tokenizer.join(file), dir.join(file)).unwrap_or_else(|e| {
            panic!(
                "copying {file} from {} (run scripts/setup): {e}",
                tokenizer.display()
            )
        });
    }
    let config = json!({
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "vocab_size": VOCAB,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "tie_word_embeddings": true,
        "torch_dtype": "float32",
        "bos_token_id": 151_643,
        "eos_token_id": 151_645,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let mut rng = Rng(0x5eed_1234_abcd_0042);
    let mut random = |shape: Vec<usize>, scale: f32| {
        let n = shape.iter().product();
        (
            shape,
            (0..n).map(|_| rng.next() * scale).collect::<Vec<f32>>(),
        )
    };
    let ones = |n: usize| (vec![n], vec![1.0f32; n]);
    let mut tensors = Vec::new();
    let mut push =
        |name: String, (shape, data): (Vec<usize>, Vec<f32>)| tensors.push((name, shape, data));
    push(
        "model.embed_tokens.weight".into(),
        random(vec![VOCAB, HIDDEN], 0.5),
    );
    push("model.norm.weight".into(), ones(HIDDEN));
    for i in 0..LAYERS {
        let p = format!("model.layers.{i}");
        push(format!("{p}.input_layernorm.weight"), ones(HIDDEN));
        push(format!("{p}.post_attention_layernorm.weight"), ones(HIDDEN));
        push(
            format!("{p}.self_attn.q_proj.weight"),
            random(vec![HEADS * HEAD_DIM, HIDDEN], 0.2),
        );
        push(
            format!("{p}.self_attn.k_proj.weight"),
            random(vec![KV_HEADS * HEAD_DIM, HIDDEN], 0.2),
        );
        push(
            format!("{p}.self_attn.v_proj.weight"),
            random(vec![KV_HEADS * HEAD_DIM, HIDDEN], 0.2),
        );
        push(
            format!("{p}.self_attn.o_proj.weight"),
            random(vec![HIDDEN, HEADS * HEAD_DIM], 0.2),
        );
        push(format!("{p}.self_attn.q_norm.weight"), ones(HEAD_DIM));
        push(format!("{p}.self_attn.k_norm.weight"), ones(HEAD_DIM));
        push(
            format!("{p}.mlp.gate_proj.weight"),
            random(vec![FFN, HIDDEN], 0.2),
        );
        push(
            format!("{p}.mlp.up_proj.weight"),
            random(vec![FFN, HIDDEN], 0.2),
        );
        push(
            format!("{p}.mlp.down_proj.weight"),
            random(vec![HIDDEN, FFN], 0.2),
        );
    }
    write_safetensors(&dir.join("model.safetensors"), &tensors);
    if std::fs::rename(&dir, &done).is_err() {
        // Another test's folder is in place: the same model.
        assert!(done.join("model.safetensors").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }
    done
}

/// A server over the tiny model on the MLX engine.
async fn tiny_server() -> TestServer {
    tiny_server_with(support::default_model_args()).await
}

/// [`tiny_server`] loaded with `args` (its model set here).
async fn tiny_server_with(args: ModelArgs) -> TestServer {
    let args = ModelArgs {
        model: Some(tiny_qwen3()),
        ..args
    };
    let model = args.load().expect("loading the tiny Qwen3 model");
    assert_eq!(model.format().family, "qwen3");
    assert_eq!(model.engine().info().architecture, "qwen3");
    let agent = Agent::new(
        model,
        KeyRing::new(Key::generate().unwrap()),
        AgentConfig::default(),
    );
    TestServer::start_shared(Arc::new(agent), ServerConfig::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qwen3_model_on_mlx_streams_reasoning_then_text_to_the_official_client() {
    let server = tiny_server().await;
    let url = server.url("/agent");
    let forwarded = json!({
        "reasoning": {"visibility": "full", "budgetTokens": 12},
        "sampling": {"temperature": 1.0, "seed": 7, "maxTokens": 40},
    })
    .to_string();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/agui-client.mjs"))
            .args([
                url.as_str(),
                "--prompt",
                "Think, then answer.",
                "--forwarded",
                &forwarded,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "the official client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let events: Vec<&str> = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let first_reasoning = events
        .iter()
        .position(|e| *e == "REASONING_MESSAGE_CONTENT");
    let first_text = events.iter().position(|e| *e == "TEXT_MESSAGE_CONTENT");
    assert!(
        matches!((first_reasoning, first_text), (Some(r), Some(t)) if r < t),
        "expected reasoning then text: {events:?}"
    );
    assert!(events.contains(&"REASONING_ENCRYPTED_VALUE"));
    let messages = summary["messages"].as_array().unwrap();
    let reasoning = messages
        .iter()
        .find(|m| m["role"] == "reasoning")
        .expect("a reasoning message");
    assert!(!reasoning["content"].as_str().unwrap().is_empty());
    assert!(
        reasoning["encryptedValue"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    server.shutdown().await;
}

/// A chat completion of `body`, which must succeed.
async fn completion(server: &TestServer, body: &serde_json::Value) -> serde_json::Value {
    let response = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// What a chat completion said, choice by choice: reasoning, then text.
async fn said(server: &TestServer, n: u64, seed: u64) -> Vec<(String, String)> {
    let body = json!({
        "messages": [{"role": "user", "content": "Think, then answer."}],
        "n": n, "seed": seed, "temperature": 1.0, "max_tokens": 24,
        "reasoning": {"visibility": "full", "max_tokens": 12},
    });
    let answer = completion(server, &body).await;
    let choices = answer["choices"].as_array().unwrap();
    assert_eq!(choices.len() as u64, n, "{answer}");
    choices
        .iter()
        .enumerate()
        .map(|(index, choice)| {
            assert_eq!(choice["index"], index);
            let message = &choice["message"];
            let text = |key: &str| message[key].as_str().unwrap_or_default().to_owned();
            (text("reasoning"), text("content"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_choices_on_mlx_are_the_answers_of_counted_up_seeds() {
    let server = tiny_server().await;
    let three = said(&server, 3, 11).await;
    // Sampled at temperature 1 from different seeds, the choices differ;
    // each is what a request of its own with that seed says.
    assert!(three[0] != three[1] && three[1] != three[2], "{three:?}");
    for (choice, seed) in [(1, 12), (2, 13)] {
        assert_eq!(
            said(&server, 1, seed).await[0],
            three[choice],
            "seed {seed}"
        );
    }
    server.shutdown().await;
}

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
