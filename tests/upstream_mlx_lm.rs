//! thinkwire in front of mlx-lm's own server (`mlx_lm.server`, from the
//! venv setup makes) on the default model: the answers that reach an AG-UI
//! client through the upstream backend are mlx-lm's greedy answers, as the
//! parity reference recorded them (`tests/parity/smollm2-135m.json`, made
//! with mlx-lm on the same f32 conversion); a raw completion with a stop
//! sequence ends where mlx-lm's own does, with mlx-lm's usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::front::{front, upstream_config};
use support::*;
use thinkwire::upstream::UpstreamKind;

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    thinkwire_chat::assets::home().join("venv/bin/python")
}

/// The default model as an f32 Hugging Face folder, as the reference was
/// made (`thinkwire convert --precision f32`).
fn convert_default_model(dir: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
        .args(["convert", "--precision", "f32"])
        .arg(thinkwire_chat::assets::default_model())
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "thinkwire convert failed");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_mlx_lm(model: &Path) -> (Server, String) {
    let port = free_port();
    let child = Command::new(python())
        .args(["-m", "mlx_lm", "server", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--model")
        .arg(model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting mlx_lm.server from the venv (run scripts/setup)");
    let server = Server(child);
    let base = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    loop {
        if let Ok(response) = reqwest::get(format!("{base}/models")).await
            && response.status().is_success()
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "mlx_lm.server did not come up"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (server, base)
}

/// thinkwire serving `/agent` and `/v1` in front of the mlx-lm server at
/// `base`.
async fn front_of(base: &str) -> TestServer {
    // mlx-lm's name for the model it was started with.
    let mut config = upstream_config(UpstreamKind::OpenAiChat, base.to_owned(), "default_model");
    config.connect_timeout = Duration::from_secs(5);
    config.idle_timeout = Duration::from_secs(60);
    front(config).await
}

/// One mlx-lm server for both checks (its start and the conversion are
/// most of the test's time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mlx_lm_server_answers_and_stops_through_thinkwire_as_mlx_lm_does() {
    let dir = std::env::temp_dir().join(format!("thinkwire-mlx-lm-{}", std::process::id()));
    convert_default_model(&dir);
    let (_mlx_lm, base) = start_mlx_lm(&dir).await;
    let front = front_of(&base).await;
    answers_as_mlx_lm_does(&front).await;
    a_raw_completion_stops_where_mlx_lm_stops(&base, &front).await;
    front.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The agent's answers through the upstream are mlx-lm's recorded ones.
async fn answers_as_mlx_lm_does(front: &TestServer) {
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/parity/smollm2-135m.json")).unwrap(),
    )
    .unwrap();
    let set: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/parity/conversations.json")).unwrap(),
    )
    .unwrap();
    let max_tokens = reference["max_tokens"].as_u64().unwrap();
    for (i, question) in set["questions"]
        .as_array()
        .unwrap()
        .iter()
        .take(4)
        .enumerate()
    {
        let case = &reference["cases"][i];
        assert_eq!(case["name"], format!("question {i}"));
        let expected: String = case["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .chain(case["tail"].as_str())
            .collect();
        let events = post_run(
            front,
            &input(
                "mlx-lm",
                &format!("run-{i}"),
                question.as_str().unwrap(),
                json!({"sampling": {"temperature": 0, "maxTokens": max_tokens}}),
            ),
        )
        .await;
        assert_eq!(
            answer_text(&events).trim(),
            expected.trim(),
            "question {i} through thinkwire differs from mlx-lm's answer"
        );
    }
}

/// A legacy completion posted to `url`, greedy; its `choices[0]` and
/// `usage`.
async fn complete(url: &str, prompt: &str, stop: Option<&str>) -> (Value, Value) {
    let mut body = json!({"model": "default_model", "prompt": prompt, "max_tokens": 48,
        "temperature": 0});
    if let Some(stop) = stop {
        body["stop"] = json!([stop]);
    }
    let response = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let reply: Value = response.json().await.unwrap();
    (reply["choices"][0].clone(), reply["usage"].clone())
}

/// A raw completion with a stop sequence ends where mlx-lm's own ends,
/// with the usage mlx-lm counted.
async fn a_raw_completion_stops_where_mlx_lm_stops(base: &str, front: &TestServer) {
    // A stop sequence from the middle of mlx-lm's own greedy answer.
    let prompt = "The three primary colours are";
    let (whole, _) = complete(&format!("{base}/completions"), prompt, None).await;
    let whole = whole["text"].as_str().unwrap().to_owned();
    // A whole word with the space before it: a stop that ends inside a
    // token is the upstream's to handle, and mlx-lm's server drops such a
    // match from the text and goes on.
    let words: Vec<&str> = whole.split_whitespace().collect();
    assert!(words.len() > 8, "too short an answer to cut: {whole:?}");
    let stop = (words[words.len() / 2..].iter())
        .map(|w| format!(" {w}"))
        .find(|stop| whole.contains(stop.as_str()))
        .expect("a word after a space in the second half");
    let at = whole.find(&stop).unwrap_or_default();
    assert!(at > 0, "{whole:?} starts with {stop:?}");

    let (direct, direct_usage) =
        complete(&format!("{base}/completions"), prompt, Some(&stop)).await;
    let (through, usage) = complete(&front.url("/v1/completions"), prompt, Some(&stop)).await;
    assert_eq!(
        direct["text"],
        json!(&whole[..at]),
        "mlx-lm did not stop at {stop:?}"
    );
    assert_eq!(through["text"], direct["text"], "stop {stop:?}");
    assert_eq!(through["finish_reason"], "stop");
    // What the upstream counted for the generation it stopped, not a
    // count of nothing: the upstream was told of the stop sequence.
    for field in ["prompt_tokens", "completion_tokens"] {
        assert_eq!(
            usage[field], direct_usage[field],
            "{field}: {usage} against {direct_usage}"
        );
    }
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0, "{usage}");
}
