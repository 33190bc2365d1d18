//! Access control (issue #13): with `auth` set, every endpoint but
//! `/healthz` and the web demo refuses a request without a token and one
//! with a wrong token (401, `WWW-Authenticate: Bearer`, a code, counted in
//! `/metrics`), and serves the same request with the right token — sent as
//! `Authorization: Bearer`, as `x-api-key` on `/v1`, or as a WebSocket
//! subprotocol. A page of a foreign origin cannot open the WebSocket; the
//! server's own pages and listed origins can; CORS answers listed origins
//! only.

use futures_util::SinkExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::{AllowedOrigins, AuthTokens, ServerConfig};
use thinkwire_seal::{Key, KeyRing};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::support::*;

const TOKEN: &str = "tw-test-token-5f0e3c9a1b7d";
const WRONG: &str = "tw-test-token-5f0e3c9a1b7e";

async fn server(auth: bool, origins: AllowedOrigins) -> TestServer {
    let (model, _) = scripted_qwen3(
        &[qwen3_turn("some thoughts", "An answer.")],
        std::time::Duration::ZERO,
    );
    TestServer::start(
        Agent::new(
            model,
            KeyRing::new(Key::generate().unwrap()),
            AgentConfig::default(),
        ),
        ServerConfig {
            auth: auth.then(|| AuthTokens::parse(TOKEN).unwrap()),
            allowed_origins: origins,
            ..ServerConfig::default()
        },
    )
    .await
}

/// Every HTTP endpoint with a request it serves (200) given the token.
fn endpoints(server: &TestServer) -> Vec<(Method, String, Option<Value>)> {
    let model = server.agent.model_id().to_owned();
    vec![
        (
            Method::POST,
            "/agent".into(),
            Some(input("t", "r", "hello", json!({}))),
        ),
        (Method::GET, "/capabilities".into(), None),
        (Method::GET, "/metrics".into(), None),
        (Method::GET, "/v1/models".into(), None),
        (Method::GET, format!("/v1/models/{model}"), None),
        (
            Method::POST,
            "/v1/chat/completions".into(),
            Some(json!({"messages": [{"role": "user", "content": "hello"}]})),
        ),
        (
            Method::POST,
            "/v1/responses".into(),
            Some(json!({"input": "hello"})),
        ),
        (
            Method::POST,
            "/v1/messages".into(),
            Some(json!({"messages": [{"role": "user", "content": "hello"}], "max_tokens": 64})),
        ),
    ]
}

