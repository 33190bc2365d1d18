//! Resumable runs (issue #34, item 2): a run with reasoning and a tool call
//! is cut at 20 seeded random points over SSE and over WebSocket (and a
//! few over protobuf); after resuming, the client holds exactly the event
//! sequence of an uncut run, numbered without a gap or a repeat, and the
//! protocol crate's verifier passes it. Afterwards nothing stays held.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use thinkwire::server::ServerConfig;

use super::resume_client::*;
use crate::support::*;

/// The seed of the cut points: a failure names its cut, and reruns it.
const SEED: u64 = 34;

/// Long enough that some resumes find the run still generating, short
/// enough that others find it ended.
const STEP: Duration = Duration::from_millis(2);

const WINDOW: Duration = Duration::from_secs(5);

async fn cut_and_resume_over_http(binding: Http, cuts: usize) {
    let (server, _) = resumable_server(
        reasoning_then_tool_call(),
        STEP,
        WINDOW,
        ServerConfig::default(),
    )
    .await;
    let body = tool_input();
    let uncut = http_start(&server, binding, &body, None, None).await;
    let uncut = joined(&[&uncut]);
    verify(&uncut);
    assert!(uncut.len() > 40, "{} events", uncut.len());
    let mut rng = StdRng::seed_from_u64(SEED);
    for n in 0..cuts {
        let cut = rng.random_range(1..uncut.len());
        let first = http_start(&server, binding, &body, None, Some(cut)).await;
        assert_eq!(first.events.len(), cut, "cut {n} after {cut} events");
        let grant = first.grant.clone().expect("a resume grant");
        let last = first.last_seq().to_string();
        let rest = http_resume(
            &server,
            binding,
            &grant.url,
            Some(&grant.token),
            Some(&last),
            None,
        )
        .await
        .unwrap_or_else(|refused| panic!("cut {n} after {cut}: refused {refused:?}"));
        let events = joined(&[&first, &rest]);
        verify(&events);
        assert_eq!(
            normalized(&events),
            normalized(&uncut),
            "cut {n} after {cut} events"
        );
    }
    wait_for_nothing_held(&server).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_runs_cut_at_20_random_points_resume_to_the_uncut_sequence() {
    cut_and_resume_over_http(Http::Sse, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_runs_cut_at_random_points_resume_to_the_uncut_sequence() {
    cut_and_resume_over_http(Http::Proto, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_runs_cut_at_20_random_points_resume_to_the_uncut_sequence() {
    let (server, _) = resumable_server(
        reasoning_then_tool_call(),
        STEP,
        WINDOW,
        ServerConfig::default(),
    )
    .await;
    let body = tool_input();
    let uncut = ws_start(&server, &body, None).await;
    let uncut = joined(&[&uncut]);
    verify(&uncut);
    let mut rng = StdRng::seed_from_u64(SEED);
    for n in 0..20 {
        let cut = rng.random_range(1..uncut.len());
        let first = ws_start(&server, &body, Some(cut)).await;
        assert_eq!(first.events.len(), cut, "cut {n} after {cut} events");
        let grant = first.grant.clone().expect("RUN_STARTED carries the grant");
        let mut socket = connect(&server).await;
        ws_send_resume(&mut socket, &grant, &grant.token, first.last_seq()).await;
        let rest = ws_read(&mut socket, None).await;
        assert!(rest.grant.is_none(), "the token is returned once");
        let events = joined(&[&first, &rest]);
        verify(&events);
        assert_eq!(
            normalized(&events),
            normalized(&uncut),
            "cut {n} after {cut} events"
        );
        // The socket goes on: its next run starts as usual.
        if n == 0 {
            use futures_util::SinkExt;
            socket
                .send(tokio_tungstenite::tungstenite::Message::text(
                    body.to_string(),
                ))
                .await
                .unwrap();
            let next = ws_read(&mut socket, None).await;
            assert_eq!(normalized(&joined(&[&next])), normalized(&uncut));
        }
    }
    wait_for_nothing_held(&server).await;
    server.shutdown().await;
}

/// A run started over SSE can be resumed on a WebSocket, and the other way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumes_on_the_other_transport() {
    let (server, _) = resumable_server(
        reasoning_then_tool_call(),
        STEP,
        WINDOW,
        ServerConfig::default(),
    )
    .await;
    let body = tool_input();
    let uncut = joined(&[&http_start(&server, Http::Sse, &body, None, None).await]);

    let first = http_start(&server, Http::Sse, &body, None, Some(10)).await;
    let grant = first.grant.clone().unwrap();
    let mut socket = connect(&server).await;
    ws_send_resume(&mut socket, &grant, &grant.token, first.last_seq()).await;
    let rest = ws_read(&mut socket, None).await;
    assert_eq!(normalized(&joined(&[&first, &rest])), normalized(&uncut));

    let first = ws_start(&server, &body, Some(7)).await;
    let grant = first.grant.clone().unwrap();
    let rest = http_resume(
        &server,
        Http::Sse,
        &grant.url,
        Some(&grant.token),
        Some(&first.last_seq().to_string()),
        None,
    )
    .await
    .unwrap();
    assert_eq!(normalized(&joined(&[&first, &rest])), normalized(&uncut));
    server.shutdown().await;
}
