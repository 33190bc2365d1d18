//! Many users at once on the real default model, over a live server: 8
//! WebSocket clients × 3 runs each (the official `@ag-ui/client` verifier
//! checks every run's events), one run cancelled mid-answer; every other
//! run finishes with the answer its prompt gets alone; `GET /metrics`
//! parses as Prometheus text and counts what happened.
//!
//! The prompts are the parity set's questions with the longest runs free
//! of near-ties (`tests/parity/smollm2-135m.json`), and answers are capped
//! below that run, so "the same answer as alone" is exact, not luck.
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire::server::ServerConfig;
use thinkwire_engine::mlx::{LoadOptions, MlxEngine};
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

use support::TestServer;

/// Answer tokens per run: below every chosen prompt's tie-free run.
const MAX_TOKENS: usize = 32;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The 8 parity questions whose mlx-lm reference has the longest runs
/// without a near-tie (gap < 0.02), all at least `MAX_TOKENS` long.
fn prompts() -> Vec<String> {
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(root().join(p)).unwrap()).unwrap()
    };
    let set = read("tests/parity/conversations.json");
    let reference = read("tests/parity/smollm2-135m.json");
    let questions = set["questions"].as_array().unwrap();
    let mut ranked: Vec<(usize, String)> = reference["cases"]
        .as_array()
        .unwrap()
        .iter()
        .zip(questions)
        .map(|(case, q)| {
            let gaps = case["gaps"].as_array().unwrap();
            let tie_free = gaps
                .iter()
                .position(|g| g.as_f64().unwrap() < 0.02)
                .unwrap_or(gaps.len());
            (tie_free, q.as_str().unwrap().to_owned())
        })
        .collect();
    ranked.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    ranked.truncate(8);
    assert!(ranked.iter().all(|(n, _)| *n >= MAX_TOKENS), "{ranked:?}");
    ranked.into_iter().map(|(_, q)| q).collect()
}

fn agent() -> Agent {
    let path = thinkwire_chat::assets::default_model();
    let engine = MlxEngine::load(
        &path,
        &LoadOptions {
            max_batch: 8,
            ..LoadOptions::default()
        },
    )
    .expect("loading the default model (run scripts/setup)");
    let chat = LocalModel::load_chat(&path).unwrap();
    let model = LocalModel::new(Arc::new(engine), chat, &Registry::builtin()).unwrap();
    Agent::new(
        model,
        KeyRing::new(Key::generate().unwrap()),
        AgentConfig::default(),
    )
}

fn forwarded() -> Value {
    json!({
        "reasoning": {"visibility": "off"},
        "sampling": {"temperature": 0, "maxTokens": MAX_TOKENS},
    })
}

/// Runs `tests/node/ws-load.mjs`; its JSON summary.
fn ws_load(ws_url: &str, prompts: &[String], cancel: &str) -> Value {
    let out = std::process::Command::new("node")
        .arg("--experimental-websocket")
        .arg(root().join("tests/node/ws-load.mjs"))
        .arg(ws_url)
        .args(["--clients", "8", "--runs", "3", "--cancel", cancel])
        .arg("--prompts")
        .arg(serde_json::to_string(prompts).unwrap())
        .arg("--forwarded")
        .arg(forwarded().to_string())
        .output()
        .expect("running node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ws-load failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_websocket_clients_share_the_model_and_lose_nothing() {
    let prompts = prompts();
    let server = TestServer::start(agent(), ServerConfig::default()).await;

    // Each prompt alone first: the answers every batched run must repeat.
    let mut alone = Vec::new();
    for (i, prompt) in prompts.iter().enumerate() {
        let input = json!({
            "threadId": format!("alone-{i}"), "runId": format!("alone-run-{i}"),
            "state": {}, "tools": [], "context": [],
            "messages": [{"id": "u1", "role": "user", "content": prompt}],
            "forwardedProps": forwarded(),
        });
        let events = support::post_run(&server, &input).await;
        support::verify(&events);
        let text = support::answer_text(&events);
        assert!(!text.is_empty(), "no answer to {prompt:?}");
        alone.push(text);
    }

    let summary = tokio::task::spawn_blocking({
        let ws_url = server.ws_url();
        let prompts = prompts.clone();
        move || ws_load(&ws_url, &prompts, "0:1")
    })
    .await
    .unwrap();
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 24);
    let mut cancelled = 0;
    for run in runs {
        assert_eq!(run["terminal"], "RUN_FINISHED", "{run}");
        let prompt = run["prompt"].as_u64().unwrap() as usize;
        if run["client"] == 0 && run["run"] == 1 {
            assert_eq!(run["outcome"], "cancelled", "{run}");
            cancelled += 1;
            continue;
        }
        assert_eq!(
            run["text"].as_str().unwrap(),
            alone[prompt],
            "client {} run {}: the answer changed in the batch",
            run["client"],
            run["run"]
        );
    }
    assert_eq!(cancelled, 1);

    // The scrape parses as Prometheus text and saw all of it.
    let text = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    let mut values: HashMap<String, f64> = HashMap::new();
    for s in &scrape.samples {
        let key = match s.labels.get("outcome") {
            Some(o) => format!("{}{{{o}}}", s.metric),
            None => s.metric.clone(),
        };
        if let prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) = s.value
        {
            values.insert(key, v);
        }
    }
    let get = |k: &str| {
        values
            .get(k)
            .copied()
            .unwrap_or_else(|| panic!("{k} missing:\n{text}"))
    };
    assert_eq!(get("thinkwire_runs_total{success}"), 8.0 + 23.0);
    assert_eq!(get("thinkwire_runs_total{cancelled}"), 1.0);
    assert_eq!(get("thinkwire_active_sequences"), 0.0);
    assert_eq!(get("thinkwire_queued_sequences"), 0.0);
    assert!(get("thinkwire_generated_tokens_total") >= 31.0);
    // Steps decoded several sequences at once.
    assert!(get("thinkwire_engine_batched_tokens_total") > get("thinkwire_engine_steps_total"));
    assert!(
        scrape
            .samples
            .iter()
            .any(|s| s.metric == "thinkwire_time_to_first_token_seconds"),
        "{text}"
    );
    server.shutdown().await;
}
