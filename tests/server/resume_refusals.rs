//! Who may resume a run, and for how long: only the holder of its token
//! (and, with authentication on, the same bearer), 403 `RESUME_REFUSED`
//! otherwise; past the window the run is stopped, its events dropped, and
//! resuming is 404 `RUN_EXPIRED`. A second connection takes the run over.

use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use thinkwire::server::{AuthTokens, ServerConfig};
use thinkwire_protocol::{EventKind, ResumeGrant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::resume_client::*;
use crate::support::*;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

/// A run long enough to be cut and resumed while it generates.
fn long_script() -> String {
    qwen3_turn(&"thinking ".repeat(150), "Done.")
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// The lone `RUN_ERROR` code a socket answers a resume with.
async fn ws_refusal(socket: &mut Socket) -> String {
    let leg = ws_read(socket, None).await;
    assert_eq!(leg.events.len(), 1, "a refusal is a lone RUN_ERROR");
    match &leg.events[0].1.kind {
        EventKind::RunError(e) => e.code.clone().unwrap_or_default(),
        other => panic!("expected RUN_ERROR, got {other:?}"),
    }
}

async fn connect_as(server: &TestServer, bearer: &str) -> Socket {
    let mut request = server.ws_url().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {bearer}").parse().unwrap());
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_token_holder_with_the_same_identity_resumes() {
    let config = ServerConfig {
        auth: Some(AuthTokens::parse(&format!("{ALICE}\n{BOB}\n")).unwrap()),
        ..ServerConfig::default()
    };
    let (server, _) = resumable_server(
        long_script(),
        Duration::from_millis(10),
        Duration::from_secs(30),
        config,
    )
    .await;
    let body = input("t", "r", "Hi", serde_json::json!({}));
    let first = http_start(&server, Http::Sse, &body, Some(ALICE), Some(3)).await;
    let grant = first.grant.clone().unwrap();
    let resume = |token: Option<String>, last: Option<&'static str>, bearer: &'static str| {
        let (url, server) = (grant.url.clone(), &server);
        async move {
            http_resume(
                server,
                Http::Sse,
                &url,
                token.as_deref(),
                last,
                Some(bearer),
            )
            .await
        }
    };
    // The token with its last character changed (never to itself: a token
    // ending in '0' made this the real token, 1 run in 64).
    let last = if grant.token.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &grant.token[..grant.token.len() - 1]);
    assert_ne!(wrong, grant.token);
    let refusals = [
        (
            resume(Some(wrong.clone()), Some("3"), ALICE).await,
            403,
            "RESUME_REFUSED",
        ),
        (resume(None, Some("3"), ALICE).await, 403, "RESUME_REFUSED"),
        (
            resume(Some(grant.token.clone()), Some("3"), BOB).await,
            403,
            "RESUME_REFUSED",
        ),
        (
            resume(Some(grant.token.clone()), Some("x"), ALICE).await,
            400,
            "INVALID_INPUT",
        ),
        (
            resume(Some(grant.token.clone()), Some("99999"), ALICE).await,
            400,
            "INVALID_INPUT",
        ),
    ];
    for (n, (result, status, want)) in refusals.into_iter().enumerate() {
        let (got, body) = result.expect_err("refused");
        assert_eq!((got, code(&body)), (status, want), "refusal {n}: {body}");
        let text = body.to_string();
        assert!(
            !text.contains(&grant.token) && !text.contains(&wrong),
            "{text}"
        );
    }
    let unknown = http_resume(
        &server,
        Http::Sse,
        "/agent/runs/rs-00000000000000000000000000000000",
        Some(&grant.token),
        Some("3"),
        Some(ALICE),
    )
    .await
    .expect_err("no such run");
    assert_eq!((unknown.0, code(&unknown.1)), (404, "RUN_EXPIRED"));

    // Over a WebSocket: the same refusals as lone RUN_ERRORs.
    let mut bob = connect_as(&server, BOB).await;
    ws_send_resume(&mut bob, &grant, &grant.token, 3).await;
    assert_eq!(ws_refusal(&mut bob).await, "RESUME_REFUSED");
    let mut alice = connect_as(&server, ALICE).await;
    ws_send_resume(&mut alice, &grant, &wrong, 3).await;
    assert_eq!(ws_refusal(&mut alice).await, "RESUME_REFUSED");
    use futures_util::SinkExt;
    alice
        .send(Message::text(r#"{"type":"RESUME_RUN","resumeId":"x"}"#))
        .await
        .unwrap();
    assert_eq!(ws_refusal(&mut alice).await, "INVALID_INPUT");

    // The holder, as herself, still resumes.
    let rest = resume(Some(grant.token.clone()), Some("3"), ALICE)
        .await
        .unwrap();
    let events = joined(&[&first, &rest]);
    verify(&events);
    assert_eq!(answer_text(&events), "Done.");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_window_the_run_stops_and_nothing_stays_held() {
    let (server, observed) = resumable_server(
        qwen3_turn(&"thinking ".repeat(400), "Done."),
        Duration::from_millis(20),
        Duration::from_secs(1),
        ServerConfig::default(),
    )
    .await;
    assert_eq!(gauge(&server, "thinkwire_resume_buffer_bytes").await, 0.0);
    let body = input(
        "t",
        "r",
        "Hi",
        serde_json::json!({"reasoning": {"visibility": "full"}}),
    );
    let first = http_start(&server, Http::Sse, &body, None, Some(5)).await;
    let ws_first = ws_start(&server, &body, Some(5)).await;
    wait_for_nothing_held(&server).await;
    // Both runs were stopped, as when a client leaves without resuming.
    for _ in 0..100 {
        if observed.cancelled.load(Ordering::SeqCst) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(observed.cancelled.load(Ordering::SeqCst), 2);
    assert_eq!(gauge(&server, "thinkwire_runs_in_flight").await, 0.0);

    let grant = first.grant.unwrap();
    let (status, refused) = http_resume(
        &server,
        Http::Sse,
        &grant.url,
        Some(&grant.token),
        Some("5"),
        None,
    )
    .await
    .expect_err("expired");
    assert_eq!((status, code(&refused)), (404, "RUN_EXPIRED"));
    let grant = ws_first.grant.unwrap();
    let mut socket = connect(&server).await;
    ws_send_resume(&mut socket, &grant, &grant.token, 5).await;
    assert_eq!(ws_refusal(&mut socket).await, "RUN_EXPIRED");
    server.shutdown().await;
}

/// A second connection resuming while the first is still attached takes
/// the run over; the first socket closes with 4001.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_attach_takes_the_run_over() {
    let (server, _) = resumable_server(
        long_script(),
        Duration::from_millis(5),
        Duration::from_secs(30),
        ServerConfig::default(),
    )
    .await;
    let body = input(
        "t",
        "r",
        "Hi",
        serde_json::json!({"reasoning": {"visibility": "full"}}),
    );
    let mut first_socket = connect(&server).await;
    {
        use futures_util::SinkExt;
        first_socket
            .send(Message::text(body.to_string()))
            .await
            .unwrap();
    }
    let first = ws_read(&mut first_socket, Some(4)).await;
    let grant: ResumeGrant = first.grant.clone().unwrap();
    let mut second = connect(&server).await;
    ws_send_resume(&mut second, &grant, &grant.token, 4).await;
    let rest = ws_read(&mut second, None).await;
    let events = joined(&[&first, &rest]);
    verify(&events);
    assert_eq!(answer_text(&events), "Done.");
    // The first socket got some frames meanwhile, perhaps, then the close.
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(10), first_socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    assert_eq!(close.map(|f| f.code), Some(CloseCode::from(4001)));
    server.shutdown().await;
}

/// `/metrics` counts a protobuf response under its own transport.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_responses_have_their_own_transport_label() {
    let (server, _) = resumable_server(
        long_script(),
        Duration::from_millis(10),
        Duration::from_secs(1),
        ServerConfig::default(),
    )
    .await;
    let body = input("t", "r", "Hi", serde_json::json!({}));
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("accept", thinkwire_protocol::PROTO_MEDIA_TYPE)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let open = gauge(
        &server,
        "thinkwire_open_connections{transport=\"protobuf\"}",
    )
    .await;
    assert_eq!(open, 1.0);
    drop(response);
    wait_for_nothing_held(&server).await;
    server.shutdown().await;
}
