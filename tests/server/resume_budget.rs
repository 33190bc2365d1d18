//! The server-wide replay budget (`--resume-buffer-mb`) is shared: a run
//! that finds it full takes room from the run holding the most, so an
//! ended run still held for its window cannot leave a new run holding
//! nothing, and that new run resumes from where its client was cut.

use std::time::Duration;

use thinkwire::server::{ResumeConfig, ServerConfig};

use super::resume_client::*;
use crate::support::*;

/// The budget, every run's and each run's: a run of [`script`] fills it
/// and more (~190 bytes counted per event).
const BUDGET: usize = 32 << 10;

/// ~300 reasoning tokens, one event each.
fn script() -> String {
    qwen3_turn(&"thinking ".repeat(300), "Done.")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_run_takes_room_from_an_ended_run_that_filled_the_budget() {
    let config = ServerConfig {
        resume: ResumeConfig {
            run_buffer_bytes: BUDGET,
            total_buffer_bytes: BUDGET,
            ..ResumeConfig::default()
        },
        ..ServerConfig::default()
    };
    // Slow enough that the cut run below is still young when it resumes:
    // past half the budget (~85 events, 1.7 s here) it drops its own oldest
    // events, since the ended run then holds no more than it does.
    let (server, _) = resumable_server(
        script(),
        Duration::from_millis(20),
        Duration::from_secs(30),
        config,
    )
    .await;
    let body = input(
        "t",
        "r",
        "Hi",
        serde_json::json!({"reasoning": {"visibility": "full"}}),
    );
    let ended = http_start(&server, Http::Sse, &body, None, None).await;
    let uncut = joined(&[&ended]);
    let held = gauge(&server, "thinkwire_resume_buffer_bytes").await;
    assert!(
        held > 0.9 * BUDGET as f64 && held <= BUDGET as f64,
        "the ended run fills the budget: {held} bytes held"
    );

    let first = http_start(&server, Http::Sse, &body, None, Some(3)).await;
    let grant = first.grant.clone().expect("a resume grant");
    let rest = http_resume(
        &server,
        Http::Sse,
        &grant.url,
        Some(&grant.token),
        Some(&first.last_seq().to_string()),
        None,
    )
    .await
    .unwrap_or_else(|refused| panic!("the new run's events were not held: {refused:?}"));
    let resumed = joined(&[&first, &rest]);
    verify(&resumed);
    assert_eq!(normalized(&resumed), normalized(&uncut));
    assert!(gauge(&server, "thinkwire_resume_buffer_bytes").await <= BUDGET as f64);

    // The ended run gave its oldest events and kept its newest.
    let grant = ended.grant.clone().expect("a resume grant");
    let (status, _) = http_resume(
        &server,
        Http::Sse,
        &grant.url,
        Some(&grant.token),
        Some("1"),
        None,
    )
    .await
    .expect_err("its first events are gone");
    assert_eq!(status, 404);
    let before_last = (ended.last_seq() - 2).to_string();
    let tail = http_resume(
        &server,
        Http::Sse,
        &grant.url,
        Some(&grant.token),
        Some(&before_last),
        None,
    )
    .await
    .expect("its last events are held");
    assert_eq!(tail.events.len(), 2);
    server.shutdown().await;
}