async fn send(
    server: &TestServer,
    (method, path, body): &(Method, String, Option<Value>),
    headers: &[(&str, String)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new().request(method.clone(), server.url(path));
    if let Some(body) = body {
        request = request.json(body);
    }
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.unwrap()
}

/// A refusal's code, wherever the endpoint's error shape puts it.
fn refusal_code(path: &str, body: &Value) -> String {
    if path.starts_with("/v1/messages") {
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], "authentication_error", "{body}");
        return body["error"]["message"].as_str().unwrap().to_owned();
    }
    body["error"]["code"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn every_endpoint_refuses_missing_and_wrong_tokens_and_serves_the_right_one() {
    let server = server(true, AllowedOrigins::default()).await;
    for endpoint in endpoints(&server) {
        let path = endpoint.1.clone();
        let none = send(&server, &endpoint, &[]).await;
        assert_eq!(
            none.status(),
            StatusCode::UNAUTHORIZED,
            "{path} without a token"
        );
        assert_eq!(
            none.headers()["www-authenticate"],
            r#"Bearer realm="thinkwire""#,
            "{path}"
        );
        let body: Value = none.json().await.unwrap();
        let code = refusal_code(&path, &body);
        assert!(
            code.contains("AUTH_REQUIRED") || code.contains("requires a token"),
            "{path}: {body}"
        );

        for headers in [
            vec![("authorization", format!("Bearer {WRONG}"))],
            vec![("x-api-key", WRONG.to_owned())],
        ] {
            if headers[0].0 == "x-api-key" && !path.starts_with("/v1") {
                continue;
            }
            let wrong = send(&server, &endpoint, &headers).await;
            assert_eq!(
                wrong.status(),
                StatusCode::UNAUTHORIZED,
                "{path} {headers:?}"
            );
            let challenge = wrong.headers()["www-authenticate"].to_str().unwrap();
            assert!(challenge.contains("invalid_token"), "{path}: {challenge}");
            let text = wrong.text().await.unwrap();
            assert!(!text.contains(WRONG), "{path} echoes the token");
        }

        let right = send(
            &server,
            &endpoint,
            &[("authorization", format!("Bearer {TOKEN}"))],
        )
        .await;
        assert_eq!(right.status(), StatusCode::OK, "{path} with the token");
        let _ = right.bytes().await.unwrap();
        if path.starts_with("/v1") {
            // The Anthropic SDK's header.
            let right = send(&server, &endpoint, &[("x-api-key", TOKEN.to_owned())]).await;
            assert_eq!(right.status(), StatusCode::OK, "{path} with x-api-key");
            let _ = right.bytes().await.unwrap();
        }
    }

    // The probe and the demo's files stay open; the probe names no model.
    let health = reqwest::get(server.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health, json!({"status": "ok"}));
    let demo = reqwest::get(server.url("/index.html")).await.unwrap();
    assert_ne!(demo.status(), StatusCode::UNAUTHORIZED);

    // Refusals are counted by code.
    let metrics = reqwest::Client::new()
        .get(server.url("/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for code in ["AUTH_REQUIRED", "INVALID_TOKEN"] {
        assert!(
            metrics.contains(&format!(
                "thinkwire_requests_refused_total{{code=\"{code}\"}}"
            )),
            "{code} not counted:\n{metrics}"
        );
    }
    assert!(!metrics.contains(TOKEN) && !metrics.contains(WRONG));
    server.shutdown().await;
}

fn ws_request(
    server: &TestServer,
    headers: &[(&'static str, &str)],
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let mut request = server.ws_url().into_client_request().unwrap();
    for (name, value) in headers {
        request
            .headers_mut()
            .insert(*name, HeaderValue::from_str(value).unwrap());
    }
    request
}

/// The HTTP status of a refused WebSocket handshake.
async fn ws_refused(server: &TestServer, headers: &[(&'static str, &str)]) -> u16 {
    match tokio_tungstenite::connect_async(ws_request(server, headers)).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Ok(_) => panic!("the handshake succeeded with {headers:?}"),
        Err(other) => panic!("unexpected error {other}"),
    }
}

/// Opens the socket and runs one turn on it.
async fn ws_run(server: &TestServer, headers: &[(&'static str, &str)]) -> Option<String> {
    let (mut socket, response) = tokio_tungstenite::connect_async(ws_request(server, headers))
        .await
        .unwrap();
    let protocol = response
        .headers()
        .get("sec-websocket-protocol")
        .map(|p| p.to_str().unwrap().to_owned());
    socket
        .send(Message::text(
            input("t", "ws", "hello", json!({})).to_string(),
        ))
        .await
        .unwrap();
    let events = read_run(&mut socket).await;
    assert!(
        matches!(
            events.last().map(|e| e.event_type()),
            Some(thinkwire_protocol::EventType::RunFinished)
        ),
        "{:?}",
        types(&events)
    );
    let _ = socket.close(None).await;
    protocol
}

#[tokio::test]
async fn the_websocket_needs_the_token_in_a_header_or_a_subprotocol() {
    let server = server(true, AllowedOrigins::default()).await;
    assert_eq!(ws_refused(&server, &[]).await, 401);
    let wrong = format!("Bearer {WRONG}");
    assert_eq!(ws_refused(&server, &[("authorization", &wrong)]).await, 401);
    let wrong_protocol = format!("thinkwire, thinkwire.bearer.{WRONG}");
    assert_eq!(
        ws_refused(&server, &[("sec-websocket-protocol", &wrong_protocol)]).await,
        401
    );

    let right = format!("Bearer {TOKEN}");
    assert_eq!(ws_run(&server, &[("authorization", &right)]).await, None);
    // A browser offers `thinkwire` and its token; the server picks the
    // former, so the token is never echoed.
    let protocols = format!("thinkwire, thinkwire.bearer.{TOKEN}");
    assert_eq!(
        ws_run(&server, &[("sec-websocket-protocol", &protocols)])
            .await
            .as_deref(),
        Some("thinkwire")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_foreign_origin_cannot_open_the_websocket() {
    let server = server(
        false,
        AllowedOrigins::parse(&["https://app.example.com".to_owned()]).unwrap(),
    )
    .await;
    let own = format!("http://{}", server.addr);
    assert_eq!(
        ws_refused(&server, &[("origin", "https://evil.example")]).await,
        403
    );
    assert_eq!(ws_refused(&server, &[("origin", "null")]).await, 403);
    // No Origin: not a browser. The server's own pages, and listed origins.
    ws_run(&server, &[]).await;
    ws_run(&server, &[("origin", &own)]).await;
    ws_run(&server, &[("origin", "https://app.example.com")]).await;

    // CORS: a listed origin may read responses, a foreign one is not told it
    // may; the preflight is answered without a token.
    let preflight = |origin: &'static str| {
        reqwest::Client::new()
            .request(Method::OPTIONS, server.url("/agent"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type, authorization",
            )
            .send()
    };
    let listed = preflight("https://app.example.com").await.unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    assert_eq!(
        listed.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let foreign = preflight("https://evil.example").await.unwrap();
    assert!(
        foreign
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    let metrics = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("thinkwire_requests_refused_total{code=\"ORIGIN_NOT_ALLOWED\"} 2"),
        "{metrics}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn preflights_need_no_token_when_auth_is_on() {
    let server = server(true, AllowedOrigins::Any).await;
    let response = reqwest::Client::new()
        .request(Method::OPTIONS, server.url("/v1/chat/completions"))
        .header("origin", "https://ui.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    server.shutdown().await;
}
