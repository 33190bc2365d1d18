//! `thinkwire loadtest` against a live server over real sockets (issue
//! #13): 8 WebSocket and 4 SSE clients × 3 runs on the scripted Qwen3
//! engine, each client's runs one conversation (its sealed reasoning
//! replayed every turn). Every run must finish and pass the AG-UI
//! verifier, and the server must return to the connections, runs, tasks
//! and sockets it had before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::json;
use thinkwire::cli::loadtest::{LoadConfig, run_load};

use support::{TestServer, qwen3_turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_load_finishes_verified_and_leaves_nothing_open() {
    let script = qwen3_turn(
        "The user greets me; I answer in a few words.",
        "Hello to you too!",
    );
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let config = LoadConfig {
        ws_clients: 8,
        sse_clients: 4,
        runs: 3,
        prompt: "Hello!".into(),
        forwarded_props: json!({"reasoning": {"visibility": "full"}}),
        history: true,
        run_timeout: Duration::from_secs(60),
        settle: Duration::from_secs(15),
        ..LoadConfig::new(server.url(""))
    };
    let report = run_load(&config).await.expect("the load test runs");
    println!("{report}");
    assert_eq!(report.runs, 36, "{report}");
    assert_eq!(report.error_count(), 0, "{report}");
    assert_eq!(report.verifier_failures, 0, "{report}");
    assert_eq!(report.runs_ok, 36, "{report}");
    assert!(report.baseline_restored, "{report}");
    assert_eq!(report.after.websockets, 0.0);
    assert_eq!(report.after.runs_in_flight, 0.0);
    // Every run streamed its reasoning (visibility full) and its answer.
    assert_eq!(report.first_content.count, 36, "{report}");
    assert!(report.events >= 36 * 10, "{report}");
    // One generation per run, and the later turns carried the earlier
    // turns' reasoning back into the prompt (opened from the sealed value).
    assert_eq!(observed.prompts.lock().unwrap().len(), 36);
    assert!(report.passed());
    server.shutdown().await;
}
