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

use crate::support;

mod logprobs;
mod prefix_cache;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::cli::ModelArgs;
use thinkwire::server::ServerConfig;
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
