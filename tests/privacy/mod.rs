//! Zero data retention, shown rather than claimed: conversations whose
//! prompts, reasoning, tool calls, tool results and answers all carry a
//! random canary run through the server over SSE and WebSocket, in hidden
//! and full visibility, with sealed reasoning replayed, tampered with,
//! dropped, and with inputs the server refuses; and the same over the
//! OpenAI and Anthropic surfaces (`privacy/v1.rs`); through an upstream
//! backend (`privacy/upstream.rs`, whose provider key carries the canary);
//! and a run whose engine panics with a message quoting the conversation,
//! and wrong bearer tokens holding the canary (`panic_and_auth`); and runs
//! cut and resumed, or left to expire, whose replay buffers held it all
//! (`privacy/resume.rs`; their resume tokens are secrets too). Every log line at TRACE
//! level goes to a file; afterwards the canary (and the sealing key, and the
//! sealed values themselves) must be in no log line and in no file written
//! during the test — in the test's own folder, in `$TMPDIR`, or in the
//! working directory.
//!
//! One test in this binary: it installs the global tracing subscriber.
//! Here the test and the order of its conversations; `secrets` holds what
//! must not leak and `scan` where the test looks for it; `client` is the
//! AG-UI harness that `agui` (SSE and WebSocket) and `panic_and_auth` use.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::server::resume_client;
use crate::support;

mod agui;
mod client;
mod panic_and_auth;
mod resume;
mod scan;
mod secrets;
mod upstream;
mod v1;

use std::fs;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use thinkwire::agent::ReplayFailure;
use thinkwire_seal::Key;

use client::server;
use scan::{files_written_since, read_capped};
use secrets::{Canaries, Secrets};

#[test]
fn no_prompt_reasoning_answer_or_key_is_logged_or_written() {
    let started = SystemTime::now() - Duration::from_secs(2);
    let canary = format!("zq{}", uuid::Uuid::new_v4().simple());
    let dir = std::env::temp_dir().join(format!(
        "thinkwire-privacy-{}",
        uuid::Uuid::new_v4().simple()
    ));
    fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("trace.log");
    let log_file = fs::File::create(&log_path).unwrap();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(Mutex::new(log_file))
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let secrets = Secrets {
        canary: canary.clone(),
        key_text: Key::generate().unwrap().to_text().as_str().to_owned(),
        sealed: Mutex::new(Vec::new()),
        tokens: Mutex::new(Vec::new()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run_ids = runtime.block_on(conversations(&secrets));
    drop(runtime);

    // The log says what happened, so this test could catch a leak in it.
    let log = fs::read_to_string(&log_path).unwrap();
    for run_id in &run_ids {
        assert!(log.contains(run_id.as_str()), "the log names run {run_id}");
    }
    for code in [
        "SEALED_REASONING_REJECTED",
        "CONTEXT_OVERFLOW",
        "UNSUPPORTED_CONTENT",
        "INVALID_INPUT",
        "upstream refused a request",
        "INVALID_TOKEN",
        "run panicked",
        "its message is withheld",
        "run resumed",
        "run held for resumption",
        "run not resumed within the window",
    ] {
        assert!(log.contains(code), "the log records the {code} refusal");
    }
    assert!(
        log.lines().count() >= run_ids.len() * 2,
        "{} log lines",
        log.lines().count()
    );
    for (n, line) in log.lines().enumerate() {
        if let Some(what) = secrets.found_in(line.as_bytes()) {
            panic!("log line {} holds {what}", n + 1);
        }
    }

    // No file written during the test holds a secret, nor is named after
    // one: the test's folder, $TMPDIR, and the working directory (less the
    // build and dependency folders, which other builds write meanwhile).
    let mut written = Vec::new();
    files_written_since(&dir, started, &[], &mut written);
    files_written_since(&std::env::temp_dir(), started, &[], &mut written);
    let cwd = std::env::current_dir().unwrap();
    files_written_since(
        &cwd,
        started,
        &["target", ".git", "node_modules"],
        &mut written,
    );
    written.sort();
    written.dedup();
    assert!(written.contains(&log_path), "the scan sees the log file");
    for path in &written {
        assert!(
            !path.to_string_lossy().contains(&canary),
            "a file is named after the canary"
        );
        if let Some(bytes) = read_capped(path)
            && let Some(what) = secrets.found_in(&bytes)
        {
            panic!("{} holds {what}", path.display());
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// Every kind of exchange, on several servers; returns the ids of the runs.
async fn conversations(secrets: &Secrets) -> Vec<String> {
    let c = Canaries::new(&secrets.canary);
    let mut run_ids = agui::conversations(&c, secrets).await;

    // The OpenAI and Anthropic surfaces (same key, full visibility).
    let scripts = [
        c.tool_turn(),
        c.answer_turn(),
        c.tool_turn(),
        c.answer_turn(),
        c.tool_turn(),
        c.answer_turn(),
        c.completion(),
    ];
    let (server_c, observed) = server(&scripts, &secrets.key_text, ReplayFailure::Reject).await;
    v1::conversations(&server_c, &c, secrets).await;
    assert_eq!(
        observed.prompts.lock().unwrap().len(),
        7,
        "refusals never reached the engine"
    );
    server_c.shutdown().await;

    // Through an upstream backend.
    run_ids.extend(upstream::conversations(&c, secrets).await);
    run_ids.extend(panic_and_auth::conversations(&c, secrets).await);
    run_ids.extend(resume::conversations(&c, secrets).await);
    run_ids
}
