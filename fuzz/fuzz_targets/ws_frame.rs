//! WebSocket input frames through the real session loop: a server on
//! `127.0.0.1:0` (the fuzz agent, whose engine replays one short turn)
//! and one client socket. Each input is sent as a text frame, followed by
//! a binary frame as a marker (it always earns a `RUN_ERROR` with code
//! `BINARY_FRAME`). Whatever the frame, the socket answers: a run whose
//! events pass the AG-UI verifier, a refusal that is not an internal
//! error, or nothing (a `CANCEL_RUN`) — and stays usable.
#![no_main]

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use libfuzzer_sys::fuzz_target;
use thinkwire::server::{self, AppState, ServerConfig};
use thinkwire_protocol::{Event, EventKind, Verifier, decode_event};
use tokio::runtime::Runtime;
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct Harness {
    runtime: Runtime,
    url: String,
    socket: Mutex<Option<Socket>>,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let url = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let state = AppState::new(
                std::sync::Arc::clone(thinkwire_fuzz::agent()),
                ServerConfig::default(),
            );
            tokio::spawn(server::serve(listener, state, std::future::pending()));
            format!("ws://{addr}/agent/ws")
        });
        Harness {
            runtime,
            url,
            socket: Mutex::new(None),
        }
    })
}

/// The code of a `RUN_ERROR`, if `event` is one.
fn error_code(event: &Event) -> Option<&str> {
    match &event.kind {
        EventKind::RunError(e) => Some(e.code.as_deref().unwrap_or("")),
        _ => None,
    }
}

async fn exchange(socket: &mut Socket, frame: String) {
    socket
        .send(Message::text(frame))
        .await
        .expect("sending the frame");
    socket
        .send(Message::binary(b"marker".to_vec()))
        .await
        .expect("sending the marker");
    let mut verifier: Option<Verifier> = None;
    loop {
        let message = socket
            .next()
            .await
            .expect("the socket stays open")
            .expect("a frame");
        let Message::Text(text) = message else {
            continue;
        };
        let event = decode_event(&text)
            .expect("the server sends valid events")
            .expect("known");
        if let Some(code) = error_code(&event) {
            if code == "BINARY_FRAME" && verifier.is_none() {
                return;
            }
            assert_ne!(
                code, "INTERNAL_ERROR",
                "bad input is never an internal error"
            );
        }
        let v = verifier.get_or_insert_with(Verifier::new);
        v.check(&event)
            .unwrap_or_else(|e| panic!("invalid sequence: {e}"));
        if event.is_terminal() {
            if let Some(mut v) = verifier.take() {
                v.finish().expect("the run ends properly");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    let frame = String::from_utf8_lossy(data).into_owned();
    let mut guard = h.socket.lock().expect("the socket lock");
    h.runtime.block_on(async {
        if guard.is_none() {
            let (socket, _) = tokio_tungstenite::connect_async(&h.url)
                .await
                .expect("connecting");
            *guard = Some(socket);
        }
        if let Some(socket) = guard.as_mut() {
            tokio::time::timeout(Duration::from_secs(10), exchange(socket, frame))
                .await
                .expect("the socket answers within 10 s");
        }
    });
});
